#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds every libFuzzer harness (tests/fuzz/fuzz_*.c) with clang under
# ASan+UBSan, linked with all of src/ except main.c (epoll backend), and runs
# each for a short time from a seed corpus.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     default 20 s each, all harnesses
#   scripts/fuzz.sh --build-only [HARNESS...]  only build them (make test
#                                              does it while other stages wait)
#
# FUZZ_JOBS harnesses (default: the number of CPUs) run at a time: libFuzzer
# is one thread, so on 2 cores two harnesses get each the CPU time one alone
# got, in half the wall time.
#
# Output: one line per harness, "fuzz <name>: ok (<runs> runs)" or
# "fuzz <name>: FAILED (...)", in the harnesses' order, and last "N passed,
# N failed". Exit status is non-zero when any harness failed to build or found
# a crash, leak or UB. Crash inputs are kept in build/fuzz/<name>/ (crash-*,
# leak-*, timeout-*); each run's libFuzzer output is build/fuzz/<name>/run.log.
set -u
cd "$(dirname "$0")/.."

BUILD_ONLY=
if [ "${1:-}" = --build-only ]; then
    BUILD_ONLY=1
    shift
    set -- 0 "$@"
fi
SECONDS_EACH=${1:-20}
shift || true
CLANG=${CLANG:-clang}
OUT=build/fuzz
CFLAGS="-std=gnu11 -g -O1 -pthread -Isrc -DNODELAY_EVENT_epoll -DNODELAY_DEBUG
        -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
        -fno-sanitize-recover=undefined"
LINK="-fsanitize=fuzzer,address,undefined -pthread -lxxhash -lssl -lcrypto"
JOBS=$(nproc 2>/dev/null || echo 2)
FUZZ_JOBS=${FUZZ_JOBS:-$JOBS}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=0
failed=0

if [ $# -gt 0 ]; then
    harnesses=("$@")
else
    harnesses=()
    for f in tests/fuzz/fuzz_*.c; do
        [ -e "$f" ] && harnesses+=("$(basename "$f" .c)")
    done
fi
if [ ${#harnesses[@]} -eq 0 ]; then
    echo "fuzz: no harnesses in tests/fuzz/"
    echo "0 passed, 1 failed"
    exit 1
fi

# The library: every src/**/*.c except main.c, the poll and io_uring backends
# (the harnesses run on epoll), compiled
# once with clang for all harnesses.
mkdir -p "$OUT/lib"
lib_src=$(ls src/*.c src/*/*.c src/*/*/*.c | grep -v -e '^src/main\.c$' -e '^src/event/event_poll\.c$' \
    -e '^src/event/event_uring\.c$')
printf '%s\n' $lib_src | xargs -P "$JOBS" -I{} sh -c '
    o="'"$OUT"'/lib/$(echo "{}" | tr / _ | sed "s/\.c$/.o/")"
    if [ ! -e "$o" ] || [ "{}" -nt "$o" ] || [ -n "$(find src -name "*.h" -newer "$o" | head -1)" ]; then
        '"$CLANG"' '"$(echo $CFLAGS)"' -c "{}" -o "$o" || { rm -f "$o"; exit 255; }
    fi'
lib_ok=$?
objs=$(for s in $lib_src; do echo "$OUT/lib/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')"; done)

# Seeds: the differential test's requests are a ready-made corpus of valid and
# malformed traffic; binary ones seed the binary harness, text ones the rest.
seed_all="$OUT/seeds"
if [ ! -d "$seed_all/text" ] || [ tests/integration/diff_cases.txt -nt "$seed_all/text" ]; then
    rm -rf "$seed_all"
    /usr/bin/python3 tests/integration/fuzz_seeds.py "$seed_all" || echo "fuzz: could not write seeds"
fi

# Builds run one after another (make-like output stays readable), then the
# harnesses FUZZ_JOBS at a time; each writes its verdict to verdict.txt.
runnable=()
for name in "${harnesses[@]}"; do
    dir="$OUT/$name"
    mkdir -p "$dir/corpus"
    rm -f "$dir/verdict.txt"
    # A harness of code outside src/ names it: "/* fuzz-link: FILE... */".
    more=$(sed -n 's|^/\* fuzz-link: \(.*\) \*/$|\1|p' "tests/fuzz/$name.c")
    if [ $lib_ok -ne 0 ] || ! $CLANG $(echo $CFLAGS) -c "tests/fuzz/$name.c" -o "$dir/$name.o" \
        || ! $CLANG $(echo $CFLAGS) -o "$dir/$name" "$dir/$name.o" $more $objs $LINK; then
        echo "fuzz $name: FAILED (build)" >"$dir/verdict.txt"
        continue
    fi
    runnable+=("$name")
done

run_one() { # name: runs one harness, its verdict to $OUT/<name>/verdict.txt
    local name=$1 dir="$OUT/$1" seeds="$seed_all/text" extra=() log rc runs
    case "$name" in *bin*) seeds="$seed_all/binary" ;; esac
    [ -d "tests/fuzz/corpus/$name" ] && extra+=("tests/fuzz/corpus/$name")
    log="$dir/run.log"
    "$dir/$name" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/" \
        "$dir/corpus" "$seeds" "${extra[@]}" >"$log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    if [ $rc -eq 0 ] && ! grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' \
            -e 'ERROR: LeakSanitizer' -e 'ERROR: libFuzzer' "$log"; then
        echo "fuzz $name: ok (${runs:-?} runs in ${SECONDS_EACH}s)" >"$dir/verdict.txt"
    else
        {
            echo "fuzz $name: FAILED (exit $rc; log $log)"
            grep -m 20 -A 12 -e 'ERROR: ' -e 'runtime error:' "$log" | head -40
            ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* 2>/dev/null | head -5
        } >"$dir/verdict.txt"
    fi
}

if [ -n "$BUILD_ONLY" ]; then
    for name in "${harnesses[@]}"; do
        [ -s "$OUT/$name/verdict.txt" ] && cat "$OUT/$name/verdict.txt"
    done
    echo "fuzz: ${#runnable[@]} of ${#harnesses[@]} harnesses built"
    [ ${#runnable[@]} -eq ${#harnesses[@]} ]
    exit
fi

running=0
for name in "${runnable[@]}"; do
    if [ $running -ge "$FUZZ_JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$name" &
    running=$((running + 1))
done
wait

for name in "${harnesses[@]}"; do
    v="$OUT/$name/verdict.txt"
    if [ -s "$v" ]; then
        cat "$v"
    else
        echo "fuzz $name: FAILED (no verdict: the run did not finish)"
    fi
    if [ -s "$v" ] && head -1 "$v" | grep -q ': ok ('; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
