#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A quick A/B of server CPU per request at pipeline 1: two builds of
nodelay (and the floor servers) side by side, under bench/compare.sh's
get90_p1 with loadgen (lg) and memtier (mt).

  bench/ab_cpu.py NAME=BINARY[:ARGS] ... [--rounds N] [--seconds S]
                  [--gens lg,mt] [--ratio A/B ...] [--concurrent] [--depth D] [--keys K]
                  [--value V] [--conns C] [--json FILE]

  e.g. bench/ab_cpu.py "a=old/nodelay:-o io_uring=off" "b=build/nodelay:-o io_uring=off"
           f=epoll --concurrent --rounds 12 --ratio b/a --ratio b/f

A NAME starting with f is a floor server (BINARY: epoll or uring, ARGS its
flags, e.g. "fn=epoll:-n 100000"). Every server is started once, pinned to
CPU 1 (-t 1) and prefilled; each round runs each server in turn (the order
reversed every other round), or with --concurrent all of them at once,
each with its own load generator on CPU 0. CPU is the sum of the server's
threads' run time (/proc schedstat, ns). Printed: each run, the medians,
and for each --ratio the ratio of medians and the median of the per-round
ratios. On a shared machine sequential rounds spread by tens of percent
with what else runs on CPU 1; --concurrent puts the servers under the same
conditions at the same time (they share CPU 1, a regime unlike make
bench's), which resolves a few percent. --depth 16 runs get90_p16 (the
pipeline depth of both generators) instead; --keys 100 a key space whose
items and buckets stay in the nearer caches, which leaves out what a
store's memory costs a lookup. --value 102400 --keys 200 --conns 10 is
large100k (the floors then send from one buffer per key, as compare.sh's
FL rows). Loopback only; bounded by --rounds and --seconds."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

from benchproc import ROOT, free_port, start_server, stop_server, wait_for_port

REF = os.environ.get("NODELAY_REF_DIR", os.path.join(ROOT, "..", "shared", "ref"))
LG = os.path.join(ROOT, "build/bench/loadgen")
FLOOR = os.path.join(ROOT, "build/bench/floor")
MT = os.environ.get("MEMTIER") or os.path.join(REF, "memtier_benchmark")
# compare.sh's get90_p1|_p16 and mt_get90_p1|_p16 but for depth and key space
LGARGS = "-g 0.9".split()
MTARGS = ("--ratio=1:9 --key-minimum=1 "
          "--distinct-client-seed").split()


def cpu_ns(pid):
    t = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            t += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        except OSError:
            pass
    return t


def start(name, spec, value, keys):
    if name.startswith("f"):
        port = free_port()
        b, _, extra = spec.partition(":")
        nval = ["-n", str(keys)] if value != 100 else []
        p = subprocess.Popen(["taskset", "-c", "1", FLOOR, "-b", b, "-p", str(port), "-t", "1",
                              "-v", str(value), *nval, *extra.split()])
        wait_for_port(port, p)
        return p, port
    b, _, args = spec.partition(":")
    return start_server(b, "-t", "1", "-c", "4096", *args.split(), cpu=1)


