# SPDX-License-Identifier: BSD-3-Clause
"""How long the server and the load generators waited for a CPU: what
tells the host's stalls from the server's."""
import collections
import mmap
import os
import threading
import time


def fault_cost_us(mib=32):
    """What a first touch of a fresh page costs here, us: a fault, the
    kernel zeroing it and, under a hypervisor that backs guest memory
    lazily, the host's own fault (several us here, over ten on a VM just
    restored, against ~0.3 us on bare metal)."""
    size = mib << 20
    m = mmap.mmap(-1, size)
    t = time.perf_counter()
    for off in range(0, size, mmap.PAGESIZE):
        m[off] = 1
    cost = (time.perf_counter() - t) / (size // mmap.PAGESIZE) * 1e6
    m.close()
    return cost

class RunQueue:
    """How long the server's and the load generators' threads waited for a
    CPU while runnable: the second field of /proc/PID/task/TID/schedstat
    (ns), sampled every 50 ms, and the VM's steal time from /proc/stat. A
    thread that waited on the run queue was held up by the host (other
    processes took the CPUs), and steal is the hypervisor taking them from
    the whole machine: neither is the server's doing. Per step it also keeps
    what the server did: its threads' time on a CPU and its page faults, so
    a stall says whether the server was busy, faulting pages in or
    blocked; the time its faults took, at what a first touch costs here
    (fault_cost_us), is the host's when the host backs memory lazily."""

    STEP = 0.05

    def __init__(self, pids, stop):
        self.pids, self.stop = dict(pids), stop  # name -> pid
        self.lock = threading.Lock()
        self.samples = []  # (wall time, {name: worst thread's wait in the step, ms})
        self.server = []  # (wall time, server's CPU ms, its page faults) per step
        self.fault_us = 0.0  # a first touch's cost here, us (start)
        self.thread = threading.Thread(target=self.run, daemon=True)

    def add(self, name, pid):
        """Samples pid too from the next step: the load generators start
        after the sampler, so their first moments are not missed."""
        with self.lock:
            self.pids[name] = pid

    def read(self):
        waits, ran = {}, {}
        with self.lock:
            pids = list(self.pids.items())
        for name, pid in pids:
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        on_cpu, waited = f.read().split()[:2]
                    waits[(name, tid)] = int(waited)
                    ran[(name, tid)] = int(on_cpu)
            except (OSError, ValueError):
                pass
        # CPU time the hypervisor gave to other guests ("steal", in clock
        # ticks, summed over the CPUs): a stall of the whole VM leaves no
        # run-queue wait in any thread, since nothing here ran at all.
        try:
            with open("/proc/stat") as f:
                ticks = int(f.readline().split()[8])
            waits[("steal", "all")] = ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
        return waits, ran, self.faults()

    def faults(self):
        """The server's minor and major page faults so far."""
        try:
            with open(f"/proc/{self.pids['server']}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[7]) + int(fields[9])
        except (OSError, ValueError, IndexError, KeyError):
            return 0

    @staticmethod
    def worst_waits(prev, cur):
        """{name: its worst thread's wait in the step, ms} from two reads;
        a thread born during the step waited all its life within it."""
        worst = {}
        for k, v in cur.items():
            worst[k[0]] = max(worst.get(k[0], 0), (v - prev.get(k, 0)) / 1e6)
        return worst

    def start(self):
        """Measures what a fault costs, before any load, then samples."""
        self.fault_us = fault_cost_us()
        self.thread.start()

    def run(self):
        prev, prev_ran, prev_faults = self.read()
        while not self.stop.is_set():
            time.sleep(self.STEP)
            cur, ran, faults = self.read()
            now = time.time()
            worst = self.worst_waits(prev, cur)
            cpu = sum(v - prev_ran.get(k, 0) for k, v in ran.items() if k[0] == "server") / 1e6
            self.samples.append((now, worst))
            self.server.append((now, cpu, faults - prev_faults))
            prev, prev_ran, prev_faults = cur, ran, faults

    def steps(self, t0, t1):
        """The steps that overlap [t0, t1]."""
        return [s for s in self.samples if t0 <= s[0] and s[0] - self.STEP <= t1]

    def waited_by(self, t0, t1):
        """Per process (and steal), the wait for a CPU in [t0, t1], ms:
        summed over the steps that overlap it, per step its worst thread."""
        per = collections.Counter()
        for _, worst in self.steps(t0, t1):
            for name, w in worst.items():
                per[name] += w
        return per

    def waited_ms(self, t0, t1, who=None):
        """The longest any of them (or who) waited for a CPU in [t0, t1]."""
        per = self.waited_by(t0, t1)
        if who is not None:
            return per.get(who, 0)
        return max(per.values() or [0])

    def held_ms(self, t0, t1):
        """How long the host held the server or a load generator in [t0, t1]:
        the longest wait for a CPU, the server's counting the time its page
        faults took at this machine's cost of one."""
        per = self.waited_by(t0, t1)
        per["server"] += self.server_did(t0, t1)[1] * self.fault_us / 1e3
        return max(per.values())

    def server_did(self, t0, t1):
        """(CPU ms, page faults) of the server in the steps overlapping [t0, t1]."""
        rows = [r for r in self.server if t0 <= r[0] and r[0] - self.STEP <= t1]
        return sum(r[1] for r in rows), sum(r[2] for r in rows)

    def total_ms(self, who):
        return sum(w.get(who, 0) for _, w in self.samples)
