#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Side by side: memcached (A) against nodelay (B; with its io_uring
# backend, also Be: the same binary with -o io_uring=off), the canned-reply
# floor servers (F on epoll, Fu on io_uring: no cache at all), plus a second
# memcached (A') so the report shows the noise floor (A'/A). Then the same at
# -t 2 with the load generator on the same cores (the *_t2 workloads). Run by
# `make bench`; see docs/benchmark.md for what each number means.
#
# memcached (A): ../shared/ref/memcached-1.6.45 from the project root (or
# $NODELAY_REF_DIR/memcached-1.6.45) when present; otherwise $MEMCACHED (or
# --memcached PATH); otherwise Debian's /usr/bin/memcached. The headline
# workloads also run under memtier_benchmark (the mt_* rows):
# ../shared/ref/memtier_benchmark, else $MEMTIER (or --memtier PATH), else one
# on PATH; with none, those rows are skipped and the report says so.
#
#   bench/compare.sh [--duration S] [--rounds N] [--threads T] [--memory MB]
#                    [--rate OPS] [--replay-requests N] [--scan N]
#                    [--skip-fill] [--skip-replay] [--skip-flash] [--skip-gap]
#                    [--flash-full]
#                    [--workloads a,b,...]
#                    [--nodelay PATH] [--memcached PATH] [--memtier PATH]
#                    [--floor PATH] [--out DIR] [--publish]
#
# A run writes bench/results/tmp/<UTC date>/ (untracked) or --out DIR, and
# leaves the tracked results alone; --publish writes bench/results/<UTC date>/
# (unless --out) and makes it bench/results/latest*, which the README shows.
set -euo pipefail
# The whole script is one block, so bash parses it before running: editing
# this file while a run is in progress cannot corrupt that run.
{

cd "$(dirname "$0")/.."
ROOT=$(pwd)

DURATION=2          # seconds per measured run
SYSCALL_DURATION=1  # seconds of the separate run that counts syscalls
ROUNDS=3
THREADS=1
MEMORY=256          # -m of the workload servers (no eviction there)
RATE=auto           # offered ops/s of the fixed-rate latency run; auto = half
                    # of what memcached sustains on get90_p1 here, measured first
REPLAY_REQUESTS=5000000
SCAN=2000000
SKIP_FILL=0
SKIP_REPLAY=0
SKIP_FLASH=0
SKIP_GAP=0
GAP_ROUNDS=5        # rounds of the floor gap measured with both loaded at once
FLASH_MODE=--short  # bench/flash.py: 32 MB, 2 s; --flash-full: 256 MB, 30 s
WORKLOADS=""
NODELAY=$ROOT/build/release-epoll/nodelay
MEMCACHED=${MEMCACHED:-}
MEMTIER=${MEMTIER:-}
FLOOR=$ROOT/build/bench/floor
OUT=""
PUBLISH=0

while [ $# -gt 0 ]; do
    case $1 in
    --duration) DURATION=$2; shift ;;
    --syscall-duration) SYSCALL_DURATION=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    --memory) MEMORY=$2; shift ;;
    --rate) RATE=$2; shift ;;
    --replay-requests) REPLAY_REQUESTS=$2; shift ;;
    --scan) SCAN=$2; shift ;;
    --skip-fill) SKIP_FILL=1 ;;
    --skip-replay) SKIP_REPLAY=1 ;;
    --skip-flash) SKIP_FLASH=1 ;;
    --skip-gap) SKIP_GAP=1 ;;
    --flash-full) FLASH_MODE="" ;;
    --workloads) WORKLOADS=$2; shift ;;
    --nodelay) NODELAY=$2; shift ;;
    --memcached) MEMCACHED=$2; shift ;;
    --memtier) MEMTIER=$2; shift ;;
    --floor) FLOOR=$2; shift ;;
    --out) OUT=$2; shift ;;
    --publish) PUBLISH=1 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

