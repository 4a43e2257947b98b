#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Everything `make test` and CI run, in one go, on this 2-core machine in
# under 15 minutes (docs/testing.md has the measured times):
#
#   builds      release, debug, asan (ASan+UBSan), tsan, and EVENT=poll
#   unit        cmocka tests in release, asan and tsan
#   integration the pytest suite against release and asan (full), both on the
#               default backend (io_uring where the kernel allows it); epoll
#               (the release build with -o io_uring=off) and the poll build:
#               the `backend` tests (conftest.py says which, docs/testing.md
#               why) without the slow and client-library ones; tsan (the
#               concurrency tests, on the default backend)
#   fuzz        every libFuzzer harness, FUZZ_SECONDS each (scripts/fuzz.sh)
#   soak        bench/soak for SOAK_SECONDS on the default backend
#   layers      no import loop between the folders of src/, no call loop between
#               the files of src/proto (scripts/check-layers.sh; one test)
#   suite       memcached's own t/*.t (Debian's source package) against the debug
#               build (scripts/memcached-suite.sh; each .t file counts as one test)
#
# The integration runs mostly wait (sleeps, timeouts, a server's answer), so
# stages run side by side (docs/testing.md, "How `make test` fits in 15
# minutes"): the three unit configurations; then release and asan, each as
# two pytest processes (the `long` files and the rest), with memcached's
# suite; then epoll, poll, tsan and the fuzzers (FUZZ_JOBS at a time). The
# delayed-ACK trap's tests (`trap`) and the soak, which time requests, run
# with nothing of ours beside them. Each pytest run has its own servers on
# free ports and its own pytest temporary directory; each stage's output is
# kept apart and printed whole, in start order, once its group is done.
# SERIAL=1 runs every stage alone, one after another.
#
# Each stage adds its tests to the totals and prints its wall and CPU
# seconds; the last line is exactly "N passed, N failed, N skipped" (CI reads
# it) and the exit status is non-zero on any failure. Every skip is counted
# with its reason: pytest's (-rs) grouped by reason in each stage's output,
# and listed under "Skipped:" before the last line, those for want of
# ../shared/ref (the memcached 1.6.45 reference) summed on a line of their
# own. A stage that ran no test (pytest's exit 5, a unit binary with no
# summary) or did not finish fails.
# Logs: build/test-logs/. Knobs: FUZZ_SECONDS (13), FUZZ_JOBS (CPUs), SOAK_SECONDS (60),
# SOAK_KINDS, SOAK_WATCHERS (3,1), PYTEST_ARGS (extra pytest arguments), SERIAL, STAGES
# (space-separated subset of "layers build unit integration suite fuzz soak").
set -u
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${FUZZ_SECONDS:-13} # 20 before the epoll run was added: the budget holds both
SOAK_SECONDS=${SOAK_SECONDS:-60}
PYTEST_ARGS=${PYTEST_ARGS:-}
SERIAL=${SERIAL:-}
STAGES=${STAGES:-layers build unit integration suite fuzz soak}
LOGS=build/test-logs
mkdir -p "$LOGS"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1}
# Unit tests may shorten measurements (not checks) when this is set.
export NODELAY_UNIT_QUICK=1
# Memory measurements with no threads to check: 200+ s under TSan, which the
# 10-minute budget cannot hold; they run in release and asan.
UNIT_SKIP_TSAN=${UNIT_SKIP_TSAN:-test_store_overhead}

PASSED=0
FAILED=0
SKIPPED=0
FAILURES=()
SKIPS=()
START=$(date +%s)

want() { [[ " $STAGES " == *" $1 "* ]]; }
elapsed() { echo $(($(date +%s) - START)); }
note() { printf '== [%4ss] %s\n' "$(elapsed)" "$*"; }

# pass LABEL [N], fail MESSAGE [N], skip REASON [N]: add to the totals, or,
# inside a stage started by spawn (RESULTS set), to that stage's result file,
# which collect adds to the totals.
RESULTS=
pass() {
    if [ -n "$RESULTS" ]; then echo "P ${2:-1} $1" >>"$RESULTS"; else PASSED=$((PASSED + ${2:-1})); fi
}
fail() {
    echo "   FAILED: $1"
    if [ -n "$RESULTS" ]; then echo "F ${2:-1} $1" >>"$RESULTS"; return; fi
    FAILED=$((FAILED + ${2:-1}))
    FAILURES+=("$1")
}
skip() {
    echo "   skipped ${2:-1}: $1"
    if [ -n "$RESULTS" ]; then echo "S ${2:-1} $1" >>"$RESULTS"; return; fi
    SKIPPED=$((SKIPPED + ${2:-1}))
    SKIPS+=("${2:-1} $1")
}

