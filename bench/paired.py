# SPDX-License-Identifier: BSD-3-Clause
"""Two flash servers filled once, then taking turns under bench/flash.py's
load: the paired comparison of bench/flash_ab.py (two nodelay builds) and
bench/flash_pair.py (memcached beside nodelay).

Each server is started as flash.py starts it (-t 1, -m MB, a flash file of
flash.flash_size_mb), optionally in a memory cgroup of its own limited to
-m plus an allowance (flash.py's, memcg.py), and filled once with
flash.py's fill (a key space ten times -m). Then round r drives each in
turn for a window of flash.py's load (Zipf 0.99, 90 % gets, seed 7 + r,
so both get the same requests), A first in even rounds and B first in odd
ones: a drift over the session (hit ratios climbing after the fill, other
work on the machine) falls on both sides of each ratio alike. A fresh
server and fill per run (flash.py) puts that drift and the fill's own
luck between the two figures instead."""
import os
import signal
import statistics
import sys
import tempfile
import time

import flash
from benchproc import free_port
from memcg import MemCgroup


def stop_on_sigterm():
    """SIGTERM unwinds like Ctrl-C, so the servers, their flash files and
    cgroups go with it."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, handler)


class Pair:
    """The servers of one value profile, started and filled on entry,
    stopped on exit (error and Ctrl-C included) with their flash files and
    cgroups removed. servers: (label, binary, extra flags) pairs."""

    def __init__(self, args, servers, vmin, vmax, allowance=None):
        self.args, self.specs, self.vmin, self.vmax = args, servers, vmin, vmax
        self.allowance = allowance  # None: no cgroup
        self.keys = flash.key_space(args.memory, vmin, vmax)
        self.live = []  # dicts: label, p, port, path, log, group
        self.tmp = None

    def __enter__(self):
        self.tmp = tempfile.mkdtemp(prefix="paired.")
        try:
            for label, binary, extra in self.specs:
                self._start(label, binary, extra)
            for s in self.live:
                flash.fill(self.args, s["port"], self.keys, self.vmin, self.vmax,
                           getattr(self.args, "fill_mb_s", 0), timeout=600)
                # items the fill lost (faster than the device): they lower the hit ratio
                s["fill_evictions"] = flash.stats(s["port"]).get("evictions")
            time.sleep(1)  # memcached's write buffers go to flash in the background
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, label, binary, extra):
        a = self.args
        s = {"label": label, "port": free_port(), "group": None, "p": None,
             "path": os.path.join(a.dir, f"paired.{os.getpid()}.{label}"),
             "log": open(os.path.join(self.tmp, f"{label}.log"), "w")}
        self.live.append(s)
        if self.allowance is not None:
            s["group"], why = MemCgroup.make(f"nodelay-paired-{os.getpid()}-{label}",
                                             (a.memory + self.allowance) << 20)
            if not s["group"]:
                print(f"paired: {label}: no memory cgroup ({why}): page cache not bounded",
                      file=sys.stderr)
        s["p"] = flash.start(binary, s["port"], a.memory, s["path"], flash.flash_size_mb(a.memory),
                             s["log"], extra, s["group"])

    def __exit__(self, *exc):
        for s in self.live:
            if s["p"]:
                flash.stop(s["p"])
            s["log"].close()
            if s["group"] and s["group"].oom_kills():
                # cgroup v1 does not throttle a group's dirty pages (flash.py)
                print(f"paired: the memory cgroup's OOM killer ended {s['label']}", file=sys.stderr)
            if s["group"] and not s["group"].remove():
                print(f"paired: could not remove {s['group'].path}", file=sys.stderr)
            if os.path.exists(s["path"]):
                os.unlink(s["path"])
        self.live = []
        if self.tmp:
            for f in os.listdir(self.tmp):
                os.unlink(os.path.join(self.tmp, f))
            os.rmdir(self.tmp)
            self.tmp = None
        return False

    def measure(self, i, seed, seconds=None):
        """Server i's window: hit ratio, CPU µs/request, p99.9 µs, block
        reads/request and KiB read/request (None where not known)."""
        s = self.live[i]
        w = flash.window(self.args, s["p"], s["port"], self.keys, self.vmin, self.vmax,
                         seconds or self.args.seconds, seed, os.path.join(self.tmp, "load.json"),
                         os.path.join(self.tmp, "perf"))
        res = w["res"]
        reqs = max(1, res.get("requests") or 0)
        gets = (res.get("hits") or 0) + (res.get("misses") or 0)
        return {"hit": (res.get("hits") or 0) / gets if gets else None,
                "cpu": w["cpu_s"] * 1e6 / reqs, "p999": res["lat_us"]["p999"],
                "reads": None if w["block_reads"] is None else w["block_reads"] / reqs,
                "kib": None if w["read_bytes"] is None else w["read_bytes"] / reqs / 1024}

    def filled(self):
        """What the fill left: keys, and each server's evictions."""
        return f"{self.keys:,} keys filled, evictions " + ", ".join(
            f"{s['label']} {s.get('fill_evictions', '-')}" for s in self.live)

    def peaks(self):
        """Each cgroup's peak charge and page cache now, MB ("-" unbounded)."""
        out = []
        for s in self.live:
            u = s["group"].usage() if s["group"] else {}
            out.append("-" if u.get("peak") is None else
                       f"{u['peak'] / 2**20:.0f} ({(u.get('cache') or 0) / 2**20:.0f} cache)")
        return out

    def warm(self, seconds):
        """seconds of the load on each server, not counted: after the fill
        the hit ratios move for a while (evicted keys set again, flash
        pages filling), and a ratio taken then says more of the fill than
        of the load."""
        if seconds > 0:
            last = [self.measure(i, 6, seconds) for i in range(len(self.live))]
            print("warm-up, its last figures: " + "; ".join(
                f"{s['label']} {row(m)}" for s, m in zip(self.live, last)), flush=True)

    def rounds(self, n):
        """Per server, its n windows' figures; each round printed as it ends."""
        runs = [[] for _ in self.live]
        for r in range(n):
            order = range(len(self.live)) if r % 2 == 0 else reversed(range(len(self.live)))
            for i in order:
                runs[i].append(self.measure(i, 7 + r))
            (a, b) = (runs[0][-1], runs[1][-1])
            la, lb = self.live[0]["label"], self.live[1]["label"]
            print(f"round {r + 1}: {la} {row(a)}; {lb} {row(b)}; {lb}/{la} CPU "
                  f"{b['cpu'] / a['cpu']:.3f} p99.9 {b['p999'] / a['p999']:.3f}; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
        return runs


def pct(x):
    return "-" if x is None else f"{x * 100:.1f} %"


def row(m):
    reads = "-" if m["reads"] is None else f"{m['reads']:.3f}"
    kib = "-" if m["kib"] is None else f"{m['kib']:.2f}"
    return (f"hit {pct(m['hit'])} CPU {m['cpu']:.2f} µs p99.9 {m['p999']:,.0f} µs "
            f"reads/req {reads} KiB/req {kib}")


def spread(xs, digits=2):
    """median [min-max] of the known figures."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    f = f"{{:,.{digits}f}}"
    return f"{f.format(statistics.median(xs))} [{f.format(min(xs))}-{f.format(max(xs))}]"


def summary(labels, runs):
    """Each server's medians with their ranges, the median of the per-round
    ratios B/A, and beside it the noise floor: each server against itself,
    round r + 1 ÷ round r (neighbouring windows of one server, about as far
    apart as a round's two)."""
    (la, lb), (ra, rb) = labels, runs
    for label, rs in ((la, ra), (lb, rb)):
        print(f"{label}: hit % {spread([m['hit'] and m['hit'] * 100 for m in rs], 1)}, "
              f"CPU µs/req {spread([m['cpu'] for m in rs])}, "
              f"p99.9 µs {spread([m['p999'] for m in rs], 0)}, "
              f"reads/req {spread([m['reads'] for m in rs], 3)}, KiB/req {spread([m['kib'] for m in rs])}")
    out = {}
    for key, name in (("cpu", "CPU µs/req"), ("p999", "p99.9")):
        ratios = [b[key] / a[key] for a, b in zip(ra, rb)]
        floor = {label: [rs[i + 1][key] / rs[i][key] for i in range(len(rs) - 1)]
                 for label, rs in ((la, ra), (lb, rb))}
        print(f"{lb}/{la} {name} per round: {spread(ratios, 3)}; noise floor, round r+1 ÷ r: "
              + ", ".join(f"{label} {spread(f, 3)}" for label, f in floor.items()))
        out[key] = {"ratios": ratios, "floor": floor}
    return out
