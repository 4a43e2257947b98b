#!/bin/bash
# Fails when the folders of src/ import each other in a loop.
#
#   scripts/check-layers.sh [-v]      -v also prints the graph
#
# Every '#include "x/y.h"' in src/ is an edge from the including file's part
# to the included file's part, where a part is a folder directly under src/
# (net, proto, reply, stats, store, event) or, for the files at the top of
# src/, the file's own name (server, settings, clock, log, main, version).
# Edges inside one part are left out. tsort(1) then orders the parts and
# names the parts of any loop; the last line is "layers: ok" or
# "layers: LOOP ...", and the exit status is non-zero on a loop.
set -u
cd "$(dirname "$0")/.."

part() {
    local path=${1#src/}
    case "$path" in
    */*) echo "${path%%/*}" ;;
    *) path=${path%.*}; echo "$path" ;;
    esac
}

edges=$(
    find src -name '*.[ch]' | sort | while read -r f; do
        from=$(part "$f")
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
            while read -r inc; do
                # includes are relative to src/ (-Isrc) or to the file's folder
                if [ -e "src/$inc" ]; then
                    to=$(part "src/$inc")
                elif [ -e "$(dirname "$f")/$inc" ]; then
                    to=$(part "$(dirname "$f")/$inc")
                else
                    continue
                fi
                [ "$from" != "$to" ] && echo "$from $to"
            done
    done | sort -u
)

if [ "${1:-}" = "-v" ]; then
    echo "$edges" | awk '{ out[$1] = out[$1] " " $2 } END { for (p in out) print p " ->" out[p] }' | sort
fi

if loop=$(echo "$edges" | tsort 2>&1 >/dev/null) && [ -z "$loop" ]; then
    echo "layers: ok ($(echo "$edges" | wc -l) edges between parts of src/)"
    exit 0
fi
echo "$loop" | sed 's/^/  /'
echo "layers: LOOP between parts of src/ (see above)"
exit 1
