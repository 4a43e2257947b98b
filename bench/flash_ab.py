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
ratio of two neighbouring windows (bench/paired.py). No memory cgroup:
nodelay reads with O_DIRECT, so its page cache plays no part.

  bench/flash_ab.py A_BINARY B_BINARY [--rounds N] [--seconds S] [--warmup S]
                    [--values 1024-16384] [--memory MB] [--dir DIR]

Printed: each round's hit ratio, CPU µs/request (the server's user +
system CPU over the window ÷ the window's requests), p99.9 and device
reads/request for A and B and the ratios B/A, then the medians with their
ranges, the median of the per-round ratios and each server's round r + 1
÷ round r (the noise floor). Loopback only; every wait is bounded; the
servers are stopped and their flash files removed at the end (on error
and Ctrl-C too)."""
import argparse
import os

from benchproc import ROOT
from paired import Pair, stop_on_sigterm, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--warmup", type=float, default=0,
                    help="seconds of the load on each server after the fill, not counted")
    ap.add_argument("--values", default="1024-16384")
    ap.add_argument("--memory", type=int, default=32)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench", "flash"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build", "bench", "loadgen"))
    args = ap.parse_args()
    stop_on_sigterm()
    vmin, vmax = (int(x) for x in args.values.split("-"))
    os.makedirs(args.dir, exist_ok=True)
    with Pair(args, [("A", args.a, []), ("B", args.b, [])], vmin, vmax) as pair:
        print(f"A = {args.a}, B = {args.b}: {args.values} B values, -m {args.memory}; "
              f"{pair.filled()}", flush=True)
        pair.warm(args.warmup)
        summary(("A", "B"), pair.rounds(args.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