LOADGEN=$ROOT/build/bench/loadgen
make -s loadgen floor >/dev/null
[ -x "$NODELAY" ] || { echo "compare.sh: no nodelay at $NODELAY (make CONFIG=release server)" >&2; exit 1; }
# The reference memcached and the second load generator: the project's shared
# folder first (what the README's figures were measured with), then what the
# user names, then what Debian has. MC_FROM/MT_FROM say which, in the report.
REF_DIR=${NODELAY_REF_DIR:-$ROOT/../shared/ref}
if [ -x "$REF_DIR/memcached-1.6.45" ]; then
    MEMCACHED=$REF_DIR/memcached-1.6.45
    MC_FROM="../shared/ref"
elif [ -n "$MEMCACHED" ]; then
    MC_FROM="MEMCACHED= (../shared/ref/memcached-1.6.45 absent)"
else
    MEMCACHED=/usr/bin/memcached
    MC_FROM="Debian's /usr/bin/memcached (fallback: ../shared/ref/memcached-1.6.45 absent, no MEMCACHED=)"
fi
[ -x "$MEMCACHED" ] || { echo "compare.sh: no memcached at $MEMCACHED" >&2; exit 1; }
MC_VERSION=$("$MEMCACHED" -V 2>&1 | head -1)
echo "compare.sh: memcached (A) is $MEMCACHED, $MC_VERSION, from $MC_FROM"
if [ -x "$REF_DIR/memtier_benchmark" ]; then
    MEMTIER=$REF_DIR/memtier_benchmark
    MT_FROM="../shared/ref"
elif [ -n "$MEMTIER" ]; then
    MT_FROM="MEMTIER= (../shared/ref/memtier_benchmark absent)"
elif command -v memtier_benchmark >/dev/null 2>&1; then
    MEMTIER=$(command -v memtier_benchmark)
    MT_FROM="PATH (../shared/ref/memtier_benchmark absent)"
fi
MT_VERSION=""
if [ -n "$MEMTIER" ] && ! MT_VERSION=$("$MEMTIER" --version 2>&1 | head -1); then
    echo "compare.sh: $MEMTIER does not run ($MT_VERSION): no memtier rows" >&2
    MEMTIER=""
fi
if [ -n "$MEMTIER" ]; then
    echo "compare.sh: memtier_benchmark is $MEMTIER, $MT_VERSION, from $MT_FROM"
else
    MT_FROM="absent (no ../shared/ref/memtier_benchmark, MEMTIER= or memtier_benchmark on PATH): its rows skipped"
    echo "compare.sh: memtier_benchmark $MT_FROM" >&2
fi
[ -x "$FLOOR" ] || echo "compare.sh: no floor server at $FLOOR (make floor): no floor rows" >&2
# The io_uring backend's switch: when the binary has it, the epoll row (Be)
# runs beside the default backend.
HAVE_URING_OPT=0
# (not `-h | grep -q`: grep leaving early kills -h with SIGPIPE, and
# pipefail then says no)
case "$("$NODELAY" -h 2>/dev/null)" in *io_uring=*) HAVE_URING_OPT=1 ;; esac

STAMP=$(date -u +%Y-%m-%dT%H%MZ)
if [ "$PUBLISH" = 1 ]; then
    OUT=${OUT:-$ROOT/bench/results/$STAMP}
else
    OUT=${OUT:-$ROOT/bench/results/tmp/$STAMP} # .gitignore'd
fi
mkdir -p "$OUT/runs"
RUNS=$OUT/runs.tsv
: >"$RUNS"

# Servers on the last core(s), the load generator on core 0: they never
# compete for a core with each other (other processes on the machine still may).
NCPU=$(nproc)
if [ "$NCPU" -ge 2 ]; then
    LG_CPUS=0
    if [ "$NCPU" -gt "$THREADS" ]; then
        SRV_CPUS="1-$THREADS"
    else
        SRV_CPUS="1-$((NCPU - 1))"
    fi
    LG_PIN=(taskset -c "$LG_CPUS")
    SRV_PIN=(taskset -c "$SRV_CPUS")
    # -t 2 on a 2-core machine: servers and load generator share both cores.
    T2_CPUS="0-$((NCPU - 1))"
    [ "$NCPU" -gt 2 ] && T2_CPUS="0-1"
