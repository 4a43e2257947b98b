#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Real traces as a look-aside cache: every trace in the traces folder, at
# each value size, against nodelay and memcached at the same -m, both fresh
# and side by side (loadgen trace: each line one multiget, every miss set);
# then the offline simulator (cachesim) over the same stream at the item
# count nodelay reached. Prints one table; run by bench/compare.sh and
# `make bench-traces`. See docs/store-eviction.md "Eviction on real traces".
#
#   bench/traces.sh [--dir DIR] [--values "100 512"] [--lines N]
#                   [--time-limit S] [--nodelay PATH] [--memcached PATH]
#                   [--no-sim] [--out DIR]
#
# Traces: DIR/*.lis[.zst] (the ARC paper's "start nblocks _ _" lines;
# N. Megiddo and D. S. Modha, "ARC: A Self-Tuning, Low Overhead Replacement
# Cache", FAST '03: cite it when publishing figures from them) and
# DIR/*.kv[.zst] ("key size" lines, replayed at their own sizes, not at
# --values). DIR defaults to ../shared/traces; with none there, nothing is
# run and that is said. -m per trace and value size:
# a quarter of the trace's footprint (its distinct keys, each with its value
# and a 56-byte header: loadgen trace --footprint), to the nearest power of
# two, at least 2, so every row evicts and each trace is sized by the same
# rule (OLTP and P3: 32 and 64 at 512 B, 8 and 16 at 100 B); NAME.m beside a
# trace holding a number overrides it.
# memcached: ../shared/ref/memcached-1.6.45, else --memcached / $MEMCACHED,
# else Debian's /usr/bin/memcached; the output says which.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# ../shared beside the checkout; from a git worktree, beside the main checkout
SHARED=$ROOT/../shared
if [ ! -d "$SHARED" ] && common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
    SHARED=$(dirname "$common")/../shared
fi
DIR=$SHARED/traces
VALUES="100 512"
LINES=0
TIME_LIMIT=900
NODELAY=$ROOT/build/release-epoll/nodelay
MEMCACHED=${MEMCACHED:-}
SIM=1
OUT=""
while [ $# -gt 0 ]; do
    case $1 in
    --dir) DIR=$2; shift ;;
    --values) VALUES=$2; shift ;;
    --lines) LINES=$2; shift ;;
    --time-limit) TIME_LIMIT=$2; shift ;;
    --nodelay) NODELAY=$2; shift ;;
    --memcached) MEMCACHED=$2; shift ;;
    --no-sim) SIM=0 ;;
    --out) OUT=$2; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "traces.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
LOADGEN=$ROOT/build/bench/loadgen
CACHESIM=$ROOT/build/bench/cachesim
make -s -C "$ROOT" loadgen cachesim >/dev/null || exit 1
[ -x "$NODELAY" ] || { echo "traces.sh: no nodelay at $NODELAY (make CONFIG=release EVENT=epoll server)" >&2; exit 1; }
REF_DIR=${NODELAY_REF_DIR:-$SHARED/ref}
if [ -x "$REF_DIR/memcached-1.6.45" ]; then
    MEMCACHED=$REF_DIR/memcached-1.6.45; MC_FROM="../shared/ref"
elif [ -n "$MEMCACHED" ]; then
    MC_FROM="--memcached/MEMCACHED= (../shared/ref/memcached-1.6.45 absent)"
else
    MEMCACHED=/usr/bin/memcached
    MC_FROM="Debian's /usr/bin/memcached (fallback: ../shared/ref/memcached-1.6.45 absent)"
