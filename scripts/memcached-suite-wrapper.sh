#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# memcached's t/lib/MemcachedTest.pm runs `./memcached-debug ARGS` from its
# source directory; scripts/memcached-suite.sh links this file there. It runs
# nodelay ($NODELAY_SUITE_EXE) with the same arguments, translating only
# where memcached 1.6.18's tests (Debian's t/) and 1.6.45's flags, which
# nodelay follows, disagree. Every other argument, -h included, goes through
# untouched, so a flag nodelay does not know fails the test as it should.
#
# Translated:
#   -o slab_chunk_max=N   bytes in 1.6.18, kilobytes since 1.6.19 (and in
#                         nodelay): N/1024 when N is a whole number of KB
set -u
exe=${NODELAY_SUITE_EXE:?NODELAY_SUITE_EXE names the nodelay binary (scripts/memcached-suite.sh sets it)}

# One -o value: its comma-separated options with slab_chunk_max rewritten.
translate_o() {
    local out=() opt n
    IFS=, read -r -a opts <<<"$1"
    for opt in "${opts[@]}"; do
        if [[ $opt =~ ^slab_chunk_max=([0-9]+)$ ]]; then
            n=${BASH_REMATCH[1]}
            if [ "$n" -ge 1024 ] && [ $((n % 1024)) -eq 0 ]; then
                opt=slab_chunk_max=$((n / 1024))
            fi
        fi
        out+=("$opt")
    done
    local IFS=,
    printf '%s' "${out[*]}"
}

# NODELAY_SUITE_EXT=1 (scripts/memcached-suite.sh sets it for EXT_TESTS): -h
# also names ext_path, which is how t/lib's supports_extstore decides.
if [ "${NODELAY_SUITE_EXT:-}" = 1 ] && [ "$*" = -h ]; then
    "$exe" -h
    echo "   - ext_path: (forced by NODELAY_SUITE_EXT)"
    exit 0
fi

args=()
while [ $# -gt 0 ]; do
    case $1 in
    -o)
        args+=(-o)
        shift
        [ $# -gt 0 ] && args+=("$(translate_o "$1")")
        ;;
    -o*) args+=("-o$(translate_o "${1#-o}")") ;;
    *) args+=("$1") ;;
    esac
    [ $# -gt 0 ] && shift
done
exec "$exe" "${args[@]}"