def prefill(port, floor, memtier, keys, value):
    subprocess.run(["taskset", "-c", "0", LG, "-s", f"127.0.0.1:{port}", "-q", "--prefill",
                    "-c", "10", "-d", "16" if value <= 1000 else "2", "-k", str(keys),
                    "-v", str(value)] +
                   (["--no-verify"] if floor else []), check=True, stdout=subprocess.DEVNULL)
    if memtier and not floor:
        subprocess.run(["taskset", "-c", "0", MT, "-s", "127.0.0.1", "-p", str(port), "-P",
                        "memcache_text", "-t", "1", "-c", "10", "--ratio=1:0", "--key-pattern=P:P",
                        "-n", "allkeys", "--key-minimum=1", f"--key-maximum={keys}", "-d", str(value),
                        "--hide-histogram"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)


def run(gen, port, secs, seed, depth, keys, value, conns):
    if gen == "mt":
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "mt.json")
            subprocess.run(["taskset", "-c", "0", MT, "-s", "127.0.0.1", "-p", str(port), "-P",
                            "memcache_text", "-t", "1", *MTARGS, f"--pipeline={depth}",
                            "-c", str(conns), "-d", str(value),
                            f"--key-maximum={keys}", f"--test-time={int(secs)}",
                            "--hide-histogram", f"--json-out-file={out}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            tot = json.load(open(out))["ALL STATS"]["Totals"]
            return tot.get("Count") or tot["Ops/sec"] * int(secs)
    out = subprocess.run(["taskset", "-c", "0", LG, "-s", f"127.0.0.1:{port}", *LGARGS,
                          "-d", str(depth), "-k", str(keys), "-v", str(value), "-c", str(conns),
                          "-D", str(secs), "-q", "--seed", str(seed), "--json", "-",
                          # every server alike: checking values slows the
                          # load generator, which raises CPU per request
                          "--no-verify"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["requests"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--gens", default="lg,mt")
    ap.add_argument("--ratio", action="append", default=[], help="a/b pairs to print")
    ap.add_argument("--concurrent", action="store_true", help="all servers loaded at once")
    ap.add_argument("--depth", type=int, default=1, help="pipeline depth (get90_p1 or _p16)")
    ap.add_argument("--keys", type=int, default=100000,
                    help="key space (e.g. 100: a store that stays in cache)")
    ap.add_argument("--value", type=int, default=100, help="value bytes (102400: large100k)")
    ap.add_argument("--conns", type=int, default=50, help="connections of each generator")
    ap.add_argument("--json", help="write the per-round figures to this file")
    a = ap.parse_args()
    gens = a.gens.split(",")
    if "mt" in gens and not os.access(MT, os.X_OK):
        raise SystemExit(f"ab_cpu.py: no memtier_benchmark at {MT} (MEMTIER=, or --gens lg)")
    srv = {}
    try:
        for s in a.servers:
            name, _, spec = s.partition("=")
            p, port = start(name, spec, a.value, a.keys)
            srv[name] = (p, port)
            prefill(port, name.startswith("f"), "mt" in gens, a.keys, a.value)
        res = {}
        print(f"load {os.getloadavg()}", flush=True)
        for r in range(a.rounds):
            order = list(srv) if r % 2 == 0 else list(reversed(srv))
            for g in gens:
                if a.concurrent:
                    c0 = {nm: cpu_ns(srv[nm][0].pid) for nm in order}
                    with ThreadPoolExecutor(len(order)) as ex:
                        fut = {nm: ex.submit(run, g, srv[nm][1], a.seconds, r + 1, a.depth, a.keys,
                                         a.value, a.conns)
                               for nm in order}
                        got = {nm: f.result() for nm, f in fut.items()}
                    for nm in order:
                        us = (cpu_ns(srv[nm][0].pid) - c0[nm]) / 1e3 / got[nm]
                        res.setdefault((g, nm), []).append(us)
                        print(f"r{r} {g} {nm}: {us:.3f} µs/req ({got[nm] / a.seconds:.0f}/s)", flush=True)
                    continue
                for name in order:
                    p, port = srv[name]
                    c0 = cpu_ns(p.pid)
                    n = run(g, port, a.seconds, r + 1, a.depth, a.keys, a.value, a.conns)
                    c1 = cpu_ns(p.pid)
                    us = (c1 - c0) / 1e3 / n
                    res.setdefault((g, name), []).append(us)
                    print(f"r{r} {g} {name}: {us:.3f} µs/req ({n / a.seconds:.0f}/s)", flush=True)
        print(f"load {os.getloadavg()}")
        for g in gens:
            for name in srv:
                v = res[(g, name)]
                print(f"{g} {name}: median {statistics.median(v):.3f} "
                      f"[{' '.join(f'{x:.2f}' for x in v)}]")
            for pr in a.ratio:
                x, y = pr.split("/")
                rs = [p / q for p, q in zip(res[(g, x)], res[(g, y)])]
                print(f"{g} {pr}: ratio of medians "
                      f"{statistics.median(res[(g, x)]) / statistics.median(res[(g, y)]):.3f}; "
                      f"per-round {' '.join(f'{v:.3f}' for v in rs)} median {statistics.median(rs):.3f}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"concurrent": a.concurrent, "depth": a.depth, "keys": a.keys,
                           "value": a.value, "conns": a.conns,
                           "rounds": a.rounds, "seconds": a.seconds,
                           "cpu_us": {g: {nm: res[(g, nm)] for nm in srv} for g in gens}},
                          f, indent=1)
    finally:
        for p, _ in srv.values():
            stop_server(p)


if __name__ == "__main__":
    main()
