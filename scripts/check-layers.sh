#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Fails when the parts of src/ import each other in a loop.
#
#   scripts/check-layers.sh [-v]      -v also prints the graph
#
# Every '#include "x/y.h"' in src/ is an edge from the including file's part
# to the included file's part, where a part is a folder directly under src/
# (net, proto, reply, stats, store, event, watch) or, for the files at the
# top of src/, the name before any '_' or '.' (server, settings for
# settings_*.c, clock, log, main, version). Edges inside one part are left
# out. A loop is a set of parts that all reach each other (a strongly
# connected component of that graph); any loop fails, and the script names
# one cycle in it. The last line is "layers: ok ..." or "layers: LOOP ...".
#
# Then, inside each folder of INSIDE, the same for the files' calls
# (scripts/check-calls.sh: a header and its own .c are one unit); a loop
# there fails too. Add a folder once it has none.
set -u
cd "$(dirname "$0")/.."
INSIDE="src/proto"

part() {
    local path=${1#src/}
    case "$path" in
    */*) echo "${path%%/*}" ;;
    *) path=${path%%.*}; echo "${path%%_*}" ;;
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

inside=0
bash scripts/check-calls.sh $INSIDE || inside=1

EDGES="$edges" VERBOSE="${1:-}" /usr/bin/python3 - <<'EOF' || exit 1
import os, sys

graph = {}
for line in os.environ["EDGES"].splitlines():
    a, b = line.split()
    graph.setdefault(a, set()).add(b)
    graph.setdefault(b, set())
if os.environ["VERBOSE"] == "-v":
    for p in sorted(graph):
        print(f"{p} -> {' '.join(sorted(graph[p]))}")

# Tarjan's strongly connected components.
index, low, stack, on, sccs = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(graph[v]):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        scc = []
        while True:
            w = stack.pop()
            on.discard(w)
            scc.append(w)
            if w == v:
                break
        if len(scc) > 1:
            sccs.append(sorted(scc))
for v in sorted(graph):
    if v not in index:
        visit(v)

bad = 0
for scc in sccs:
    # name the shortest cycle through its first part, for whoever fixes it
    start, prev, todo = scc[0], {}, [scc[0]]
    while todo and start not in prev:
        nxt = []
        for v in todo:
            for w in sorted(graph[v]):
                if w in scc and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    cycle, v = [start], prev[start]
    while v != start:
        cycle.append(v)
        v = prev[v]
    cycle.append(start)
    print(f"  loop: {' -> '.join(reversed(cycle))} (parts in the loop: {' '.join(scc)})")
    bad += 1
nedges = sum(len(v) for v in graph.values())
if bad:
    print(f"layers: LOOP between parts of src/ ({bad} loop(s), {nedges} edges)")
    sys.exit(1)
print(f"layers: ok ({nedges} edges between parts of src/, no loop)")
EOF
exit $inside
