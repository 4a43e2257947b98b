#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# `make test` (and CI): every stage, in order, then the sum. Each stage is a
# make target of its own, `make test-STAGE` (scripts/test-stage.sh says what
# each runs), and writes its counts to build/test-results/STAGE. This runs
# them on this 2-core machine in under 15 minutes (docs/testing.md, "How
# `make test` fits in 15 minutes"): the integration runs mostly wait, so the
# stages of a group run side by side, each with its own servers on free
# ports, and each group's output is printed whole, in start order, once the
# group is done. A group of one runs with nothing of ours beside it (the
# delayed-ACK trap's tests and the soak time requests). SERIAL=1 runs every
# stage alone; STAGES picks kinds (a subset of "layers build unit
# integration suite fuzz soak"). Logs: build/test-logs/.
#
# The last line is exactly "N passed, N failed, N skipped" (CI reads it),
# after every skip and failure with its reason; the exit status is non-zero
# on any failure. A stage that did not finish (no counts) is a failure.
set -u
cd "$(dirname "$0")/.." || exit 2

GROUPS_IN_ORDER=(
    "layers"
    # the compilers use both CPUs already
    "build-release-epoll" "build-debug-epoll" "build-asan-epoll" "build-tsan-epoll" "build-release-poll"
    # a unit binary is mostly one thread
    "unit-release unit-asan unit-tsan"
    # the two full runs, each as two pytest processes (conftest.py's `long`
    # files and the rest), the fuzzers' clang build, memcached's suite
    "integration-release integration-release-long integration-asan integration-asan-long fuzz-build memcached-suite"
    # the other backends on the tests that depend on it, TSan on the
    # concurrency tests, the fuzzers in the CPU these leave idle
    "integration-epoll integration-poll integration-tsan fuzz"
    "trap-release" "trap-asan" "trap-epoll" "trap-poll"
    "soak"
)
SERIAL=${SERIAL:-}
STAGES=${STAGES:-layers build unit integration suite fuzz soak}
LOGS=build/test-logs
RESULTS=build/test-results
rm -rf "$RESULTS"
mkdir -p "$LOGS" "$RESULTS"
# for the stages: elapsed times from here, and the builds are done by their stages
TEST_START=$(date +%s)
export TEST_START TEST_PREBUILT=1

# want STAGE: its kind is in STAGES (the builds serve unit, integration and suite)
want() {
    local kind
    case $1 in
    build-*) kind="build unit integration suite" ;;
    unit-*) kind=unit ;;
    integration-* | trap-*) kind=integration ;;
    memcached-suite) kind=suite ;;
    fuzz*) kind=fuzz ;;
    *) kind=$1 ;;
    esac
    for k in $kind; do [[ " $STAGES " == *" $k "* ]] && return 0; done
    return 1
}

# run_group STAGE...: the stages side by side (one after another with
# SERIAL), each `make test-STAGE` with its output in build/test-logs/, then
# their output in start order.
STARTED=()
RUNNING=()
run_group() {
    local s
    for s in "$@"; do
        want "$s" || continue
        make -s --no-print-directory "test-$s" >"$LOGS/stage-$s.out" 2>&1 &
        RUNNING+=("$s:$!")
        STARTED+=("$s")
        [ -z "$SERIAL" ] || wait_group
    done
    wait_group
}
wait_group() {
    local entry
    for entry in "${RUNNING[@]}"; do
        wait "${entry#*:}"
        cat "$LOGS/stage-${entry%%:*}.out"
        [ -e "$RESULTS/${entry%%:*}" ] || echo "   FAILED: ${entry%%:*}: the stage did not finish"
    done
    RUNNING=()
}
# Stopped (CI's timeout, ^C): the stages running in the background stop too.
kill_tree() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
    kill "$1" 2>/dev/null
}
stop_running() {
    local entry
    for entry in "${RUNNING[@]}"; do kill_tree "${entry#*:}"; done
    exit 130
}
trap stop_running INT TERM

# every stage scripts/test-stage.sh knows is in a group above
for s in $(bash scripts/test-stage.sh --list); do
    [[ " ${GROUPS_IN_ORDER[*]} " == *" $s "* ]] || { echo "test-all.sh: stage $s is in no group" >&2; exit 1; }
done

for group in "${GROUPS_IN_ORDER[@]}"; do
    # test_deploy's `make install` in both full runs: the man page made
    # first, so that they have nothing to write in the tree
    if [[ $group == integration-release* ]] && [ -e "$RESULTS/build-release-epoll.built" ] &&
        { want integration-release || want memcached-suite; }; then
        make -s man >"$LOGS/man.log" 2>&1
    fi
    # shellcheck disable=SC2086 # a group is its stages' names
    run_group $group
done

# ---- the sum --------------------------------------------------------------------
PASSED=0 FAILED=0 SKIPPED=0
FAILURES=() SKIPS=()
for s in "${STARTED[@]}"; do
    if [ ! -e "$RESULTS/$s" ]; then
        FAILED=$((FAILED + 1))
        FAILURES+=("$s: the stage did not finish (see $LOGS/stage-$s.out)")
        continue
    fi
    read -r p f k <"$RESULTS/$s"
    PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) SKIPPED=$((SKIPPED + k))
    while read -r kind n msg; do
        case $kind in
        F) FAILURES+=("$msg") ;;
        S) SKIPS+=("$n $msg") ;;
        esac
    done <"$RESULTS/$s.why"
done
printf '== [%4ss] done in %ss\n' $(($(date +%s) - TEST_START)) $(($(date +%s) - TEST_START))
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