else
    T2_CPUS=all
    LG_PIN=()
    SRV_PIN=()
    SRV_CPUS=all
    LG_CPUS=all
fi
USER_FLAG=()
[ "$(id -u)" = 0 ] && USER_FLAG=(-u root)
CLK_TCK=$(getconf CLK_TCK)

PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Extra server flags and load generator environment: empty for plaintext,
# -Z and LOADGEN_TLS=1 for the tls_* workloads (use_tls).
SRV_EXTRA=()
LG_ENV=()
TLS_DIR=$OUT/tls
use_tls() {
    if [ "$1" = 1 ]; then
        SRV_EXTRA=(-Z -o "ssl_chain_cert=$TLS_DIR/cert.pem,ssl_key=$TLS_DIR/key.pem")
        LG_ENV=(LOADGEN_TLS=1)
    else
        SRV_EXTRA=()
        LG_ENV=()
    fi
}

# Threads and CPUs of the servers being started (the -t 2 group changes them).
CUR_THREADS=$THREADS
CUR_PIN=("${SRV_PIN[@]}")

wait_ready() {
    local name=$1
    for _ in $(seq 50); do
        if env "${LG_ENV[@]}" "$LOADGEN" -s "127.0.0.1:$SPORT" -c 1 -n 1 -k 1 -g 1 -q \
            --no-verify 2>/dev/null; then
            return 0
        fi
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.1
    done
    echo "compare.sh: $name did not start; see $OUT/$name.log" >&2
    return 1
}

# start_server NAME BINARY MEMORY [FLAGS...] -> sets SPID and SPORT
start_server() {
    local name=$1 bin=$2 mem=$3
    shift 3
    SPORT=$(free_port)
    "${CUR_PIN[@]}" "$bin" -p "$SPORT" -U 0 -l 127.0.0.1 -t "$CUR_THREADS" -m "$mem" -c 4096 \
        "${USER_FLAG[@]}" "${SRV_EXTRA[@]}" "$@" >"$OUT/$name.log" 2>&1 &
    SPID=$!
    PIDS+=("$SPID")
    wait_ready "$name ($bin)" || exit 1
}

# start_floor NAME BACKEND VALUE_BYTES [VALUES] -> SPID and SPORT, or returns 1
# (no floor binary, or no io_uring here: that row is left out, said in its log)
start_floor() {
    local name=$1 backend=$2 vlen=$3 nvalues=${4:-1}
    [ -x "$FLOOR" ] || return 1
    SPORT=$(free_port)
    "${CUR_PIN[@]}" "$FLOOR" -b "$backend" -p "$SPORT" -t "$CUR_THREADS" -v "$vlen" \
        -n "$nvalues" >"$OUT/$name.log" 2>&1 &
    SPID=$!
    PIDS+=("$SPID")
    wait_ready "$name ($FLOOR -b $backend)"
}

