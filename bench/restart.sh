#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Restart time of a full -e cache: nodelay after a graceful stop (SIGTERM)
# and after kill -9, memcached 1.6.45 (../shared/ref) after SIGUSR1 (it
# restores nothing after a kill).
#
#   bash bench/restart.sh [--no-memcached] [SIZES_MB] [VALUE_BYTES] [RUNS]
#   bash bench/restart.sh "1024 4096" "100 10240" 2    (the default)
#
# NODELAY_BINS="A B" restarts each binary in turn in every run, on the one
# filled file (the first fills it): interleaved runs, which judge a change
# on a loaded machine; the server column names the binary.
#
# --no-memcached leaves memcached's rows out (their figures do not change
# with nodelay's; a 4 GiB fill of memcached alone takes minutes here).
#
# For each size and value: start with -m SIZE -e /dev/shm/FILE, fill with
# `loadgen fill` until the first eviction (a full cache), then RUNS times:
# stop gracefully and start again, kill -9 and start again; each start is
# timed: `ready` is from exec to the port accepting (what a client
# waits), `restore_ms` nodelay's own figure and `restore_cpu_ms` the CPU
# time in it (on a loaded machine the rest is waiting for a core), and the
# 1-minute load average after it. Prints one
# markdown row per run. Needs SIZE of free /dev/shm; everything is on
# 127.0.0.1 and removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

WITH_MC=1
if [ "${1:-}" = --no-memcached ]; then
    WITH_MC=
    shift
fi
SIZES=${1:-"1024 4096"}
VALUES=${2:-"100 10240"}
RUNS=${3:-2}
ND=${NODELAY_BIN:-build/release-epoll/nodelay}
NDS=${NODELAY_BINS:-$ND}
ND=${NDS%% *}
# ../shared/ref beside the project (a worktree's is beside the main checkout)
MC=${MEMCACHED_REF:-../shared/ref/memcached-1.6.45}
if [ ! -x "$MC" ] && common=$(git rev-parse --git-common-dir 2>/dev/null); then
    MC="$(dirname "$(cd "$common" && pwd)")/../shared/ref/memcached-1.6.45"
fi
LG=build/bench/loadgen
PORT=${BENCH_PORT:-22811}
FILE=/dev/shm/nodelay-bench-restart.$$
make -s CONFIG=release server >/dev/null
make -s loadgen >/dev/null
USER_FLAG=()
[ "$(id -u)" = 0 ] && USER_FLAG=(-u root)
PID=
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true
    rm -f "$FILE" "$FILE.meta"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }

wait_port() { # until the port accepts; sets READY to the ms since $1
    local t0=$1
    for _ in $(seq 1 60000); do
        if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then
            READY=$(( $(now_ms) - t0 ))
            return 0
        fi
        sleep 0.005
    done
    echo "server did not start" >&2
    return 1
}

stat_of() { # stat_of SUBCOMMAND NAME
    exec 3<>/dev/tcp/127.0.0.1/$PORT
    printf 'stats %s\r\nquit\r\n' "$1" >&3
    tr -d '\r' <&3 | awk -v k="$2" '$1 == "STAT" && $2 == k { print $3 }'
    exec 3<&-
}

start() { # start BINARY FLAGS...; sets PID and READY (ms until it accepts)
    local t0
    t0=$(now_ms)
    "$@" -p "$PORT" -U 0 -l 127.0.0.1 "${USER_FLAG[@]}" -t 4 >/dev/null 2>&1 &
    PID=$!
    wait_port "$t0"
}

stop() { # stop SIGNAL; waits for the exit, sets STOPPED (ms)
    local t0
    t0=$(now_ms)
    kill "-$1" "$PID"
    wait "$PID" 2>/dev/null || true
    PID=
    STOPPED=$(( $(now_ms) - t0 ))
}

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo -; } # the 1-minute load average

echo "| server | -m MB | value B | items | stop | stop ms | ready ms | restore_ms | restore_cpu_ms | items after | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for mb in $SIZES; do
    for v in $VALUES; do
        # One fill, then RUNS restarts after each kind of stop: each start
        # restores what the one before it restored.
        rm -f "$FILE"
        start "$ND" -m "$mb" -e "$FILE"
        "$LG" fill -s 127.0.0.1:$PORT -v "$v" >/dev/null
        items=$(stat_of "" curr_items)
        for _ in $(seq 1 "$RUNS"); do
            for nd in $NDS; do
                name=nodelay
                [ "$NDS" != "$ND" ] && name=$nd
                for how in TERM KILL; do
                    stop "$how"
                    start "$nd" -m "$mb" -e "$FILE"
                    after=$(stat_of "" curr_items)
                    rms=$(stat_of nodelay restore_ms)
                    cms=$(stat_of nodelay restore_cpu_ms)
                    echo "| $name | $mb | $v | $items | $how | $STOPPED | $READY | $rms | $cms | $after | $(load) |"
                done
            done
        done
        stop TERM
        if [ -z "$WITH_MC" ]; then
            :
        elif [ -x "$MC" ]; then
            rm -f "$FILE" "$FILE.meta"
            start "$MC" -m "$mb" -e "$FILE"
            "$LG" fill -s 127.0.0.1:$PORT -v "$v" >/dev/null
            items=$(stat_of "" curr_items)
            stop USR1
            start "$MC" -m "$mb" -e "$FILE"
            after=$(stat_of "" curr_items)
            echo "| memcached 1.6.45 | $mb | $v | $items | USR1 | $STOPPED | $READY | - | - | $after | $(load) |"
            stop TERM
        else
            echo "| memcached 1.6.45 | $mb | $v | - | - | - | - | - | - | ($MC absent) | - |"
        fi
    done
done
