#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The flash tier side by side: memcached 1.6.45 with -o ext_path=FILE:SIZE
(A) and nodelay with the same flags (B), the same -m and flash file size,
the files in one directory (so on one filesystem, named in the output).
Two runs each: values of 1-16 KiB and of 100 B-1 KiB. Each run fills a key
space ten times larger than RAM (loadgen --prefill), then drives a Zipf
0.99 get/set load (bench/loadgen, 90 % gets) for --duration seconds, and
reports:

  hit ratio          the load's gets that hit (loadgen)
  CPU µs/request     the server's user+system CPU over the load ÷ requests
  p99, p99.9         the load's latencies (loadgen)
  write amp          bytes written to the flash file ÷ value bytes moved
                     there from RAM (compaction's rewrites count on top,
                     not as moves), over the whole run, each from the
                     server's own counters (value_moved below); and the
                     kernel's count of the process's writes to storage
                     (/proc/PID/io write_bytes) over the same value bytes
  flash B / B stored the old ratio, kept for comparison: extstore_bytes_written
                     ÷ value bytes the clients stored (fill + load sets ×
                     mean value size); it falls as a server moves fewer
                     items to flash, so it is no write amplification
  device reads/req   the block requests the server's threads issued to read
                     the device over the load ÷ requests (perf stat -e
                     block:block_rq_issue, reads only, on the server's pid),
                     and the bytes it read from storage (/proc/PID/io
                     read_bytes) ÷ requests: whether each server reads the
                     disk or its file's page cache
  RAM/flash item     (RSS − -m) ÷ extstore_objects_used, and of it the
                     hash table's share (hash_bytes ÷ the same): nodelay's
                     is presized for the flash file full of its smallest
                     items (ext_item_size), so with few large items (a
                     short run, 1-16 KiB values) this row is mostly that
                     table and the write buffers over few items; RAM per
                     flash item at 10 M+ items is `make bench-flash-ram`'s

Both servers get the same RAM: each runs in a memory cgroup of its own
whose limit (cgroup v1 memory.limit_in_bytes, v2 memory.max) counts its
RSS and the page cache of its files, set to -m plus an allowance for what
a server keeps outside -m (hash table or index, connections, write
buffers): --allowance MB, by default 64 MB + -m ÷ 2, room for nodelay's
own RSS, whose index is sized by the flash file (12 × -m). memcached
reads its file without O_DIRECT: unbounded, its "flash" reads would be
copies from the page cache the machine lends it beyond -m, nodelay's
reads of the device. Where no memory cgroup can be made (or with
--unbounded) the run is unbounded and the output says so.

A figure the server does not give (nodelay's flash tier is not wired in yet:
no extstore_* counters) is reported as "not yet", never estimated. Talks to
127.0.0.1 only; every wait is bounded; the servers are stopped at the end.

  bench/flash.py [--memory MB] [--duration S] [--short] [--out DIR]
                 [--nodelay PATH] [--memcached PATH] [--dir FLASHDIR]
                 [--nodelay-args ARGS] [--no-memcached] [--allowance MB]
                 [--unbounded]

--nodelay-args adds flags to nodelay's (e.g. "-o io_uring=off" for its
epoll backend); --no-memcached runs nodelay alone (before/after figures).

The fill sets as fast as the server takes them, unless --fill-mb-s caps
its value bytes a second (the sets a second that makes at the mean value
size). Faster than the device writes, both servers evict
what RAM cannot hold and the flash has not taken yet (nodelay counts
those in extstore_skipped_full): the fill's evictions are reported, as
they lower the load's hit ratio.

--short is 32 MB of RAM and 2 s of load (what `make bench` runs); the
default is 256 MB and 30 s. Writes DIR/flash.json and DIR/flash.md.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

from benchproc import cpu_seconds, free_port, wait_for_port
from memcg import MemCgroup

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROFILES = [("1-16KiB", 1024, 16384), ("100B-1KiB", 100, 1024)]
PAGE_MB = 64