# CPU_NOW: CPU seconds (user + system) of this shell's waited-for children
# so far, from /proc (a $(...) or a pipe would read a fresh subshell's).
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
child_cpu() {
    local st
    read -r -a st </proc/$BASHPID/stat
    CPU_NOW=$(((st[15] + st[16]) / CLK_TCK))
}

# timed LABEL COMMAND...: runs a stage in this shell and prints its cost.
timed() {
    local label=$1 t0 c0
    shift
    t0=$(date +%s)
    child_cpu
    c0=$CPU_NOW
    "$@"
    child_cpu
    printf '   [%s: %ss wall, %ss CPU]\n' "$label" $(($(date +%s) - t0)) $((CPU_NOW - c0))
}

# spawn LABEL COMMAND...: starts a stage in the background (in the
# foreground with SERIAL set), its output and results in build/test-logs/.
# collect: waits for every spawned stage, prints their output in start
# order and adds their results to the totals.
SPAWNED=()
spawn() {
    local label=$1
    shift
    local out="$LOGS/stage-$label.out" res="$LOGS/stage-$label.result"
    : >"$res"
    (
        RESULTS=$res
        timed "$label" "$@"
        echo "E" >>"$RESULTS"
    ) >"$out" 2>&1 &
    SPAWNED+=("$label:$!")
    [ -z "$SERIAL" ] || collect
}
collect() {
    local entry label pid kind n msg
    for entry in "${SPAWNED[@]}"; do
        label=${entry%%:*}
        pid=${entry#*:}
        wait "$pid"
        cat "$LOGS/stage-$label.out"
        while read -r kind n msg; do
            case $kind in
            P) PASSED=$((PASSED + n)) ;;
            F) FAILED=$((FAILED + n)); FAILURES+=("$msg") ;;
            S) SKIPPED=$((SKIPPED + n)); SKIPS+=("$n $msg") ;;
            esac
        done <"$LOGS/stage-$label.result"
        if [ "$(tail -1 "$LOGS/stage-$label.result")" != E ]; then
            FAILED=$((FAILED + 1))
            FAILURES+=("$label: the stage did not finish (see $LOGS/stage-$label.out)")
            echo "   FAILED: $label: the stage did not finish"
        fi
    done
    SPAWNED=()
}
# alone LABEL COMMAND...: a stage with nothing of ours beside it.
alone() {
    spawn "$@"
    collect
}
# Stopped (CI's timeout, ^C): the stages running in the background stop too.
kill_tree() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
    kill "$1" 2>/dev/null
}
stop_spawned() {
    local entry
    for entry in "${SPAWNED[@]}"; do kill_tree "${entry#*:}"; done
    exit 130
}
trap stop_spawned INT TERM

# ---- layers ----------------------------------------------------------------
if want layers; then
    note "layers"
    if bash scripts/check-layers.sh >"$LOGS/layers.log" 2>&1; then
        pass layers
    else
        fail "layers: import loop (see $LOGS/layers.log)"
    fi
    tail -1 "$LOGS/layers.log" | sed 's/^/   /'
fi

# ---- builds ----------------------------------------------------------------
declare -A BUILT
build() { # config event
    local cfg=$1 ev=$2 log="$LOGS/build-$1-$2.log"
    note "build $cfg-$ev"
    if make -j"$JOBS" CONFIG="$cfg" EVENT="$ev" server >"$log" 2>&1; then
        if grep -q 'warning:' "$log"; then
            grep 'warning:' "$log" | head -5
            fail "build $cfg-$ev has warnings (see $log)"
        else
            pass "build $cfg-$ev"
        fi
        BUILT[$cfg-$ev]=1
    else
        tail -20 "$log"
        fail "build $cfg-$ev (see $log)"
    fi
}

if want build || want unit || want integration || want suite; then
    for b in "release epoll" "debug epoll" "asan epoll" "tsan epoll" "release poll"; do
        timed "build ${b/ /-}" build $b
    done
fi

