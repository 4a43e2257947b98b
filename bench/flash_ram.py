#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""RAM per flash item at millions of flash items (docs/store-flash.md "RAM
per flash item"): nodelay with -m MB -t 2 -o ext_path=FILE:SIZE, --keys
sets of values --values bytes (all at or above ext_item_size, so each one
leaves RAM for flash as RAM fills) by bench/loadgen --prefill over --conns
connections of --depth requests in flight each (the depth is the pacing: a
round trip every that many sets per connection), then, once the tier's
write queue is empty and 2 s more (at rest), reports

  flash items        extstore_objects_used
  RAM per flash item (RSS - -m) / flash items, at rest and as the load
                     ended (the write buffers all in use)
  index              index_bytes (its own count: table and overflow) and
                     that / flash items

and whether every set was kept (curr_items + flash items, evictions,
extstore_skipped_full, extstore_index_dropped, and extstore_tag_dropped:
with every key set once, each is another key's flash copy a write forgot,
given also per set). The flash file is deleted
at the end. Talks to 127.0.0.1 only; every wait is bounded.

  bench/flash_ram.py [--keys N] [--values MIN-MAX] [--memory MB]
                     [--flash-size SIZE] [--file PATH] [--nodelay PATH]
                     [--restart] [--json FILE]

With --restart the server runs with -e (a memory file in /dev/shm),
is stopped gracefully once at rest, and started again on both files: the
same figures are reported for the restored server at rest, whose index
the restore built (docs/restarts.md).