stop_server() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Workloads: name | loadgen arguments. Each key set is prefilled first.
declare -A WL
WL[get90_p1]="-c 50 -d 1 -g 0.9 -v 100 -k 100000"
WL[get90_p16]="-c 50 -d 16 -g 0.9 -v 100 -k 100000"
WL[mget16]="-c 50 -d 1 -g 1 -m 16 -v 100 -k 100000"
WL[large100k]="-c 10 -d 1 -g 0.9 -v 102400 -k 200 --key-base 1000000"
WL[set90]="-c 50 -d 1 -g 0.1 -v 100 -k 100000"
WL[meta_mg_p16]="-c 50 -d 16 -g 1 -p meta -v 100 -k 100000"
# The same over TLS (-Z, one self-signed certificate for both servers).
WL[tls_get90_p1]=${WL[get90_p1]}
WL[tls_get90_p16]=${WL[get90_p16]}
WL[tls_large100k]=${WL[large100k]}
# -t 2 for every server, the load generator with two threads on the same
# two cores (docs/benchmark.md "-t 2").
WL[get90_p1_t2]="-t 2 ${WL[get90_p1]}"
WL[get90_p16_t2]="-t 2 ${WL[get90_p16]}"
# The headline workloads again under memtier_benchmark (mt_*: memtier's own
# keys, memtier-1 .. memtier-100000, prefilled by memtier; the rate row's
# arguments are set once the rate is known). Same connections, mix and sizes.
declare -A MT
# --distinct-client-seed: each connection its own random key sequence, as
# loadgen's are. memtier's default gives all 50 the same sequence, so each key
# is asked for 50 times in a row and stays in the CPU's caches: a different
# workload (docs/benchmark.md, "Why the two load generators differ");
# MEMTIER_EXTRA= (empty) runs that default instead.
MT_EXTRA=${MEMTIER_EXTRA---distinct-client-seed}
MT_KEYS="--key-minimum=1 --key-maximum=100000 -d 100"
MT[mt_get90_p1]="-c 50 --ratio=1:9 --pipeline=1 $MT_KEYS $MT_EXTRA"
MT[mt_get90_p16]="-c 50 --ratio=1:9 --pipeline=16 $MT_KEYS $MT_EXTRA"
MT[mt_mget16]="-c 50 --ratio=0:16 --multi-key-get=16 $MT_KEYS $MT_EXTRA"
MT[mt_get90_rate]=""
for w in "${!MT[@]}"; do WL[$w]=${MT[$w]}; done
ORDER=(get90_p1 mt_get90_p1 get90_p16 mt_get90_p16 get90_rate mt_get90_rate mget16 mt_mget16
       large100k set90 meta_mg_p16
       tls_get90_p1 tls_get90_p16 tls_large100k get90_p1_t2 get90_p16_t2)
if [ -n "$WORKLOADS" ]; then
    IFS=, read -r -a ORDER <<<"$WORKLOADS"
fi
if [ -z "$MEMTIER" ]; then
    kept=()
    for w in "${ORDER[@]}"; do [[ $w == mt_* ]] || kept+=("$w"); done
    ORDER=("${kept[@]}")
fi
# memtier's --test-time takes whole seconds
int_secs() { local s=${1%.*}; [ "${s:-0}" -ge 1 ] 2>/dev/null && echo "$s" || echo 1; }

# run_memtier PORT ARGS SECONDS OUTBASE: one memtier run on the load
# generator's core, its JSON turned into loadgen's (OUTBASE.json) so the
# report reads both alike.
run_memtier() {
    local port=$1 args=$2 secs=$3 base=$4
    # shellcheck disable=SC2086
    "${LG_PIN[@]}" "$MEMTIER" -s 127.0.0.1 -p "$port" -P memcache_text -t 1 $args \
        --test-time="$(int_secs "$secs")" --hide-histogram --json-out-file="$base.mt.json" \
        >"$base.mt.log" 2>&1 || echo "memtier exit $? (see $base.mt.log)" >&2
    /usr/bin/python3 "$ROOT/bench/memtier_json.py" "$base.mt.json" "$base.json" ||
        echo "memtier: no result for $base" >&2
}

prefill() {
    local port=$1
    env "${LG_ENV[@]}" "${LG_PIN[@]}" "$LOADGEN" -s "127.0.0.1:$port" -q --prefill -c 10 -d 16 \
        -k 100000 -v 100
    env "${LG_ENV[@]}" "${LG_PIN[@]}" "$LOADGEN" -s "127.0.0.1:$port" -q --prefill -c 4 -d 2 \
        -k 200 --key-base 1000000 -v 102400
    # memtier's keys (plaintext only: the mt_* rows are not run over TLS)
    if [ -n "$MEMTIER" ] && [ "${#LG_ENV[@]}" = 0 ] && printf '%s\n' "${ORDER[@]}" | grep -q '^mt_'; then
        # shellcheck disable=SC2086
        "${LG_PIN[@]}" "$MEMTIER" -s 127.0.0.1 -p "$port" -P memcache_text -t 1 -c 10 --ratio=1:0 \
            --key-pattern=P:P -n allkeys $MT_KEYS --hide-histogram >/dev/null 2>&1 ||
            echo "compare.sh: memtier prefill failed on port $port" >&2
    fi
}

