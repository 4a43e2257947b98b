#!/bin/bash
# Builds every libFuzzer harness (tests/fuzz/fuzz_*.c) with clang under
# ASan+UBSan, linked with all of src/ except main.c (epoll backend), and runs
# each for a short time from a seed corpus.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS...]     default 20 s each, all harnesses
#
# Output: one line per harness, "fuzz <name>: ok (<runs> runs)" or
# "fuzz <name>: FAILED (...)", and last "N passed, N failed". Exit status is
# non-zero when any harness failed to build or found a crash, leak or UB.
# Crash inputs are kept in build/fuzz/<name>/ (crash-*, leak-*, timeout-*).
set -u
cd "$(dirname "$0")/.."

SECONDS_EACH=${1:-20}
shift || true
CLANG=${CLANG:-clang}
OUT=build/fuzz
CFLAGS="-std=gnu11 -g -O1 -pthread -Isrc -DNODELAY_EVENT_epoll -DNODELAY_DEBUG
        -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined
        -fno-sanitize-recover=undefined"
LINK="-fsanitize=fuzzer,address,undefined -pthread -lxxhash -lssl -lcrypto"
JOBS=$(nproc 2>/dev/null || echo 2)
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

for name in "${harnesses[@]}"; do
    dir="$OUT/$name"
    mkdir -p "$dir/corpus"
    if [ $lib_ok -ne 0 ] || ! $CLANG $(echo $CFLAGS) -c "tests/fuzz/$name.c" -o "$dir/$name.o" \
        || ! $CLANG -o "$dir/$name" "$dir/$name.o" $objs $LINK; then
        echo "fuzz $name: FAILED (build)"
        failed=$((failed + 1))
        continue
    fi
    seeds="$seed_all/text"
    case "$name" in *bin*) seeds="$seed_all/binary" ;; esac
    extra=()
    [ -d "tests/fuzz/corpus/$name" ] && extra+=("tests/fuzz/corpus/$name")
    log="$dir/run.log"
    "$dir/$name" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$dir/" \
        "$dir/corpus" "$seeds" "${extra[@]}" >"$log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    if [ $rc -eq 0 ] && ! grep -q -e 'ERROR: AddressSanitizer' -e 'runtime error:' \
            -e 'ERROR: LeakSanitizer' -e 'ERROR: libFuzzer' "$log"; then
        echo "fuzz $name: ok (${runs:-?} runs in ${SECONDS_EACH}s)"
        passed=$((passed + 1))
    else
        echo "fuzz $name: FAILED (exit $rc; log $log)"
        grep -m 20 -A 12 -e 'ERROR: ' -e 'runtime error:' "$log" | head -40
        ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* 2>/dev/null | head -5
        failed=$((failed + 1))
    fi
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
