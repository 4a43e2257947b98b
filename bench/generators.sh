#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Why bench/loadgen and memtier_benchmark measure a server differently: one
# server at a time (memcached and nodelay on epoll, pinned to CPU 1), get90
# at pipeline 16 from each generator (pinned to CPU 0; memtier as it comes,
# and memtier-d: with --distinct-client-seed) for SECONDS, with the
# system calls of both sides counted (perf stat on the syscall tracepoints).
# Prints, per server and generator: server CPU µs per request (and its user
# and kernel parts), requests per
# server read (how many requests one read finds: what a server can batch),
# server writes per request, the server's waits for events (epoll_wait) per
# request, and the generator's sends per request.
#
#   bench/generators.sh [--seconds S] [--memcached PATH] [--memtier PATH]
#                       [--nodelay PATH]
#
# memcached and memtier_benchmark are found as bench/compare.sh finds them.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_RUN=5
NODELAY=$ROOT/build/release-epoll/nodelay
REF_DIR=${NODELAY_REF_DIR:-$ROOT/../shared/ref}
MEMCACHED=${MEMCACHED:-}
MEMTIER=${MEMTIER:-}
while [ $# -gt 0 ]; do
    case $1 in
    --seconds) SECONDS_RUN=$2; shift ;;
    --memcached) MEMCACHED=$2; shift ;;
    --memtier) MEMTIER=$2; shift ;;
    --nodelay) NODELAY=$2; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "generators.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$REF_DIR/memcached-1.6.45" ] && MEMCACHED=$REF_DIR/memcached-1.6.45
MEMCACHED=${MEMCACHED:-/usr/bin/memcached}
[ -x "$REF_DIR/memtier_benchmark" ] && MEMTIER=$REF_DIR/memtier_benchmark
MEMTIER=${MEMTIER:-$(command -v memtier_benchmark || true)}
[ -n "$MEMTIER" ] || { echo "generators.sh: no memtier_benchmark (../shared/ref, MEMTIER= or PATH)" >&2; exit 1; }
LOADGEN=$ROOT/build/bench/loadgen
make -s loadgen >/dev/null
WORK=$(mktemp -d)
SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$WORK"' EXIT
CLK_TCK=$(getconf CLK_TCK)
USER_FLAG=(); [ "$(id -u)" = 0 ] && USER_FLAG=(-u root)
EV=syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg
EV=$EV,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_epoll_pwait2,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendto

# count FILE PATTERN: the sum of perf stat's counts whose event matches PATTERN
count() { awk -F, -v p="$2" '$3 ~ p {s += $1} END {print s + 0}' "$1"; }

echo "get90 at pipeline 16, 50 connections, 100 B values, ${SECONDS_RUN} s per run"
printf '%-22s %-9s %9s %11s %10s %9s %11s %10s %14s\n' server generator "ops/s" "CPU µs/req" \
    "user/sys" \
    "req/read" "writes/req" "waits/req" "gen sends/req"
for srv in memcached nodelay; do
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    if [ $srv = memcached ]; then
        bin=$MEMCACHED; args=(); name=$("$MEMCACHED" -V | head -1)
    else
        bin=$NODELAY; args=(-o io_uring=off); name="nodelay (epoll)"
    fi
    taskset -c 1 "$bin" -p "$port" -U 0 -l 127.0.0.1 -t 1 -m 256 -c 4096 "${USER_FLAG[@]}" "${args[@]}" \
        >"$WORK/$srv.log" 2>&1 &
    SPID=$!
    for _ in $(seq 50); do
        "$LOADGEN" -s "127.0.0.1:$port" -c 1 -n 1 -k 1 -g 1 -q --no-verify 2>/dev/null && break
        sleep 0.1
    done
    taskset -c 0 "$LOADGEN" -s "127.0.0.1:$port" -q --prefill -c 10 -d 16 -k 100000 -v 100
    taskset -c 0 "$MEMTIER" -s 127.0.0.1 -p "$port" -P memcache_text -t 1 -c 10 --ratio=1:0 \
        --key-pattern=P:P -n allkeys --key-minimum=1 --key-maximum=100000 -d 100 \
        --hide-histogram >/dev/null 2>&1
    for gen in loadgen memtier memtier-d; do
        if [ $gen = loadgen ]; then
            cmd=("$LOADGEN" -s "127.0.0.1:$port" -c 50 -d 16 -g 0.9 -v 100 -k 100000
                 -D "$SECONDS_RUN" -q --json "$WORK/out.json")
        else
            # memtier-d: --distinct-client-seed, each connection its own key
            # sequence (without it all 50 ask for the same keys in turn)
            cmd=("$MEMTIER" -s 127.0.0.1 -p "$port" -P memcache_text -t 1 -c 50 --ratio=1:9
                 --pipeline=16 --key-minimum=1 --key-maximum=100000 -d 100
                 --test-time="$SECONDS_RUN" --hide-histogram --json-out-file="$WORK/mt.json")
            [ $gen = memtier-d ] && cmd+=(--distinct-client-seed)
        fi
        perf stat -e "$EV" -x , -p "$SPID" -o "$WORK/srv.perf" &
        pp=$!
        sleep 0.2
        read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$SPID/stat")
        taskset -c 0 perf stat -e "$EV" -x , -o "$WORK/gen.perf" -- "${cmd[@]}" >/dev/null 2>&1
        read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$SPID/stat")
        kill -INT "$pp"; wait "$pp" 2>/dev/null || true
        [ $gen != loadgen ] && /usr/bin/python3 bench/memtier_json.py "$WORK/mt.json" "$WORK/out.json"
        read -r req ops < <(/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["requests"], j["ops_per_s"])' "$WORK/out.json")
        reads=$(count "$WORK/srv.perf" 'sys_enter_(read|recvfrom|recvmsg)$')
        writes=$(count "$WORK/srv.perf" 'sys_enter_(write|writev|sendmsg|sendto)$')
        sends=$(count "$WORK/gen.perf" 'sys_enter_(write|writev|sendmsg|sendto)$')
        waits=$(count "$WORK/srv.perf" 'sys_enter_epoll_p?wait$')
        awk -v n="$name" -v g="$gen" -v req="$req" -v ops="$ops" -v u=$((u1 - u0)) -v k=$((s1 - s0)) -v hz="$CLK_TCK" \
            -v r="$reads" -v w="$writes" -v s="$sends" -v e="$waits" 'BEGIN {
            printf "%-22s %-9s %9.0f %11.2f %5.2f/%4.2f %9.1f %11.3f %10.3f %14.3f\n", n, g, ops,
                (u + k) * 1e6 / hz / req, u * 1e6 / hz / req, k * 1e6 / hz / req,
                (r ? req / r : 0), w / req, e / req, s / req }'
    done
    kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=""
done
