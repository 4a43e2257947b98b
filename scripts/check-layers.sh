#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Fails when the parts of src/ import each other in a loop, or when the
# files inside a folder it enforces call each other in a loop.
#
#   scripts/check-layers.sh [-v]      -v also prints the graphs
#
# Every '#include "x/y.h"' in src/ is an edge from the including file's part
# to the included file's part, where a part is a folder directly under src/
# (from the top: metrics, server, settings, net, proto, stats, reply, store,
# watch, event, base) or, for a file at the top of src/, its name before
# any '_' or '.' (main). settings/options.* is a part of its own, options:
# settings' one way out, it fills each module's options and so sits above
# net, proto and store, while the settings table sits below them. Edges
# inside one part are left out. A loop is a set of parts that all reach each other (a strongly
# connected component of that graph); any loop fails, and the script names
# one cycle in it.
#
# Inside a folder (with its subfolders), the graph is of calls between its
# files: file A calls file B when a function body or initializer in A names
# a function B defines (a .c's non-static functions, a header's inline
# ones). Declarations are not calls. A header and its own .c are one node:
# same name, where a header may carry its folder's name as a prefix
# (store/store_seg.h is seg.c's header). Calls made only inside macros are
# not seen. A loop there fails for the folders in INFOLDER_ENFORCED, and is
# only reported for the others, until they are taken apart too.
#
# The last line is "layers: ok ..." or "layers: LOOP ...".
set -u
INFOLDER_ENFORCED="base event metrics net proto reply server settings stats store watch"
cd "$(dirname "$0")/.."

part() {
    local path=${1#src/}
    case "$path" in
    settings/options.*) echo options ;;
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

EDGES="$edges" VERBOSE="${1:-}" ENFORCED="$INFOLDER_ENFORCED" /usr/bin/python3 - <<'EOF'
import os, re, sys

graph = {}
for line in os.environ["EDGES"].splitlines():
    a, b = line.split()
    graph.setdefault(a, set()).add(b)
    graph.setdefault(b, set())
if os.environ["VERBOSE"] == "-v":
    for p in sorted(graph):
        print(f"{p} -> {' '.join(sorted(graph[p]))}")

# Tarjan's strongly connected components: the sets of nodes that all reach
# each other; each one of more than one node is a loop.
def loops(graph):
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
    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sccs

# The shortest cycle through a loop's first node, for whoever fixes it.
def cycle_of(graph, scc):
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
    return ' -> '.join(reversed(cycle))

bad = 0
for scc in loops(graph):
    print(f"  loop: {cycle_of(graph, scc)} (parts in the loop: {' '.join(scc)})")
    bad += 1
nedges = sum(len(v) for v in graph.values())

# ---- calls between the files inside each folder ------------------------
def clean(text):
    # comments, strings, character constants and preprocessor lines out
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    text = re.sub(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', ' ', text, flags=re.M)
    return text

IDENT = re.compile(r'[A-Za-z_]\w*')
def scan(text):
    """Functions defined at the top level (name, static?) and the
    identifiers named inside top-level braces (bodies, initializers)."""
    defs, uses = [], set()
    depth, start, head = 0, 0, 0
    for i, c in enumerate(text):
        if c == '{':
            if depth == 0:
                start = i
                h = text[head:i]
                m = re.search(r'(\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*$', h)
                if m and '=' not in h and not re.search(r'\b(struct|union|enum)\s+\w*\s*$', h):
                    defs.append((m.group(1), bool(re.search(r'\bstatic\b', h))))
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                uses.update(IDENT.findall(text[start:i]))
                head = i + 1
        elif c == ';' and depth == 0:
            h = text[head:i]
            if '=' in h:  # a top-level initializer may name functions
                uses.update(IDENT.findall(h.split('=', 1)[1]))
            head = i + 1
    return defs, uses

def node(folder, rel):
    d, base = os.path.split(rel)
    stem = base.rsplit('.', 1)[0]
    if stem.startswith(folder + '_'):
        stem = stem[len(folder) + 1:]
    return os.path.join(d, stem) if d else stem

enforced = set(os.environ["ENFORCED"].split())
folders = sorted(d for d in os.listdir('src') if os.path.isdir(os.path.join('src', d)))
ibad, inote, icount = 0, 0, 0
for folder in folders:
    files = []
    for root, _, names in os.walk(os.path.join('src', folder)):
        files += [os.path.join(root, n) for n in names if n.endswith(('.c', '.h'))]
    defined, used = {}, {}
    for f in sorted(files):
        rel = os.path.relpath(f, os.path.join('src', folder))
        n = node(folder, rel)
        defs, uses = scan(clean(open(f, errors='replace').read()))
        own = {d for d, _ in defs}
        for name, static in defs:
            # a .c's static functions are its own; a header's are everyone's
            if not (static and f.endswith('.c')):
                defined.setdefault(name, set()).add(n)
        used.setdefault(n, set()).update(uses - own)
    g = {n: set() for n in used}
    for n, names in used.items():
        for name in names:
            for to in defined.get(name, ()):
                if to != n:
                    g[n].add(to)
    icount += sum(len(v) for v in g.values())
    if os.environ["VERBOSE"] == "-v" and folder in enforced:
        for n in sorted(g):
            print(f"{folder}/{n} -> {' '.join(sorted(g[n]))}")
    for scc in loops(g):
        if folder in enforced:
            print(f"  loop in {folder}/: {cycle_of(g, scc)} ({len(scc)} files in the loop)")
            ibad += 1
        else:
            print(f"  note: loop in {folder}/ (not enforced yet): {cycle_of(g, scc)} "
                  f"({len(scc)} files in the loop)")
            inote += 1

if bad or ibad:
    print(f"layers: LOOP ({bad} between parts of src/ in {nedges} edges, "
          f"{ibad} inside enforced folders)")
    sys.exit(1)
print(f"layers: ok ({nedges} edges between parts of src/, no loop; "
      f"calls inside {' '.join(sorted(enforced))}: no loop; {inote} loop(s) noted elsewhere)")
EOF
