#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Listener lifecycle reproducer: connects during start-up and restarts on
one port.

  startup  N  : stop the server (SIGTERM), start it again on the same port
                while a client connects in a tight loop from that moment;
                every connection must be served (a `version` reply) or
                refused, never reset. Prints the starts that saw a reset.
  startup-kill N : the same, stopping with kill -9.
  term     N  : start, wait until it answers, SIGTERM, wait for the exit,
                start again at once on the same port. Prints the starts that
                failed to bind out of N.
  kill     N  : the same with kill -9.

usage: listener-restart.py BINARY MODE N [server flags...]
Loopback only; every loop is bounded."""
import errno
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def argv(binary, port, extra):
    a = [binary, "-p", str(port), "-U", "0", "-l", "127.0.0.1"]
    if os.geteuid() == 0:
        a += ["-u", "root"]
    return a + extra


def ask(port, timeout=2.0):
    """'served', 'refused', 'reset' or 'other:...' for one connection."""
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(b"version\r\n")
        got = s.recv(64)
        if got.startswith(b"VERSION"):
            return "served"
        return "closed" if got == b"" else "other:%r" % got[:20]
    except ConnectionRefusedError:
        return "refused"
    except ConnectionResetError:
        return "reset"
    except BrokenPipeError:
        return "reset"
    except OSError as e:
        return "other:%s" % errno.errorcode.get(e.errno, e)
    finally:
        s.close()


def wait_ready(port, proc, deadline_s=10.0):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if ask(port, 1.0) == "served":
            return True
        time.sleep(0.002)
    return False


def startup(binary, n, sig, extra):
    """Each round stops the running server with sig, waits for its exit,
    starts the next on the same port and connects in a tight loop from that
    moment until it answers."""
    port = free_port()
    resets = 0
    failed = 0
    proc = None
    for i in range(n):
        if proc is not None:
            proc.send_signal(sig)
            proc.wait()
        proc = subprocess.Popen(argv(binary, port, extra), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seen = {}
        end = time.monotonic() + 10
        while time.monotonic() < end:
            r = ask(port)
            seen[r] = seen.get(r, 0) + 1
            if r == "served":
                break
            if proc.poll() is not None and r == "refused":
                break
        if proc.poll() is not None:
            failed += 1
            proc = None
        bad = {k: v for k, v in seen.items() if k not in ("served", "refused")}
        if bad:
            resets += 1
        print(f"start {i}: {seen}" + (" (did not start)" if proc is None else ""), flush=True)
    if proc is not None:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    name = "SIGTERM" if sig == signal.SIGTERM else "kill -9"
    print(f"startup after {name}: {resets} of {n} starts had a connection reset or dropped, "
          f"{failed} did not start")


def restarts(binary, n, sig, extra):
    port = free_port()
    failed = 0
    codes = {}
    proc = subprocess.Popen(argv(binary, port, extra), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not wait_ready(port, proc):
        print("first start failed:", proc.stderr.read().decode())
        return
    for i in range(n):
        proc.send_signal(sig)
        proc.wait()
        proc.stderr.close()
        proc = subprocess.Popen(argv(binary, port, extra), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not wait_ready(port, proc):
            proc.wait()
            err = proc.stderr.read().decode(errors="replace").strip().splitlines()
            failed += 1
            codes[proc.returncode] = codes.get(proc.returncode, 0) + 1
            print(f"restart {i}: exit {proc.returncode}: {err[-1] if err else ''}", flush=True)
            proc.stderr.close()
            # start again until one binds, for the next round
            for _ in range(100):
                proc = subprocess.Popen(argv(binary, port, extra), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                if wait_ready(port, proc):
                    break
                proc.wait()
                proc.stderr.close()
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    name = "SIGTERM" if sig == signal.SIGTERM else "kill -9"
    print(f"restart after {name}: {failed} of {n} failed to start {codes}")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    binary, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    extra = sys.argv[4:]
    if mode == "startup":
        startup(binary, n, signal.SIGTERM, extra)
    elif mode == "startup-kill":
        startup(binary, n, signal.SIGKILL, extra)
    elif mode == "term":
        restarts(binary, n, signal.SIGTERM, extra)
    elif mode == "kill":
        restarts(binary, n, signal.SIGKILL, extra)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
