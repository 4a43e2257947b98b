#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A paired A/B of two nodelay builds' CPU per request under bench/flash.py's
load: each server is started once (flash.py's flags: -t 1, -m MB, a flash
file of 12 × -m rounded up to 64 MB pages) and filled once with a key space
ten times -m (loadgen --prefill), then the two take turns, the order
reversed every other round, each driven for --seconds by flash.py's load
(Zipf 0.99, 90 % gets, 16 connections). flash.py fills and starts a new
server for each run, so two runs of one build spread by tens of percent on a
shared machine; here both servers keep their fill and every round gives a
ratio of two neighbouring windows. No memory cgroup: nodelay reads with
O_DIRECT, so its page cache plays no part.

  bench/flash_ab.py A_BINARY B_BINARY [--rounds N] [--seconds S]
                    [--values 1024-16384] [--memory MB] [--dir DIR]

Printed: each round's CPU µs/request (the server's user + system CPU over
the window ÷ the window's requests) and p99.9 for A and B and the ratio
B/A, then the medians with their ranges and the median of the per-round
ratios. Loopback only; every wait is bounded; the servers are stopped and
their flash files removed at the end."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from benchproc import ROOT, cpu_seconds, free_port, wait_for_port

PAGE_MB = 64


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--values", default="1024-16384")
    ap.add_argument("--memory", type=int, default=32)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench", "flash"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build", "bench", "loadgen"))
    args = ap.parse_args()
    vmin, vmax = (int(x) for x in args.values.split("-"))
    keys = int(10 * args.memory * (1 << 20) / ((vmin + vmax) / 2))
    flash_mb = -(-12 * args.memory // PAGE_MB) * PAGE_MB
    os.makedirs(args.dir, exist_ok=True)
    servers = []
    try:
        for i, binary in enumerate((args.a, args.b)):
            port = free_port()
            path = os.path.join(args.dir, f"flash_ab.{os.getpid()}.{i}")
            argv = [binary, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", "1",
                    "-m", str(args.memory), "-o", f"ext_path={path}:{flash_mb}m"]
            if os.geteuid() == 0:
                argv[1:1] = ["-u", "root"]
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            servers.append((p, port, path))
            wait_for_port(port, p, timeout=15)
        for p, port, _ in servers:
            subprocess.run([args.loadgen, "-s", f"127.0.0.1:{port}", "-q", "--prefill", "-k", str(keys),
                            "-v", args.values, "-c", "4", "-d", "8"],
                           check=True, stdout=subprocess.DEVNULL, timeout=600)
        runs = ([], [])
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                    p, port, _ = servers[i]
                    js = os.path.join(tmp, "load.json")
                    c0 = cpu_seconds(p.pid)
                    subprocess.run([args.loadgen, "-s", f"127.0.0.1:{port}", "-q", "-k", str(keys),
                                    "-v", args.values, "--zipf", "0.99", "-g", "0.9", "-c", "16",
                                    "-D", str(args.seconds), "--seed", str(7 + r), "--json", js],
                                   check=True, stdout=subprocess.DEVNULL, timeout=args.seconds + 60)
                    c1 = cpu_seconds(p.pid)
                    with open(js) as f:
                        res = json.load(f)
                    runs[i].append(((c1 - c0) * 1e6 / max(1, res["requests"]), res["lat_us"]["p999"]))
                (ca, pa), (cb, pb) = runs[0][-1], runs[1][-1]
                print(f"round {r + 1}: A {ca:.2f} µs p99.9 {pa:,.0f} µs, B {cb:.2f} µs p99.9 {pb:,.0f} µs, "
                      f"B/A {cb / ca:.3f}, load {os.getloadavg()[0]:.2f}", flush=True)
        for name, binary, rows in (("A", args.a, runs[0]), ("B", args.b, runs[1])):
            cpu = [x[0] for x in rows]
            p999 = [x[1] for x in rows]
            print(f"{name} {binary}: CPU µs/req median {statistics.median(cpu):.2f} "
                  f"[{min(cpu):.2f}-{max(cpu):.2f}], p99.9 median {statistics.median(p999):,.0f} "
                  f"[{min(p999):,.0f}-{max(p999):,.0f}] µs")
        ratios = [b[0] / a[0] for a, b in zip(*runs)]
        print(f"B/A CPU per round: median {statistics.median(ratios):.3f} "
              f"[{min(ratios):.3f}-{max(ratios):.3f}]")
    finally:
        for p, _, path in servers:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=5)
            if os.path.exists(path):
                os.unlink(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
