#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What part of a request's CPU the kernel takes, measured on the floor
# server (bench/floor: no cache, canned replies), pinned to CPU 1 as
# `make bench` pins it, under one of compare.sh's loadgen workloads on CPU 0:
# perf record for SECONDS, then the kernel's and user space's shares of the
# samples and the top symbols. Where the floor's CPU per request is above a
# target, this says how much of it no server could remove.
#
#   bench/floor_profile.sh [--backend epoll|uring] [--workload get90_p1|get90_p16|mget16]
#                          [--seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."
BACKEND=epoll
WORKLOAD=get90_p16
SECS=4
while [ $# -gt 0 ]; do
    case $1 in
    --backend) BACKEND=$2; shift ;;
    --workload) WORKLOAD=$2; shift ;;
    --seconds) SECS=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "floor_profile.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
case $WORKLOAD in
get90_p1) ARGS="-c 50 -d 1 -g 0.9 -v 100 -k 100000" ;;
get90_p16) ARGS="-c 50 -d 16 -g 0.9 -v 100 -k 100000" ;;
mget16) ARGS="-c 50 -d 1 -g 1 -m 16 -v 100 -k 100000" ;;
*) echo "floor_profile.sh: unknown workload $WORKLOAD" >&2; exit 2 ;;
esac
make -s loadgen floor >/dev/null
WORK=$(mktemp -d)
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 build/bench/floor -b "$BACKEND" -p "$PORT" -t 1 -v 100 >"$WORK/floor.log" 2>&1 &
FPID=$!
trap 'kill $FPID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do
    build/bench/loadgen -s "127.0.0.1:$PORT" -c 1 -n 1 -k 1 -g 1 -q --no-verify 2>/dev/null && break
    sleep 0.1
done
# shellcheck disable=SC2086
taskset -c 0 build/bench/loadgen -s "127.0.0.1:$PORT" $ARGS --no-verify -q \
    -D "$(awk -v s="$SECS" 'BEGIN {print s + 2}')" --json "$WORK/lg.json" &
LG=$!
sleep 1
perf record -F 4000 -g -p "$FPID" -o "$WORK/perf.data" -- sleep "$SECS" >/dev/null 2>&1
wait "$LG"
echo "floor ($BACKEND) under $WORKLOAD: $(grep -o '"ops_per_s": [0-9.]*' "$WORK/lg.json")"
perf report -i "$WORK/perf.data" --no-children --sort dso -g none --stdio 2>/dev/null |
    awk '/^ *[0-9.]+%/ {k = ($2 ~ /kernel/) ? "kernel" : "user space (" $2 ")"; s[k] += $1}
         END {for (x in s) printf "  %5.1f %%  %s\n", s[x], x}' | sort -rn
echo "top symbols:"
perf report -i "$WORK/perf.data" --no-children --sort symbol -g none --stdio 2>/dev/null |
    grep -E '^ *[0-9.]+%' | head -12
