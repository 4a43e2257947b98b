#!/bin/bash
# Everything `make test` and CI run, in one go, on this 2-core machine in
# under 10 minutes:
#
#   builds      release, debug, asan (ASan+UBSan), tsan, and EVENT=poll
#   unit        cmocka tests in release, asan and tsan
#   integration the pytest suite against release and asan (full), both on the
#               default backend (io_uring where the kernel allows it); epoll
#               (the release build with -o io_uring=off) and the poll build
#               without the slow and client-library tests; tsan (the
#               concurrency tests, on the default backend)
#   fuzz        every libFuzzer harness, FUZZ_SECONDS each (scripts/fuzz.sh)
#   soak        bench/soak for SOAK_SECONDS on the default backend
#   layers      no import loop between the folders of src/ (scripts/check-layers.sh;
#               counts as one test)
#   suite       memcached's own t/*.t (Debian's source package) against the debug
#               build (scripts/memcached-suite.sh; each .t file counts as one test)
#
# Each stage adds its tests to the totals; the last line is exactly
# "N passed, N failed" and the exit status is non-zero on any failure. A stage
# that ran no test (pytest's exit 5, a unit binary with no summary) fails.
# Logs: build/test-logs/. Knobs: FUZZ_SECONDS (13), SOAK_SECONDS (60), SOAK_KINDS,
# PYTEST_ARGS (extra pytest arguments), STAGES (space-separated subset of
# "layers build unit integration suite fuzz soak").
set -u
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_SECONDS=${FUZZ_SECONDS:-13} # 20 before the epoll run was added: the budget holds both
SOAK_SECONDS=${SOAK_SECONDS:-60}
PYTEST_ARGS=${PYTEST_ARGS:-}
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
FAILURES=()
START=$(date +%s)

want() { [[ " $STAGES " == *" $1 "* ]]; }
elapsed() { echo $(($(date +%s) - START)); }
note() { printf '== [%4ss] %s\n' "$(elapsed)" "$*"; }
pass() { PASSED=$((PASSED + ${2:-1})); }
fail() { FAILED=$((FAILED + ${2:-1})); FAILURES+=("$1"); echo "   FAILED: $1"; }

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
    build release epoll
    build debug epoll
    build asan epoll
    build tsan epoll
    build release poll
fi

# ---- unit tests -------------------------------------------------------------
unit() { # config
    local cfg=$1 log="$LOGS/unit-$1.log" bins
    note "unit tests ($cfg)"
    local srcs=(tests/unit/test_*.c)
    if [ ! -e "${srcs[0]}" ]; then
        fail "unit $cfg: no tests/unit/test_*.c"
        return
    fi
    bins=()
    for s in "${srcs[@]}"; do bins+=("build/$cfg-epoll/tests/$(basename "$s" .c)"); done
    if ! make -j"$JOBS" CONFIG="$cfg" EVENT=epoll "${bins[@]}" >"$log.build" 2>&1; then
        tail -20 "$log.build"
        fail "unit $cfg: build (see $log.build)"
        return
    fi
    : >"$log"
    for b in "${bins[@]}"; do
        local out rc p f
        if [ "$cfg" = tsan ] && [[ " $UNIT_SKIP_TSAN " == *" $(basename "$b") "* ]]; then
            echo "   $(basename "$b"): not run under TSan (UNIT_SKIP_TSAN; runs in release and asan)"
            continue
        fi
        out=$(timeout 300 "$b" 2>&1)
        rc=$?
        printf '%s\n' "$out" >>"$log"
        p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
        f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
        if grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' -e 'WARNING: ThreadSanitizer' \
                -e 'ERROR: LeakSanitizer' <<<"$out"; then
            fail "unit $cfg $(basename "$b"): sanitizer report (see $log)"
            f=$((f > 0 ? f : 1))
            FAILED=$((FAILED + f - 1))
            PASSED=$((PASSED + p))
            continue
        fi
        if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
            # a binary may have nothing for this configuration (e.g. tests that
            # need the debug clock); the stage as a whole must still run tests
            if [ $rc -ne 0 ]; then
                fail "unit $cfg $(basename "$b"): exit $rc before any test"
            else
                echo "   $(basename "$b"): no tests in this configuration"
            fi
            continue
        fi
        PASSED=$((PASSED + p))
        if [ "$f" -gt 0 ] || [ $rc -ne 0 ]; then
            f=$((f > 0 ? f : 1))
            FAILED=$((FAILED + f - 1))
            fail "unit $cfg $(basename "$b"): $f failed (exit $rc)"
            printf '%s\n' "$out" | grep -e '\[  FAILED  \]' -e 'ERROR' | head -10
        fi
    done
    local ok
    ok=$(grep -c '^\[       OK \]' "$log")
    echo "   $ok cmocka tests ok"
    [ "$ok" -gt 0 ] || fail "unit $cfg: ran no test"
}

if want unit; then
    for cfg in release asan tsan; do
        if [ -n "${BUILT[$cfg-epoll]:-}" ]; then unit "$cfg"; fi
    done
fi