def stats(port, group=""):
    out = {}
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"stats {group}".strip().encode() + b"\r\n")
        buf = b""
        deadline = time.monotonic() + 10
        while not buf.endswith(b"END\r\n") and time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    for line in buf.decode(errors="replace").split("\r\n"):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def proc_io(pid, key):
    """A /proc/PID/io row (write_bytes, read_bytes): bytes the process had
    the storage layer move, page cache hits not counted."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_write_bytes(pid):
    return proc_io(pid, "write_bytes")


class BlockReads:
    """perf stat's count of the block read requests the server's threads
    issue (block:block_rq_issue filtered to reads) from start to stop;
    None where perf or the tracepoint is missing."""

    def __init__(self, pid, out_path):
        self.out_path = out_path
        self.p = None
        try:
            self.p = subprocess.Popen(
                ["perf", "stat", "-x", ",", "-o", out_path, "-e", "block:block_rq_issue",
                 "--filter", 'rwbs ~ "*R*"', "-p", str(pid)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)  # attached before the load starts
        except OSError:
            self.p = None

    def stop(self):
        if self.p is None:
            return None
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(timeout=5)
            return None
        try:
            with open(self.out_path) as f:
                for line in f:
                    parts = line.strip().split(",")
                    if len(parts) > 2 and "block_rq_issue" in parts[2]:
                        return int(parts[0]) if parts[0].isdigit() else None
        except OSError:
            pass
        return None


def proc_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def start(binary, port, memory, flash_file, flash_mb, log, extra=(), group=None):
    argv = [binary, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", "1", "-m", str(memory),
            "-o", f"ext_path={flash_file}:{flash_mb}m", *extra]
    if os.geteuid() == 0:
        argv[1:1] = ["-u", "root"]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         preexec_fn=group.enter if group else None)
    try:
        wait_for_port(port, p, timeout=15)
    except SystemExit as e:
        # one run's failure: main reports it and goes on with the others
        p.kill()
        p.wait()
        raise RuntimeError(f"{binary}: {e} (see {log.name})") from None
    return p


def stop(p, timeout=15):
    """SIGTERM (a graceful stop: with -e it writes the file out), bounded."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


