#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bench/flash.py's comparison, paired: memcached 1.6.45 with -o
ext_path=FILE:SIZE (A) and nodelay with the same flags (B), each in a
memory cgroup of its own limited as flash.py limits it (-m plus
--allowance, page cache counted, so memcached's buffered reads cannot
come from RAM the other lacks), both started and filled once with
flash.py's fill (a key space ten times -m), then taking turns under
flash.py's load (Zipf 0.99, 90 % gets, 16 connections) for --seconds
each, the order reversed every other round (bench/paired.py). flash.py
starts and fills a fresh server per run, so on a shared machine its CPU
per request and p99.9 carry the drift between two runs and each fill's
luck; here each round is two neighbouring windows on servers that keep
their fill.

  bench/flash_pair.py [--memory MB] [--rounds N] [--seconds S] [--warmup S]
                      [--values 1024-16384,100-1024] [--allowance MB]
                      [--unbounded] [--nodelay PATH] [--memcached PATH]
                      [--nodelay-args ARGS] [--fill-mb-s MB] [--dir DIR]

For each value profile (both of flash.py's by default) it prints each
round's hit ratio, CPU µs/request (the server's user + system CPU over the
window ÷ its requests), p99.9, device reads/request (perf's block read
requests, as flash.py counts them; "-" without perf) and KiB read/request
(/proc/PID/io) for both, and the ratios nodelay/memcached; then each
server's medians with their ranges, the median of the per-round ratios
and, as their noise floor, each server's round r + 1 ÷ round r; and each
group's peak charge. --nodelay set to memcached (or MEMCACHED to
nodelay) pairs a server with itself, an A/A: the spread of that ratio is
the floor under the other. Loopback only; every wait is bounded; the servers
are stopped and their flash files and cgroups removed at the end (on
error and Ctrl-C too)."""
import argparse
import os
import sys

import flash
from benchproc import ROOT
from paired import Pair, stop_on_sigterm, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--warmup", type=float, default=20,
                    help="seconds of the load on each server after the fill, not counted "
                         "(the hit ratios settle)")
    ap.add_argument("--values", default=",".join(f"{lo}-{hi}" for _, lo, hi in flash.PROFILES))
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--allowance", type=int, default=None,
                    help="MB each server may hold beyond -m, page cache included (flash.py's default)")
    ap.add_argument("--unbounded", action="store_true", help="no memory cgroup")
    ap.add_argument("--nodelay", default=os.path.join(ROOT, "build", "release-epoll", "nodelay"))
    ap.add_argument("--memcached", default=os.environ.get("MEMCACHED") or None)
    ap.add_argument("--nodelay-args", default="")
    ap.add_argument("--fill-mb-s", type=float, default=0,
                    help="value MB a second during the fill (default: as fast as the server takes them)")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench", "flash"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build", "bench", "loadgen"))
    args = ap.parse_args()
    stop_on_sigterm()
    mc = flash.find_memcached(args.memcached)
    if not mc:
        print("flash_pair.py: no memcached found (MEMCACHED=PATH)", file=sys.stderr)
        return 1
    if args.allowance is None:
        args.allowance = flash.default_allowance(args.memory)
    os.makedirs(args.dir, exist_ok=True)
    bound = (f"each in a memory cgroup of {args.memory + args.allowance} MB (-m {args.memory} + "
             f"{args.allowance}), page cache counted" if not args.unbounded else "RAM not bounded")
    print(f"flash_pair.py: A = {flash.version(mc)}, B = {flash.version(args.nodelay)}; -m {args.memory}, "
          f"{flash.flash_size_mb(args.memory)} MB flash files in {flash.filesystem(args.dir)}; {bound}; "
          f"{args.rounds} rounds of {args.seconds:g} s", flush=True)
    # named by what they are: --nodelay or MEMCACHED set to the other kind
    # makes an A/A pair, the noise floor of the ratio itself
    names = ["nodelay" if "nodelay" in flash.version(b) else "memcached" for b in (mc, args.nodelay)]
    if names[0] == names[1]:
        names = [f"{names[0]}-1", f"{names[1]}-2"]
    servers = [(names[0], mc, []), (names[1], args.nodelay, args.nodelay_args.split())]
    for values in args.values.split(","):
        vmin, vmax = (int(x) for x in values.split("-"))
        with Pair(args, servers, vmin, vmax, None if args.unbounded else args.allowance) as pair:
            print(f"{values} B values: {pair.filled()}", flush=True)
            pair.warm(args.warmup)
            summary(names, pair.rounds(args.rounds))
            print("peak MB: " + ", ".join(f"{label} {peak}" for (label, _, _), peak
                                          in zip(servers, pair.peaks())), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
