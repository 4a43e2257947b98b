# SPDX-License-Identifier: BSD-3-Clause
"""The soak's run: start the server, put the load and the clients on it,
watch it, wind down, judge, and stop everything it started."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import types

from soaklib.aftermath import check_recovery, check_watchers
from soaklib.bound import MemoryBound
from soaklib.clients import SlowClients
from soaklib.loads import BIG_KEYS, ROOT, reap_loads, start_loads
from soaklib.monitor import monitor
from soaklib.probe import fd_count, free_port, sample
from soaklib.report import report
from soaklib.runqueue import RunQueue
from soaklib.watchers import Watchers


def start_server(a, port, work):
    """The server under test on a loopback port; returns (process, its log)."""
    cmd = [a.server, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", str(a.threads),
           "-m", str(a.memory), "-c", "4096"]
    if os.geteuid() == 0:
        cmd += ["-u", "root"]
    cmd += a.server_args.split()
    srv_log = open(os.path.join(work, "server.log"), "w")
    return subprocess.Popen(cmd, stdout=srv_log, stderr=subprocess.STDOUT), srv_log


def wait_listening(port):
    for _ in range(50):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def stop_all(procs, srv, srv_log):
    for _, p, _ in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    if srv.poll() is None:
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=5)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    srv_log.close()


def soak(a, srv, port, work, procs, violations):
    """The run itself, from a listening server to the report."""
    time.sleep(0.3)
    fig = types.SimpleNamespace(rss_max=0, owed_max=0, fd_max=0, fd_end=0, rss_end=0)
    fig.fd_base = fd_count(srv.pid)
    sanitized = a.sanitized or "asan" in a.server or "tsan" in a.server
    bound = MemoryBound(a, sanitized)
    _, index0, _, _ = sample(port)
    fig.rss_bound = bound.kib(index0, 0)
    print(f"soak: {a.server} on port {port}, -m {a.memory} -t {a.threads}, {a.duration:.0f} s; "
          f"fd baseline {fig.fd_base}, RSS bound {fig.rss_bound // 1024} MiB + 48 KiB x connections"
          f"{' (sanitizer build: loose)' if sanitized else ''}")

    stop = threading.Event()
    # the watchers first: they see the load's connections arrive
    watch = Watchers(port, bound.n_read, bound.n_stalled, stop)
    watch.start()
    # the sampler before the loads: their first moments, 400 connections
    # arriving and the generators' threads starting, are judged too
    rq_stop = threading.Event()
    runq = RunQueue({"server": srv.pid}, rq_stop)
    runq.start()
    start_loads(a, port, work, procs, runq.add)
    slow = SlowClients(port, a.slow, [int(k) for k in a.slow_kinds.split(",")], BIG_KEYS, stop)
    slow.start()

    is_nodelay = "memcached" not in os.path.basename(a.server)
    monitor(a, srv, port, procs, bound, is_nodelay, fig, violations)
    stop.set()
    rq_stop.set()
    slow.join()
    watch_stats = check_watchers(srv, port, watch, bound, is_nodelay, violations)
    watch.close()
    runq.thread.join(timeout=5)
    reap_loads(procs, work, violations)
    st = check_recovery(a, srv, port, bound, fig, violations)
    run = types.SimpleNamespace(a=a, srv=srv, port=port, work=work, procs=procs, runq=runq,
                                slow=slow, watch=watch, watch_stats=watch_stats, bound=bound,
                                fig=fig)
    report(run, st, violations)


def main(a):
    """Runs the soak the command line a asks for; 0 on a pass, 1 on a fail."""
    subprocess.run(["make", "-s", "-C", ROOT, "loadgen"], check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    work = f"/tmp/nodelay-soak.{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    srv, srv_log = start_server(a, port, work)
    violations = []
    procs = []
    try:
        if not wait_listening(port):
            print("soak: server did not start", file=sys.stderr)
            return 1
        soak(a, srv, port, work, procs, violations)
    finally:
        stop_all(procs, srv, srv_log)
    if violations:
        for v in violations:
            print("soak: VIOLATION: " + v)
        print(f"soak: FAIL (logs in {work})")
        return 1
    print("soak: PASS")
    if not a.keep:
        for f in os.listdir(work):
            os.unlink(os.path.join(work, f))
        os.rmdir(work)
    return 0
