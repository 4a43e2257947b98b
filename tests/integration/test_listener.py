# SPDX-License-Identifier: BSD-3-Clause
"""The listener's lifecycle: a restart on the same port right after a stop
(SIGTERM or kill -9) binds every time, and a client connecting while the
server starts is served or refused, never reset (docs/server-net.md, "The
listener's lifecycle").

On io_uring a listener a worker's ring polled stayed open after the process
had gone, until the kernel tore the rings down (milliseconds later, on a
kernel worker): a restart's bind failed with EADDRINUSE and connections
made meanwhile were queued on the dead listener and then reset. Each ring
held its own poll, so many workers (-t 16) make the last one let go later:
that is what makes these loops fail within a few seconds where the port
is held."""
import errno
import os
import signal
import socket
import subprocess
import time

from helpers import SANITIZER_MARKS, Server, free_port, slow_factor

# Many rings, each of which held the listener; a small cache, so a stop is
# quick and the next start follows at once.
FLAGS = ["-t", "16", "-m", "8"]


def rounds(n):
    """n restarts (each lost the port about one time in four to three on the
    old io_uring listener), fewer under a sanitizer, whose starts and exits
    take ten times longer: there the loop checks the paths, not the odds."""
    return n if slow_factor() == 1 else max(3, n // 4)


class Launcher:
    """Starts the binary under test again and again on one port."""

    def __init__(self, binary, tmp_path):
        self.binary = binary
        self.dir = str(tmp_path)
        self.port = free_port()
        self.n = 0
        self.proc = None

    def start(self):
        self.n += 1
        self.log = os.path.join(self.dir, f"start-{self.n}.log")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(Server(self.binary, FLAGS).argv(self.port),
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         cwd=self.dir)
        return self.proc

    def output(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, sig):
        self.proc.send_signal(sig)
        rc = self.proc.wait(10 * slow_factor())
        text = self.output()
        for mark in SANITIZER_MARKS:
            assert mark not in text, text[-4000:]
        if sig == signal.SIGTERM:
            assert rc == 0, f"exit {rc} after SIGTERM:\n{text[-2000:]}"

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def ask(port):
    """One connection: 'served' (a VERSION reply), 'refused', or what else
    happened to it ('reset', 'closed', 'timeout', ...)."""
    s = socket.socket()
    s.settimeout(2.0 * slow_factor())
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"version\r\n")
        got = s.recv(64)
        return "served" if got.startswith(b"VERSION") else ("closed" if not got else repr(got))
    except ConnectionRefusedError:
        return "refused"
    except (ConnectionResetError, BrokenPipeError):
        return "reset"
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    finally:
        s.close()


def connect_until_served(launcher):
    """Connect in a tight loop from now until the server answers; what
    every attempt came to, or None if the server exited first."""
    seen = {}
    deadline = time.monotonic() + 10 * slow_factor()
    while time.monotonic() < deadline:
        r = ask(launcher.port)
        seen[r] = seen.get(r, 0) + 1
        if r == "served":
            return seen
        if r == "refused" and launcher.proc.poll() is not None:
            return None
    raise AssertionError(f"no answer within 10 s: {seen}\n{launcher.output()[-2000:]}")


def restart_loop(server_bin, tmp_path, sig, rounds):
    launcher = Launcher(server_bin, tmp_path)
    try:
        launcher.start()
        assert connect_until_served(launcher), launcher.output()
        for i in range(rounds):
            launcher.stop(sig)
            launcher.start()
            seen = connect_until_served(launcher)
            assert seen is not None, (
                f"restart {i + 1} of {rounds} on port {launcher.port} did not start "
                f"(exit {launcher.proc.returncode}):\n{launcher.output()[-2000:]}")
    finally:
        launcher.cleanup()


def test_restart_after_sigterm_binds_every_time(server_bin, tmp_path):
    restart_loop(server_bin, tmp_path, signal.SIGTERM, rounds(30))


def test_restart_after_kill_binds_every_time(server_bin, tmp_path):
    restart_loop(server_bin, tmp_path, signal.SIGKILL, rounds(20))


def test_connects_during_start_up_are_never_reset(server_bin, tmp_path):
    """From the moment the old server has gone (kill -9: nothing of it ran
    at exit) until the new one answers, every connection is refused or
    served; the first round is a start on a port nothing held."""
    launcher = Launcher(server_bin, tmp_path)
    try:
        for i in range(rounds(20)):
            if launcher.proc:
                launcher.stop(signal.SIGKILL)
            launcher.start()
            seen = connect_until_served(launcher)
            assert seen is not None, (
                f"start {i + 1} did not start (exit {launcher.proc.returncode}):\n"
                f"{launcher.output()[-2000:]}")
            assert set(seen) <= {"served", "refused"}, f"start {i + 1}: {seen}"
    finally:
        launcher.cleanup()
