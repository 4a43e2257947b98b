#!/bin/sh
# Installs, from Debian's packages, everything nodelay's build, tests and
# benchmark need. Safe to run again. Each package and why:
#   build-essential, clang, libclang-rt-14-dev  compilers; clang for libFuzzer
#   libxxhash-dev        the store's hash function (xxh3: fast, well tested)
#   libcmocka-dev        the unit-test library
#   memcached            the reference we compare against, byte for byte
#   libmemcached-tools   memccapable: libmemcached's conformance tests
#   python3-pytest       runs the integration tests
#   python3-pymemcache   a real client (pure Python)
#   python3-pylibmc      a real client (libmemcached, text and binary)
#   libcache-memcached-fast-perl  a real client (Perl, XS)
#   gnuplot-nox          the benchmark's charts
#   linux-perf, strace   syscalls per request in the benchmark
#   iproute2             ss, for the connection tests
set -e
if [ "$(id -u)" != 0 ]; then
    exec sudo "$0" "$@"
fi
PKGS="build-essential clang libclang-rt-14-dev libxxhash-dev libcmocka-dev memcached
libmemcached-tools python3 python3-pytest python3-pymemcache python3-pylibmc
libcache-memcached-fast-perl gnuplot-nox linux-perf strace iproute2 procps"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
fi
# Debian's memcached package may start a system memcached on 11211; the tests
# use their own ports, so it is harmless, but stop it to keep the machine quiet.
if command -v service >/dev/null 2>&1; then service memcached stop >/dev/null 2>&1 || true; fi
