#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One stage of `make test`, as `make test-STAGE` runs it:
#
#   scripts/test-stage.sh STAGE      (scripts/test-stage.sh --list: the stages)
#
# It prints what it ran and writes its counts to build/test-results/STAGE,
# one line "PASSED FAILED SKIPPED", and beside it STAGE.why: a line for each
# failure ("F N message") and each group of skips ("S N reason"). The counts
# are written last, so a stage that did not finish has none. Exit status:
# non-zero on any failure. scripts/test-all.sh runs every stage in order and
# sums these files; docs/testing.md says what each stage runs and why.
#
# Run alone, a stage builds what it needs first. Under scripts/test-all.sh
# (TEST_PREBUILT=1) the build stages have done that, and a stage whose build
# failed (no build/test-results/build-CFG-EVENT.built) runs nothing.
set -u
cd "$(dirname "$0")/.." || exit 2

STAGES_ALL="layers build-release-epoll build-debug-epoll build-asan-epoll
build-tsan-epoll build-release-poll unit-release unit-asan unit-tsan
integration-release integration-release-long integration-asan
integration-asan-long integration-epoll integration-poll integration-tsan
trap-release trap-asan trap-epoll trap-poll memcached-suite fuzz-build fuzz soak"

PY=/usr/bin/python3
JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${FUZZ_SECONDS:-13} # 20 before the epoll run was added: the budget holds both
SOAK_SECONDS=${SOAK_SECONDS:-60}
# SOAK_KINDS: the slow/bad clients beside the honest load, all of them by
# default (bench/soak --help lists them), kind 5's bursts of non-readers too.
SOAK_KINDS=${SOAK_KINDS:-0,1,2,3,4,5,6,7}
# SOAK_WATCHERS: R,S watchers of every stream for the whole run, R reading
# every byte and S never reading: what they cost must be taken from them.
SOAK_WATCHERS=${SOAK_WATCHERS:-3,1}
PYTEST_ARGS=${PYTEST_ARGS:-}
# Tests heavy in CPU with nothing of their own for TSan to check: memory
# measurements (200+ s under TSan), the flash format's every-byte damage
# walks (26 s of CPU, past the budget on a busy machine), and the restore
# of a file cut at every compaction store (65 s; the restore's threads are
# checked under TSan by test_store_restore and test_restore_index). They
# run in release (where they can) and asan.
UNIT_SKIP_TSAN=${UNIT_SKIP_TSAN:-test_store_overhead test_flash_layout test_restore_compact}
# TSan's unit binaries take 4-5 minutes of one CPU, the release and asan
# ones under 2 beside them: two lanes use the CPU the others leave.
UNIT_TSAN_LANES=${UNIT_TSAN_LANES:-2}
# The tests that depend on the event backend, but the slow and client-library
# ones (conftest.py marks them): what the epoll and poll runs run.
REDUCED="backend and not slow and not clients"
LOGS=build/test-logs
RESULTS_DIR=build/test-results
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-second_deadlock_stack=1}
# Unit tests may shorten measurements (not checks) when this is set.
export NODELAY_UNIT_QUICK=1
# The elapsed times count from the start of `make test` (the sequencer's).
TEST_START=${TEST_START:-$(date +%s)}
TEST_PREBUILT=${TEST_PREBUILT:-}

stage=${1:-}
if [ "$stage" = --list ]; then
    echo $STAGES_ALL
    exit 0
fi
if [ -z "$stage" ] || [[ " $(echo $STAGES_ALL) " != *" $stage "* ]]; then
    echo "usage: $0 STAGE (one of: $(echo $STAGES_ALL))" >&2
    exit 2
fi
mkdir -p "$LOGS" "$RESULTS_DIR"
RESULT=$RESULTS_DIR/$stage
rm -f "$RESULT" "$RESULT.why" "$RESULT.built"

