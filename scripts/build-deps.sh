#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Installs, from Debian's packages, what `make` needs to build the server and
# nothing more (the README's first command runs it on a fresh machine).
# scripts/install-deps.sh runs this first, then adds what the tests need.
# Safe to run again: installs only what is missing. Runs apt as root, through
# sudo when started as another user. Each package and why:
#   make, gcc, libc6-dev   the build: plain `make`
#   libxxhash-dev          the store's hash function (xxh3: fast, well tested)
#   libssl-dev             TLS (-Z): OpenSSL, as Debian's memcached uses
#   pkg-config             the Makefile asks it whether libsystemd is there
#   libsystemd-dev         sd_notify(READY=1) for the systemd unit's Type=notify
#                          (optional: without it the build works, sends nothing)
#   libmicrohttpd-dev      the Prometheus endpoint's HTTP server (-o metrics_listen;
#                          optional: without it the build works and refuses that option)
#   liburing-dev           the io_uring event backend (-o io_uring; optional: without
#                          it the build works, on epoll alone)
set -e
if [ "$(id -u)" != 0 ]; then
    exec sudo "$0" "$@"
fi
PKGS="make gcc libc6-dev libxxhash-dev libssl-dev pkg-config libsystemd-dev libmicrohttpd-dev liburing-dev"
missing=""
for p in $PKGS "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    apt-get install -y -qq --no-install-recommends $missing
fi