# ---- integration tests ------------------------------------------------------
pytest_stage() { # label binary [pytest args...]
    local label=$1 bin=$2 log="$LOGS/pytest-$1.log" rc line p f e
    shift 2
    note "integration ($label): $bin $*"
    NODELAY_BIN="$bin" timeout 900 "$PY" -m pytest -p no:cacheprovider -q -rfEx \
        tests/integration "$@" $PYTEST_ARGS >"$log" 2>&1
    rc=$?
    line=$(tail -1 "$log")
    p=$(grep -o '[0-9]* passed' <<<"$line" | grep -o '[0-9]*')
    f=$(grep -o '[0-9]* failed' <<<"$line" | grep -o '[0-9]*')
    e=$(grep -o '[0-9]* error' <<<"$line" | grep -o '[0-9]*')
    p=${p:-0}; f=${f:-0}; e=${e:-0}
    echo "   $line"
    PASSED=$((PASSED + p))
    if [ $rc -eq 5 ] || [ "$p" -eq 0 ]; then
        fail "integration $label: ran no test (pytest exit $rc; see $log)"
    elif [ $rc -ne 0 ] || [ "$f" -gt 0 ] || [ "$e" -gt 0 ]; then
        local n=$((f + e))
        n=$((n > 0 ? n : 1))
        FAILED=$((FAILED + n - 1))
        fail "integration $label: $n failed (pytest exit $rc; see $log)"
        grep -E '^(FAILED|ERROR) ' "$log" | head -30
    fi
}

if want integration; then
    [ -n "${BUILT[release-epoll]:-}" ] && pytest_stage release build/release-epoll/nodelay
    [ -n "${BUILT[asan-epoll]:-}" ] && pytest_stage asan build/asan-epoll/nodelay
    # the same binary on its fallback backend (helpers.py adds NODELAY_ARGS)
    [ -n "${BUILT[release-epoll]:-}" ] && NODELAY_ARGS="-o io_uring=off" pytest_stage epoll \
        build/release-epoll/nodelay -m "not slow and not clients"
    [ -n "${BUILT[release-poll]:-}" ] && pytest_stage poll build/release-poll/nodelay \
        -m "not slow and not clients"
    [ -n "${BUILT[tsan-epoll]:-}" ] && pytest_stage tsan build/tsan-epoll/nodelay -m concurrency
fi

# ---- memcached's own tests ---------------------------------------------------------
# Skips (exit 77) when Debian's source package cannot be fetched, e.g. offline;
# CI has Debian's registry, so there a skip is a failure.
if want suite; then
    if [ -n "${BUILT[debug-epoll]:-}" ]; then
        note "memcached's t/*.t (scripts/memcached-suite.sh)"
        timeout 900 bash scripts/memcached-suite.sh >"$LOGS/memcached-suite.log" 2>&1
        rc=$?
        grep -E '^(ok|FAIL) |SKIP' "$LOGS/memcached-suite.log" | sed 's/^/   /'
        line=$(tail -1 "$LOGS/memcached-suite.log")
        p=$(sed -n 's/^memcached-suite: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
        f=$(sed -n 's/^memcached-suite: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
        if [ $rc -eq 77 ] && [ -z "${CI:-}" ]; then
            echo "   skipped (not counted): $line"
        elif [ $rc -ne 0 ] || [ -z "$p" ] || [ "$p" -eq 0 ]; then
            PASSED=$((PASSED + ${p:-0}))
            n=${f:-1}
            n=$((n > 0 ? n : 1))
            FAILED=$((FAILED + n - 1))
            fail "memcached-suite: $n failed (see $LOGS/memcached-suite.log)"
        else
            pass suite "$p"
        fi
    else
        note "memcached's t/*.t: no debug build, not run"
    fi
fi

# ---- fuzzers ------------------------------------------------------------------
if want fuzz; then
    note "fuzz (${FUZZ_SECONDS}s each)"
    bash scripts/fuzz.sh "$FUZZ_SECONDS" >"$LOGS/fuzz.log" 2>&1
    rc=$?
    grep '^fuzz ' "$LOGS/fuzz.log" | sed 's/^/   /'
    line=$(tail -1 "$LOGS/fuzz.log")
    p=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$line")
    f=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$line")
    PASSED=$((PASSED + ${p:-0}))
    if [ $rc -ne 0 ] || [ -z "$p" ] || [ "${p:-0}" -eq 0 ]; then
        n=${f:-1}
        n=$((n > 0 ? n : 1))
        FAILED=$((FAILED + n - 1))
        fail "fuzz: $n failed (see $LOGS/fuzz.log)"
    fi
fi

# ---- soak ---------------------------------------------------------------------
# SOAK_KINDS: the slow/bad clients beside the honest load, all of them by
# default (bench/soak --help lists them), kind 5's bursts of non-readers too.
SOAK_KINDS=${SOAK_KINDS:-0,1,2,3,4,5,6}
if want soak; then
    if [ -x bench/soak ] && [ -n "${BUILT[release-epoll]:-}" ]; then
        note "soak (${SOAK_SECONDS}s)"
        if make -j"$JOBS" loadgen >"$LOGS/soak-build.log" 2>&1 &&
            timeout $((SOAK_SECONDS + 120)) bench/soak --server build/release-epoll/nodelay \
                --duration "$SOAK_SECONDS" --slow-kinds "$SOAK_KINDS" >"$LOGS/soak.log" 2>&1; then
            tail -3 "$LOGS/soak.log" | sed 's/^/   /'
            pass soak
        else
            tail -15 "$LOGS/soak.log" 2>/dev/null
            fail "soak (see $LOGS/soak.log)"
        fi
    else
        note "soak: bench/soak not present yet, not run"
    fi
fi

note "done in $(elapsed)s"
if [ ${#FAILURES[@]} -gt 0 ]; then
    echo "Failures:"
    printf '  %s\n' "${FAILURES[@]}"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