# ---- unit tests -------------------------------------------------------------
unit() { # config
    local cfg=$1 log="$LOGS/unit-$1.log" bins
    note "unit tests ($cfg)"
    local srcs s
    mapfile -t srcs < <(find tests/unit -name 'test_*.c' | sort)
    if [ ${#srcs[@]} -eq 0 ]; then
        fail "unit $cfg: no tests/unit/*/test_*.c"
        return
    fi
    bins=()
    for s in "${srcs[@]}"; do s=${s#tests/unit/}; bins+=("build/$cfg-epoll/tests/${s%.c}"); done
    if ! make -j"$JOBS" CONFIG="$cfg" EVENT=epoll "${bins[@]}" >"$log.build" 2>&1; then
        tail -20 "$log.build"
        fail "unit $cfg: build (see $log.build)"
        return
    fi
    : >"$log"
    for b in "${bins[@]}"; do
        local out rc p f sk t0 t
        if [ "$cfg" = tsan ] && [[ " $UNIT_SKIP_TSAN " == *" $(basename "$b") "* ]]; then
            skip "unit $cfg $(basename "$b"): not run under TSan (UNIT_SKIP_TSAN; runs in release and asan)"
            continue
        fi
        t0=$(date +%s)
        out=$(timeout 300 "$b" 2>&1)
        rc=$?
        t=$(($(date +%s) - t0))
        [ "$t" -lt 10 ] || echo "   $(basename "$b"): ${t}s"
        printf '%s\n' "$out" >>"$log"
        p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
        f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
        sk=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
        [ "$sk" -eq 0 ] || skip "unit $cfg $(basename "$b"): cmocka skipped them (see $log)" "$sk"
        if grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' -e 'WARNING: ThreadSanitizer' \
                -e 'ERROR: LeakSanitizer' <<<"$out"; then
            pass "unit $cfg $(basename "$b")" "$p"
            fail "unit $cfg $(basename "$b"): sanitizer report (see $log)" $((f > 0 ? f : 1))
            continue
        fi
        if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
            # a binary may have nothing for this configuration (e.g. tests that
            # need the debug clock); the stage as a whole must still run tests
            if [ $rc -ne 0 ]; then
                fail "unit $cfg $(basename "$b"): exit $rc before any test"
            else
                skip "unit $cfg $(basename "$b"): no tests in this configuration"
            fi
            continue
        fi
        pass "unit $cfg $(basename "$b")" "$p"
        if [ "$f" -gt 0 ] || [ $rc -ne 0 ]; then
            f=$((f > 0 ? f : 1))
            fail "unit $cfg $(basename "$b"): $f failed (exit $rc)" "$f"
            printf '%s\n' "$out" | grep -e '\[  FAILED  \]' -e 'ERROR' | head -10
        fi
    done
    local ok
    ok=$(grep -c '^\[       OK \]' "$log")
    echo "   $ok cmocka tests ok"
    [ "$ok" -gt 0 ] || fail "unit $cfg: ran no test"
}

# The three configurations side by side: a unit binary is mostly one thread,
# so one run alone leaves a CPU idle.
if want unit; then
    for cfg in release asan tsan; do
        if [ -n "${BUILT[$cfg-epoll]:-}" ]; then spawn "unit-$cfg" unit "$cfg"; fi
    done
    collect
fi

# ---- integration tests ------------------------------------------------------
# pytest_skips LABEL LOG: pytest's skip reasons (-rs: "SKIPPED [N] file:line:
# reason") grouped by reason, each counted; those for want of ../shared/ref
# (the memcached 1.6.45 reference, see its README) summed as one.
pytest_skips() {
    local label=$1 log=$2 n reason ref=0 rest=0
    while IFS=$'\t' read -r n reason; do
        echo "      $n: $reason"
        if [[ $reason == *shared/ref* ]]; then ref=$((ref + n)); else rest=$((rest + n)); fi
    done < <(sed -n 's/^SKIPPED \[\([0-9]*\)\] [^ ]*:[0-9]*: \(.*\)$/\1\t\2/p' "$log" |
        awk -F'\t' '{n[$2] += $1} END {for (r in n) printf "%d\t%s\n", n[r], r}' | sort -rn)
    [ "$ref" -eq 0 ] || skip "integration $label: ../shared/ref absent (memcached 1.6.45 or its debug build not found; its comparisons need it)" "$ref"
    [ "$rest" -eq 0 ] || skip "integration $label: other reasons, listed above and in $log" "$rest"
}
pytest_stage() { # label binary [pytest args...]
    local label=$1 bin=$2 log="$LOGS/pytest-$1.log" rc line p f e s
    shift 2
    note "integration ($label): $bin $*"
    NODELAY_BIN="$bin" timeout 900 "$PY" -m pytest -p no:cacheprovider -q -rfEsx --durations=15 \
        tests/integration "$@" $PYTEST_ARGS >"$log" 2>&1
    rc=$?
    line=$(tail -1 "$log")
    p=$(grep -o '[0-9]* passed' <<<"$line" | grep -o '[0-9]*')
    f=$(grep -o '[0-9]* failed' <<<"$line" | grep -o '[0-9]*')
    e=$(grep -o '[0-9]* error' <<<"$line" | grep -o '[0-9]*')
    s=$(grep -o '[0-9]* skipped' <<<"$line" | grep -o '[0-9]*')
    p=${p:-0}; f=${f:-0}; e=${e:-0}; s=${s:-0}
    echo "   $line"
    pass "integration $label" "$p"
    if [ "$s" -gt 0 ]; then
        echo "   skipped, by reason:"
        pytest_skips "$label" "$log"
    fi
    if [ $rc -eq 5 ] || [ "$p" -eq 0 ]; then
        fail "integration $label: ran no test (pytest exit $rc; see $log)"
    elif [ $rc -ne 0 ] || [ "$f" -gt 0 ] || [ "$e" -gt 0 ]; then
        local n=$((f + e))
        n=$((n > 0 ? n : 1))
        fail "integration $label: $n failed (pytest exit $rc; see $log)" "$n"
        grep -E '^(FAILED|ERROR) ' "$log" | head -30
    fi
}

# ---- memcached's own tests ---------------------------------------------------------
# Skips (exit 77) when Debian's source package cannot be fetched, e.g. offline;
# CI has Debian's registry, so there a skip is a failure.
suite_stage() {
    local rc line p f n
    note "memcached's t/*.t (scripts/memcached-suite.sh)"
    timeout 900 bash scripts/memcached-suite.sh >"$LOGS/memcached-suite.log" 2>&1
    rc=$?
    grep -E '^(ok|FAIL) |SKIP' "$LOGS/memcached-suite.log" | sed 's/^/   /'
    line=$(tail -1 "$LOGS/memcached-suite.log")
    p=$(sed -n 's/^memcached-suite: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
    f=$(sed -n 's/^memcached-suite: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
    if [ $rc -eq 77 ] && [ -z "${CI:-}" ]; then
        skip "memcached's t/*.t: $line"
    elif [ $rc -ne 0 ] || [ -z "$p" ] || [ "$p" -eq 0 ]; then
        pass suite "${p:-0}"
        n=${f:-1}
        n=$((n > 0 ? n : 1))
        fail "memcached-suite: $n failed (see $LOGS/memcached-suite.log)" "$n"
    else
        pass suite "$p"
    fi
}

# ---- fuzzers ------------------------------------------------------------------
# Both under nice: they run beside integration runs that wait, and take the
# CPU those leave idle without delaying the servers' replies.
fuzz_build_stage() {
    note "fuzz: building the harnesses"
    nice -n 10 bash scripts/fuzz.sh --build-only >"$LOGS/fuzz-build.log" 2>&1
    tail -1 "$LOGS/fuzz-build.log" | sed 's/^/   /'
}
fuzz_stage() {
    local rc line p f n
    note "fuzz (${FUZZ_SECONDS}s each)"
    nice -n 10 bash scripts/fuzz.sh "$FUZZ_SECONDS" >"$LOGS/fuzz.log" 2>&1
    rc=$?
    grep '^fuzz ' "$LOGS/fuzz.log" | sed 's/^/   /'
    line=$(tail -1 "$LOGS/fuzz.log")
    p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
    f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
    pass fuzz "${p:-0}"
    if [ $rc -ne 0 ] || [ -z "$p" ] || [ "${p:-0}" -eq 0 ]; then
        n=${f:-1}
        n=$((n > 0 ? n : 1))
        fail "fuzz: $n failed (see $LOGS/fuzz.log)" "$n"
    fi
}

# ---- soak ---------------------------------------------------------------------
# SOAK_KINDS: the slow/bad clients beside the honest load, all of them by
# default (bench/soak --help lists them), kind 5's bursts of non-readers too.
SOAK_KINDS=${SOAK_KINDS:-0,1,2,3,4,5,6,7}
# SOAK_WATCHERS: R,S watchers of every stream for the whole run, R reading
# every byte and S never reading: what they cost must be taken from them.
SOAK_WATCHERS=${SOAK_WATCHERS:-3,1}
soak_stage() {
    note "soak (${SOAK_SECONDS}s)"
    if make -j"$JOBS" loadgen >"$LOGS/soak-build.log" 2>&1 &&
        timeout $((SOAK_SECONDS + 120)) bench/soak --server build/release-epoll/nodelay \
            --duration "$SOAK_SECONDS" --slow-kinds "$SOAK_KINDS" --watchers "$SOAK_WATCHERS" >"$LOGS/soak.log" 2>&1; then
        tail -3 "$LOGS/soak.log" | sed 's/^/   /'
        pass soak
    else
        tail -15 "$LOGS/soak.log" 2>/dev/null
        fail "soak (see $LOGS/soak.log)"
    fi
}

# ---- the order --------------------------------------------------------------------
# Group 1, side by side: the two full runs, each as two pytest processes
# (the `long` files, conftest.py, and the rest), the fuzzers' clang build,
# and memcached's suite (which sleeps: restart.t 10 s across its stop). The man page is made first, so
# test_deploy's `make install` in the two runs has nothing to write there.
if want integration || want suite; then
    [ -n "${BUILT[release-epoll]:-}" ] && make -s man >"$LOGS/man.log" 2>&1
    if want integration; then
        for cfg in release asan; do
            [ -n "${BUILT[$cfg-epoll]:-}" ] || continue
            spawn "$cfg" pytest_stage "$cfg" "build/$cfg-epoll/nodelay" -m "not trap and not long"
            spawn "$cfg-long" pytest_stage "$cfg-long" "build/$cfg-epoll/nodelay" -m "not trap and long"
        done
    fi
    # no count: the fuzz stage below builds again what failed and fails it
    want fuzz && spawn fuzz-build fuzz_build_stage
    if want suite; then
        if [ -n "${BUILT[debug-epoll]:-}" ]; then
            spawn suite suite_stage
        else
            note "memcached's t/*.t: no debug build, not run"
        fi
    fi
    collect
fi

# Group 2, side by side: the other backends (the same release binary with
# -o io_uring=off, which helpers.py adds to every nodelay it starts; the
# poll build) on the tests that depend on the backend, TSan on the
# concurrency tests, and the fuzzers (their clang build too), which use the
# CPU these runs leave idle.
REDUCED="backend and not slow and not clients"
if want integration; then
    [ -n "${BUILT[release-epoll]:-}" ] && NODELAY_ARGS="-o io_uring=off" spawn epoll pytest_stage \
        epoll build/release-epoll/nodelay -m "$REDUCED and not trap"
    [ -n "${BUILT[release-poll]:-}" ] && spawn poll pytest_stage poll build/release-poll/nodelay \
        -m "$REDUCED and not trap"
    [ -n "${BUILT[tsan-epoll]:-}" ] && spawn tsan pytest_stage tsan build/tsan-epoll/nodelay -m concurrency
fi
want fuzz && spawn fuzz fuzz_stage
collect

# The delayed-ACK trap times every request against 40 ms: its tests of each
# run above, one run at a time, with no other stage of ours beside them.
if want integration; then
    [ -n "${BUILT[release-epoll]:-}" ] && alone release-trap pytest_stage release-trap \
        build/release-epoll/nodelay -m trap
    [ -n "${BUILT[asan-epoll]:-}" ] && alone asan-trap pytest_stage asan-trap \
        build/asan-epoll/nodelay -m trap
    [ -n "${BUILT[release-epoll]:-}" ] && NODELAY_ARGS="-o io_uring=off" alone epoll-trap \
        pytest_stage epoll-trap build/release-epoll/nodelay -m "$REDUCED and trap"
    [ -n "${BUILT[release-poll]:-}" ] && alone poll-trap pytest_stage poll-trap \
        build/release-poll/nodelay -m "$REDUCED and trap"
fi

if want soak; then
    if [ -x bench/soak ] && [ -n "${BUILT[release-epoll]:-}" ]; then
        alone soak soak_stage
    else
        skip "soak: bench/soak or the release build not present"
    fi
fi

note "done in $(elapsed)s"
if [ ${#SKIPS[@]} -gt 0 ]; then
    echo "Skipped (count, then why):"
    printf '  %s\n' "${SKIPS[@]}"
fi
if [ ${#FAILURES[@]} -gt 0 ]; then
    echo "Failures:"
    printf '  %s\n' "${FAILURES[@]}"
fi
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
