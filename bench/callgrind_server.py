#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The server's own instructions per request, counted by callgrind.

  bench/callgrind_server.py [--bin build/release-epoll/nodelay]
      [--load '-c 50 -d 16 -g 0.9 -v 100 -k 100000'] [--requests 200000]
      [--server-args '-o io_uring=off'] [--out FILE] [--stop-timeout 10]

Starts the server under `valgrind --tool=callgrind` (-t 1 -m 256, loopback),
prefills 100,000 keys of 100 B, zeroes the counts (`callgrind_control -z`),
runs the load generator for --requests, then dumps the counts
(`callgrind_control -d`) and prints the instructions per request; --out
keeps the dump for callgrind_annotate. Only then is the server stopped:
SIGTERM, and SIGKILL after --stop-timeout seconds, which is expected on
io_uring (below), so the counts never depend on the server exiting.

Why the server on io_uring does not exit under valgrind: valgrind runs one
guest thread at a time, under one lock, and releases the lock only around
the syscalls it knows may block. Valgrind 3.19 runs io_uring_enter as a
non-blocking one (its `--trace-syscalls=yes` prints `[sync]` for it), so a
worker asleep in io_uring_enter (up to its 1 s idle wait) keeps the lock,
and an idle worker loops back into it without ever giving the lock up.
The SIGTERM is taken by the main thread's sigwait in the kernel, but the
main thread never gets the lock back to return from it, so the stop never
starts. On epoll (epoll_wait is a blocking syscall to valgrind) and
natively the server stops in well under a second. Loopback only; bounded
by --requests and the timeouts."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchproc import ROOT, free_port, server_argv, stop_server, wait_for_port

PREFILL = "-c 10 -d 16 -k 100000 -v 100"  # profile.py's default prefill


def callgrind_control(flag, pid):
    subprocess.run(["callgrind_control", flag, str(pid)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)


def dumped_instructions(prefix):
    """The Ir total of the last dump callgrind wrote for prefix."""
    dumps = sorted(glob.glob(prefix + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    if not dumps:
        raise SystemExit("callgrind wrote no dump")
    for line in open(dumps[-1]):
        if line.startswith("totals:"):
            return int(line.split()[1]), dumps[-1]
    raise SystemExit(f"no totals in {dumps[-1]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release-epoll/nodelay"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build/bench/loadgen"))
    ap.add_argument("--load", default="-c 50 -d 16 -g 0.9 -v 100 -k 100000",
                    help="loadgen's arguments (default: get90_p16)")
    ap.add_argument("--requests", type=int, default=200000)
    ap.add_argument("--server-args", default="", help="more server flags, e.g. '-o io_uring=off'")
    ap.add_argument("--out", help="keep the callgrind dump of the load here")
    ap.add_argument("--stop-timeout", type=float, default=10,
                    help="seconds after SIGTERM before SIGKILL")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "callgrind.out")
        port = free_port()
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={prefix}"] + server_argv(
            a.bin, port, "-t", "1", *a.server_args.split())
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for_port(port, proc, timeout=120)
            lg = [a.loadgen, "-s", f"127.0.0.1:{port}", "-q"]
            subprocess.run(lg + ["--prefill"] + PREFILL.split(), check=True, timeout=1800)
            callgrind_control("-z", proc.pid)
            run = lg + a.load.split() + ["-n", str(a.requests), "--seed", "1", "--json", "-"]
            out = subprocess.run(run, capture_output=True, text=True, check=True,
                                 timeout=3600).stdout
            requests = json.loads(out)["requests"]
            callgrind_control("-d", proc.pid)
            ir, dump = dumped_instructions(prefix)
            print(f"{ir} instructions for {requests} requests: "
                  f"{ir / max(1, requests):.0f} a request")
            if a.out:
                shutil.copyfile(dump, a.out)
                print(f"dump: {a.out}")
        finally:
            exited = stop_server(proc, timeout=a.stop_timeout)
            print("server: " + ("exited on SIGTERM" if exited else
                                f"killed after {a.stop_timeout:g} s (expected on io_uring under "
                                "valgrind: see this script's header)"), file=sys.stderr)


if __name__ == "__main__":
    main()
