#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns one compare.sh result directory into report.md and PNG charts.

Every number in the report is the median over rounds of what the runs
recorded; ratios are X/A (a server over memcached) and A'/A (memcached over a
second memcached: the noise floor). Servers: A memcached, B nodelay (its
default backend), Be nodelay -o io_uring=off (when the binary has io_uring),
F and Fu the canned-reply floor servers on epoll and io_uring, A2 memcached
again. Nothing here is measured, only summarised.
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
    return m


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
                "errors": j["errors"] + j["verify_failures"],
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


def med(runs, w, s, key):
    return median([r[key] for r in runs.get((w, s), [])])


def main():
    m = load_machine()
    runs, order = load_runs()
    lines = []
    add = lines.append
    add(f"# nodelay vs memcached: benchmark of {m.get('date')}")
    add("")
    add(f"Machine: {m.get('nproc')} × {m.get('cpu')}, {m.get('kernel')}. "
        f"A = {m.get('memcached')} (Debian), B = nodelay {m.get('nodelay').split()[0]}; "
        f"both `-t {m.get('threads')}`, pinned to CPU {m.get('server_cpus')}, load generator on "
        f"CPU {m.get('loadgen_cpus')}. {m.get('rounds')} rounds of A B A' per workload, "
        f"{m.get('duration')} s each (syscalls counted in a separate {m.get('syscall_duration')} s run); "
        f"medians shown. A' is a second memcached: A'/A is the noise floor.")
    add("")
    add(f"Load average before / after: `{m.get('load_before', '').strip()}` / "
        f"`{m.get('load_after', '').strip()}` (the machine is shared; see docs/benchmark.md).")
    add("")
    if order:
        present = [x for x in SERVERS if any((w, x) in runs for w in order)]
        others = [x for x in present if x not in ("A", "A2")]
        for key, title, d in (("cpu_us", "Server CPU µs per request", 2),
                              ("sys", "Server syscalls per request", 3)):
            add(f"## {title}")
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
        add("## Throughput and latency")
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
            add("## Two threads (-t 2) on the two cores, with the load generator")
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
        add("### Every measure, per workload (median of rounds)")
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
        add("## Memory per item (fill at -m 64 until evictions begin)")
        add("")
        add("| value bytes | items held A → B | B/A | bytes per item beyond key + value A → B | target |")
        add("|---|---|---|---|---|")
        targets = {10: 24, 100: 24, 1000: 32}
        for v in sorted({v for _, v, _ in fills}):
            a = next((j for s, vv, j in fills if s == "A" and vv == v), None)
            b = next((j for s, vv, j in fills if s == "B" and vv == v), None)
            ia, ib = (a or {}).get("curr_items"), (b or {}).get("curr_items")
            oa, ob = (a or {}).get("overhead"), (b or {}).get("overhead")
            ok = "" if ob is None else (" ✔" if ob <= targets.get(v, 0) else " ✘")
            add(f"| {v} | {fmt(ia)} → {fmt(ib)} | {fmt(ratio(ib, ia))} | {fmt(oa, 1)} → {fmt(ob, 1)} | ≤ {targets.get(v)}{ok} |")
        add("")
        add("Command: `build/bench/loadgen fill -s HOST:PORT -v BYTES` against a server started with `-m 64`.")
        add("")

    replays = read_index("replay.tsv")
    if replays:
        add("## Miss ratio (deterministic Zipf replay at -m 64)")
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

    if order:
        add("## Against the targets of issue 5")
        add("")
        def line(label, val, lim, unit=""):
            if val is None:
                add(f"- {label}: not measured")
            else:
                add(f"- {label}: {fmt(val, 3)}{unit} (target ≤ {fmt(lim, 3)}{unit}) {'✔' if val <= lim else '✘'}")
        if "get90_p16" in order:
            line("pipeline 16, nodelay CPU µs/request", med(runs, "get90_p16", "B", "cpu_us"), 0.8)
            line("pipeline 16, nodelay syscalls/request", med(runs, "get90_p16", "B", "sys"), 0.2)
        if "get90_p1" in order:
            line("pipeline 1, nodelay CPU µs/request vs memcached's", med(runs, "get90_p1", "B", "cpu_us"),
                 med(runs, "get90_p1", "A", "cpu_us") or 0)
        add("")
        add("## Against the targets of issue 15 (ratios to memcached in the same run)")
        add("")
        def rline(label, w, x, key, lim, absolute=False):
            v = med(runs, w, x, key) if w in order else None
            a = med(runs, w, "A", key) if w in order else None
            val = v if absolute else ratio(v, a)
            if val is None:
                add(f"- {label} ({NAMES[x]}): not measured")
                return
            noise = ratio(med(runs, w, "A2", key), a)
            extra = "" if absolute or noise is None else f"; A'/A {fmt(noise)}"
            add(f"- {label} ({NAMES[x]}): {fmt(val, 3)} (target ≤ {fmt(lim, 3)}{extra}) "
                f"{'✔' if val <= lim else '✘'}")
        for x in ("B", "Be"):
            if not any(k[1] == x for k in runs):
                continue
            rline("server CPU per request, pipeline 1, × memcached", "get90_p1", x, "cpu_us", 0.85)
            rline("syscalls per request, pipeline 1", "get90_p1", x, "sys", 0.3, absolute=True)
            rline("server CPU per request, pipeline 16, × memcached", "get90_p16", x, "cpu_us", 0.11)
            rline("100 KiB values, CPU per request, × memcached", "large100k", x, "cpu_us", 0.7)
            if "get90_rate" in order:
                rline("p99.9 at the fixed rate, × memcached's", "get90_rate", x, "p999", 1.0)
        add("")
        if "get90_rate" in order:
            try:
                offered = float(m.get("rate"))
            except (TypeError, ValueError):
                offered = None
            got = [med(runs, "get90_rate", srv, "ops") for srv in ("A", "B")]
            if offered and all(g is not None for g in got):
                held = all(g >= 0.95 * offered for g in got)
                add(f"- fixed rate {offered:,.0f} ops/s offered; carried: memcached {got[0]:,.0f}, "
                    f"nodelay {got[1]:,.0f}" + ("" if held else
                    " — not sustained, so its latencies measure a growing queue, not the server"))
            line(f"p99.9 µs at {m.get('rate')} ops/s offered, vs memcached's", med(runs, "get90_rate", "B", "p999"),
                 med(runs, "get90_rate", "A", "p999") or 0)
        add("")

    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    summary(m, runs, order, fills, replays)
    if order:
        charts(runs, order)


