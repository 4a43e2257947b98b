#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns one compare.sh result directory into report.md and PNG charts.

Every number in the report is the median over rounds of what the runs
recorded; ratios are X/A (a server over memcached) and A'/A (memcached over a
second memcached: the noise floor). Servers: A memcached, B nodelay (its
default backend), Be nodelay -o io_uring=off (when the binary has io_uring),
F and Fu the canned-reply floor servers on epoll and io_uring, A2 memcached
again. Workloads named mt_* ran under memtier_benchmark, the rest under
bench/loadgen; the headline takes, for each measure, the less favourable of
the two generators. Nothing here is measured, only summarised.
"""
import json
import os
import statistics
import subprocess
import sys

OUT = sys.argv[1]
NAMES = {"A": "memcached", "B": "nodelay", "Be": "nodelay epoll", "F": "floor epoll",
         "Fu": "floor io_uring", "A2": "memcached #2"}
SERVERS = ["A", "B", "Be", "F", "Fu", "A2"]

DESCRIPTIONS = {
    "get90_p1": "50 conns, 90 % get / 10 % set, 100 B, pipeline 1",
    "get90_p16": "50 conns, 90 % get / 10 % set, 100 B, pipeline 16",
    "get90_rate": "as get90_p1 at a fixed offered rate (open loop)",
    "mget16": "50 conns, get of 16 keys, 100 B",
    "large100k": "10 conns, 90 % get / 10 % set, 100 KiB values",
    "set90": "50 conns, 10 % get / 90 % set, 100 B",
    "meta_mg_p16": "50 conns, meta mg, pipeline 16",
    "tls_get90_p1": "get90_p1 over TLS (-Z, both servers with the same certificate)",
    "tls_get90_p16": "get90_p16 over TLS",
    "tls_large100k": "large100k over TLS",
    "get90_p1_t2": "get90_p1 with every server at -t 2 and the load generator (2 threads) on the same 2 cores",
    "get90_p16_t2": "get90_p16 the same way",
}


def load_machine():
    m = {}
    with open(os.path.join(OUT, "machine.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                m[k] = v
    # every table names the memcached it compares with
    mc = m.get("memcached") or "memcached"
    NAMES["A"] = mc
    NAMES["A2"] = mc + " #2"
    return m


# The headline rows: (label, loadgen workload, memtier workload, measure, target
# for nodelay/memcached). Each runs under both generators.
HEADLINE = [
    ("server CPU per request, pipeline 1", "get90_p1", "mt_get90_p1", "cpu_us", 0.85),
    ("server CPU per request, pipeline 16", "get90_p16", "mt_get90_p16", "cpu_us", 0.75),
    ("p99.9 latency at a fixed offered rate", "get90_rate", "mt_get90_rate", "p999", 0.8),
    ("server CPU per request, 16-key multiget", "mget16", "mt_mget16", "cpu_us", 0.7),
]
# nodelay within this much of the floor server on the same backend
FLOOR_TARGET = 1.10
FLOOR_OF = {"B": "Fu", "Be": "F"}


def generator(w):
    return "memtier" if w.startswith("mt_") else "loadgen"


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_index(name, tag=str):
    """The rows of OUT/name, compare.sh's "server<TAB>tag<TAB>json path"
    lines, as (server, tag(tag), the JSON); [] when the file is absent."""
    path = os.path.join(OUT, name)
    if not os.path.exists(path):
        return []
    rows = []
    for line in open(path):
        s, t, p = line.rstrip("\n").split("\t")
        rows.append((s, tag(t), read_json(p)))
    return rows


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(b, a):
    if a is None or b is None or a == 0:
        return None
    return b / a


def fmt(x, digits=2):
    if x is None:
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


def load_runs():
    runs = {}  # (workload, server) -> list of dicts
    order = []
    path = os.path.join(OUT, "runs.tsv")
    if not os.path.exists(path):
        return runs, order
    with open(path) as f:
        for line in f:
            w, s, rnd, ticks, clk, sysc, base = line.rstrip("\n").split("\t")
            if w not in order:
                order.append(w)
            j = read_json(base + ".json")
            js = read_json(base + ".sys.json")
            if not j:
                continue
            req = j["requests"] or 1
            r = {
                "cpu_us": int(ticks) * 1e6 / int(clk) / req,
                "sys": (int(sysc) / js["requests"]) if (js and sysc.isdigit() and js["requests"]) else None,
                "ops": j["ops_per_s"],
                "p50": j["lat_us"]["p50"],
                "p99": j["lat_us"]["p99"],
                "p999": j["lat_us"]["p999"],
                "max": j["lat_us"]["max"],
                "hits": j["hits"],
                "misses": j["misses"],
                # values are checked in the syscall run (compare.sh)
                "errors": j["errors"] + j["verify_failures"]
                + (js["errors"] + js["verify_failures"] + js.get("stale", 0) if js else 0),
                "pct": j["percentiles"],
            }
            runs.setdefault((w, s), []).append(r)
    return runs, order


MEASURES = [
    ("cpu_us", "server CPU µs / request", 2),
    ("sys", "server syscalls / request", 3),
    ("ops", "ops/s", 0),
    ("p50", "p50 µs", 1),
    ("p99", "p99 µs", 1),
    ("p999", "p99.9 µs", 1),
    ("max", "max µs", 1),
]



def load_traces(sub="traces"):
    """The trace replays (bench/traces.sh, in traces/ and, for
    bench/synth_traces.py's, synth-traces/): (trace, value, memcached's json,
    nodelay's json), in name order."""
    d = os.path.join(OUT, sub)
    if not os.path.isdir(d):
        return []
    found = {}
    for name in sorted(os.listdir(d)):
        parts = name.split(".")
        if len(parts) == 4 and parts[3] == "json" and parts[2] in ("memcached", "nodelay"):
            j = read_json(os.path.join(d, name))
            if j:
                found.setdefault((parts[0], parts[1]), {})[parts[2]] = j
    return [(t, v.lstrip("v"), r.get("memcached"), r.get("nodelay")) for (t, v), r in sorted(found.items())]

def load_flash():
    """bench/flash.py's runs (in flash/): its header line and table, and its
    rows as {(values, server): row}."""
    d = os.path.join(OUT, "flash")
    j = read_json(os.path.join(d, "flash.json"))
    md = None
    try:
        with open(os.path.join(d, "flash.md")) as f:
            md = f.read().rstrip("\n")
    except OSError:
        pass
    rows = {(r["values"], r["server"]): r for r in (j or {}).get("rows", [])}
    return md, rows


def load_gap():
    """bench/ab_cpu.py --concurrent runs of nodelay beside its floor (in
    gap/): {(backend, depth): its JSON}."""
    d = os.path.join(OUT, "gap")
    found = {}
    for be in ("uring", "epoll"):
        for depth in (1, 16):
            j = read_json(os.path.join(d, f"{be}-p{depth}.json"))
            if j:
                found[(be, depth)] = j
    return found


def gap_ratios(j, gen):
    """nodelay over its floor in each round of one generator (the two ran
    at the same time), or []."""
    cpu = j.get("cpu_us", {}).get(gen, {})
    b = cpu.get("b", [])
    f = next((v for k, v in cpu.items() if k.startswith("f")), [])
    return [x / y for x, y in zip(b, f) if y]


def gap_table(add, m):
    gap = load_gap()
    if not gap:
        return
    add("The same gap measured with nodelay and its floor loaded at once, on the "
        "same CPU, each by its own load generator (`bench/ab_cpu.py --concurrent`, "
        f"{m.get('gap_rounds')} rounds): both see the same machine at the same moment, "
        "so the ratio holds within a few percent where the runs above, one server after "
        "the other, move by the noise floor. Each cell is the median of the rounds' "
        "ratios, with their range; the two servers share one CPU there, a regime unlike "
        "the runs above.")
    add("")
    add("| measure | ratio | loadgen | memtier | headline | target |")
    add("|---|---|---|---|---|---|")
    for (be, depth), j in sorted(gap.items(), key=lambda kv: (kv[0][1], kv[0][0] != "uring")):
        cells, worst = [], None
        for gen in ("lg", "mt"):
            rs = gap_ratios(j, gen)
            if not rs:
                cells.append("–")
                continue
            md = statistics.median(rs)
            worst = md if worst is None else max(worst, md)
            cells.append(f"{fmt(md)} ({fmt(min(rs))}–{fmt(max(rs))})")
        if worst is None:
            continue
        names = ("nodelay / floor io_uring" if be == "uring"
                 else "nodelay epoll / floor epoll")
        add(f"| server CPU per request, pipeline {depth} | {names} | {cells[0]} | {cells[1]} "
            f"| **{fmt(worst)}** | ≤ {fmt(FLOOR_TARGET)} {'✔' if worst <= FLOOR_TARGET else '✘'} |")
    add("")


def med(runs, w, s, key):
    return median([r[key] for r in runs.get((w, s), [])])


def main():
    m = load_machine()
    runs, order = load_runs()
    lines = []
    add = lines.append
    add(f"# nodelay vs {m.get('memcached')}: benchmark of {m.get('date')}")
    add("")
    add(f"memcached (A): **{m.get('memcached')}**, `{m.get('memcached_bin')}`, from "
        f"{m.get('memcached_from')}. Load generators: bench/loadgen (the rows without a "
        f"prefix) and memtier_benchmark (the mt_* rows): {m.get('memtier')} "
        f"(`{m.get('memtier_bin')}`, from {m.get('memtier_from')}).")
    add("")
    add(f"Machine: {m.get('nproc')} × {m.get('cpu')}, {m.get('kernel')}. "
        f"A = {m.get('memcached')}, B = nodelay {m.get('nodelay').split()[0]}; "
        f"both `-t {m.get('threads')}`, pinned to CPU {m.get('server_cpus')}, load generator on "
        f"CPU {m.get('loadgen_cpus')}. {m.get('rounds')} rounds of A B A' per workload, "
        f"{m.get('duration')} s each (syscalls counted in a separate {m.get('syscall_duration')} s run); "
        f"medians shown. A' is a second memcached: A'/A is the noise floor.")
    add("")
    add(f"Load average before / after: `{m.get('load_before', '').strip()}` / "
        f"`{m.get('load_after', '').strip()}` (the machine is shared; see docs/benchmark.md).")
    add("")
    if order:
        headline(add, m, runs, order)
        present = [x for x in SERVERS if any((w, x) in runs for w in order)]
        others = [x for x in present if x not in ("A", "A2")]
        for key, title, d in (("cpu_us", "Server CPU µs per request", 2),
                              ("sys", "Server syscalls per request", 3)):
            add(f"## {title} (A = {m.get('memcached')})")
            add("")
            add("| workload | " + " | ".join(NAMES[x] for x in present) + " | "
                + " | ".join(f"{x}/A" for x in others) + " | A'/A |")
            add("|---|" + "---|" * (len(present) + len(others) + 1))
            for w in order:
                v = {x: med(runs, w, x, key) for x in present}
                add(f"| {w} | " + " | ".join(fmt(v[x], d) for x in present) + " | "
                    + " | ".join(fmt(ratio(v[x], v["A"])) for x in others)
                    + f" | {fmt(ratio(v.get('A2'), v['A']))} |")
            add("")
        if "F" in present:
            add("F and Fu are the floor: a server with no cache that answers every request "
                "from one read with canned replies in one write (bench/floor). B − F is what "
                "nodelay's own work costs above the kernel interface.")
            add("")
        add(f"## Throughput and latency (A = {m.get('memcached')})")
        add("")
        add("| workload | ops/s A → B | B/A | A'/A | p99 µs A → B | p99.9 µs A → B |")
        add("|---|---|---|---|---|---|")
        for w in order:
            a = {k: med(runs, w, "A", k) for k, _, _ in MEASURES}
            b = {k: med(runs, w, "B", k) for k, _, _ in MEASURES}
            a2 = {k: med(runs, w, "A2", k) for k, _, _ in MEASURES}
            add(f"| {w} | {fmt(a['ops'])} → {fmt(b['ops'])} | {fmt(ratio(b['ops'], a['ops']))} "
                f"| {fmt(ratio(a2['ops'], a['ops']))} "
                f"| {fmt(a['p99'], 0)} → {fmt(b['p99'], 0)} | {fmt(a['p999'], 0)} → {fmt(b['p999'], 0)} |")
        add("")
        t2 = [w for w in order if w.endswith("_t2") and w[:-3] in order]
        if t2:
            add(f"## Two threads (-t 2) on the two cores, with the load generator (A = {m.get('memcached')})")
            add("")
            add("Per-thread efficiency = CPU µs/request at -t 1 ÷ CPU µs/request at -t 2: "
                "1.00 means the second worker serves each request as cheaply as one worker "
                "alone; below 1 is what sharing the cores (with each other and with the load "
                "generator), the index locks and the cache lines cost.")
            add("")
            add("| workload | server | ops/s -t 1 → -t 2 | CPU µs/req -t 1 → -t 2 | per-thread efficiency |")
            add("|---|---|---|---|---|")
            for w in t2:
                for x in present:
                    c1, c2 = med(runs, w[:-3], x, "cpu_us"), med(runs, w, x, "cpu_us")
                    o1, o2 = med(runs, w[:-3], x, "ops"), med(runs, w, x, "ops")
                    if c2 is None:
                        continue
                    add(f"| {w[:-3]} | {NAMES[x]} | {fmt(o1)} → {fmt(o2)} | {fmt(c1)} → {fmt(c2)} "
                        f"| {fmt(ratio(c1, c2))} |")
            add("")
        add("Workloads: " + "; ".join(f"**{w}**: {DESCRIPTIONS.get(w, m.get('workload.' + w, ''))} "
                                      f"(`{m.get('workload.' + w, '')}`)" for w in order) + ".")
        add("")
        add("![latency percentiles](latency.png)")
        add("")
        add("![B/A ratios](ratios.png)")
        add("")
        add(f"### Every measure, per workload (median of rounds; A = {m.get('memcached')})")
        add("")
        add("| workload | measure | " + " | ".join(f"{x} {NAMES[x]}" for x in present) + " | B/A | A'/A |")
        add("|---|---|" + "---|" * (len(present) + 2))
        for w in order:
            for key, label, d in MEASURES:
                v = {x: med(runs, w, x, key) for x in present}
                add(f"| {w} | {label} | " + " | ".join(fmt(v[x], d) for x in present)
                    + f" | {fmt(ratio(v.get('B'), v['A']))} | {fmt(ratio(v.get('A2'), v['A']))} |")
            errs = {x: sum(r["errors"] for r in runs.get((w, x), [])) for x in present}
            if any(errs.values()):
                add(f"| {w} | errors + wrong values (sum) | " + " | ".join(str(errs[x]) for x in present)
                    + " | | |")
        add("")

    fills = read_index("fill.tsv", int)
    if fills:
        add(f"## Memory per item (fill at -m 64 until evictions begin; A = {m.get('memcached')})")
        add("")
        add("| value bytes | items held A → B | B/A | bytes per item beyond key + value, in -m, A → B | target "
            "| all in (with the index outside -m, `hash_bytes`) A → B | target |")
        add("|---|---|---|---|---|---|---|")
        targets = {10: 24, 100: 24, 1000: 32}
        all_in_targets = {10: 12, 100: 14}
        for v in sorted({v for _, v, _ in fills}):
            a = next((j for s, vv, j in fills if s == "A" and vv == v), None)
            b = next((j for s, vv, j in fills if s == "B" and vv == v), None)
            ia, ib = (a or {}).get("curr_items"), (b or {}).get("curr_items")
            oa, ob = (a or {}).get("overhead"), (b or {}).get("overhead")
            ok = "" if ob is None else (" ✔" if ob <= targets.get(v, 0) else " ✘")
            xa, xb = all_in(a), all_in(b)
            t = all_in_targets.get(v)
            xok = "" if xb is None or t is None else (" ✔" if xb <= t else " ✘")
            add(f"| {v} | {fmt(ia)} → {fmt(ib)} | {fmt(ratio(ib, ia))} | {fmt(oa, 1)} → {fmt(ob, 1)} | ≤ {targets.get(v)}{ok} "
                f"| {fmt(xa, 1)} → {fmt(xb, 1)} | {'≤ ' + str(t) if t else '–'}{xok} |")
        add("")
        add("Command: `build/bench/loadgen fill -s HOST:PORT -v BYTES` against a server started with `-m 64`. "
            "All in adds `hash_bytes` ÷ items: memcached's hash table; nodelay's index, with the huge page "
            "its growth has faulted in ahead (docs/store-index.md).")
        add("")

    replays = read_index("replay.tsv")
    if replays:
        add(f"## Miss ratio (deterministic Zipf replay at -m 64; A = {m.get('memcached')})")
        add("")
        add("| trace | miss ratio A → B | B/A | target |")
        add("|---|---|---|---|")
        for variant, label in (("plain", f"Zipf 0.99, 1M keys × 200 B, {m.get('replay_requests')} requests, second half"),
                               ("scan", f"the same with a one-pass scan of {m.get('scan')} fresh keys")):
            a = next((j for s, vv, j in replays if s == "A" and vv == variant), None)
            b = next((j for s, vv, j in replays if s == "B" and vv == variant), None)
            if not a and not b:
                continue
            ra, rb = (a or {}).get("miss_ratio"), (b or {}).get("miss_ratio")
            tgt = "≤ 12.0 %" if variant == "plain" else "≤ memcached's"
            lim = 0.12 if variant == "plain" else ra
            ok = "" if rb is None or lim is None else (" ✔" if rb <= lim else " ✘")
            pa = None if ra is None else ra * 100
            pb = None if rb is None else rb * 100
            add(f"| {label} | {fmt(pa)} % → {fmt(pb)} % | {fmt(ratio(rb, ra))} | {tgt}{ok} |")
        add("")
        add("Command: `build/bench/loadgen replay -s HOST:PORT [--scan 2000000]` (seed 42, batches of 128 "
            "gets then the sets for their misses).")
        add("")

    for sub, title, note in (
            ("traces", "Miss ratio on real traces",
             "the offline simulator's figures and Bélády's optimum are in traces/table.txt."),
            ("synth-traces", "Miss ratio on synthetic key-size traces",
             "the shapes are in bench/synth_traces.py.")):
        traces = load_traces(sub)
        if not traces:
            continue
        add(f"## {title} (bench/traces.sh, equal -m; A = {m.get('memcached')})")
        add("")
        add("| trace | value | -m | miss ratio A → B, second half | B/A | items A → B |")
        add("|---|---|---|---|---|---|")
        for t, v, a, b in traces:
            ra, rb = (a or {}).get("miss_ratio"), (b or {}).get("miss_ratio")
            mb = ((b or a or {}).get("limit_maxbytes") or 0) >> 20
            size = f"{v} B" if v.isdigit() else "its own"
            add(f"| {t} | {size} | {mb} | {fmt(None if ra is None else ra * 100)} % → "
                f"{fmt(None if rb is None else rb * 100)} % | {fmt(ratio(rb, ra))} | "
                f"{fmt((a or {}).get('items'))} → {fmt((b or {}).get('items'))} |")
        fewer = [1 - b["miss_ratio"] / a["miss_ratio"] for _, _, a, b in traces
                 if a and b and a.get("miss_ratio") and b.get("miss_ratio") is not None]
        if fewer:
            add("")
            add(f"B misses {fmt(100 * sum(fewer) / len(fewer))} % fewer than A, the mean over "
                f"the {len(fewer)} rows.")
        add("")
        add(f"Each line of a trace is one multiget, every miss set (`loadgen trace`); {note}")
        add("")

    flash_md, _ = load_flash()
    if flash_md:
        add("## Flash tier (bench/flash.py, memcached -o ext_path beside nodelay)")
        add("")
        add(flash_md)
        add("")

    try:
        with open(os.path.join(OUT, "flash-pair.txt")) as f:
            pair = f.read().rstrip("\n")
    except OSError:
        pair = ""
    if pair:
        add("## Flash tier, paired rounds (bench/flash_pair.py)")
        add("")
        add("Both servers filled once, then taking turns; the ratios are medians of "
            "per-round ratios, each beside its noise floor (round r+1 ÷ round r).")
        add("")
        add("```")
        add(pair)
        add("```")
        add("")

    if "get90_rate" in order or "mt_get90_rate" in order:
        try:
            offered = float(m.get("rate"))
        except (TypeError, ValueError):
            offered = None
        for w in ("get90_rate", "mt_get90_rate"):
            got = [med(runs, w, srv, "ops") for srv in ("A", "B")]
            if w in order and offered and all(g is not None for g in got):
                held = all(g >= 0.95 * offered for g in got)
                add(f"- {w} ({generator(w)}): {offered:,.0f} ops/s offered; carried: "
                    f"memcached {got[0]:,.0f}, nodelay {got[1]:,.0f}" + ("" if held else
                    " — not sustained, so its latencies measure a growing queue, not the server"))
        add("")

    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    summary(m, runs, order, fills, replays)
    if order:
        charts(runs, order)


def headline_ratio(runs, w, x, key, base="A"):
    if (w, x) not in runs:
        return None
    return ratio(med(runs, w, x, key), med(runs, w, base, key))


def headline(add, m, runs, order):
    """Each headline measure under both generators, nodelay/memcached and the
    noise floor A'/A beside it, the less favourable generator's ratio taken
    against the target."""
    mc = m.get("memcached")
    add(f"## Headline: nodelay / {mc}, both load generators")
    add("")
    add("Ratios of medians over rounds, both servers measured in the same run. "
        "A'/A is a second memcached over the first: a ratio nearer 1 than A'/A is "
        "from 1 is noise. \"headline\" is the less favourable of the two generators "
        "(the larger ratio: lower is better for CPU and latency).")
    add("")
    if "1.6.45" not in (mc or ""):
        add(f"The targets are set against memcached 1.6.45; this run compared with {mc}, "
            "so their marks do not say whether they hold.")
        add("")
    add("The last column is a control: the floor server on the same backend (canned "
        "replies, no cache) over memcached. A measure that gives the floor, which does "
        "no work, a ratio as far from 1 as nodelay's measures the load generator and "
        "the machine, not the server (docs/benchmark.md, \"The fixed-rate row under "
        "memtier\").")
    add("")
    add("| measure | server | loadgen | A'/A loadgen | memtier | A'/A memtier | headline | target "
        "| floor / A (loadgen / memtier) |")
    add("|---|---|---|---|---|---|---|---|---|")
    for label, wl, wm, key, target in HEADLINE:
        if wl not in order and wm not in order:
            continue
        for x in ("B", "Be"):
            rl, rm = headline_ratio(runs, wl, x, key), headline_ratio(runs, wm, x, key)
            if rl is None and rm is None:
                continue
            nl, nm = headline_ratio(runs, wl, "A2", key), headline_ratio(runs, wm, "A2", key)
            fl, fm = (headline_ratio(runs, w, FLOOR_OF[x], key) for w in (wl, wm))
            worst = max(r for r in (rl, rm) if r is not None)
            mark = "✔" if worst <= target else "✘"
            add(f"| {label} | {NAMES[x]} | {fmt(rl)} | {fmt(nl)} | {fmt(rm)} | {fmt(nm)} "
                f"| **{fmt(worst)}** | ≤ {fmt(target)} {mark} | {fmt(fl)} / {fmt(fm)} |")
    add("")
    rows = []
    for label, wl, wm, key, _ in HEADLINE[:2]:
        for x, f in FLOOR_OF.items():
            rl, rm = headline_ratio(runs, wl, x, key, f), headline_ratio(runs, wm, x, key, f)
            if rl is None and rm is None:
                continue
            worst = max(r for r in (rl, rm) if r is not None)
            fa = [headline_ratio(runs, w, f, key) for w in (wl, wm)]
            rows.append(f"| {label} | {NAMES[x]} / {NAMES[f]} | {fmt(rl)} | {fmt(rm)} | **{fmt(worst)}** "
                        f"| ≤ {fmt(FLOOR_TARGET)} {'✔' if worst <= FLOOR_TARGET else '✘'} "
                        f"| {fmt(fa[0])} / {fmt(fa[1])} |")
    if rows:
        add("nodelay against the floor server on the same backend (the floor answers from "
            "canned replies: what the kernel interface alone costs):")
        add("")
        add(f"| measure | ratio | loadgen | memtier | headline | target | floor / {mc} (loadgen / memtier) |")
        add("|---|---|---|---|---|---|---|")
        for r in rows:
            add(r)
        add("")
    gap_table(add, m)
    if not any(w.startswith("mt_") for w in order):
        add(f"memtier_benchmark: {m.get('memtier_from')}.")
        add("")


def all_in(fill):
    """Bytes per item beyond key and value, in -m and outside it (the
    server's hash_bytes), from a fill's JSON; None where not reported."""
    x = (fill or {}).get("all_in")
    return x if x is not None and x >= 0 else None


def summary(m, runs, order, fills, replays):
    """A short table for the README: the headline figures only."""
    rows = []
    mc = m.get("memcached")

    def row(label, gen, a, b, digits=2, unit="", noise=None, floor=None):
        if a is None and b is None:
            return
        rows.append(f"| {label} | {gen} | {fmt(a, digits)}{unit} | {fmt(b, digits)}{unit} "
                    f"| {fmt(ratio(b, a))} | {fmt(noise)} | {fmt(floor)} |")
    for label, wl, wm, key, _ in HEADLINE:
        unit = " µs"
        for w in (wl, wm):
            if w in order:
                row(label, generator(w), med(runs, w, "A", key), med(runs, w, "B", key), 2, unit,
                    ratio(med(runs, w, "A2", key), med(runs, w, "A", key)),
                    headline_ratio(runs, w, FLOOR_OF["B"], key))
    for w, label in (("large100k", "server CPU per request, 100 KiB values"),):
        if w in order:
            row(label, "loadgen", med(runs, w, "A", "cpu_us"), med(runs, w, "B", "cpu_us"), 2, " µs",
                ratio(med(runs, w, "A2", "cpu_us"), med(runs, w, "A", "cpu_us")))
    for v in (10, 100, 1000):
        a = next((j for s, vv, j in fills if s == "A" and vv == v), None) or {}
        b = next((j for s, vv, j in fills if s == "B" and vv == v), None) or {}
        row(f"bytes per item beyond key + value, {v} B values, -m 64", "loadgen fill",
            a.get("overhead"), b.get("overhead"), 1)
        row(f"the same all in (with the index outside -m), {v} B values", "loadgen fill",
            all_in(a), all_in(b), 1)
    for variant, label in (("plain", "Zipf 0.99"), ("scan", "Zipf 0.99 + one-pass scan")):
        a = next((j for s, vv, j in replays if s == "A" and vv == variant), None) or {}
        b = next((j for s, vv, j in replays if s == "B" and vv == variant), None) or {}
        ra, rb = a.get("miss_ratio"), b.get("miss_ratio")
        row(f"miss ratio, {label}, -m 64", "loadgen replay", None if ra is None else ra * 100,
            None if rb is None else rb * 100, 2, " %")
    for t, v, a, b in load_traces():
        ra, rb = (a or {}).get("miss_ratio"), (b or {}).get("miss_ratio")
        row(f"miss ratio, {t} trace, {v} B values", "loadgen trace", None if ra is None else ra * 100,
            None if rb is None else rb * 100, 2, " %")
    _, flash = load_flash()
    for values in sorted({v for v, _ in flash}):
        a, b = flash.get((values, "A"), {}), flash.get((values, "B"), {})
        pct = [None if r.get("hit_ratio") is None else r["hit_ratio"] * 100 for r in (a, b)]
        row(f"flash tier, {values} values, key space 10× -m: hit ratio", "loadgen (flash.py)",
            pct[0], pct[1], 2, " %")
        row(f"flash tier, {values}: server CPU per request", "loadgen (flash.py)",
            a.get("cpu_us"), b.get("cpu_us"), 2, " µs")
        row(f"flash tier, {values}: p99.9", "loadgen (flash.py)", a.get("p999_us"),
            b.get("p999_us"), 0, " µs")
        for key, label in (("write_amp", "write amplification (device bytes ÷ value bytes "
                                         "moved to flash)"),
                           ("flash_written_per_stored", "flash bytes written per byte stored "
                                                        "(not WA: falls as fewer items move)"),
                           ("ram_per_flash_item", "RAM bytes per flash item")):
            if a.get(key) is not None or b.get(key) is not None:
                rows.append(f"| flash tier, {values}: {label} | server stats (flash.py) | "
                            f"{fmt(a.get(key))} | "
                            f"{fmt(b.get(key)) if b.get(key) is not None else 'not yet'} | | |")
    out = [f"Measured {m.get('date')} on {m.get('nproc')} × {m.get('cpu')} ({m.get('kernel')}), "
           f"`-t {m.get('threads')}`, by `make bench` against {mc} ({m.get('memcached_from')}); "
           f"medians of {m.get('rounds')} rounds; load generators bench/loadgen and "
           f"memtier_benchmark ({m.get('memtier_from')}); load average during the run: "
           f"{m.get('load_after', '').split('load average:')[-1].strip()}.",
           "", "The last column is a control: the canned-reply floor server (io_uring, no cache) "
           "over memcached. Where it is as far from 1 as nodelay's ratio, the measure is the "
           "load generator's and the machine's, not the server's (docs/benchmark.md).",
           "", f"| measure | load generator | {mc} | nodelay | nodelay / memcached | A'/A (noise) "
           "| floor / memcached |",
           "|---|---|---|---|---|---|---|"]
    with open(os.path.join(OUT, "summary.md"), "w") as f:
        f.write("\n".join(out + rows) + "\n")


def charts(runs, order):
    # latency percentile curves: x = "nines" so the tail is readable (only
    # loadgen records every percentile; the mt_* rows have three)
    order_all = order
    order = [w for w in order if any(r["pct"] for r in runs.get((w, "A"), []))]
    dat = os.path.join(OUT, "latency.dat")
    with open(dat, "w") as f:
        for w in order:
            for s in ("A", "B", "A2"):
                rs = runs.get((w, s), [])
                f.write(f"# {w} {s}\n")
                if rs:
                    for i, (q, _) in enumerate(rs[0]["pct"]):
                        v = median([r["pct"][i][1] for r in rs if len(r["pct"]) > i])
                        x = 1 / (1 - q / 100) if q < 100 else 1e5
                        f.write(f"{x} {v} {q}\n")
                f.write("\n\n")
    n = len(order)
    cols = 3 if n > 4 else 2
    rows = (n + cols - 1) // cols
    gp = [f"set terminal pngcairo size {420 * cols},{320 * rows} font ',9'",
          f"set output '{os.path.join(OUT, 'latency.png')}'",
          f"set multiplot layout {rows},{cols} title 'Latency percentiles (µs, log) — A memcached, B nodelay, A2 memcached'",
          "set termoption noenhanced", "set logscale xy", "set grid",
          "set xtics ('p50' 2, 'p90' 10, 'p99' 100, 'p99.9' 1000, 'p99.99' 10000, 'max' 100000)",
          "set key top left"]
    idx = 0
    for w in order:
        gp.append(f"set title '{w}'")
        gp.append(f"plot '{dat}' index {idx} using 1:2 with linespoints title 'A', "
                  f"'' index {idx + 1} using 1:2 with linespoints title 'B', "
                  f"'' index {idx + 2} using 1:2 with lines dashtype 2 title 'A2'")
        idx += 3
    gp.append("unset multiplot")
    run_gnuplot(gp)

    rdat = os.path.join(OUT, "ratios.dat")
    with open(rdat, "w") as f:
        f.write("# workload cpu sys ops p99 aa_cpu\n")
        for w in order_all:
            vals = [ratio(med(runs, w, "B", k), med(runs, w, "A", k)) for k in ("cpu_us", "sys", "ops", "p99")]
            vals.append(ratio(med(runs, w, "A2", "cpu_us"), med(runs, w, "A", "cpu_us")))
            f.write(w + " " + " ".join("NaN" if v is None else f"{v:.4f}" for v in vals) + "\n")
    gp = ["set terminal pngcairo size 1100,450 font ',9'",
          f"set output '{os.path.join(OUT, 'ratios.png')}'",
          "set termoption noenhanced",
          "set title 'B/A (nodelay / memcached): below 1 is better for CPU, syscalls, p99; above 1 for ops/s'",
          "set style data histograms", "set style histogram clustered gap 1",
          "set style fill solid 0.8 border -1", "set grid ytics", "set yrange [0:*]",
          "set key outside right", "set xtics rotate by -20",
          "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 lw 2",
          f"plot '{rdat}' using 2:xtic(1) title 'CPU/req', '' using 3 title 'syscalls/req', "
          "'' using 4 title 'ops/s', '' using 5 title 'p99', '' using 6 title \"A'/A CPU (noise)\""]
    run_gnuplot(gp)


def run_gnuplot(script):
    try:
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True,
                       capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", "") or str(e)
        print(f"report.py: gnuplot failed: {err}", file=sys.stderr)


if __name__ == "__main__":
    main()
