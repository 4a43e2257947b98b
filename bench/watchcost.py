#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What `watch` costs the cache's other clients.

A fresh server per variant; --conns load processes each send batches of 300
pipelined commands (100 x set/get/delete of its own keys) and read the
replies, for --seconds; meanwhile W watchers ask for every stream
(`watch fetchers mutations evictions connevents deletions`) and read what
they get (or never read, --noread). Printed per variant: batches done, the
server's CPU per batch (utime+stime from /proc), its peak RSS (VmHWM) and
RSS at the end, and the stream bytes the watchers read.

  bench/watchcost.py --bin build/nodelay --watchers 0,1,20 --seconds 5
  bench/watchcost.py --bin ../shared/ref/memcached-1.6.45 --watchers 0,20

Loopback only; every loop is bounded by --seconds."""
import argparse
import json
import multiprocessing as mp
import os
import selectors
import socket
import time

from benchproc import ROOT, cpu_seconds, start_server, stop_server

WATCH = b"watch fetchers mutations evictions connevents deletions\r\n"


def batch(conn_id):
    req, rep = [], []
    for i in range(100):
        k = b"wc%d_%d" % (conn_id, i)
        req.append(b"set %s 0 0 10\r\n0123456789\r\nget %s\r\ndelete %s\r\n" % (k, k, k))
        rep.append(b"STORED\r\nVALUE %s 0 10\r\n0123456789\r\nEND\r\nDELETED\r\n" % k)
    return b"".join(req), len(b"".join(rep))


def loader(port, conn_id, deadline, out):
    req, want = batch(conn_id)
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(30)
    done = 0
    while time.monotonic() < deadline:
        s.sendall(req)
        got = 0
        while got < want:
            b = s.recv(1 << 16)
            if not b:
                raise SystemExit("server closed a load connection")
            got += len(b)
        done += 1
    s.close()
    out.put(done)


def watchers(port, n, read, stop, ready, out):
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(WATCH)
        ok = b""
        while not ok.endswith(b"\r\n"):
            ok += s.recv(1)
        if ok != b"OK\r\n":
            raise SystemExit(f"watch refused: {ok!r}")
        s.setblocking(False)
        socks.append(s)
        if read:
            sel.register(s, selectors.EVENT_READ)
    ready.set()
    total = 0
    limit = time.monotonic() + 600
    while not stop.is_set() and time.monotonic() < limit:
        if not read:
            time.sleep(0.05)
            continue
        for key, _ in sel.select(0.05):
            try:
                total += len(key.fileobj.recv(1 << 18))
            except BlockingIOError:
                pass
    for s in socks:
        s.close()
    out.put(total)


def rss_kib(pid, field):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def run(binary, nwatch, read, conns, seconds):
    p, port = start_server(binary, "-t", "4")
    try:
        out, wout, ready, stop = mp.Queue(), mp.Queue(), mp.Event(), mp.Event()
        wp = None
        if nwatch:
            wp = mp.Process(target=watchers,
                            args=(port, nwatch, read, stop, ready, wout))
            wp.start()
            if not ready.wait(20):
                raise SystemExit("watchers did not start")
        c0 = cpu_seconds(p.pid)
        r0 = cpu_seconds(wp.pid) if wp else 0
        deadline = time.monotonic() + seconds
        procs = [mp.Process(target=loader, args=(port, i, deadline, out)) for i in range(conns)]
        for lp in procs:
            lp.start()
        peak = 0
        while any(lp.is_alive() for lp in procs):
            peak = max(peak, rss_kib(p.pid, "VmRSS"))
            time.sleep(0.1)
        for lp in procs:
            lp.join()
        c1 = cpu_seconds(p.pid)
        r1 = cpu_seconds(wp.pid) if wp else 0
        batches = sum(out.get(timeout=5) for _ in procs)
        rss_end = rss_kib(p.pid, "VmRSS")
        hwm = rss_kib(p.pid, "VmHWM")
        wbytes = None
        if wp:
            stop.set()
            wbytes = wout.get(timeout=20)
            wp.join()
        return {"watchers": nwatch, "read": read, "batches": batches,
                "cpu_us_per_batch": round(1e6 * (c1 - c0) / max(batches, 1), 1),
                "rss_peak_mib": round(max(peak, hwm) / 1024, 1),
                "rss_end_mib": round(rss_end / 1024, 1), "watch_bytes": wbytes,
                "server_cpu_s": round(c1 - c0, 2), "watcher_cpu_s": round(r1 - r0, 2)}
    finally:
        stop_server(p)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/nodelay"))
    ap.add_argument("--watchers", default="0,1,20")
    ap.add_argument("--noread", action="store_true", help="watchers never read")
    ap.add_argument("--conns", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [run(a.bin, int(w), not a.noread, a.conns, a.seconds) for w in a.watchers.split(",")]
    base = rows[0]["batches"] if rows and rows[0]["watchers"] == 0 else None
    for r in rows:
        if base:
            r["ratio"] = round(r["batches"] / base, 2)
        print(json.dumps(r) if a.json else
              f"watchers={r['watchers']:<3} read={int(r['read'])} batches={r['batches']:<7} "
              f"cpu/batch={r['cpu_us_per_batch']:>7} us  rss_peak={r['rss_peak_mib']:>7} MiB  "
              f"rss_end={r['rss_end_mib']:>7} MiB  watch_bytes={r['watch_bytes']} "
              f"cpu_s server={r['server_cpu_s']} watchers={r['watcher_cpu_s']}" + (f"  ratio={r['ratio']}" if base else ""))


if __name__ == "__main__":
    main()
