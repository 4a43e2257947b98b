#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Fails when the files inside a folder of src/ call each other in a loop.
#
#   scripts/check-calls.sh [-v] FOLDER...     e.g. scripts/check-calls.sh -v src/proto
#
# check-layers.sh sees folders; this sees the files inside one. A unit is a
# file without its extension, so a header and its own .c are one unit
# (text/text.h with text/text.c). An edge goes from a unit to another when
# its code names a function or variable the other defines: a .c file's
# whole text, a header's static inline bodies (a header's declarations
# name what others define, and are no use of it). Definitions come from
# universal ctags; functions static to a .c file are seen by no other unit.
# Calls through pointers (server_ops, the reply queue's callbacks) are not
# edges: that is the point of them. -v prints every edge with the names it
# is made of. A loop is a set of units that all reach each other; any loop
# fails and the script names one cycle. The last line is "calls: ok ..." or
# "calls: LOOP ...".
set -u
cd "$(dirname "$0")/.."
verbose=
[ "${1:-}" = -v ] && { verbose=-v; shift; }
[ $# -gt 0 ] || { echo "usage: $0 [-v] FOLDER..." >&2; exit 2; }
command -v ctags >/dev/null || { echo "calls: ctags (universal-ctags) is needed" >&2; exit 2; }

status=0
for dir in "$@"; do
    dir=${dir%/}
    tags=$(find "$dir" -name '*.[ch]' | sort |
        xargs ctags --output-format=json --fields='*' --c-kinds=fv -o - 2>/dev/null)
    TAGS="$tags" DIR="$dir" VERBOSE="$verbose" /usr/bin/python3 - <<'EOF' || status=1
import json, os, re, sys

d = os.environ["DIR"]
def unit(path):
    return os.path.splitext(os.path.relpath(path, d))[0]

defs = {}    # name -> unit, for names another unit may use
bodies = {}  # header path -> [(first line, last line)] of its inline bodies
for line in os.environ["TAGS"].splitlines():
    t = json.loads(line)
    if t.get("_type") != "tag" or t.get("roles", "def") != "def":
        continue
    path, header = t["path"], t["path"].endswith(".h")
    if t["kind"] == "function":
        if header:
            bodies.setdefault(path, []).append((t["line"], t.get("end", t["line"])))
        elif t.get("file"):
            continue  # static: no other file can name it
    elif t["kind"] == "variable":
        if header or t.get("file"):
            continue
    defs.setdefault(t["name"], unit(path))

def code(path):
    """The file's text without comments, strings and preprocessor lines;
    for a header, only its inline bodies."""
    with open(path) as f:
        lines = f.readlines()
    if path.endswith(".h"):
        keep = set()
        for a, b in bodies.get(path, []):
            keep.update(range(a, b + 1))
        lines = [l if i + 1 in keep else "\n" for i, l in enumerate(lines)]
    text = "".join(lines)
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', " ", text)
    return re.sub(r"^\s*#[^\n]*(\\\n[^\n]*)*", " ", text, flags=re.M)

graph, why = {}, {}
for root, _, files in os.walk(d):
    for name in files:
        if not name.endswith((".c", ".h")):
            continue
        path = os.path.join(root, name)
        u = unit(path)
        graph.setdefault(u, set())
        for ident in set(re.findall(r"[A-Za-z_]\w*", code(path))):
            v = defs.get(ident)
            if v and v != u:
                graph[u].add(v)
                graph.setdefault(v, set())
                why.setdefault((u, v), set()).add(ident)
if os.environ["VERBOSE"]:
    for u in sorted(graph):
        for v in sorted(graph[u]):
            print(f"{u} -> {v}: {' '.join(sorted(why[(u, v)]))}")

index, low, stack, on, sccs = {}, {}, [], set(), []
sys.setrecursionlimit(10000)
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

for scc in sccs:
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
    print(f"  loop in {d}: {' -> '.join(reversed(cycle))} ({len(scc)} units: {' '.join(scc)})")
nedges = sum(len(v) for v in graph.values())
if sccs:
    print(f"calls: LOOP between files of {d} ({len(sccs)} loop(s), {nedges} edges)")
    sys.exit(1)
print(f"calls: ok ({nedges} edges between files of {d}, no loop)")
EOF
done
exit $status
