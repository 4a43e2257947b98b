#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs, from Debian's packages, everything nodelay's build, tests, package
# and benchmark need: scripts/build-deps.sh's list (the server's build, with
# liburing-dev for the io_uring backend, which bench/floor uses too) plus the list below. Safe to run again. Runs apt as root, through sudo when
# started as another user. Each package and why:
#   build-essential, clang, libclang-rt-14-dev  compilers; clang for libFuzzer
#   libcmocka-dev        the unit-test library
#   memcached            the reference we compare against, byte for byte
#   libmemcached-tools   memccapable: libmemcached's conformance tests
#   python3-pytest       runs the integration tests
#   python3-pymemcache   a real client (pure Python)
#   python3-pylibmc      a real client (libmemcached, text and binary)
#   libsasl2-modules     the PLAIN plugin pylibmc's SASL test authenticates with
#                        (a Recommends of libsasl2-2, so not pulled in by
#                        --no-install-recommends)
#   libcache-memcached-fast-perl  a real client (Perl, XS)
#   ruby, ruby-dalli     a real client (Ruby, binary protocol) that speaks TLS:
#                        the second TLS client beside pymemcache
#   nutcracker           twemproxy: the scale-out test puts it before 3 nodes
#   systemd              systemd-analyze verify, for the unit's test
#   dpkg-dev, debhelper, fakeroot, lintian  build and check the .deb (debian/)
#   gnuplot-nox          the benchmark's charts
#   linux-perf, strace   syscalls per request in the benchmark
#   libevent-openssl-2.1-7  memtier_benchmark from ../shared/ref needs it (the
#                        benchmark's second load generator; libevent itself
#                        comes with memcached)
#   iproute2             ss, for the connection tests
#   procps               ps and pgrep, for the process tests
#   openssl              the TLS tests make their certificates at test time
#   prometheus           promtool checks /metrics; its server scrapes it in a test
#   perl                 prove and Test::More: memcached's own t/*.t
#                        (scripts/memcached-suite.sh; its source comes from apt)
#   libio-socket-ssl-perl  memcached's t/ssl_*.t and SSL_TEST=1 (IO::Socket::SSL)
#   sasl2-bin            saslpasswd2, which memcached's t/binary-sasl.t runs to
#                        make its Cyrus sasldb (nodelay reads its own password
#                        file instead; the test dies without the tool); its
#                        saslauthd service is stopped below
#   zstd                 reads the compressed real traces (bench/traces.sh)
set -e
if [ "$(id -u)" != 0 ]; then
    exec sudo "$0" "$@"
fi
cd "$(dirname "$0")/.."
./scripts/build-deps.sh build-essential clang libclang-rt-14-dev libcmocka-dev memcached \
    libmemcached-tools python3 python3-pytest python3-pymemcache python3-pylibmc zstd \
    libsasl2-modules libcache-memcached-fast-perl ruby ruby-dalli nutcracker systemd dpkg-dev debhelper \
    fakeroot lintian gnuplot-nox linux-perf strace libevent-openssl-2.1-7 iproute2 procps prometheus openssl \
    perl libio-socket-ssl-perl sasl2-bin
# Debian's memcached, nutcracker, prometheus and sasl2-bin packages may start
# system services (on 11211, 22121 and 9090; saslauthd on a unix socket); the
# tests use their own ports, so they are harmless, but stop them to keep the
# machine quiet.
if command -v service >/dev/null 2>&1; then
    service memcached stop >/dev/null 2>&1 || true
    service nutcracker stop >/dev/null 2>&1 || true
    service prometheus stop >/dev/null 2>&1 || true
    service saslauthd stop >/dev/null 2>&1 || true
fi
