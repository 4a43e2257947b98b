# SPDX-License-Identifier: BSD-3-Clause
"""What the bench scripts share: a free loopback port, a process's CPU time,
and a server started on loopback for one measurement.

Imported by bench/profile.py, bench/set_cpu.py, bench/observe_cost.py,
bench/metrics_chart.py and bench/callgrind_server.py: Python puts a
script's own folder first on sys.path, so `import benchproc` finds this
file from any directory."""
import os
import socket
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def free_port():
    """A TCP port nothing on 127.0.0.1 holds right now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_argv(binary, port, *extra, cpu=None):
    """binary on 127.0.0.1:port, UDP off, -m 256 unless extra says otherwise
    (a later flag wins), as root under -u root; pinned to one CPU when cpu
    is given."""
    argv = [binary, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-m", "256", *extra]
    if os.geteuid() == 0:
        argv += ["-u", "root"]
    if cpu is not None:
        argv = ["taskset", "-c", str(cpu)] + argv
    return argv


def wait_for_port(port, proc, timeout=10.0):
    """Until 127.0.0.1:port takes a connection; raises if proc exits first
    or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited ({proc.returncode}) before listening")
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
            time.sleep(0.05)


def start_server(binary, *extra, port=None, cpu=None, quiet=True):
    """(the server's Popen, its port), once the port takes connections."""
    port = port or free_port()
    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(server_argv(binary, port, *extra, cpu=cpu), stdout=out, stderr=out)
    try:
        wait_for_port(port, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, port


def stop_server(proc, timeout=10):
    """SIGTERM, then SIGKILL if it has not exited after timeout seconds;
    whether it exited on the SIGTERM."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False
