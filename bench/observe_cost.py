#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What observability costs a worker: server CPU per request for

  nolog          BIN built with logging compiled out (--nolog BIN2)
  head           BIN at -v0, no endpoint
  head+metrics   BIN with -o metrics_listen (timing on), never scraped
  head+scrape1s  the same, scraped once a second

Each run: a fresh server pinned to CPU 1 (-t 1 -m 256), 100,000 keys
prefilled, then loadgen on CPU 0 (-c 20, 90% gets, 100 B values) for N
requests; server CPU (utime+stime from /proc) / requests. Variants run in a
shuffled order each round; medians over rounds are printed.

  bench/observe_cost.py --bin build/release-epoll/nodelay --nolog /tmp/nolog/nodelay \
      --requests 150000 --rounds 6

(--nolog: a copy of the tree with LOG_ENABLED(level) defined as 0 in
src/base/log.h, built with make.) Loopback only, bounded by --requests."""
import argparse
import json
import os
import random
import subprocess
import threading
import urllib.request

from benchproc import ROOT, cpu_seconds, free_port, start_server, stop_server


def run(binary, metrics, scrape, requests, loadgen):
    mport = free_port()
    extra = ["-t", "1"] + (["-o", f"metrics_listen={mport}"] if metrics else [])
    p, port = start_server(binary, *extra, cpu=1)
    try:
        subprocess.run([loadgen, "-s", f"127.0.0.1:{port}", "--prefill", "-k", "100000", "-q"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        stop = threading.Event()

        def scraper():
            while not stop.wait(1.0):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=2).read()
                except OSError:
                    pass

        t = threading.Thread(target=scraper)
        if scrape:
            t.start()
        c0 = cpu_seconds(p.pid)
        out = subprocess.run(["taskset", "-c", "0", loadgen, "-s", f"127.0.0.1:{port}", "-t", "1",
                              "-c", "20", "-n", str(requests), "-k", "100000", "-g", "0.9",
                              "--json", "-", "-q"], capture_output=True, text=True,
                             timeout=600).stdout
        c1 = cpu_seconds(p.pid)
        stop.set()
        if scrape:
            t.join()
        d = json.loads(out)
        if not d.get("requests") or c1 <= c0:
            return None
        return 1e6 * (c1 - c0) / d["requests"], d["ops_per_s"]
    except (ValueError, subprocess.TimeoutExpired):
        return None
    finally:
        stop_server(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release-epoll/nodelay"))
    ap.add_argument("--nolog", help="the same server built with logging compiled out")
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build/bench/loadgen"))
    ap.add_argument("--requests", type=int, default=150000)
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    variants = [("head", a.bin, False, False), ("head+metrics", a.bin, True, False),
                ("head+scrape1s", a.bin, True, True)]
    if a.nolog:
        variants.insert(0, ("nolog", a.nolog, False, False))
    res = {v[0]: [] for v in variants}
    for _ in range(a.rounds):
        order = variants[:]
        random.shuffle(order)
        for name, binary, metrics, scrape in order:
            r = run(binary, metrics, scrape, a.requests, a.loadgen)
            if r:
                res[name].append(r)
    for name, rs in res.items():
        if not rs:
            continue
        cpu = sorted(r[0] for r in rs)
        ops = sorted(r[1] for r in rs)
        print(f"{name:14s} server CPU us/request median {cpu[len(cpu) // 2]:.2f} "
              f"(min {cpu[0]:.2f}, max {cpu[-1]:.2f})  ops/s median {ops[len(ops) // 2]:.0f}  "
              f"runs {len(rs)}")


if __name__ == "__main__":
    main()
