# SPDX-License-Identifier: BSD-3-Clause
"""How long the server and the load generators waited for a CPU: what
tells the host's stalls from the server's."""
import collections
import os
import threading
import time

class RunQueue:
    """How long the server's and the load generators' threads waited for a
    CPU while runnable: the second field of /proc/PID/task/TID/schedstat
    (ns), sampled every 50 ms, and the VM's steal time from /proc/stat. A
    thread that waited on the run queue was held up by the host (other
    processes took the CPUs), and steal is the hypervisor taking them from
    the whole machine: neither is the server's doing."""

    STEP = 0.05

    def __init__(self, pids, stop):
        self.pids, self.stop = pids, stop  # name -> pid
        self.samples = []  # (wall time, {name: worst thread's wait in the step, ms})
        self.thread = threading.Thread(target=self.run, daemon=True)

    def read(self):
        waits = {}
        for name, pid in self.pids.items():
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        waits[(name, tid)] = int(f.read().split()[1])
            except (OSError, ValueError, IndexError):
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
        return waits

    def run(self):
        prev = self.read()
        while not self.stop.is_set():
            time.sleep(self.STEP)
            cur = self.read()
            worst = {}
            for k, v in cur.items():
                if k in prev:
                    worst[k[0]] = max(worst.get(k[0], 0), (v - prev[k]) / 1e6)
            self.samples.append((time.time(), worst))
            prev = cur

    def waited_ms(self, t0, t1, who=None):
        """The longest any of them (or who) waited for a CPU in [t0, t1]:
        per process, summed over the steps that overlap it, per step its
        worst thread."""
        per = collections.Counter()
        for t, worst in self.samples:
            if t0 <= t and t - self.STEP <= t1:
                for name, w in worst.items():
                    if who is None or name == who:
                        per[name] += w
        return max(per.values() or [0])

    def total_ms(self, who):
        return sum(w.get(who, 0) for _, w in self.samples)