PASSED=0
FAILED=0
SKIPPED=0
WHY=()
note() { printf '== [%4ss] %s\n' $(($(date +%s) - TEST_START)) "$*"; }
# pass LABEL [N], fail MESSAGE [N], skip REASON [N]: add to this stage's counts.
pass() { PASSED=$((PASSED + ${2:-1})); }
fail() {
    echo "   FAILED: $1"
    FAILED=$((FAILED + ${2:-1}))
    WHY+=("F ${2:-1} $1")
}
skip() {
    echo "   skipped ${2:-1}: $1"
    SKIPPED=$((SKIPPED + ${2:-1}))
    WHY+=("S ${2:-1} $1")
}

# built CFG EVENT: the server of that build is there. Under the sequencer the
# build stage said so; alone, it is built now (a failure counts here).
built() {
    local cfg=$1 ev=$2 log="$LOGS/build-$1-$2.log"
    if [ -n "$TEST_PREBUILT" ]; then
        [ -e "$RESULTS_DIR/build-$cfg-$ev.built" ] && return 0
        echo "   not run: no $cfg-$ev build (its build stage failed)"
        return 1
    fi
    make -j"$JOBS" CONFIG="$cfg" EVENT="$ev" "build/$cfg-$ev/nodelay" >"$log" 2>&1 && return 0
    tail -20 "$log"
    fail "build $cfg-$ev (see $log)"
    return 1
}

# ---- layers ------------------------------------------------------------------
layers_stage() {
    note "layers"
    if bash scripts/check-layers.sh >"$LOGS/layers.log" 2>&1; then
        pass layers
    else
        fail "layers: import loop (see $LOGS/layers.log)"
    fi
    tail -1 "$LOGS/layers.log" | sed 's/^/   /'
}

# ---- builds ------------------------------------------------------------------
# A build with a warning counts as failed but is there for the stages after.
build_stage() { # config event
    local cfg=$1 ev=$2 log="$LOGS/build-$1-$2.log"
    note "build $cfg-$ev"
    if make -j"$JOBS" CONFIG="$cfg" EVENT="$ev" server >"$log" 2>&1; then
        if grep -q 'warning:' "$log"; then
            grep 'warning:' "$log" | head -5
            fail "build $cfg-$ev has warnings (see $log)"
        else
            pass "build $cfg-$ev"
        fi
        : >"$RESULTS_DIR/build-$cfg-$ev.built"
    else
        tail -20 "$log"
        fail "build $cfg-$ev (see $log)"
    fi
}

