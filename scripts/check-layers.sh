#!/bin/bash
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
# connected component of that graph); every loop fails, except one listed
# in ALLOWED below with its reason, and no allowed loop may hold two of
# net, proto, reply and stats (issue 8: those four are layered). The last
# line is "layers: ok ..." or "layers: LOOP ...".
set -u
cd "$(dirname "$0")/.."

# Loops known and owned elsewhere, one per line: the parts, sorted, then why.
ALLOWED='
reply store watch	the store reports evictions to watch (watch_eviction), watch streams into a reply queue, whose item references pin store memory: watch needs its event sink split from its client stream (issue 11)
'

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

EDGES="$edges" ALLOWED="$ALLOWED" VERBOSE="${1:-}" /usr/bin/python3 - <<'EOF'
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

allowed = {}
for line in os.environ["ALLOWED"].strip().splitlines():
    parts, why = line.split("\t", 1)
    allowed[" ".join(sorted(parts.split()))] = why
layered = {"net", "proto", "reply", "stats"}
bad = 0
for scc in sccs:
    key = " ".join(scc)
    why = allowed.get(key)
    if why and len(layered & set(scc)) < 2:
        print(f"  known loop: {key} ({why})")
        continue
    # name one cycle inside the component, for whoever fixes it
    path, seen = [scc[0]], {scc[0]}
    while True:
        nxt = sorted(w for w in graph[path[-1]] if w in scc)
        back = [w for w in nxt if w == scc[0]]
        if back and len(path) > 1:
            break
        nxt = [w for w in nxt if w not in seen] or nxt
        path.append(nxt[0])
        if nxt[0] in seen:
            break
        seen.add(nxt[0])
    print(f"  loop: {' -> '.join(path + ([scc[0]] if path[-1] != scc[0] else []))}")
    bad += 1
nedges = sum(len(v) for v in graph.values())
if bad:
    print(f"layers: LOOP between parts of src/ ({bad} loop(s), {nedges} edges)")
    sys.exit(1)
print(f"layers: ok ({nedges} edges between parts of src/, {len(sccs)} known loop(s))")
EOF
