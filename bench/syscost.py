#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What a request costs each server in system calls, by call, beside its
CPU split into user space and kernel: nodelay on epoll (ne) and io_uring
(nu), the floor servers (fe, fu: bench/floor) and memcached (mc).

  bench/syscost.py [--servers ne,nu,fe,fu,mc] [--workload get90_p1|get90_p16|mget16]
                   [--generator loadgen|memtier] [--seconds 2] [--rounds 1]
                   [--nodelay PATH] [--memcached PATH] [--memtier PATH]

Each server is started alone, pinned to CPU 1 (-t 1), prefilled, and run
under the workload on CPU 0 twice: once for its CPU per request (utime and
stime from /proc), once under `perf stat` on the syscall tracepoints for
its system calls per request, total and by call (those at 0.0005 a request
or more). Counts are what to compare on a shared machine: the number of
calls a request takes does not move with the load, the CPU does. Where two
servers make the same calls per request, the difference between them is
in user space, or in what the kernel does inside the same calls.
Loopback only; each run bounded by --seconds."""
import argparse
import json
import os
import subprocess
import tempfile
import time

from benchproc import ROOT, free_port, start_server, stop_server, wait_for_port

# memcached 1.6.45 and memtier_benchmark, where bench/compare.sh finds them
REF = os.environ.get("NODELAY_REF_DIR", os.path.join(ROOT, "..", "shared", "ref"))
WORKLOADS = {  # bench/compare.sh's arguments
    "get90_p1": "-c 50 -d 1 -g 0.9 -v 100 -k 100000",
    "get90_p16": "-c 50 -d 16 -g 0.9 -v 100 -k 100000",
    "mget16": "-c 50 -d 1 -g 1 -m 16 -v 100 -k 100000",
}
MT_WORKLOADS = {
    "get90_p1": "-c 50 --ratio=1:9 --pipeline=1",
    "get90_p16": "-c 50 --ratio=1:9 --pipeline=16",
    "mget16": "-c 50 --ratio=0:16 --multi-key-get=16",
}
MT_KEYS = "--key-minimum=1 --key-maximum=100000 -d 100"
CALLS = ["read", "write", "writev", "readv", "recvfrom", "sendto", "sendmsg", "recvmsg",
         "epoll_wait", "epoll_pwait", "epoll_ctl", "io_uring_enter", "setsockopt", "getsockopt",
         "ioctl", "futex", "clock_gettime", "poll", "accept4"]


def user_sys(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return int(f[11]) / tck, int(f[12]) / tck


def start(a, name):
    if name in ("ne", "nu"):
        extra = ["-t", "1", "-c", "4096"] + (["-o", "io_uring=off"] if name == "ne" else [])
        return start_server(a.nodelay, *extra, cpu=1)
    if name == "mc":
        return start_server(a.memcached, "-t", "1", "-c", "4096", cpu=1)
    port = free_port()
    p = subprocess.Popen(["taskset", "-c", "1", os.path.join(ROOT, "build/bench/floor"), "-b",
                          "epoll" if name == "fe" else "uring", "-p", str(port), "-t", "1",
                          "-v", "100"])
    wait_for_port(port, p)
    return p, port


def load(a, port, seconds, seed):
    """Requests completed in one run of the workload."""
    if a.generator == "memtier":
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "mt.json")
            subprocess.run(["taskset", "-c", "0", a.memtier, "-s", "127.0.0.1", "-p", str(port),
                            "-P", "memcache_text", "-t", "1", *MT_WORKLOADS[a.workload].split(),
                            *MT_KEYS.split(), "--distinct-client-seed",
                            f"--test-time={max(1, int(seconds))}", "--hide-histogram",
                            f"--json-out-file={out}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            tot = json.load(open(out))["ALL STATS"]["Totals"]
            return tot.get("Count") or tot["Ops/sec"] * max(1, int(seconds))
    out = subprocess.run(["taskset", "-c", "0", a.loadgen, "-s", f"127.0.0.1:{port}",
                          *WORKLOADS[a.workload].split(), "-D", str(seconds), "-q", "--seed",
                          str(seed), "--json", "-", "--no-verify"],  # every server alike
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["requests"]


def prefill(a, port, floor):
    subprocess.run(["taskset", "-c", "0", a.loadgen, "-s", f"127.0.0.1:{port}", "-q", "--prefill",
                    "-c", "10", "-d", "16", "-k", "100000", "-v", "100"] +
                   (["--no-verify"] if floor else []), check=True, stdout=subprocess.DEVNULL)
    if a.generator == "memtier" and not floor:
        subprocess.run(["taskset", "-c", "0", a.memtier, "-s", "127.0.0.1", "-p", str(port), "-P",
                        "memcache_text", "-t", "1", "-c", "10", "--ratio=1:0", "--key-pattern=P:P",
                        "-n", "allkeys", *MT_KEYS.split(), "--hide-histogram"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)


def measure(a, name, rnd):
    p, port = start(a, name)
    floor = name.startswith("f")
    try:
        prefill(a, port, floor)
        u0, s0 = user_sys(p.pid)
        n = load(a, port, a.seconds, rnd + 1)
        u1, s1 = user_sys(p.pid)
        events = ",".join(["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{c}" for c in CALLS])
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "perf.csv")
            pf = subprocess.Popen(["perf", "stat", "-x", ",", "-e", events, "-p", str(p.pid),
                                   "-o", out])
            time.sleep(0.3)
            n2 = load(a, port, a.seconds, rnd + 101)
            pf.send_signal(2)
            pf.wait()
            counts = {}
            for line in open(out):
                f = line.strip().split(",")
                if len(f) > 2 and f[0].isdigit():
                    counts[f[2].replace("syscalls:sys_enter_", "")] = int(f[0])
        total = counts.pop("raw_syscalls:sys_enter", 0)
        calls = " ".join(f"{k} {v / n2:.3f}" for k, v in sorted(counts.items()) if v / n2 >= 0.0005)
        print(f"{name}: CPU µs/request {1e6 * (u1 - u0 + s1 - s0) / n:.2f} (user "
              f"{1e6 * (u1 - u0) / n:.2f}, kernel {1e6 * (s1 - s0) / n:.2f}); syscalls/request "
              f"{total / n2:.3f}: {calls}", flush=True)
    finally:
        stop_server(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", default="ne,nu,fe,fu,mc")
    ap.add_argument("--workload", default="get90_p1", choices=sorted(WORKLOADS))
    ap.add_argument("--generator", default="loadgen", choices=["loadgen", "memtier"])
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--nodelay", default=os.path.join(ROOT, "build/release-epoll/nodelay"))
    ap.add_argument("--memcached", default=os.path.join(REF, "memcached-1.6.45"))
    ap.add_argument("--memtier", default=os.path.join(REF, "memtier_benchmark"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build/bench/loadgen"))
    a = ap.parse_args()
    names = a.servers.split(",")
    if any(n not in ("ne", "nu", "fe", "fu", "mc") for n in names):
        raise SystemExit("syscost.py: --servers takes ne, nu, fe, fu, mc")
    print(f"{a.workload} under {a.generator}, {a.seconds} s a run, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for r in range(a.rounds):
        for name in names:
            measure(a, name, r)


if __name__ == "__main__":
    main()
