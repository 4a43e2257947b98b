#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Whether slow or idle clients can hold /metrics (-o metrics_listen) away
from an honest scraper.

  slow   N connections that each send a request line, then one header byte
         every --trickle seconds (never the blank line ending the headers),
         opened before the scrapes and held during them (re-opened when the
         server closes one, as an attacker would)
  idle   N connections opened at once that send nothing; an honest client
         tries to scrape right after them, again every 50 ms until one
         succeeds (at most --seconds)

While they stay, an honest client scrapes /metrics --scrapes times (a new
connection each, timeout --timeout s) and the script prints how many
succeeded and their latencies (min / median / max); for `idle`, the time
to the first good scrape.

  bench/metrics_hold.py --bin build/nodelay slow --conns 16 --scrapes 50 --seconds 25
  bench/metrics_hold.py --bin build/nodelay idle --conns 1000

Loopback only; every loop is bounded by --seconds or --scrapes."""
import argparse
import os
import socket
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchproc import free_port, start_server, stop_server, wait_for_port  # noqa: E402


def scrape(port, timeout):
    """Seconds one GET /metrics took, or None when it failed."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
            r.read()
            if r.status != 200:
                return None
    except OSError:
        return None
    return time.monotonic() - t0


def slow_client(port, stop, trickle, opened):
    """One connection trickling a header byte every `trickle` s; re-opened
    when the server closes it, until stop."""
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            stop.wait(0.1)
            continue
        opened[0] += 1
        try:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            while not stop.wait(trickle):
                s.sendall(b"X")
        except OSError:
            pass
        finally:
            s.close()


def summary(times):
    ok = [t for t in times if t is not None]
    if not ok:
        return f"0 of {len(times)} succeeded"
    return (f"{len(ok)} of {len(times)} succeeded; seconds min {min(ok):.3f} "
            f"median {statistics.median(ok):.3f} max {max(ok):.3f}")


def run_slow(port, a):
    stop = threading.Event()
    opened = [0]
    threads = [threading.Thread(target=slow_client, args=(port, stop, a.trickle, opened))
               for _ in range(a.conns)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # let them all connect and send their request lines
    times = []
    deadline = time.monotonic() + a.seconds
    try:
        while len(times) < a.scrapes and time.monotonic() < deadline:
            t0 = time.monotonic()
            times.append(scrape(port, a.timeout))
            time.sleep(max(0.0, a.seconds / a.scrapes - (time.monotonic() - t0)))
    finally:
        stop.set()
        for t in threads:
            t.join()
    print(f"slow x{a.conns} (a header byte every {a.trickle} s; {opened[0]} connections "
          f"opened in all): {summary(times)}")


def run_idle(port, a):
    socks = []
    try:
        for _ in range(a.conns):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        t0 = time.monotonic()
        first = None
        times = []
        while time.monotonic() - t0 < a.seconds:
            took = scrape(port, a.timeout)
            times.append(took)
            if took is not None:
                first = time.monotonic() - t0
                break
            time.sleep(0.05)
        print(f"idle x{a.conns}: first good scrape after "
              f"{'never' if first is None else f'{first:.3f} s'} "
              f"({len(times)} tries): {summary(times)}")
    finally:
        for s in socks:
            s.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True)
    p.add_argument("mode", choices=["slow", "idle"])
    p.add_argument("--conns", type=int, default=16)
    p.add_argument("--scrapes", type=int, default=50)
    p.add_argument("--seconds", type=float, default=25.0)
    p.add_argument("--trickle", type=float, default=5.0)
    p.add_argument("--timeout", type=float, default=5.0)
    a = p.parse_args()
    mport = free_port()
    proc, _ = start_server(a.bin, "-o", f"metrics_listen={mport}", "-c", "4096")
    try:
        wait_for_port(mport, proc)
        (run_slow if a.mode == "slow" else run_idle)(mport, a)
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