fi
[ -x "$MEMCACHED" ] || { echo "traces.sh: no memcached at $MEMCACHED" >&2; exit 1; }
shopt -s nullglob
TRACES=("$DIR"/*.lis.zst "$DIR"/*.lis "$DIR"/*.kv.zst "$DIR"/*.kv)
if [ ${#TRACES[@]} = 0 ]; then
    echo "traces.sh: no traces in $DIR (*.lis[.zst], *.kv[.zst]): trace rows skipped"
    exit 0
fi
command -v zstd >/dev/null || { echo "traces.sh: zstd not installed (scripts/install-deps.sh)" >&2; exit 1; }
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/nodelay-traces.XXXXXX)
mkdir -p "$OUT"
echo "traces.sh: memcached is $MEMCACHED, $("$MEMCACHED" -V 2>&1 | head -1), from $MC_FROM"
echo "traces.sh: results in $OUT"

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
USER_FLAG=(); [ "$(id -u)" = 0 ] && USER_FLAG=(-u root)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
# start BIN MEM LOG -> SPID SPORT
start() {
    SPORT=$(free_port)
    nice "$1" -p "$SPORT" -U 0 -l 127.0.0.1 -t 1 -m "$2" -c 64 "${USER_FLAG[@]}" >"$3" 2>&1 &
    SPID=$!
    PIDS+=("$SPID")
    for _ in $(seq 50); do
        "$LOADGEN" -s "127.0.0.1:$SPORT" -c 1 -n 1 -k 1 -g 1 -q --no-verify 2>/dev/null && return 0
        sleep 0.1
    done
    echo "traces.sh: $1 did not start; see $3" >&2
    return 1
}
cat_trace() {
    case $1 in
    *.zst) zstd -dc <"$1" ;;
    *) cat "$1" ;;
    esac | if [ "$LINES" -gt 0 ]; then head -n "$LINES"; else cat; fi
}
json_field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }

printf '%-10s %4s %6s  %-22s %-22s %s\n' trace -m value "nodelay (items)" "memcached (items)" \
    "fewer misses" >"$OUT/table.txt"
FEWER=()
for tr in "${TRACES[@]}"; do
    name=$(basename "$tr"); name=${name%.zst}; fmt=${name##*.}; name=${name%.*}
    # a "key size" trace carries its sizes: one row with them ("own")
    vals=$VALUES; [ "$fmt" = kv ] && vals=own
    for v in $vals; do
        vflag=(--value "$v"); [ "$v" = own ] && vflag=()
        if [ -f "$DIR/$name.m" ]; then
            mem=$(cat "$DIR/$name.m")
        else
            fp=$(cat_trace "$tr" | "$LOADGEN" trace --footprint --format "$fmt" "${vflag[@]}") || exit 1
            mem=$(echo "$fp" | awk '{ q = $4 / 4 / 1048576; m = 2; while (m * 1.4142 < q) m *= 2; print m }')
            echo "traces.sh: $name at ${vflag[1]:-its own sizes}${vflag[1]:+ B}: $fp; -m $mem"
        fi
        base=$OUT/$name.v$v
        start "$NODELAY" "$mem" "$base.nodelay.log" || exit 1; np=$SPID; nport=$SPORT
        start "$MEMCACHED" "$mem" "$base.memcached.log" || exit 1; mp=$SPID; mport=$SPORT
        # the two replays at once: each one connection and a fixed sequence,
        # so neither figure depends on timing
        cat_trace "$tr" | nice "$LOADGEN" trace -s "127.0.0.1:$nport" --format "$fmt" "${vflag[@]}" \
            --time-limit "$TIME_LIMIT" --label "$name v$v nodelay" --json "$base.nodelay.json" &
        l1=$!
        cat_trace "$tr" | nice "$LOADGEN" trace -s "127.0.0.1:$mport" --format "$fmt" "${vflag[@]}" \
            --time-limit "$TIME_LIMIT" --label "$name v$v memcached" --json "$base.memcached.json" &
        l2=$!
        wait $l1; wait $l2
        kill "$np" "$mp" 2>/dev/null; wait "$np" "$mp" 2>/dev/null
        nr=$(json_field "$base.nodelay.json" miss_ratio); ni=$(json_field "$base.nodelay.json" items)
        mr=$(json_field "$base.memcached.json" miss_ratio); mi=$(json_field "$base.memcached.json" items)
        # relative: 1 - nodelay's misses over memcached's, second half
        fewer=$(awk -v n="$nr" -v m="$mr" 'BEGIN{ if (m > 0) printf "%.1f", 100 * (1 - n / m) }')
        [ -n "$fewer" ] && FEWER+=("$fewer")
        printf '%-10s %4s %6s  %-22s %-22s %s\n' "$name" "$mem" "$v" \
            "$(awk -v r="$nr" 'BEGIN{printf "%.2f%%", 100*r}') ($ni)" \
            "$(awk -v r="$mr" 'BEGIN{printf "%.2f%%", 100*r}') ($mi)" "${fewer:-?}%" >>"$OUT/table.txt"
        if [ "$SIM" = 1 ] && [ -n "$ni" ] && [ "$ni" -gt 0 ] 2>/dev/null; then
            # the same stream offline, at the item count each server reached
            cat_trace "$tr" | nice "$CACHESIM" --format "$fmt" --items "$ni,$mi" --memory "$mem" \
                >"$base.sim.txt" 2>&1 || echo "traces.sh: cachesim failed ($base.sim.txt)" >&2
            sed 's/^/    /' "$base.sim.txt" >>"$OUT/table.txt"
        fi
    done
done
[ ${#FEWER[@]} -gt 0 ] && echo "nodelay's misses against memcached's, mean over the ${#FEWER[@]} rows: \
$(printf '%s\n' "${FEWER[@]}" | awk '{ s += $1 } END { printf "%.1f", s / NR }')% fewer" >>"$OUT/table.txt"
cat "$OUT/table.txt"
