#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Server CPU per sequential `set` of one value size, for each binary given.

    bench/set_cpu.py BINARY... [--sizes 1000000:1000,100000:6000,20000:10000]

Each binary is started fresh (-m 256, loopback, a free port); one client
sends `set` after `set` of the size (keys repeat over 100), waits for each
reply, and the server's user+system CPU (from /proc/PID/stat) over the run
is divided by the count. CPU rather than wall time, so a loaded machine
skews it less. Used for docs/store.md "Uploads" (the cost of staging values
that span reads)."""
import argparse
import socket
import time

from benchproc import cpu_seconds, start_server, stop_server


def run(binary, size, n):
    proc, port = start_server(binary)
    try:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        replies = sock.makefile("rb")
        value = b"v" * size
        c0 = cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        for i in range(n):
            sock.sendall(b"set k%d 0 0 %d\r\n" % (i % 100, size) + value + b"\r\n")
            if replies.readline() != b"STORED\r\n":
                raise SystemExit(f"{binary}: set of {size} bytes not stored")
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(proc.pid) - c0
        sock.close()
        return cpu / n * 1e6, wall / n * 1e6
    finally:
        stop_server(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--sizes", default="1000000:1000,100000:6000,20000:10000")
    a = ap.parse_args()
    for spec in a.sizes.split(","):
        size, n = (int(x) for x in spec.split(":"))
        for b in a.binaries:
            cpu, wall = run(b, size, n)
            print(f"{size:>8} B  {b}: server cpu {cpu:.1f} us/set, wall {wall:.1f} us/set")


if __name__ == "__main__":
    main()