uptime >"$OUT/load-before.txt"
echo "compare.sh: results in $OUT"

# ---- workloads: A, B, (Be,) (F, Fu,) A' in turn, ROUNDS times ----
declare -A SRV_PID SRV_PORT
# start_group PREFIX: memcached twice, nodelay (and its epoll row), prefilled;
# the floor servers when PREFIX is not TLS (F/Fu answer 100 B values, FL/FLu
# the 100 KiB ones, from 200 buffers: as much memory as large100k's 200 keys
# take in a cache, so their copies miss the caches as a cache's do).
start_group() {
    local g=$1
    start_server "${g}A" "$MEMCACHED" "$MEMORY"; SRV_PID[${g}A]=$SPID; SRV_PORT[${g}A]=$SPORT
    start_server "${g}B" "$NODELAY" "$MEMORY"; SRV_PID[${g}B]=$SPID; SRV_PORT[${g}B]=$SPORT
    local set=("${g}A" "${g}B")
    if [ "$HAVE_URING_OPT" = 1 ]; then
        start_server "${g}Be" "$NODELAY" "$MEMORY" -o io_uring=off
        SRV_PID[${g}Be]=$SPID; SRV_PORT[${g}Be]=$SPORT; set+=("${g}Be")
    fi
    start_server "${g}A2" "$MEMCACHED" "$MEMORY"; SRV_PID[${g}A2]=$SPID; SRV_PORT[${g}A2]=$SPORT
    set+=("${g}A2")
    for s in "${set[@]}"; do prefill "${SRV_PORT[$s]}"; done
    [ "$g" = T ] && return 0
    local f
    for f in F:epoll:100:1 Fu:uring:100:1 FL:epoll:102400:200 FLu:uring:102400:200; do
        IFS=: read -r n b v k <<<"$f"
        if start_floor "$g$n" "$b" "$v" "$k"; then
            SRV_PID[$g$n]=$SPID; SRV_PORT[$g$n]=$SPORT
        fi
    done
}
has_workload() { printf '%s\n' "${ORDER[@]}" | grep -q "$1"; }
start_group ""
# The TLS trio (tls_* workloads): the same servers with -Z, keys "TA" ...
if printf '%s\n' "${ORDER[@]}" | grep -q '^tls_'; then
    mkdir -p "$TLS_DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$TLS_DIR/key.pem" -out "$TLS_DIR/cert.pem" -days 2 -subj /CN=127.0.0.1 \
        >/dev/null 2>&1 || { echo "compare.sh: openssl could not make a certificate" >&2; exit 1; }
    use_tls 1
    start_group T
    use_tls 0
fi
# The -t 2 group (*_t2 workloads): every server at -t 2 on both cores.
if has_workload '_t2$'; then
    CUR_THREADS=2
    CUR_PIN=(); [ "$T2_CPUS" != all ] && CUR_PIN=(taskset -c "$T2_CPUS")
    start_group 2
    CUR_THREADS=$THREADS
    CUR_PIN=("${SRV_PIN[@]}")
fi

# The fixed-rate run must offer a load both servers can carry, or it measures
# only a growing queue: by default half of what memcached sustains right now.
if [ "$RATE" = auto ]; then
    # shellcheck disable=SC2086
    RATE=$("${LG_PIN[@]}" "$LOADGEN" -s "127.0.0.1:${SRV_PORT[A]}" ${WL[get90_p1]} -D 1 -q --json - |
        /usr/bin/python3 -c 'import json,sys; print(max(1000, int(json.load(sys.stdin)["ops_per_s"] / 2000) * 1000))')
    echo "compare.sh: fixed rate for get90_rate: $RATE ops/s"
fi
WL[get90_rate]="-c 50 -d 1 -g 0.9 -v 100 -k 100000 -r $RATE"
# memtier limits each connection's rate: the same total over its 50
MT[mt_get90_rate]="${MT[mt_get90_p1]} --rate-limiting=$(((RATE + 49) / 50))"
WL[mt_get90_rate]=${MT[mt_get90_rate]}