def summary(m, runs, order, fills, replays):
    """A short table for the README: the headline figures only."""
    rows = []
    def row(label, a, b, digits=2, unit=""):
        if a is None and b is None:
            return
        rows.append(f"| {label} | {fmt(a, digits)}{unit} | {fmt(b, digits)}{unit} | {fmt(ratio(b, a))} |")
    for w, label in (("get90_p1", "pipeline 1"), ("get90_p16", "pipeline 16"), ("mget16", "16-key multiget"),
                     ("large100k", "100 KiB values")):
        if w in order:
            row(f"server CPU µs / request, {label}", med(runs, w, "A", "cpu_us"), med(runs, w, "B", "cpu_us"))
            row(f"syscalls / request, {label}", med(runs, w, "A", "sys"), med(runs, w, "B", "sys"), 3)
            for x in ("Be", "F", "Fu"):
                if (w, x) in runs:
                    row(f"server CPU µs / request, {label}: {NAMES[x]} in place of nodelay",
                        med(runs, w, "A", "cpu_us"), med(runs, w, x, "cpu_us"))
    for v in (10, 100, 1000):
        a = next((j for s, vv, j in fills if s == "A" and vv == v), None) or {}
        b = next((j for s, vv, j in fills if s == "B" and vv == v), None) or {}
        row(f"bytes per item beyond key + value, {v} B values, -m 64", a.get("overhead"), b.get("overhead"), 1)
    for variant, label in (("plain", "Zipf 0.99"), ("scan", "Zipf 0.99 + one-pass scan")):
        a = next((j for s, vv, j in replays if s == "A" and vv == variant), None) or {}
        b = next((j for s, vv, j in replays if s == "B" and vv == variant), None) or {}
        ra, rb = a.get("miss_ratio"), b.get("miss_ratio")
        row(f"miss ratio, {label}, -m 64", None if ra is None else ra * 100,
            None if rb is None else rb * 100, 2, " %")
    out = [f"Measured {m.get('date')} on {m.get('nproc')} × {m.get('cpu')} ({m.get('kernel')}), "
           f"`-t {m.get('threads')}`, by `make bench` (medians of {m.get('rounds')} rounds; "
           f"load average during the run: {m.get('load_after', '').split('load average:')[-1].strip()}).",
           "", "| measure | memcached 1.6.18 | nodelay | nodelay / memcached |", "|---|---|---|---|"]
    with open(os.path.join(OUT, "summary.md"), "w") as f:
        f.write("\n".join(out + rows) + "\n")


def charts(runs, order):
    # latency percentile curves: x = "nines" so the tail is readable
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
        for w in order:
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
