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
# Inside store/, includes follow the store's layers too (STORE_LAYERS
# below, lowest first): a file may include the headers of its own layer and
# of the layers below it, and store.h and store_compat.h (the public
# headers) anywhere. store_core.h, the composition (struct store and
# struct store_ctx), may be included only by the files at or above the
# lookup, which compose the parts: a part below it reaches the others only
# through what it is handed. store_core.h itself includes every part's
# header, as it holds each part's struct. A store file in no layer fails:
# a new part says where it sits.
#
# The last line is "layers: ok ..." or "layers: LOOP ...".
set -u
INFOLDER_ENFORCED="base event metrics net proto reply server settings stats store watch"
cd "$(dirname "$0")/.."

# The store's layers, lowest first: "rank:file ...", files relative to
# src/store. The parts below the lookup own their state and never see
# struct store; from the lookup up, files compose them (store_core.h).
STORE_LAYERS="
0:store.h store_compat.h store_flash.h
1:store_item.h item.c hugemem.h hugemem.c store_counters.h persist/split.h persist/split.c
2:store_index.h index.c index_move.c store_life.h store_life.c store_classes.h store_classes.c store_ghost.h store_ghost.c flash/flash_layout.h flash/flash_layout.c flash/flash_dev.h flash/flash_dev.c flash/flash_keep.h flash/flash_keep.c
3:seg_counts.h flash/flash_tier.h flash/flash_tier.c flash/flash_tier_stats.c flash/flash_tier_adopt.c flash/flash_gc.h flash/flash_gc.c flash/flash_scan.h flash/flash_scan.c
4:persist/persist.h persist/persist.c
5:store_seg.h seg.c seg_walk.c seg_counts.c seg_pins.c seg_policy.c
6:store_lookup.h store_find.h store_lookup.c store_core.h
7:store_link.h store_link.c store_compat.c
8:store_write.h store_write.c store_arith.c store_upload.h store_upload.c store_flash.c store_flash_stats.c store_flash_scan.c store_flash_ctl.h store_cold.h store_cold.c
9:store_crawl.h store_crawl.c persist/restore.h persist/restore.c persist/restore_index.h persist/restore_index.c persist/restore_flash.c
10:store.c
"
STORE_PUBLIC="store.h store_compat.h store_flash.h"
STORE_COMPOSITION="store_core.h"

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

EDGES="$edges" VERBOSE="${1:-}" ENFORCED="$INFOLDER_ENFORCED" STORE_LAYERS="$STORE_LAYERS" \
    STORE_PUBLIC="$STORE_PUBLIC" STORE_COMPOSITION="$STORE_COMPOSITION" /usr/bin/python3 - <<'EOF'
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

# ---- includes inside store/ follow its layers ---------------------------
rank = {}
for line in os.environ["STORE_LAYERS"].split("\n"):
    if line.strip():
        r, names = line.split(":", 1)
        for n in names.split():
            rank[n] = int(r)
public = set(os.environ["STORE_PUBLIC"].split())
composition = os.environ["STORE_COMPOSITION"]
compose_rank = rank[composition]
sbad, sinc = 0, 0
sroot = os.path.join('src', 'store')
for root, _, names in os.walk(sroot):
    for n in sorted(names):
        if not n.endswith(('.c', '.h')):
            continue
        f = os.path.join(root, n)
        rel = os.path.relpath(f, sroot)
        if rel not in rank:
            print(f"  store/{rel}: in no layer of STORE_LAYERS (scripts/check-layers.sh)")
            sbad += 1
            continue
        text = open(f, errors='replace').read()
        for inc in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]*)"', text, flags=re.M):
            path = inc if os.path.exists(os.path.join('src', inc)) else \
                os.path.relpath(os.path.join(root, inc), 'src')
            if not path.startswith('store/'):
                continue
            to = path[len('store/'):]
            sinc += 1
            if to in public or to == rel:
                continue
            if to == composition:
                ok = rank[rel] >= compose_rank
            else:
                ok = to in rank and (rank[to] <= rank[rel] or rel == composition)
            if not ok:
                print(f"  store/{rel} (layer {rank[rel]}) includes store/{to} "
                      f"(layer {rank.get(to, '?')}): above it")
                sbad += 1
if os.environ["VERBOSE"] == "-v":
    for n in sorted(rank, key=lambda k: (rank[k], k)):
        print(f"store layer {rank[n]}: {n}")

if bad or ibad or sbad:
    print(f"layers: LOOP ({bad} between parts of src/ in {nedges} edges, "
          f"{ibad} inside enforced folders, {sbad} store include(s) out of order)")
    sys.exit(1)
print(f"layers: ok ({nedges} edges between parts of src/, no loop; "
      f"calls inside {' '.join(sorted(enforced))}: no loop; "
      f"{sinc} includes inside store/ in layer order; {inote} loop(s) noted elsewhere)")
EOF