for round in $(seq "$ROUNDS"); do
    for w in "${ORDER[@]}"; do
        args=${WL[$w]:?unknown workload $w}
        tls=0; srv_prefix=""; lg_pin=("${LG_PIN[@]}")
        case $w in
        tls_*) tls=1; srv_prefix=T ;;
        *_t2) srv_prefix=2; lg_pin=(); [ "$T2_CPUS" != all ] && lg_pin=(taskset -c "$T2_CPUS") ;;
        esac
        use_tls "$tls"
        # The floors answer text get/set only; FL* carry the 100 KiB values.
        floors=(F Fu)
        case $w in
        large100k*) floors=(FL FLu) ;;
        meta_*|tls_*) floors=() ;;
        esac
        mt=0; [[ $w == mt_* ]] && mt=1
        for s in A B Be "${floors[@]}" A2; do
            [ -n "${SRV_PID[$srv_prefix$s]:-}" ] || continue
            pid=${SRV_PID[$srv_prefix$s]}
            port=${SRV_PORT[$srv_prefix$s]}
            # The measured run checks keys, not values, for every server:
            # checking costs the load generator's core, which slows its
            # requests and so raises the server's CPU per request, and the
            # floors' canned bytes cannot be checked. The syscall run
            # below checks every value memcached and nodelay return.
            nv=(); case $s in F*) nv=(--no-verify) ;; esac
            # report.py names the floor rows F and Fu whatever value size they carry
            row=$s; case $s in FL) row=F ;; FLu) row=Fu ;; esac
            base=$OUT/runs/$w.$row.$round
            # CPU: utime+stime of every server thread over the measured run
            t0=$(cpu_ticks "$pid")
            if [ "$mt" = 1 ]; then
                run_memtier "$port" "$args" "$DURATION" "$base"
                # memtier's JSON is written after its connections close: the
                # server's CPU is read when memtier is done, as for loadgen
            else
            # shellcheck disable=SC2086
            env "${LG_ENV[@]}" "${lg_pin[@]}" "$LOADGEN" -s "127.0.0.1:$port" $args -D "$DURATION" \
                --no-verify -q --seed "$round" --json "$base.json" || echo "loadgen exit $? ($w $s)" >&2
            fi
            t1=$(cpu_ticks "$pid")
            # syscalls: a separate, shorter run, so tracing never inflates the CPU figure
            perf stat -e raw_syscalls:sys_enter -x , -p "$pid" -o "$base.perf" &
            pp=$!
            sleep 0.2
            if [ "$mt" = 1 ]; then
                run_memtier "$port" "$args" "$SYSCALL_DURATION" "$base.sys"
            else
            # shellcheck disable=SC2086
            env "${LG_ENV[@]}" "${lg_pin[@]}" "$LOADGEN" -s "127.0.0.1:$port" $args \
                -D "$SYSCALL_DURATION" "${nv[@]}" -q --seed "$((round + 100))" --json "$base.sys.json" || true
            fi
            kill -INT "$pp" 2>/dev/null || true
            wait "$pp" 2>/dev/null || true
            sys=$(awk -F, '/raw_syscalls/ {print $1}' "$base.perf" 2>/dev/null | head -1)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$row" "$round" "$((t1 - t0))" \
                "$CLK_TCK" "${sys:-NA}" "$base" >>"$RUNS"
            echo "  round $round $w $row: $(grep -o '"ops_per_s": [0-9.]*' "$base.json")"
        done
    done
done
use_tls 0
for s in "${!SRV_PID[@]}"; do stop_server "${SRV_PID[$s]}"; done

