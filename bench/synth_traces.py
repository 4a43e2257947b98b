#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Synthetic "key size" traces of shapes the ARC paper's block traces lack,
for bench/traces.sh --dir DIR: the eviction policy must not be tuned to the
two real traces alone. Deterministic (fixed seeds); each file at most 30 MB.

  zipfvar.kv   stationary Zipf 0.9 over 200,000 keys, each key's size drawn
               once, log-normal around 300 B (10 B to 100 KB): variable sizes
  sliding.kv   Zipf 0.8 over a window of 50,000 keys that slides one key
               every 10 requests: popularity that moves on
  bigvals.kv   stationary Zipf 0.9 over 20,000 keys of large values,
               log-normal around 20 KB (1 KB to 900 KB), 400,000 requests
  reuse.kv     every key read three times, each read 20,000-80,000 requests
               after the last, 100 B: reuse within an LRU's reach, which a
               short probation queue misses (reuse.m pins -m 16, where
               memcached 1.6.45 holds 87,376 such items)

  bench/synth_traces.py DIR && bash bench/traces.sh --dir DIR
"""
import bisect
import heapq
import itertools
import math
import os
import random
import sys

REQUESTS = 2_000_000


def zipf(n, a, rng):
    cum = list(itertools.accumulate(1.0 / (i + 1) ** a for i in range(n)))
    total = cum[-1]
    return lambda: bisect.bisect_left(cum, rng.random() * total)


def sizes(seed, median=300, sigma=1.2, low=10, high=100_000):
    rng, known = random.Random(seed), {}

    def size(key):
        if key not in known:
            known[key] = int(min(high, max(low, rng.lognormvariate(math.log(median), sigma))))
        return known[key]
    return size


def zipfvar(f):
    rng = random.Random(7)
    rank, size = zipf(200_000, 0.9, rng), sizes(5)
    keys = list(range(200_000))
    rng.shuffle(keys)
    for _ in range(REQUESTS):
        k = keys[rank()]
        f.write(f"key:{k} {size(k)}\n")


def sliding(f):
    rng = random.Random(9)
    rank, size = zipf(50_000, 0.8, rng), sizes(6)
    for i in range(REQUESTS):
        k = i // 10 + rank()
        f.write(f"s:{k} {size(k)}\n")


def bigvals(f):
    rng = random.Random(1)
    rank, size = zipf(20_000, 0.9, rng), sizes(2, 20_000, 1.0, 1_000, 900_000)
    for _ in range(400_000):
        k = rank()
        f.write(f"b:{k} {size(k)}\n")


def reuse(f):
    rng = random.Random(3)
    due, fresh = [], 0  # (request, key, reads left)
    for step in range(1_500_000):
        if due and due[0][0] <= step:
            _, k, left = heapq.heappop(due)
        else:
            k, left = fresh, 3
            fresh += 1
        f.write(f"r:{k} 100\n")
        if left > 1:
            heapq.heappush(due, (step + rng.randint(20_000, 80_000), k, left - 1))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for gen in (zipfvar, sliding, bigvals, reuse):
        with open(os.path.join(out, gen.__name__ + ".kv"), "w") as f:
            gen(f)
    with open(os.path.join(out, "reuse.m"), "w") as f:
        f.write("16\n")


if __name__ == "__main__":
    main()