The defaults are the documented run: 10.5 M sets of 512-600 B into a
7 GiB file (`make bench-flash-ram`).
"""
import argparse
import json
import os
import subprocess
import sys
import time

from benchproc import free_port, wait_for_port
from flash import proc_rss, stats, stop

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def largest_mappings(pid, n=8):
    """The process's n mappings of most RSS: (KiB, what)."""
    out, cur = [], None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                parts = line.split()
                if "-" in parts[0] and len(parts) >= 5:
                    cur = " ".join(parts[5:]) or "[anon]"
                    cur = f"{parts[0]} {cur}"
                elif parts[0] == "Rss:" and cur:
                    out.append((int(parts[1]), cur))
    except OSError:
        return []
    return sorted(out, reverse=True)[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=10_500_000)
    ap.add_argument("--values", default="512-600")
    ap.add_argument("--memory", type=int, default=64)
    ap.add_argument("--flash-size", default="7g")
    ap.add_argument("--file", default="/var/tmp/nodelay-flash-ram.flash")
    ap.add_argument("--conns", type=int, default=2)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--nodelay", default=os.path.join(ROOT, "build", "release-epoll", "nodelay"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build", "bench", "loadgen"))
    ap.add_argument("--extra", default="", help="more nodelay flags")
    ap.add_argument("--restart", action="store_true", help="with -e: stop, restart, measure again")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json")
    args = ap.parse_args()

    port = free_port()
    argv = [args.nodelay, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", "2",
            "-m", str(args.memory), "-o", f"ext_path={args.file}:{args.flash_size}", *args.extra.split()]
    if os.geteuid() == 0:
        argv[1:1] = ["-u", "root"]
    mem_file = os.path.join("/dev/shm", os.path.basename(args.file) + ".mem")
    if args.restart:
        argv += ["-e", mem_file]
    for f in (args.file, mem_file):
        if os.path.exists(f):
            os.unlink(f)
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    restored = None
    try:
        wait_for_port(port, p, timeout=30)
        s0 = stats(port)
        rss0 = proc_rss(p.pid)
        t0 = time.monotonic()
        subprocess.run([args.loadgen, "-s", f"127.0.0.1:{port}", "-q", "--prefill", "-k", str(args.keys),
                        "-v", args.values, "-c", str(args.conns), "-d", str(args.depth), "-t", "1"],
                       check=True, timeout=args.timeout, stdout=subprocess.DEVNULL)
        fill_s = time.monotonic() - t0
        rss_load = proc_rss(p.pid)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and stats(port).get("extstore_io_queue", "0") != "0":
            time.sleep(0.5)
        time.sleep(2)  # at rest: the writer thread idle a second returns its spare buffers
        s, n, rss = stats(port), stats(port, "nodelay"), proc_rss(p.pid)
        maps = largest_mappings(p.pid)
        if args.restart:
            stop(p, timeout=120)
            t1 = time.monotonic()
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
            wait_for_port(port, p, timeout=600)
            up_s = time.monotonic() - t1
            time.sleep(2)
            rs, rn, rrss = stats(port), stats(port, "nodelay"), proc_rss(p.pid)
            restored = (rs, rn, rrss, up_s)
    finally:
        stop(p, timeout=120)
        for f in (args.file, mem_file):
            if os.path.exists(f):
                os.unlink(f)

    def i(d, k):
        return int(d.get(k, 0))

    mem = i(s, "limit_maxbytes")
    used = i(s, "extstore_objects_used")
    r = {
        "argv": " ".join(argv[1:]), "keys": args.keys, "values": args.values, "fill_s": round(fill_s, 1),
        "rss_start": rss0, "rss_load": rss_load, "rss": rss, "limit_maxbytes": mem,
        "flash_items": used, "ram_items": i(s, "curr_items") - used,
        "evictions": i(s, "evictions"), "skipped_full": i(n, "extstore_skipped_full"),
        "index_dropped": i(n, "extstore_index_dropped"), "page_evictions": i(s, "extstore_page_evictions"),
        "tag_dropped": i(n, "extstore_tag_dropped"), "slots_dropped": i(n, "extstore_slots_dropped"),
        "index_bytes": i(n, "index_bytes") or i(s, "hash_bytes"), "hash_power_level": i(s, "hash_power_level"),
        "ram_per_flash_item": (rss - mem) / used if used else None,
        "index_per_flash_item": (i(n, "index_bytes") or i(s, "hash_bytes")) / used if used else None,
    }
    print(f"flash_ram.py: nodelay {r['argv']}")
    print(f"  {args.keys:,} sets of {args.values} B in {fill_s:.0f} s: {used:,} on flash, "
          f"{r['ram_items']:,} in RAM, evictions {r['evictions']}, skipped_full {r['skipped_full']}, "
          f"index_dropped {r['index_dropped']}, page_evictions {r['page_evictions']}")
    print(f"  tag_dropped {r['tag_dropped']:,} (one a {args.keys / max(r['tag_dropped'], 1):,.0f} sets), "
          f"slots_dropped {r['slots_dropped']:,}")
    print(f"  RSS at rest {rss / 2**20:.1f} MiB (at start {rss0 / 2**20:.1f}), -m {mem / 2**20:.0f} MiB: "
          f"(RSS - -m) / flash items = {r['ram_per_flash_item']:.2f} B")
    print(f"  RSS as the load ended {rss_load / 2**20:.1f} MiB: "
          f"{(rss_load - mem) / used if used else 0:.2f} B a flash item")
    print(f"  index_bytes {r['index_bytes'] / 2**20:.1f} MiB (hash_power_level {r['hash_power_level']}): "
          f"{r['index_per_flash_item']:.2f} B a flash item")
    print("  largest mappings (RSS): " + "; ".join(f"{k / 1024:.1f} MiB {w}" for k, w in maps))
    r["largest_mappings"] = maps
    if restored:
        rs, rn, rrss, up_s = restored
        rused = i(rs, "extstore_objects_used")
        rix = i(rn, "index_bytes") or i(rs, "hash_bytes")
        r["restored"] = {"flash_items": rused, "ram_items": i(rs, "curr_items") - rused, "rss": rrss,
                         "start_s": round(up_s, 1), "index_bytes": rix,
                         "ram_per_flash_item": (rrss - mem) / rused if rused else None,
                         "index_per_flash_item": rix / rused if rused else None}
        print(f"  restarted with -e in {up_s:.0f} s: {rused:,} on flash, {r['restored']['ram_items']:,} in RAM")
        if rused:
            print(f"  restored, RSS at rest {rrss / 2**20:.1f} MiB: (RSS - -m) / flash items = "
                  f"{(rrss - mem) / rused:.2f} B; index_bytes {rix / 2**20:.1f} MiB, "
                  f"{rix / rused:.2f} B a flash item")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