# ---- nodelay against its floor, both loaded at once (bench/ab_cpu.py
# --concurrent): run one after the other, as above, their ratio moves with
# whatever else the machine runs by more than the gap it measures; side by
# side on the same CPU both see the same conditions ----
if [ "$SKIP_GAP" = 0 ] && [ -x "$FLOOR" ]; then
    mkdir -p "$OUT/gap"
    GAP_GENS=lg
    [ -n "$MEMTIER" ] && GAP_GENS=lg,mt
    for depth in 1 16; do
        for be in epoll uring; do
            if [ "$be" = uring ]; then
                [ "$HAVE_URING_OPT" = 1 ] || continue
                b="b=$NODELAY" f=fu=uring
            else
                b="b=$NODELAY"
                [ "$HAVE_URING_OPT" = 1 ] && b="b=$NODELAY:-o io_uring=off"
                f=f=epoll
            fi
            MEMTIER=$MEMTIER NODELAY_REF_DIR=$REF_DIR /usr/bin/python3 "$ROOT/bench/ab_cpu.py" \
                "$b" "$f" --concurrent --rounds "$GAP_ROUNDS" --seconds "$DURATION" \
                --depth "$depth" --gens "$GAP_GENS" --ratio "b/${f%%=*}" \
                --json "$OUT/gap/$be-p$depth.json" >"$OUT/gap/$be-p$depth.log" 2>&1 ||
                echo "compare.sh: the floor gap run $be p$depth failed (gap/$be-p$depth.log)" >&2
            tail -n 2 "$OUT/gap/$be-p$depth.log" | sed "s/^/  gap $be p$depth: /"
        done
    done
fi

# ---- memory per item: fill -m 64 until evictions begin ----
: >"$OUT/fill.tsv"
if [ "$SKIP_FILL" = 0 ]; then
    for v in 10 100 1000; do
        for s in A B; do
            bin=$MEMCACHED; [ $s = B ] && bin=$NODELAY
            start_server "fill-$s-$v" "$bin" 64
            "${LG_PIN[@]}" "$LOADGEN" fill -s "127.0.0.1:$SPORT" -v "$v" \
                --json "$OUT/runs/fill.$s.$v.json" >/dev/null || echo "fill failed ($s $v)" >&2
            stop_server "$SPID"
            printf '%s\t%s\t%s\n' "$s" "$v" "$OUT/runs/fill.$s.$v.json" >>"$OUT/fill.tsv"
            echo "  fill $s $v B: $(cat "$OUT/runs/fill.$s.$v.json" 2>/dev/null)"
        done
    done
fi

# ---- miss ratio: deterministic Zipf replay at -m 64, with and without a scan ----
# The four replays run at once: each is one connection issuing a fixed
# sequence, so its miss ratio does not depend on timing, and running them
# side by side keeps `make bench` short.
: >"$OUT/replay.tsv"
if [ "$SKIP_REPLAY" = 0 ]; then
    RP_SRV=()
    RP_LG=()
    for variant in plain scan; do
        scan=0; [ $variant = scan ] && scan=$SCAN
        for s in A B; do
            bin=$MEMCACHED; [ $s = B ] && bin=$NODELAY
            start_server "replay-$s-$variant" "$bin" 64
            RP_SRV+=("$SPID")
            "${LG_PIN[@]}" "$LOADGEN" replay -s "127.0.0.1:$SPORT" -n "$REPLAY_REQUESTS" \
                --scan "$scan" --json "$OUT/runs/replay.$s.$variant.json" >/dev/null &
            RP_LG+=("$!")
            PIDS+=("$!")
            printf '%s\t%s\t%s\n' "$s" "$variant" "$OUT/runs/replay.$s.$variant.json" >>"$OUT/replay.tsv"
        done
    done
    for p in "${RP_LG[@]}"; do wait "$p" || echo "a replay failed (status $?)" >&2; done
    for p in "${RP_SRV[@]}"; do stop_server "$p"; done
    while IFS=$'\t' read -r s variant f; do
        echo "  replay $s $variant: $(cat "$f" 2>/dev/null)"
    done <"$OUT/replay.tsv"
