#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write amplification with the flash tier nearly full and its items
overwritten: memcached 1.6.45 (A) and nodelay (B) with the same -m and
-o ext_path=FILE:SIZE (files in --dir), one after the other.

Each server gets a key space whose values fill --fill (0.9) of the flash
file beyond -m, set once (loadgen --prefill, values --values bytes), then
--rounds times as many sets again, uniform over the key space (loadgen -g
0): every set makes a flash item dead, so the flash stays about that full
and its segments fragment, and compaction (or eviction) must make room.
Reported from each server's own counters, over the whole run, as
bench/flash.py's "write amp" (value_moved there): device bytes written ÷
value bytes moved from RAM, the kernel's /proc/PID/io write_bytes over the
same, compaction's rescues and losses, flash pages evicted, and the flash
fill at the end (extstore_bytes_used ÷ the file); then as many gets as
keys, uniform, whose hit ratio says what the churn kept.

  bench/flash_churn.py [--memory MB] [--flash MB] [--fill F] [--rounds N]
                       [--values MIN-MAX] [--rate SETS/S] [--ext OPTS] [--nodelay PATH]
                       [--memcached PATH] [--dir DIR] [--no-memcached] [--out FILE]

--ext adds one -o to both servers, e.g. ext_page_size=2,ext_wbuf_size=2
for small pages on a small file.

No memory cgroup: what is measured is bytes written, which the page cache
does not change. Talks to 127.0.0.1 only; the servers are stopped at the
end and their files removed.
"""
import argparse
import json
import os
import sys

from benchproc import free_port
import flash

ROOT = flash.ROOT


def run(args, label, binary):
    vmin, vmax = (int(x) for x in args.values.split("-"))
    mean = (vmin + vmax) / 2
    keys = int((args.memory + args.fill * args.flash) * (1 << 20) / mean)
    port = free_port()
    path = os.path.join(args.dir, f"churn.{label}.{port}")
    logp = os.path.join(args.dir, f"churn.{label}.log")
    row = {"server": label, "keys": keys, "values": args.values, "memory_mb": args.memory,
           "flash_mb": args.flash, "ext": args.ext}
    with open(logp, "w") as log:
        extra = ["-o", args.ext] if args.ext else []
        p = flash.start(binary, port, args.memory, path, args.flash, log, extra)
    try:
        common = ["-k", str(keys), "-v", args.values, "-c", "4", "-d", "8"]
        flash.loadgen(args, port, ["--prefill", *common], timeout=args.timeout)
        sets = int(args.rounds * keys)
        pace = ["-r", str(args.rate)] if args.rate else []
        flash.loadgen(args, port, [*common, "-g", "0", "-n", str(sets), "--seed", "7", *pace],
                      timeout=args.timeout)
        s = flash.stats(port)
        n = flash.stats(port, "nodelay") if label == "B" else {}
        wb = flash.proc_write_bytes(p.pid)
        # what the churn left: gets of as many keys, uniform
        res = flash.loadgen(args, port, [*common, "-g", "1", "-n", str(keys), "--seed", "9"],
                            timeout=args.timeout, json_path=path + ".json")
        gets = (res.get("hits") or 0) + (res.get("misses") or 0)
        row["hit_ratio"] = (res.get("hits") or 0) / gets if gets else None
    finally:
        flash.stop(p)
        for f in (path, path + ".json"):
            if os.path.exists(f):
                os.unlink(f)
    dev, moved = flash.value_moved(s, n)
    num = flash.num
    used = num(s, "extstore_bytes_used")
    row.update({
        "device_bytes_written": dev, "value_bytes_moved": moved,
        "write_amp": dev / moved if dev is not None and moved else None,
        "host_write_bytes": wb, "host_write_amp": wb / moved if wb is not None and moved else None,
        "objects_written": num(s, "extstore_objects_written"),
        "compact_rescues": num(s, "extstore_compact_rescues"),
        "compact_lost": num(s, "extstore_compact_lost"),
        "compact_skipped": num(s, "extstore_compact_skipped"),
        "page_evictions": num(s, "extstore_page_evictions"),
        "objects_evicted": num(s, "extstore_objects_evicted"),
        "evictions": num(s, "evictions"),
        "flash_fill": used / (args.flash << 20) if used is not None else None,
    })
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory", type=int, default=64)
    ap.add_argument("--flash", type=int, default=1024, help="MB")
    ap.add_argument("--fill", type=float, default=0.9)
    ap.add_argument("--rounds", type=float, default=3)
    ap.add_argument("--values", default="1024-16384")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench", "flash"))
    ap.add_argument("--nodelay", default=os.path.join(ROOT, "build", "release-epoll", "nodelay"))
    ap.add_argument("--memcached", default=os.environ.get("MEMCACHED") or None)
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build", "bench", "loadgen"))
    ap.add_argument("--rate", type=int, default=0, help="sets a second in the churn (default: "
                    "as fast as the server takes them)")
    ap.add_argument("--ext", default="", help="more -o options for both servers")
    ap.add_argument("--no-memcached", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--out", default=None, help="JSON of the rows")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    mc = None if args.no_memcached else flash.find_memcached(args.memcached)
    servers = ([("A", mc)] if mc else []) + [("B", args.nodelay)]
    rows = []
    for label, binary in servers:
        r = run(args, label, binary)
        rows.append(r)
        fmt = flash.fmt
        print(f"{label} ({flash.version(binary)}): {r['keys']:,} keys of {r['values']} B, "
              f"{args.rounds} rounds of sets; write amp {fmt(r['write_amp'])} (host "
              f"{fmt(r['host_write_amp'])}), rescues {fmt(r['compact_rescues'], 0)}, lost "
              f"{fmt(r['compact_lost'], 0)}, pages evicted {fmt(r['page_evictions'], 0)}, "
              f"flash fill at end {fmt(r['flash_fill'] and r['flash_fill'] * 100, 1)} %, then "
              f"as many uniform gets as keys hit {fmt(r['hit_ratio'] and r['hit_ratio'] * 100, 1)} %")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
