#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Where a server's CPU goes on one workload, and what a change saved.

  bench/profile.py --bin NEW [--base OLD] [--workload get90_p16] [--rounds 5]
                   [--seconds 3] [--perf] [--server-args '-o io_uring=off']

Starts each binary once, pinned to CPU 1 (-t 1 -m 256), prefills 100,000
keys of 100 B (large100k: its 200 keys of 100 KiB), then runs the load
generator on CPU 0 for --seconds per run, alternating the binaries round
after round (the order flips each round), and prints each one's median
server CPU µs per request (utime+stime from /proc over the run ÷ requests)
with its range, and NEW/OLD (of the medians, and the median of the
rounds' own ratios: paired, steadier on a shared machine). With --perf it
then records each server for 4 s under the same load (perf record -g) and
prints its top symbols. docs/benchmark-cost.md "The cache's own cost" was made
with it:

  bench/profile.py --base /tmp/main/build/release-epoll/nodelay \\
      --bin build/release-epoll/nodelay --workload get90_p16 --rounds 7 --perf

(--base: a copy of the tree before the change, `git archive REV | tar -x`,
built with make CONFIG=release.) Loopback only, bounded by rounds × seconds."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

from benchproc import ROOT, cpu_seconds, start_server, stop_server
WORKLOADS = {  # the same arguments as bench/compare.sh
    "get90_p1": "-c 50 -d 1 -g 0.9 -v 100 -k 100000",
    "get90_p16": "-c 50 -d 16 -g 0.9 -v 100 -k 100000",
    "mget16": "-c 50 -d 1 -g 1 -m 16 -v 100 -k 100000",
    "meta_mg_p16": "-c 50 -d 16 -g 1 -p meta -v 100 -k 100000",
    "large100k": "-c 10 -d 1 -g 0.9 -v 102400 -k 200 --key-base 1000000",
}
# What each workload's keys are prefilled with (compare.sh's prefill)
PREFILL = {"large100k": "-c 4 -d 2 -k 200 --key-base 1000000 -v 102400"}
PREFILL_DEFAULT = "-c 10 -d 16 -k 100000 -v 100"


def loadgen(lg, port, args, seconds, seed):
    out = subprocess.run(["taskset", "-c", "0", lg, "-s", f"127.0.0.1:{port}"] + args.split()
                         + ["-D", str(seconds), "-q", "--seed", str(seed), "--json", "-"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release-epoll/nodelay"))
    ap.add_argument("--base", help="the same server before the change")
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build/bench/loadgen"))
    ap.add_argument("--workload", default="get90_p16", choices=sorted(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--perf", action="store_true", help="also print each server's top symbols")
    ap.add_argument("--server-args", default="",
                    help="more flags for both servers, e.g. '-o io_uring=off'")
    a = ap.parse_args()
    bins = {"new": a.bin}
    if a.base:
        bins = {"old": a.base, "new": a.bin}
    args = WORKLOADS[a.workload]
    procs, ports = {}, {}
    try:
        for name, b in bins.items():
            procs[name], ports[name] = start_server(b, "-t", "1", "-c", "4096",
                                                    *a.server_args.split(), cpu=1, quiet=False)
        for name in bins:
            subprocess.run(["taskset", "-c", "0", a.loadgen, "-s", f"127.0.0.1:{ports[name]}", "-q",
                            "--prefill"] + PREFILL.get(a.workload, PREFILL_DEFAULT).split(),
                           check=True)
        cpu = {n: [] for n in bins}
        for r in range(a.rounds):
            order = list(bins) if r % 2 == 0 else list(bins)[::-1]
            for n in order:
                t0 = cpu_seconds(procs[n].pid)
                j = loadgen(a.loadgen, ports[n], args, a.seconds, r + 1)
                t1 = cpu_seconds(procs[n].pid)
                cpu[n].append((t1 - t0) * 1e6 / max(1, j["requests"]))
        print(f"{a.workload}, {a.rounds} rounds of {a.seconds} s, load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        for n in bins:
            print(f"  {n} {bins[n]}: CPU µs/request median {statistics.median(cpu[n]):.3f} "
                  f"(min {min(cpu[n]):.3f}, max {max(cpu[n]):.3f})")
        if a.base:
            paired = statistics.median(n / o for n, o in zip(cpu["new"], cpu["old"]))
            print(f"  new/old: {statistics.median(cpu['new']) / statistics.median(cpu['old']):.2f}"
                  f" (paired {paired:.2f})")
        if a.perf:
            for n in bins:
                with tempfile.TemporaryDirectory() as d:
                    data = os.path.join(d, "perf.data")
                    p = subprocess.Popen(["perf", "record", "-F", "4000", "-g", "-p", str(procs[n].pid),
                                          "-o", data, "--", "sleep", "4"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.1)
                    loadgen(a.loadgen, ports[n], args, 4.5, 99)
                    p.wait()
                    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort",
                                          "symbol", "--stdio", "-g", "none"],
                                         capture_output=True, text=True).stdout
                    top = [l for l in rep.splitlines() if l.strip() and not l.startswith("#")][:15]
                    print(f"  top symbols, {n}:")
                    for line in top:
                        print("    " + " ".join(line.split()[:3]))
    finally:
        for p in procs.values():
            stop_server(p)


if __name__ == "__main__":
    main()