fi
# ---- real traces at equal -m, both servers, and the offline simulator
# (bench/traces.sh; skipped with the replay) ----
if [ "$SKIP_REPLAY" = 0 ]; then
    bash "$ROOT/bench/traces.sh" --nodelay "$NODELAY" --memcached "$MEMCACHED" \
        --out "$OUT/traces" || echo "compare.sh: the trace replays failed" >&2
    # shapes the real traces lack (bench/synth_traces.py), so the policy is
    # not judged on two traces alone; generated afresh, about 80 MB, removed
    SYNTH=$(mktemp -d /tmp/nodelay-synth.XXXXXX)
    { /usr/bin/python3 "$ROOT/bench/synth_traces.py" "$SYNTH" &&
        bash "$ROOT/bench/traces.sh" --dir "$SYNTH" --no-sim --nodelay "$NODELAY" \
            --memcached "$MEMCACHED" --out "$OUT/synth-traces"; } ||
        echo "compare.sh: the synthetic trace replays failed" >&2
    rm -rf "$SYNTH"
fi
# ---- the flash tier: memcached -o ext_path beside nodelay, key space 10x
# RAM (bench/flash.py; --short unless --flash-full; then bench/flash_pair.py) ----
if [ "$SKIP_FLASH" = 0 ]; then
    # shellcheck disable=SC2086
    /usr/bin/python3 "$ROOT/bench/flash.py" $FLASH_MODE --out "$OUT/flash" \
        --nodelay "$NODELAY" --memcached "$MEMCACHED" ||
        echo "compare.sh: the flash runs failed" >&2
    # the same comparison paired: both filled once, then taking turns, so
    # CPU per request and p99.9 come as per-round ratios beside their
    # noise floor (bench/flash_pair.py, -m 32)
    /usr/bin/python3 "$ROOT/bench/flash_pair.py" --nodelay "$NODELAY" \
        --memcached "$MEMCACHED" >"$OUT/flash-pair.txt" ||
        echo "compare.sh: the paired flash runs failed" >&2
fi
uptime >"$OUT/load-after.txt"

# ---- the report ----
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "nproc=$NCPU"
    echo "cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "kernel=$(uname -sr)"
    echo "memcached=$MC_VERSION"
    echo "memcached_bin=$MEMCACHED"
    echo "memcached_from=$MC_FROM"
    echo "memtier=${MT_VERSION:-none}"
    echo "memtier_bin=${MEMTIER:-none}"
    echo "memtier_from=$MT_FROM"
    echo "nodelay=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown) $NODELAY"
    echo "threads=$THREADS"
    echo "t2_cpus=$T2_CPUS"
    echo "uring_row=$HAVE_URING_OPT"
    echo "floor=$FLOOR"
    echo "memory=$MEMORY"
    echo "duration=$DURATION"
    echo "syscall_duration=$SYSCALL_DURATION"
    echo "rounds=$ROUNDS"
    echo "gap_rounds=$GAP_ROUNDS"
    echo "rate=$RATE"
    echo "replay_requests=$REPLAY_REQUESTS"
    echo "scan=$SCAN"
    echo "server_cpus=$SRV_CPUS"
    echo "loadgen_cpus=$LG_CPUS"
    echo "load_before=$(cat "$OUT/load-before.txt")"
    echo "load_after=$(cat "$OUT/load-after.txt")"
    for w in "${ORDER[@]}"; do
        if [[ $w == mt_* ]]; then
            echo "workload.$w=memtier_benchmark -P memcache_text -t 1 ${WL[$w]}"
        else
            echo "workload.$w=${WL[$w]}"
        fi
    done
} >"$OUT/machine.txt"
/usr/bin/python3 "$ROOT/bench/report.py" "$OUT"
if [ "$PUBLISH" = 1 ]; then
    sed -e 's/](latency\.png)/](latest-latency.png)/' -e 's/](ratios\.png)/](latest-ratios.png)/' \
        "$OUT/report.md" >"$ROOT/bench/results/latest.md"
    cp "$OUT/summary.md" "$ROOT/bench/results/latest-summary.md"
    for png in "$OUT"/*.png; do
        [ -e "$png" ] && cp "$png" "$ROOT/bench/results/latest-$(basename "$png")"
    done
fi
echo "compare.sh: wrote $OUT/report.md"
exit 0
}