# ---- unit tests ----------------------------------------------------------------
# cmocka_counts OUTPUT: "passed failed skipped" from the summary lines cmocka
# prints for each group it ran ("[  PASSED  ] N test(s).").
cmocka_counts() {
    awk '/^\[  PASSED  \] [0-9]+ test/ {p += $4}
         /^\[  FAILED  \] [0-9]+ test/ {f += $4}
         /^\[  SKIPPED \] [0-9]+ test/ {s += $4}
         END {print p + 0, f + 0, s + 0}' <<<"$1"
}
unit_stage() { # config
    local cfg=$1 log="$LOGS/unit-$1.log" bins b name
    note "unit tests ($cfg)"
    # the binaries mirror tests/unit: tests/unit/store/test_x.c -> build/CFG-epoll/tests/store/test_x
    mapfile -t bins < <(find tests/unit -name 'test_*.c' | sort |
        sed "s|^tests/unit/\(.*\)\.c$|build/$cfg-epoll/tests/\1|")
    if [ ${#bins[@]} -eq 0 ]; then
        fail "unit $cfg: no tests/unit/*/test_*.c"
        return
    fi
    if ! make -j"$JOBS" CONFIG="$cfg" EVENT=epoll "${bins[@]}" >"$log.build" 2>&1; then
        tail -20 "$log.build"
        fail "unit $cfg: build (see $log.build)"
        return
    fi
    # tests are held to the server's rule: a warning (an undeclared function
    # above all) fails the stage, though the binaries still run
    if grep -q 'warning:' "$log.build"; then
        grep 'warning:' "$log.build" | head -5
        fail "unit $cfg: the build has warnings (see $log.build)"
    fi
    : >"$log"
    # the binaries run in lanes (UNIT_TSAN_LANES for tsan, else one; a
    # unit binary is mostly one thread), each writing its output and status
    # under $runs; they are then counted one by one, in order
    local runs="$LOGS/unit-$cfg.runs" lanes=1
    [ "$cfg" != tsan ] || lanes=$UNIT_TSAN_LANES
    rm -rf "$runs"
    mkdir -p "$runs"
    local lane i
    for ((lane = 0; lane < lanes; lane++)); do
        for ((i = lane; i < ${#bins[@]}; i += lanes)); do
            b=${bins[$i]}
            name=$(basename "$b")
            [ "$cfg" = tsan ] && [[ " $UNIT_SKIP_TSAN " == *" $name "* ]] && continue
            local t0
            t0=$(date +%s)
            timeout 300 "$b" >"$runs/$name.out" 2>&1
            echo "$? $(($(date +%s) - t0))" >"$runs/$name.rc"
        done &
    done
    wait
    for b in "${bins[@]}"; do
        local out rc p f sk t
        name=$(basename "$b")
        if [ "$cfg" = tsan ] && [[ " $UNIT_SKIP_TSAN " == *" $name "* ]]; then
            skip "unit $cfg $name: not run under TSan (UNIT_SKIP_TSAN; runs in release and asan)"
            continue
        fi
        out=$(cat "$runs/$name.out" 2>/dev/null)
        read -r rc t <"$runs/$name.rc" 2>/dev/null || { rc=125 t=0; }
        [ "$t" -lt 10 ] || echo "   $name: ${t}s"
        printf '%s\n' "$out" >>"$log"
        read -r p f sk < <(cmocka_counts "$out")
        [ "$sk" -eq 0 ] || skip "unit $cfg $name: cmocka skipped them (see $log)" "$sk"
        if grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' -e 'WARNING: ThreadSanitizer' \
                -e 'ERROR: LeakSanitizer' <<<"$out"; then
            pass "unit $cfg $name" "$p"
            fail "unit $cfg $name: sanitizer report (see $log)" $((f > 0 ? f : 1))
            continue
        fi
        if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
            # a binary may have nothing for this configuration (e.g. tests that
            # need the debug clock, which skip in release: counted once,
            # above); the stage as a whole must still run tests
            if [ "$rc" -ne 0 ]; then
                fail "unit $cfg $name: exit $rc before any test"
            elif [ "$sk" -eq 0 ]; then
                skip "unit $cfg $name: no tests in this configuration"
            fi
            continue
        fi
        pass "unit $cfg $name" "$p"
        if [ "$f" -gt 0 ] || [ "$rc" -ne 0 ]; then
            f=$((f > 0 ? f : 1))
            fail "unit $cfg $name: $f failed (exit $rc)" "$f"
            printf '%s\n' "$out" | grep -e '\[  FAILED  \]' -e 'ERROR' | head -10
        fi
    done
    local ok
    ok=$(grep -c '^\[       OK \]' "$log")
    echo "   $ok cmocka tests ok"
    [ "$ok" -gt 0 ] || fail "unit $cfg: ran no test"
}

# ---- integration tests -----------------------------------------------------------
# junit_counts XML: from pytest's JUnit XML, "passed failed errors skipped"
# on the first line (xfails, which pytest counts apart, in none of them),
# then "N<TAB>reason" for each skip reason, most first.
junit_counts() {
    "$PY" - "$1" <<'EOF'
import collections, sys, xml.etree.ElementTree as ET
try:
    cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
except (OSError, ET.ParseError):
    cases = []
passed = failed = errors = 0
skips = collections.Counter()
for case in cases:
    kinds = {child.tag: child for child in case}
    if "failure" in kinds:
        failed += 1
    elif "error" in kinds:
        errors += 1
    elif "skipped" in kinds:
        if kinds["skipped"].get("type") != "pytest.xfail":
            skips[kinds["skipped"].get("message", "")] += 1
    else:
        passed += 1
print(passed, failed, errors, sum(skips.values()))
for reason, n in sorted(skips.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{n}\t{reason}")
EOF
}
# pytest_stage LABEL BINARY [pytest args...]
pytest_stage() {
    local label=$1 bin=$2 log="$LOGS/pytest-$1.log" xml="$LOGS/pytest-$1.xml" rc p f e s n reason
    local ref=0 rest=0
    shift 2
    note "integration ($label): $bin $*"
    rm -f "$xml"
    NODELAY_BIN="$bin" timeout 900 "$PY" -m pytest -p no:cacheprovider -q -rfEsx --durations=15 \
        --junitxml="$xml" tests/integration "$@" $PYTEST_ARGS >"$log" 2>&1
    rc=$?
    echo "   $(tail -1 "$log")"
    {
        read -r p f e s
        pass "integration $label" "$p"
        if [ "$s" -gt 0 ]; then
            # grouped by reason; those for want of ../shared/ref (the
            # memcached 1.6.45 reference, see its README) summed as one
            echo "   skipped, by reason:"
            while IFS=$'\t' read -r n reason; do
                echo "      $n: $reason"
                if [[ $reason == *shared/ref* ]]; then ref=$((ref + n)); else rest=$((rest + n)); fi
            done
        fi
    } < <(junit_counts "$xml")
    [ "$ref" -eq 0 ] || skip "integration $label: ../shared/ref absent (memcached 1.6.45 or its debug build not found; its comparisons need it)" "$ref"
    [ "$rest" -eq 0 ] || skip "integration $label: other reasons, listed above and in $log" "$rest"
    if [ $rc -eq 5 ] || [ "$p" -eq 0 ]; then
        fail "integration $label: ran no test (pytest exit $rc; see $log)"
    elif [ $rc -ne 0 ] || [ "$f" -gt 0 ] || [ "$e" -gt 0 ]; then
        n=$((f + e))
        n=$((n > 0 ? n : 1))
        fail "integration $label: $n failed (pytest exit $rc; see $log)" "$n"
        grep -E '^(FAILED|ERROR) ' "$log" | head -30
    fi
}

# ---- memcached's own tests -----------------------------------------------------------
# Skips (exit 77) when Debian's source package cannot be fetched, e.g. offline;
# CI has Debian's registry, so there a skip is a failure. The script's last
# line is "memcached-suite: N passed, N failed" (one test per .t file).
suite_stage() {
    local rc line p f n
    note "memcached's t/*.t (scripts/memcached-suite.sh)"
    timeout 900 bash scripts/memcached-suite.sh >"$LOGS/memcached-suite.log" 2>&1
    rc=$?
    grep -E '^(ok|FAIL) |SKIP' "$LOGS/memcached-suite.log" | sed 's/^/   /'
    line=$(tail -1 "$LOGS/memcached-suite.log")
    read -r p f < <(awk '/^memcached-suite: [0-9]+ passed, [0-9]+ failed$/ {print $2, $4}' <<<"$line")
    if [ $rc -eq 77 ] && [ -z "${CI:-}" ]; then
        skip "memcached's t/*.t: $line"
    elif [ $rc -ne 0 ] || [ -z "${p:-}" ] || [ "$p" -eq 0 ]; then
        pass suite "${p:-0}"
        n=${f:-1}
        n=$((n > 0 ? n : 1))
        fail "memcached-suite: $n failed (see $LOGS/memcached-suite.log)" "$n"
    else
        pass suite "$p"
    fi
}

# ---- fuzzers -----------------------------------------------------------------------
# Both under nice: they run beside integration runs that wait, and take the
# CPU those leave idle without delaying the servers' replies. The build
# counts nothing: the fuzz stage builds again what failed and fails it.
fuzz_build_stage() {
    note "fuzz: building the harnesses"
    nice -n 10 bash scripts/fuzz.sh --build-only >"$LOGS/fuzz-build.log" 2>&1
    tail -1 "$LOGS/fuzz-build.log" | sed 's/^/   /'
}
# scripts/fuzz.sh's last line is "N passed, N failed" (one test per harness).
fuzz_stage() {
    local rc line p f n
    note "fuzz (${FUZZ_SECONDS}s each)"
    nice -n 10 bash scripts/fuzz.sh "$FUZZ_SECONDS" >"$LOGS/fuzz.log" 2>&1
    rc=$?
    grep '^fuzz ' "$LOGS/fuzz.log" | sed 's/^/   /'
    line=$(tail -1 "$LOGS/fuzz.log")
    read -r p f < <(awk '/^[0-9]+ passed, [0-9]+ failed$/ {print $1, $3}' <<<"$line")
    pass fuzz "${p:-0}"
    if [ $rc -ne 0 ] || [ -z "${p:-}" ] || [ "${p:-0}" -eq 0 ]; then
        n=${f:-1}
        n=$((n > 0 ? n : 1))
        fail "fuzz: $n failed (see $LOGS/fuzz.log)" "$n"
    fi
}

# ---- soak ----------------------------------------------------------------------------
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

# ---- the stage asked for ----------------------------------------------------------------
# CPU_NOW: CPU seconds (user + system) of this shell's waited-for children
# so far, from /proc (a $(...) or a pipe would read a fresh subshell's).
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
child_cpu() {
    local st
    read -r -a st </proc/$BASHPID/stat
    CPU_NOW=$(((st[15] + st[16]) / CLK_TCK))
}
t0=$(date +%s)
child_cpu
c0=$CPU_NOW
case $stage in
layers) layers_stage ;;
build-*)
    b=${stage#build-}
    build_stage "${b%-*}" "${b#*-}"
    ;;
unit-*) built "${stage#unit-}" epoll && unit_stage "${stage#unit-}" ;;
integration-release | integration-asan) # everything on the default backend
    cfg=${stage#integration-}
    built "$cfg" epoll && pytest_stage "$cfg" "build/$cfg-epoll/nodelay" -m "not trap and not long"
    ;;
integration-release-long | integration-asan-long) # conftest.py's LONG_MODULES
    cfg=${stage#integration-}
    cfg=${cfg%-long}
    built "$cfg" epoll && pytest_stage "$cfg-long" "build/$cfg-epoll/nodelay" -m "not trap and long"
    ;;
integration-epoll) # the release binary; helpers.py adds NODELAY_ARGS to every nodelay
    built release epoll && NODELAY_ARGS="-o io_uring=off" pytest_stage epoll \
        build/release-epoll/nodelay -m "$REDUCED and not trap"
    ;;
integration-poll)
    built release poll && pytest_stage poll build/release-poll/nodelay -m "$REDUCED and not trap"
    ;;
integration-tsan)
    built tsan epoll && pytest_stage tsan build/tsan-epoll/nodelay -m concurrency
    ;;
# the delayed-ACK trap times every request against 40 ms: the sequencer runs
# these with no other stage beside them
trap-release | trap-asan)
    cfg=${stage#trap-}
    built "$cfg" epoll && pytest_stage "$cfg-trap" "build/$cfg-epoll/nodelay" -m trap
    ;;
trap-epoll)
    built release epoll && NODELAY_ARGS="-o io_uring=off" pytest_stage epoll-trap \
        build/release-epoll/nodelay -m "$REDUCED and trap"
    ;;
trap-poll)
    built release poll && pytest_stage poll-trap build/release-poll/nodelay -m "$REDUCED and trap"
    ;;
memcached-suite)
    built debug epoll && suite_stage
    ;;
fuzz-build) fuzz_build_stage ;;
fuzz) fuzz_stage ;;
soak)
    if [ -x bench/soak ] && built release epoll; then
        soak_stage
    else
        skip "soak: bench/soak or the release build not present"
    fi
    ;;
esac
child_cpu
printf '   [%s: %ss wall, %ss CPU]\n' "$stage" $(($(date +%s) - t0)) $((CPU_NOW - c0))

printf '%s\n' "${WHY[@]}" | grep . >"$RESULT.why"
echo "$PASSED $FAILED $SKIPPED" >"$RESULT"
echo "   $stage: $PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