def loadgen(args, port, extra, timeout, json_path=None):
    argv = [args.loadgen, "-s", f"127.0.0.1:{port}", "-q", *extra]
    if json_path:
        argv += ["--json", json_path]
    subprocess.run(argv, check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    if json_path:
        with open(json_path) as f:
            return json.load(f)
    return None


def key_space(memory, vmin, vmax):
    """Keys whose values, at the mean size, are ten times -m."""
    return int(10 * memory * (1 << 20) / ((vmin + vmax) / 2))


def default_allowance(memory):
    """MB a server may hold beyond -m, page cache included: room for
    nodelay's index, sized by the flash file (docs/benchmark.md)."""
    return 64 + memory // 2


def flash_size_mb(memory):
    """Room for the whole key space: 12 × -m, in whole pages."""
    return -(-12 * memory // PAGE_MB) * PAGE_MB


def fill(args, port, keys, vmin, vmax, mb_s=0, timeout=600):
    """Every key set once (loadgen --prefill), capped at mb_s value MB a
    second when given."""
    pace = ["-r", str(max(1, int(mb_s * (1 << 20) / ((vmin + vmax) / 2))))] if mb_s else []
    loadgen(args, port, ["--prefill", "-k", str(keys), "-v", f"{vmin}-{vmax}", "-c", "4", "-d", "8", *pace],
            timeout=timeout)


def window(args, p, port, keys, vmin, vmax, seconds, seed, json_path, perf_path):
    """One load window: Zipf 0.99, 90 % gets, args.conns connections for
    seconds; loadgen's result and the server's CPU seconds, block read
    requests (None without perf) and bytes read from storage over it."""
    perf = BlockReads(p.pid, perf_path)
    try:
        rb0, cpu0 = proc_io(p.pid, "read_bytes"), cpu_seconds(p.pid)
        res = loadgen(args, port, ["-k", str(keys), "-v", f"{vmin}-{vmax}", "--zipf", "0.99", "-g", "0.9",
                                   "-c", str(args.conns), "-D", str(seconds), "--seed", str(seed)],
                      timeout=seconds + 60, json_path=json_path)
        cpu1, rb1 = cpu_seconds(p.pid), proc_io(p.pid, "read_bytes")
    finally:
        reads = perf.stop()
    return {"res": res, "cpu_s": cpu1 - cpu0, "block_reads": reads,
            "read_bytes": rb1 - rb0 if rb0 is not None and rb1 is not None else None}


def num(d, k):
    try:
        return float(d[k])
    except (KeyError, ValueError, TypeError):
        return None


# memcached 1.6.45 writes each item whole (ITEM_ntotal) and counts those
# bytes in extstore_bytes_written: its 48-byte header, the 8-byte CAS, the
# key and its NUL, flags (none: loadgen sets 0) and the value with its
# "\r\n". loadgen's keys are 14 bytes: 73 bytes an item beside the value
# (2000-byte values write 2073 bytes each).
MC_ITEM_OVERHEAD = 48 + 8 + 14 + 1 + 2


def value_moved(s, n):
    """(device bytes, value bytes moved from RAM) from a server's counters:
    nodelay's `stats nodelay` has both; memcached's are derived from
    `stats`: the device bytes are extstore_bytes_written (items, wbuf tails
    not counted: under one item per write buffer), the moves are
    extstore_objects_written − extstore_compact_rescues, and their value
    bytes that many mean items (bytes_written ÷ objects_written) less
    MC_ITEM_OVERHEAD each (a rescue taken as a mean item)."""
    if "extstore_device_bytes_written" in n:
        return num(n, "extstore_device_bytes_written"), num(n, "extstore_value_bytes_moved")
    written, objs = num(s, "extstore_bytes_written"), num(s, "extstore_objects_written")
    if written is None or not objs:
        return written, None
    moved = objs - (num(s, "extstore_compact_rescues") or 0)
    return written, moved * max(0.0, written / objs - MC_ITEM_OVERHEAD)


def one_run(args, label, binary, profile, flash_mb, workdir):
    name, vmin, vmax = profile
    mean = (vmin + vmax) / 2
    keys = key_space(args.memory, vmin, vmax)
    flash_file = os.path.join(args.dir, f"flash.{label}.{name}")
    if os.path.exists(flash_file):
        os.unlink(flash_file)
    port = free_port()
    log = open(os.path.join(workdir, f"{label}.{name}.log"), "w")
    extra = args.nodelay_args.split() if label == "B" else []
    row = {"server": label, "binary": binary, "args": extra, "values": name, "vmin": vmin, "vmax": vmax,
           "keys": keys, "memory_mb": args.memory, "flash_mb": flash_mb,
           "ram_limit_mb": args.memory + args.allowance}
    if args.unbounded:
        group, why = None, "--unbounded"
    else:
        group, why = MemCgroup.make(f"nodelay-flash-{os.getpid()}-{label}-{name}",
                                    row["ram_limit_mb"] << 20)
    row["ram_bound"] = group.describe() if group else None
    if not group:
        row["ram_limit_mb"] = None
        row["ram_note"] = f"page cache not bounded ({why}): memcached's buffered reads may come from RAM"
    try:
        p = start(binary, port, args.memory, flash_file, flash_mb, log, extra, group)
    except BaseException:
        log.close()
        if group:
            group.remove()
        raise
    try:
        t0 = time.monotonic()
        fill(args, port, keys, vmin, vmax, args.fill_mb_s, args.fill_timeout)
        row["fill_s"] = round(time.monotonic() - t0, 2)
        time.sleep(1)  # memcached's write buffers go to flash in the background
        s0 = stats(port)
        n0 = stats(port, "nodelay") if label == "B" else {}
        w = window(args, p, port, keys, vmin, vmax, args.duration, 7,
                   os.path.join(workdir, f"{label}.{name}.json"), os.path.join(workdir, f"{label}.{name}.perf"))
        res, wb1 = w["res"], proc_write_bytes(p.pid)
        row["loadavg"] = os.getloadavg()
        row["block_reads"], row["read_bytes"] = w["block_reads"], w["read_bytes"]
        if group:
            row["cgroup"] = group.usage()
        time.sleep(1)
        s1 = stats(port)
        n1 = stats(port, "nodelay") if label == "B" else {}
        rss = proc_rss(p.pid)
    except (OSError, subprocess.SubprocessError) as e:
        # cgroup v1 cannot throttle a group's dirty pages: buffered writes
        # can fill it with pages under writeback, which reclaim cannot
        # free, and the kernel's OOM killer ends the server
        if group and group.oom_kills():
            raise RuntimeError(f"the memory cgroup's OOM killer ended the server at "
                               f"{row['ram_limit_mb']} MB ({group.describe()})") from e
        raise
    finally:
        stop(p)
        log.close()
        if group:
            row["oom_kills"] = group.oom_kills()
            if not group.remove():
                print(f"flash.py: could not remove {group.path}", file=sys.stderr)
        if os.path.exists(flash_file):
            os.unlink(flash_file)
    reqs = res.get("requests") or 0
    gets = (res.get("hits") or 0) + (res.get("misses") or 0)
    stored = (keys + (res.get("sets") or 0)) * mean
    row.update({
        "requests": reqs, "ops_per_s": res.get("ops_per_s"),
        "hit_ratio": (res.get("hits") or 0) / gets if gets else None,
        "cpu_us": w["cpu_s"] * 1e6 / reqs if reqs else None,
        "p99_us": res.get("lat_us", {}).get("p99"), "p999_us": res.get("lat_us", {}).get("p999"),
        "verify_failures": res.get("verify_failures"), "errors": res.get("errors"),
        "value_bytes_stored": stored, "rss": rss,
        "limit_maxbytes": num(s1, "limit_maxbytes"),
        "evictions": num(s1, "evictions"),
        # items lost before the load began: a fill faster than the device
        "fill_evictions": num(s0, "evictions"),
        "fill_skipped_full": num(n0, "extstore_skipped_full"),
        "block_reads_per_req": row["block_reads"] / reqs if reqs and row["block_reads"] is not None else None,
        "read_bytes_per_req": row["read_bytes"] / reqs if reqs and row["read_bytes"] is not None else None,
    })
    # The server's own flash counters, where it has them.
    if "extstore_bytes_written" in s1:
        written = num(s1, "extstore_bytes_written")
        used = num(s1, "extstore_objects_used")
        row["flash_bytes_written"] = written
        row["flash_items"] = used
        row["flash_written_per_stored"] = written / stored if stored else None
        dev, moved = value_moved(s1, n1)
        row["device_bytes_written"], row["value_bytes_moved"] = dev, moved
        row["write_amp"] = dev / moved if dev is not None and moved else None
        row["ram_per_flash_item"] = ((rss - row["limit_maxbytes"]) / used
                                     if used and rss and row["limit_maxbytes"] else None)
        hb = num(s1, "hash_bytes")
        row["hash_bytes"] = hb
        row["hash_per_flash_item"] = hb / used if used and hb is not None else None
    else:
        row["flash_bytes_written"] = row["flash_items"] = None
        row["write_amp"] = row["ram_per_flash_item"] = row["hash_per_flash_item"] = None
        row["flash_written_per_stored"] = row["value_bytes_moved"] = None
        row["flash_note"] = "not yet: no extstore_* counters (flash tier not wired in)"
    # nodelay's flash device reads over the load, by path (its own ring or
    # the read threads)
    for k in ("extstore_ring_reads", "extstore_pool_reads"):
        if k in n0 and k in n1:
            row[k] = num(n1, k) - num(n0, k)
    # device reads per item served from flash over the load (a longer item
    # than the first read takes a second read)
    if "get_extstore" in s0 and "get_extstore" in s1 and "extstore_ring_reads" in row:
        hits = num(s1, "get_extstore") - num(s0, "get_extstore")
        reads = row["extstore_ring_reads"] + row.get("extstore_pool_reads", 0)
        row["reads_per_flash_hit"] = reads / hits if hits else None
    # The kernel's count of what the process sent to storage over the whole
    # run (fill and load): the host bytes, whatever the server says.
    wb_end = wb1
    row["host_write_bytes"] = wb_end
    moved = row.get("value_bytes_moved")
    row["host_write_amp"] = wb_end / moved if (wb_end is not None and moved) else None
    row["host_written_per_stored"] = wb_end / stored if (wb_end is not None and stored) else None
    return row


def fmt(x, digits=2, unit=""):
    if x is None:
        return "not yet"
    if isinstance(x, float) and abs(x) >= 1000:
        return f"{x:,.0f}{unit}"
    return f"{x:.{digits}f}{unit}"


def version(binary):
    try:
        return subprocess.run([binary, "-V"], capture_output=True, text=True,
                              timeout=10).stdout.strip().split("\n")[0] or os.path.basename(binary)
    except (OSError, subprocess.SubprocessError):
        return os.path.basename(binary)


def mem_cell(r):
    cg = r.get("cgroup") or {}
    if cg.get("peak") is None:
        return "-"
    cache = "" if cg.get("cache") is None else f" ({cg['cache'] / 2**20:.0f})"
    return f"{cg['peak'] / 2**20:.0f}{cache}"


def ram_line(rows):
    """How the run bounded each server's RAM, or that it did not."""
    notes = sorted({r["ram_note"] for r in rows if r.get("ram_note")})
    if notes:
        return "RAM: " + "; ".join(notes) + "."
    r = rows[0]
    return (f"RAM: each server in a memory cgroup of its own limited to {r['ram_limit_mb']} MB "
            f"(-m {r['memory_mb']} + {r['ram_limit_mb'] - r['memory_mb']} MB for what a server keeps "
            f"outside -m: hash table or index, connections, write buffers), RSS and page cache "
            f"together ({r['ram_bound']}), so neither serves its flash from RAM the other lacks: "
            f"memcached reads its file through the page cache, nodelay with O_DIRECT. Device reads "
            f"/ req: block read requests the server's threads issued over the load (perf stat -e "
            f"block:block_rq_issue, reads) ÷ requests; KiB read / req: /proc/PID/io read_bytes over "
            f"the load ÷ requests; peak: the group's peak charge (RSS + page cache), and in brackets "
            f"its page cache as the load ended.")


def table(rows, fs, names):
    who = ", ".join(f"{k} = {v}" for k, v in names.items())
    out = [f"Flash tier (bench/flash.py): {who}; -m {rows[0]['memory_mb']}, a "
           f"{rows[0]['flash_mb']} MB flash file per server (-o ext_path) in {fs}; key space "
           f"10× RAM filled first, then Zipf 0.99, 90 % gets, -t 1, bench/loadgen. \"not yet\": "
           f"the server gives no such figure. RAM per flash item is (RSS − -m) ÷ flash items: "
           f"it includes fixed costs (write buffers, hash table), so it means something only "
           f"with millions of items on flash (make bench-flash-ram: 10.5 M), not in a short run; "
           f"in brackets the hash table's share (hash_bytes ÷ flash items): nodelay's is "
           f"presized for the flash file full of ext_item_size items, as it cannot grow "
           f"(docs/store-flash.md), so with few large items it is mostly empty room.", "",
           "Write amp: bytes written to the flash file ÷ value bytes moved there from RAM "
           "(compaction's rewrites count on top), fill and load, from each server's counters: "
           "nodelay's extstore_device_bytes_written ÷ extstore_value_bytes_moved (stats "
           "nodelay); memcached's extstore_bytes_written (items, whole; the zeroed tail of each "
           "write buffer not counted) ÷ the value bytes of (extstore_objects_written − "
           "extstore_compact_rescues) mean items, each less its 73 bytes of header, CAS and "
           "key. Host writes: the kernel's /proc/PID/io write_bytes over the same value bytes. "
           "Flash B written ÷ B stored: extstore_bytes_written ÷ the value bytes the clients "
           "set; it falls as a server moves fewer items to flash, so it is no write "
           "amplification.", "",
           ram_line(rows), "",
           "| values | server | keys | hit ratio | CPU µs/req | p99 µs | p99.9 µs | "
           "device reads / req | KiB read / req | peak MB (of it page cache at end) | "
           "write amp: device B ÷ value B moved | host writes ÷ value B moved | "
           "flash B written ÷ B stored | RAM B / flash item |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['values']} | {r['server']} | {r['keys']:,} | "
                   f"{fmt(None if r['hit_ratio'] is None else r['hit_ratio'] * 100)} % | "
                   f"{fmt(r['cpu_us'])} | {fmt(r['p99_us'], 0)} | {fmt(r['p999_us'], 0)} | "
                   f"{fmt(r.get('block_reads_per_req'))} | "
                   f"{fmt(None if r.get('read_bytes_per_req') is None else r['read_bytes_per_req'] / 1024)} | "
                   f"{mem_cell(r)} | "
                   f"{fmt(r['write_amp'])} | {fmt(r['host_write_amp'])} | "
                   f"{fmt(r.get('flash_written_per_stored'))} | "
                   f"{fmt(r['ram_per_flash_item'], 1)}"
                   f"{'' if r.get('hash_per_flash_item') is None else ' (' + fmt(r['hash_per_flash_item'], 1) + ')'} |")
    notes = sorted({r["flash_note"] for r in rows if r.get("flash_note")})
    if notes:
        out += ["", "nodelay: " + "; ".join(notes) + ". Its hit ratio is that of RAM alone."]
    return "\n".join(out) + "\n"


def filesystem(path):
    try:
        t = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True,
                           timeout=10).stdout.strip()
        df = subprocess.run(["df", "-T", path], capture_output=True, text=True,
                            timeout=10).stdout.splitlines()[-1].split()
        return f"{df[1]} ({t}) on {df[0]}"
    except (OSError, IndexError, subprocess.SubprocessError):
        return "an unknown filesystem"


def find_memcached(given):
    ref = os.path.join(os.environ.get("NODELAY_REF_DIR") or os.path.join(ROOT, "..", "shared", "ref"),
                       "memcached-1.6.45")
    for c in (given, ref, "/usr/bin/memcached"):
        if c and os.access(c, os.X_OK):
            if "1.6.45" not in c:
                print(f"{os.path.basename(sys.argv[0])}: {ref} absent: comparing with {c}", file=sys.stderr)
            return c
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory", type=int, default=256)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "tmp", "flash"))
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench", "flash"))
    ap.add_argument("--nodelay", default=os.path.join(ROOT, "build", "release-epoll", "nodelay"))
    ap.add_argument("--memcached", default=os.environ.get("MEMCACHED") or None)
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build", "bench", "loadgen"))
    ap.add_argument("--fill-timeout", type=float, default=600)
    ap.add_argument("--fill-mb-s", type=float, default=0,
                    help="value MB a second during the fill (default: as fast as the server takes them)")
    ap.add_argument("--nodelay-args", default="")
    ap.add_argument("--no-memcached", action="store_true")
    ap.add_argument("--allowance", type=int, default=None,
                    help="MB each server may hold beyond -m, page cache included "
                         "(default 64 + -m / 2)")
    ap.add_argument("--unbounded", action="store_true",
                    help="no memory cgroup: the page cache as the machine lends it")
    args = ap.parse_args()
    if args.short:
        args.memory, args.duration = 32, 2
    if args.allowance is None:
        args.allowance = default_allowance(args.memory)
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.dir, exist_ok=True)
    mc = None if args.no_memcached else find_memcached(args.memcached)
    servers = [("A", mc), ("B", args.nodelay)]
    if not mc:
        if not args.no_memcached:
            print("flash.py: no memcached found: nodelay only", file=sys.stderr)
        servers = servers[1:]
    flash_mb = flash_size_mb(args.memory)
    fs = filesystem(args.dir)
    ram = ("not bounded (--unbounded)" if args.unbounded else
           f"-m {args.memory} + {args.allowance} MB, RSS and page cache (a memory cgroup each, "
           f"where one can be made)")
    print(f"flash.py: flash files in {args.dir}: {fs}; RAM per server: {ram}")
    rows, failed = [], []
    for profile in PROFILES:
        for label, binary in servers:
            try:
                r = one_run(args, label, binary, profile, flash_mb, args.out)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                print(f"flash.py: {label} {profile[0]} failed: {e}", file=sys.stderr)
                failed.append(f"{label} {profile[0]}: {e}")
                continue
            r["filesystem"] = fs
            rows.append(r)
            print(f"  {label} {profile[0]}: hit {fmt(r['hit_ratio'] and r['hit_ratio'] * 100)} %, "
                  f"cpu {fmt(r['cpu_us'])} µs/req, p99.9 {fmt(r['p999_us'], 0)} µs, "
                  f"reads/flash hit {fmt(r.get('reads_per_flash_hit'))}, "
                  f"device reads/req {fmt(r.get('block_reads_per_req'), 3)}, "
                  f"KiB read/req {fmt(r['read_bytes_per_req'] and r['read_bytes_per_req'] / 1024)}, "
                  f"RAM peak MB (cache) {mem_cell(r)} of {r['ram_limit_mb'] or 'unbounded'}, "
                  f"flash WA {fmt(r['write_amp'])}, fill evictions {fmt(r['fill_evictions'], 0)}, "
                  f"RAM/flash item {fmt(r['ram_per_flash_item'], 1)} "
                  f"(hash table {fmt(r.get('hash_per_flash_item'), 1)})")
    with open(os.path.join(args.out, "flash.json"), "w") as f:
        json.dump({"filesystem": fs, "memory_mb": args.memory, "duration_s": args.duration,
                   "allowance_mb": args.allowance, "loadavg": os.getloadavg(), "failed": failed,
                   "servers": {k: version(b) for k, b in servers}, "rows": rows}, f, indent=1)
    if rows:
        with open(os.path.join(args.out, "flash.md"), "w") as f:
            f.write(table(rows, fs, {k: version(b) for k, b in servers}))
            if failed:
                f.write("\nRuns that failed (not in the table): " + "; ".join(failed) + ".\n")
        print(f"flash.py: wrote {args.out}/flash.md")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
