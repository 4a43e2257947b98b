# SPDX-License-Identifier: BSD-3-Clause
"""Issue 9 items 2, 3, 4, 7: large replies produced as the socket drains, one
bound on memory owed to all clients, bounded per-read work, and client memory
given back to the OS. Each test runs an attack over real sockets (loopback,
bounded in time) and asserts what a user sees: every byte delivered to a
reader, RSS within the README's formula, a probe client's latency, RSS back
near its baseline once the attackers leave."""
import os
import platform
import random
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import helpers
from helpers import slow_factor, stats

MiB = 1 << 20
SANITIZED = slow_factor() > 1  # ASan's shadow memory and quarantine are not ours
# Under TSan (the concurrency stage: it looks for races) every memory access
# is instrumented, so latencies measure TSan, not the server.
TSAN = "tsan" in helpers.server_bin()
# A probe's worst wait. Before the fix a 2 MiB get line stalled the worker
# for 1,588 ms, every time. A quiet machine measures a few ms; this one has
# 2 cores shared by many (at load average 18 an idle probe alone sees 100 ms
# and more now and then); the probe takes off the time it and the server
# waited for a CPU, and the bound only has to tell a stall of the worker
# from what noise is left.
PROBE_MAX = 0.5


def rss_mib(srv):
    with open(f"/proc/{srv.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def nodelay_only(srv):
    if srv.is_memcached:
        pytest.skip("nodelay's own bound and gauges")


def client_bytes(conn):
    st = stats(conn)
    return int(st["response_obj_bytes"]) + int(st["read_buf_bytes"])


def read_until_suffix(sock, suffix, limit_s):
    """Read everything up to `suffix`; returns (bytes received, last 64 bytes,
    whether it ended with suffix)."""
    sock.settimeout(limit_s)
    got, tail = 0, b""
    while True:
        d = sock.recv(1 << 20)
        if not d:
            return got, tail, False
        got += len(d)
        tail = (tail + d)[-64:]
        if tail.endswith(suffix):
            return got, tail, True


class Probe(threading.Thread):
    """A client doing `get probe` in a loop; keeps its worst latency, less
    the time the server's threads and the probe's own waited for a CPU
    (cpu_waits): on 2 cores shared by parallel test runs that wait alone
    reached 500 ms, and it is the host's, not a stalled worker's."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.c = srv.connect()
        self.c.set("probe", "p" * 100)
        self.pid = srv.proc.pid
        self.worst = 0.0
        self.worst_raw = 0.0
        self.n = 0
        self.stop = False

    def run(self):
        while not self.stop:
            w = cpu_waits(self.pid)
            t = time.perf_counter()
            assert self.c.get("probe") == b"p" * 100
            raw = time.perf_counter() - t
            self.worst_raw = max(self.worst_raw, raw)
            self.worst = max(self.worst, raw - (cpu_waits(self.pid) - w))
            self.n += 1

    def finish(self):
        self.stop = True
        self.join(10)
        return self.worst


# An attacker in its own process, so its loops do not share our GIL with the
# probe: N connections that send a request over and over and never read.
ATTACKER = textwrap.dedent("""
    import socket, sys, time
    port, n, secs, req = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    req = req.encode().decode("unicode_escape").encode("latin-1") * 500
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        socks.append(s)
    print("connected", flush=True)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for s in socks:
            try:
                s.send(req)
            except BlockingIOError:
                pass
        time.sleep(0.001)
    print("done", flush=True)
    sys.stdin.read()  # hold the connections until told to go
""")


# One connection sending a get line of nkeys keys "s"; reads the reply to
# its end (or holds it unread for 1.5 s) and prints what it got.
LONG_LINE = textwrap.dedent("""
    import socket, sys, time
    port, nkeys, reads = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
    a = socket.create_connection(("127.0.0.1", port))
    a.sendall(b"get" + b" s" * nkeys + b"\\r\\n")
    if not reads:
        time.sleep(1.5)
        print("held")
        sys.exit(0)
    a.settimeout(60)
    got, tail = 0, b""
    while not tail.endswith(b"\\r\\nEND\\r\\n"):
        d = a.recv(1 << 20)
        if not d:
            break
        got += len(d)
        tail = (tail + d)[-16:]
    print("got", got, "END" if tail.endswith(b"\\r\\nEND\\r\\n") else "EOF")
""")


def start_attacker(srv, n, secs, req):
    p = subprocess.Popen([sys.executable, "-c", ATTACKER, str(srv.port), str(n), str(secs), req],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "connected"
    return p


def stop_attacker(p):
    p.stdin.close()
    p.wait(10)


@pytest.mark.slow
def test_multiget_of_100_values_of_1mb_reaches_a_fast_reader(start_server):
    """9.2: 100 x 1 MB in one multiget: every byte, not 6 values then EOF."""
    srv = start_server("-m", "256")
    c = srv.connect(timeout=30)
    val = b"v" * 1000000
    for i in range(100):
        assert c.call(f"set big{i:02d} 0 0 {len(val)}".encode() + b"\r\n" + val) == b"STORED\r\n"
    kills = int(stats(c, "nodelay").get("slow_reader_kills", 0)) if not srv.is_memcached else 0
    line = b"get " + b" ".join(b"big%02d" % i for i in range(100)) + b"\r\n"
    want = sum(len(b"VALUE big%02d 0 1000000\r\n" % i) + len(val) + 2 for i in range(100)) + 5
    c.send(line)
    got, tail, ended = read_until_suffix(c.sock, b"\r\nEND\r\n", 30 * slow_factor())
    assert ended, f"EOF after {got} bytes"
    assert got == want
    if not srv.is_memcached:
        assert int(stats(c, "nodelay")["slow_reader_kills"]) == kills


@pytest.mark.slow
@pytest.mark.parametrize("cmd,end", [("metadump", b"END\r\n"), ("mgdump", b"EN\r\n")])
def test_dump_of_many_items_completes(start_server, cmd, end):
    """9.2: a dump of 200,000 items ends with END (it stopped at 65,192 lines)."""
    srv = start_server("-m", "256")
    c = srv.connect(timeout=30)
    n = 200000
    batch = 20000
    for b in range(0, n, batch):
        c.send(b"".join(b"set key%07d 0 0 1 noreply\r\nx\r\n" % i for i in range(b, b + batch)))
    assert c.call("version").startswith(b"VERSION")
    c.send(f"lru_crawler {cmd} all\r\n".encode())
    c.sock.settimeout(30 * slow_factor())
    buf = bytearray()
    while not buf.endswith(b"\n" + end):
        d = c.sock.recv(1 << 20)
        assert d, "EOF after %d lines" % buf.count(b"\n")
        buf += d
    lines = bytes(buf).split(b"\n")
    if cmd == "mgdump":
        assert lines[0] == b"OK\r" or lines[0].startswith(b"mg ")
    keys = {ln for ln in lines if ln.startswith(b"key=") or ln.startswith(b"mg ")}
    assert len(keys) == n


@pytest.mark.concurrency
def test_clients_that_stop_reading_stay_within_the_bound(start_server):
    """9.3 + 9.7: 400 connections sending `get s s s s s s s s s s` (500 B
    values) without reading: what they are owed stays within
    -o client_mem_limit, RSS within the README's formula (was 1,684 MiB), a
    probe is served meanwhile, and RSS returns near its baseline after."""
    bound = 32
    srv = start_server("-m", "64", "-o", f"client_mem_limit={bound}")
    nodelay_only(srv)
    c = srv.connect()
    c.set("s", "x" * 500)
    base = rss_mib(srv)
    ramp, measure = (4.0, 3.0) if SANITIZED else (2.0, 2.0)
    att = start_attacker(srv, 400, ramp + measure + 1, r"get s s s s s s s s s s\r\n")
    peak_rss, peak_owed = 0.0, 0
    probe = None
    start = time.monotonic()
    # under TSan one turn of this loop can outlast the ramp: run until the
    # probe has been served for `measure` seconds, however late it started
    probe_end = None
    while probe_end is None or time.monotonic() < probe_end:
        # the probe starts once the attackers' socket buffers are full: while
        # the kernel takes their replies (the first second or so) its copies
        # use the CPU that two cores share with the attacker and the probe
        if probe is None and time.monotonic() >= start + ramp:
            probe = Probe(srv)
            probe.start()
            probe_end = time.monotonic() + measure
        peak_rss = max(peak_rss, rss_mib(srv))
        peak_owed = max(peak_owed, client_bytes(c))
        time.sleep(0.05)
    worst = probe.finish()
    # every connection may go past the bound by its floor (16 KiB), one
    # line's reply and a read buffer (16 KiB): the README's 48 KiB each
    slack = 401 * 48 * 1024
    assert peak_owed <= bound * MiB + slack, f"owed {peak_owed / MiB:.1f} MiB"
    assert peak_owed > bound * MiB / 2, "the attack did not reach the bound"
    if not SANITIZED:
        # RSS <= -m + index + bound + 48 KiB x connections + fixed; the
        # items here are a few bytes, so -m is not touched
        assert peak_rss - base <= bound + slack / MiB + 24, f"RSS {base:.0f} -> {peak_rss:.0f} MiB"
    assert TSAN or worst < PROBE_MAX * slow_factor(), f"probe waited {worst * 1000:.1f} ms"
    print(f"RSS {base:.1f} -> peak {peak_rss:.1f} MiB, owed {peak_owed / MiB:.1f} MiB, "
          f"probe max {probe.worst_raw * 1000:.2f} ms ({worst * 1000:.2f} ms not spent waiting for a CPU) over {probe.n} gets")
    stop_attacker(att)
    # 9.7: the freed buffers go back to the OS within a few seconds
    after, owed = peak_rss, peak_owed
    for _ in range(int(50 * slow_factor())):
        time.sleep(0.1)
        after, owed = rss_mib(srv), client_bytes(c)
        if owed < MiB and (SANITIZED or after <= base + 8):
            break
    print(f"RSS after the attackers left: {after:.1f} MiB")
    assert owed < MiB, f"{owed} bytes still owed after the clients left"
    if not SANITIZED:
        assert after <= base + 8, f"RSS {base:.0f} -> {peak_rss:.0f} -> {after:.0f} MiB"


def test_honest_long_line_is_read_while_others_hoard(start_server):
    """40 connections that never read fill half of -o client_mem_limit (8
    MiB: nothing is left first come); a client's 49 KB multiget line still
    grows its read buffer, within its share of the bound (100 KiB here),
    and is answered (a rule of half the bound alone refused it and closed
    the connection)."""
    bound = 8
    srv = start_server("-m", "64", "-o", f"client_mem_limit={bound}")
    nodelay_only(srv)
    c = srv.connect()
    assert c.set("s", "x" * 500) == b"STORED\r\n"
    assert c.set("k", "v") == b"STORED\r\n"
    # the attacker sends for 2 s, then holds its connections until stopped
    att = start_attacker(srv, 40, 2, r"get s s s s s s s s s s\r\n")
    deadline = time.monotonic() + 10 * slow_factor()
    while client_bytes(c) < bound * MiB / 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client_bytes(c) >= bound * MiB / 2, "the hoarders did not fill half the bound"
    h = srv.connect()
    keys = [b"n%046d" % i for i in range(1000)] + [b"k"]
    h.send(b"get " + b" ".join(keys) + b"\r\n")
    assert h.read_values() == {"k": (0, b"v")}
    stop_attacker(att)


def test_dumps_to_non_readers_stay_within_the_bound(start_server):
    """300 connections each send `lru_crawler mgdump all` over 20,000 keys of
    240 bytes and never read: what they are owed stays within -o
    client_mem_limit plus 80 KiB a connection. A dump looks at its allowance
    every 8 buckets; every 64 let each hold a batch of 118 KB past it, 180
    KiB a connection here (126 MB for 1,000 of them against 32 MiB). Paused
    mid-dump, a connection holds 51-64 KiB with its read buffer: the
    README's 48 KiB, plus a partly filled block and the reply's table."""
    bound = 8
    srv = start_server("-m", "64", "-o", f"client_mem_limit={bound}")
    nodelay_only(srv)
    c = srv.connect()
    for chunk in range(0, 20000, 500):
        c.send(b"".join(b"set %s%06d 0 0 1 noreply\r\nx\r\n" % (b"k" * 234, i)
                        for i in range(chunk, chunk + 500)))
    assert c.call("mn") == b"MN\r\n"
    n = 300
    att = start_attacker(srv, n, 3, r"lru_crawler mgdump all\r\n")
    peak = 0
    for _ in range(int(20 * slow_factor())):
        peak = max(peak, client_bytes(c))
        time.sleep(0.1)
    stop_attacker(att)
    print(f"owed at most {peak / MiB:.1f} MiB")
    assert peak > bound * MiB / 2, "the dumps did not reach the bound"
    assert peak <= bound * MiB + (n + 1) * 80 * 1024, f"owed {peak / MiB:.1f} MiB"


def test_unending_request_lines_stay_within_the_bound(start_server):
    """Clients that send a request line and never end it: a read buffer
    grows past its 16 KiB only while all clients hold less than half of
    -o client_mem_limit, then the line is answered as memcached answers one
    it cannot read into memory and the connection closed (with no bound,
    100 of them held 1.6 GB of read buffers at -m 64). Others are served,
    and a long honest line still reads once they are gone."""
    bound = 8
    srv = start_server("-m", "64", "-o", f"client_mem_limit={bound}")
    nodelay_only(srv)
    c = srv.connect()
    assert c.set("k", "v") == b"STORED\r\n"
    hoarders = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(10)]
    for h in hoarders:
        h.setblocking(False)
    piece = b"a" * (256 * 1024)
    for i in range(12):  # 3 MiB each, never a newline
        for h in hoarders:
            try:
                h.send(b"get " + piece if i == 0 else piece)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                pass
        time.sleep(0.02)
    refused = 0
    deadline = time.monotonic() + 5 * slow_factor()
    for h in hoarders:
        h.setblocking(True)
        h.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            got = h.recv(4096)
            refused += got == b"SERVER_ERROR out of memory reading request\r\n"
        except ConnectionResetError:
            refused += 1
        except socket.timeout:
            pass
    assert refused >= 5, refused
    assert int(stats(c)["read_buf_bytes"]) <= bound * MiB
    assert c.get("k") == b"v"
    for h in hoarders:
        h.close()
    # one honest line of 600 KB (3,000 keys of 200 bytes) reads whole
    keys = [b"k%0199d" % i for i in range(3000)] + [b"k"]
    c.send(b"get " + b" ".join(keys) + b"\r\n")
    assert c.read_values() == {"k": (0, b"v")}


@pytest.mark.slow
@pytest.mark.parametrize("reads", [True, False], ids=["reader", "non-reader"])
def test_long_get_line_is_bounded_work(start_server, reads):
    """9.4: a 2 MiB get line of one key repeated 1,048,576 times (512 B value)
    peaked at 1,054 MiB RSS and stalled another client for 1,588 ms. Now it
    is composed as the client takes it: RSS grows by a few MiB, a probe on the
    same worker (-t 1) waits a few ms, and a reader gets every byte."""
    srv = start_server("-t", "1", "-m", "64")
    c = srv.connect()
    c.set("s", "x" * 512)
    base = rss_mib(srv)
    probe = Probe(srv)
    probe.start()
    nkeys = 1 << 20
    want = nkeys * (len(b"VALUE s 0 512\r\n") + 512 + 2) + 5
    a = subprocess.Popen([sys.executable, "-c", LONG_LINE, str(srv.port), str(nkeys),
                          "1" if reads else "0"], stdout=subprocess.PIPE, text=True)
    peak = 0.0
    end = time.monotonic() + 60 * slow_factor()
    while a.poll() is None and time.monotonic() < end:
        peak = max(peak, rss_mib(srv))
        time.sleep(0.05)
    out = a.communicate(timeout=10)[0].split()
    if reads:
        assert out == ["got", str(want), "END"], out
    worst = probe.finish()
    peak = max(peak, rss_mib(srv))
    print(f"RSS {base:.1f} -> {peak:.1f} MiB, probe max {probe.worst_raw * 1000:.2f} ms ({worst * 1000:.2f} ms not waiting for a CPU) over {probe.n}")
    if not srv.is_memcached and not SANITIZED:
        # the line (2 MiB, in a buffer of 4) and the allowance (4 MiB)
        assert peak - base < 32, f"RSS {base:.0f} -> {peak:.0f} MiB"
    assert TSAN or worst < PROBE_MAX * slow_factor(), f"probe waited {worst * 1000:.1f} ms"


def cpu_waits(pid):
    """Seconds the server's threads and this one have waited for a CPU
    (run_delay in /proc/.../schedstat), to tell the scheduler's delays from
    the server's on a shared machine."""
    total = 0
    paths = [f"/proc/self/task/{threading.get_native_id()}/schedstat"]
    try:
        paths += [f"/proc/{pid}/task/{t}/schedstat" for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        pass
    for p in paths:
        try:
            with open(p) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def honest_sets_turn_the_cache_over(c):
    """8000 sets of 4000 B (32 MB: a -m 16 cache turns over twice), every one
    STORED, and the newest 50 read back."""
    new = b"n" * 4000
    sets = 8000
    failed = []
    for i in range(sets):
        r = c.call(b"set new%04d 0 0 %d\r\n" % (i, len(new)) + new)
        if r != b"STORED\r\n":
            failed.append((i, r))
    assert not failed, f"{len(failed)} of {sets} sets failed, first {failed[0]}"
    for i in range(sets - 50, sets):
        assert c.get(f"new{i:04d}") == new, f"new{i:04d} missing"


def server_send_queues(port):
    """Send-Q (bytes the kernel holds, sent or not, unacknowledged) of every
    established socket on the server's side of `port`."""
    out = subprocess.run(["ss", "-tnH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=10).stdout
    return [int(line.split()[1]) for line in out.splitlines() if line.strip()]


@pytest.mark.skipif(not sys.platform.startswith("linux") or subprocess.run(
    ["sh", "-c", "command -v ss"], capture_output=True).returncode != 0, reason="needs Linux and ss")
def test_non_readers_hold_little_kernel_memory(start_server):
    """Soak kind 5's stalls: each client that stopped reading made the kernel
    hold 3-4 MiB of replies for it (the send buffer autotunes to tcp_wmem's
    4 MiB), and a few hundred of them put the host's TCP into memory
    pressure (tcp_mem), where it dropped packets of every connection: honest
    requests waited 40 ms and more. With TCP_NOTSENT_LOWAT each holds about
    128 KiB: 40 non-readers of 5 MB multigets hold 128 KiB each (before the
    fix: up to 2.9 MiB each, 114 MiB in all)."""
    srv = start_server("-m", "64")
    nodelay_only(srv)
    c = srv.connect()
    for i in range(10):
        assert c.call(f"set nr{i} 0 0 500000".encode() + b"\r\n" + b"n" * 500000) == b"STORED\r\n"
    req = "get " + " ".join(f"nr{i}" for i in range(10)) + r"\r\n"
    att = start_attacker(srv, 40, 1.5 * slow_factor(), req)
    try:
        assert att.stdout.readline().strip() == "done"
        queues = server_send_queues(srv.port)
    finally:
        stop_attacker(att)
    assert len(queues) >= 40, queues
    print(f"kernel send queues of {len(queues)} connections: max {max(queues) / 1024:.0f} KiB, "
          f"{sum(queues) / MiB:.1f} MiB in all")
    # 128 KiB unsent, plus what is in flight to a 4 KiB receive window
    assert max(queues) <= 512 * 1024, sorted(queues)[-5:]


@pytest.mark.concurrency
def test_honest_clients_keep_their_allowance_while_non_readers_fill_the_bound(start_server):
    """Soak kind 5, in user space: 40 clients pipelining `get s s s s s s s s
    s s` (500 B values) without reading fill -o client_mem_limit. The bound
    holds back those that owe most: an honest client keeps its share of it
    and is served at once, its 20-key multigets (80 KiB) and sets included.
    Measured on a loaded 2-core machine (release): probe max 2-4 ms."""
    bound = 32
    srv = start_server("-m", "64", "-o", f"client_mem_limit={bound}")
    nodelay_only(srv)
    c = srv.connect()
    c.set("s", "x" * 500)
    keys = [f"h{i}" for i in range(20)]
    for k in keys:
        c.set(k, "h" * 4096)
    att = start_attacker(srv, 40, 6 * slow_factor(), r"get s s s s s s s s s s\r\n")
    try:
        owed = 0
        deadline = time.monotonic() + 10 * slow_factor()
        # the first-come half of the bound (the other half is shared out)
        while owed < bound * MiB * 0.45 and time.monotonic() < deadline:
            time.sleep(0.1)
            owed = client_bytes(c)
        assert owed >= bound * MiB * 0.45, f"the non-readers owe only {owed / MiB:.1f} MiB"
        h = srv.connect()
        line = ("get " + " ".join(keys) + "\r\n").encode()
        want = sum(len(f"VALUE {k} 0 4096\r\n") + 4096 + 2 for k in keys) + 5
        worst, worst_raw, n = 0.0, 0.0, 0
        end = time.monotonic() + 2
        while time.monotonic() < end:
            w = cpu_waits(srv.proc.pid)
            t = time.perf_counter()
            h.send(line)
            got, _, ended = read_until_suffix(h.sock, b"\r\nEND\r\n", 10 * slow_factor())
            assert ended and got == want, got
            assert h.call(f"set h{n % 20} 0 0 4096".encode() + b"\r\n" + b"h" * 4096) == b"STORED\r\n"
            lat = time.perf_counter() - t
            worst_raw = max(worst_raw, lat)
            worst = max(worst, lat - (cpu_waits(srv.proc.pid) - w))
            n += 1
        owed_after = client_bytes(c)
    finally:
        att.kill()
        att.wait(10)
    print(f"owed {owed / MiB:.1f} -> {owed_after / MiB:.1f} MiB (bound {bound}); honest probe max "
          f"{worst_raw * 1000:.2f} ms ({worst * 1000:.2f} ms not spent waiting for a CPU) over {n} "
          "multiget+set rounds")
    assert owed_after <= bound * MiB + 41 * 48 * 1024, f"owed {owed_after / MiB:.1f} MiB"
    # a stall of the connection (a late resume, a delayed ACK) is 40 ms or
    # more; time the server or this test spent waiting for a CPU (2 cores
    # shared by many) is not the server's
    assert TSAN or worst < 0.040 * slow_factor(), f"honest probe waited {worst * 1000:.1f} ms"


def thread_named(pid, name):
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == name:
                    return tid
        except OSError:
            pass
    return None


def test_freed_client_memory_is_returned_off_the_workers(start_server):
    """9.7 without the stalls: malloc_trim ran on the workers, where it took
    milliseconds from every ready connection (soak: 355 requests >= 40 ms
    with it, 76 without). Now the workers only ask and the trimmer thread
    (`nodelay-trim`) trims once no worker is busy (test_trim.c): after 200
    non-readers leave, it has run (its -vv line) and RSS is back near its
    baseline."""
    srv = start_server("-m", "64", "-o", "client_mem_limit=32")
    nodelay_only(srv)
    c = srv.connect()
    assert c.call("version").startswith(b"VERSION")  # the workers, and so the trimmer, run
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("malloc_trim is glibc's")
    assert thread_named(srv.proc.pid, "nodelay-trim"), "no thread named nodelay-trim"
    c.set("s", "x" * 500)
    base = rss_mib(srv)
    att = start_attacker(srv, 200, 2 * slow_factor(), r"get s s s s s s s s s s\r\n")
    assert att.stdout.readline().strip() == "done"
    peak = rss_mib(srv)
    assert c.call("verbosity 2") == b"OK\r\n"  # the trimmer logs each trim at -vv
    stop_attacker(att)
    after, trims = peak, []
    for _ in range(int(50 * slow_factor())):
        time.sleep(0.1)
        after = rss_mib(srv)
        trims = re.findall(r"returned free memory to the OS \(trim \d+, ([0-9.]+) ms\)", srv.stderr())
        if trims and (SANITIZED or after <= base + 8):
            break
    print(f"RSS {base:.1f} -> {peak:.1f} -> {after:.1f} MiB; trims took {', '.join(trims)} ms")
    assert trims, "the trimmer did not run"
    if not SANITIZED:  # ASan's and TSan's allocators keep their pages
        assert after <= base + 8, f"RSS {base:.0f} -> {peak:.0f} -> {after:.0f} MiB"


@pytest.mark.concurrency
def test_small_staged_uploads_count_against_the_bound(start_server):
    """9.3's bound and small values still arriving: 520 connections that
    each send `set holdN 0 0 16000` and 10 bytes of it stage 8.1 MB outside
    the segments. That is client memory: it fills -o client_mem_limit=8, so
    40 non-readers of `get s s s s s s s s s s` may owe only their floors
    (about 1 MiB in all). Before, staged values were not counted and the
    non-readers took 4 MiB and more on top of them."""
    bound = 8
    srv = start_server("-m", "64", "-o", f"client_mem_limit={bound}")
    nodelay_only(srv)
    c = srv.connect()
    c.set("s", "x" * 500)
    holders = []
    try:
        for i in range(520):
            h = socket.create_connection(("127.0.0.1", srv.port))
            h.sendall(b"set hold%d 0 0 16000\r\n" % i + b"h" * 10)
            holders.append(h)
        staged = 0
        deadline = time.monotonic() + 10 * slow_factor()
        while staged < 520 * 16000 and time.monotonic() < deadline:
            time.sleep(0.05)
            staged = int(stats(c, "nodelay")["upload_bytes"])
        assert staged >= 520 * 16000, f"only {staged} bytes staged"
        att = start_attacker(srv, 40, 4 * slow_factor(), r"get s s s s s s s s s s\r\n")
        peak = 0
        try:
            end = time.monotonic() + 3 * slow_factor()
            while time.monotonic() < end:
                peak = max(peak, client_bytes(c))
                time.sleep(0.05)
        finally:
            att.kill()
            att.wait(10)
    finally:
        for h in holders:
            h.close()
    print(f"staged {staged / MiB:.1f} MiB; the non-readers were owed at most {peak / MiB:.2f} MiB")
    # each of the 40 may pass its 16 KiB floor by one line's reply and its
    # 16 KiB read buffer; without the staged bytes counted they took 4 MiB
    assert peak <= 41 * 48 * 1024, f"owed {peak / MiB:.2f} MiB beside {staged / MiB:.1f} MiB staged"



def test_non_readers_do_not_pin_the_cache_against_honest_sets(start_server):
    """9 (pins): 40 connections pipeline multigets and never read (the soak's
    kind 5). Their replies used to hold a pin on every segment they
    referenced, so at -m 16 eviction found no segment it could reuse and
    honest sets failed with SERVER_ERROR out of memory. Reply queues now pin
    at most a quarter of the segments and copy past that: every honest set
    of a new key is STORED, the newest keys read back, RSS stays bounded."""
    srv = start_server("-m", "16", "-o", "client_mem_limit=32")
    c = srv.connect(timeout=30 * slow_factor())
    val = b"o" * 4000
    old = 4000  # 16 MB: the cache is full before the attack
    c.send(b"".join(b"set old%04d 0 0 %d noreply\r\n%s\r\n" % (i, len(val), val)
                    for i in range(old)))
    assert c.call("version").startswith(b"VERSION")
    base = rss_mib(srv)
    hogs = []
    try:
        rng = random.Random(9)
        for n in range(40):
            h = socket.socket()
            h.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            h.connect(("127.0.0.1", srv.port))
            h.setblocking(False)
            hogs.append(h)
        # each asks for values spread over every segment, many times over
        reqs = [b"".join(b"get " + b" ".join(b"old%04d" % rng.randrange(old) for _ in range(10))
                         + b"\r\n" for _ in range(100)) for _ in hogs]
        deadline = time.monotonic() + 1.0 * slow_factor()
        while time.monotonic() < deadline:
            for h, req in zip(hogs, reqs):
                try:
                    h.send(req)
                except OSError:
                    pass
            time.sleep(0.01)
        honest_sets_turn_the_cache_over(c)
        if not SANITIZED and not srv.is_memcached:
            # -m, plus what the non-readers may be owed (client_mem_limit
            # and 48 KiB each past it), plus the index and slack
            peak = rss_mib(srv)
            assert peak - base <= 16 + 32 + 2 + 24, f"RSS {base:.0f} -> {peak:.0f} MiB"
    finally:
        for h in hogs:
            h.close()


def test_non_readers_of_large_values_do_not_pin_the_cache(start_server):
    """9 (pins, values over 16 KiB): 30 connections each ask for one 400 KB
    value and never read (more than the kernel takes: TCP_NOTSENT_LOWAT). Values of up to 16 KiB were copied past the
    quarter of the segments reply queues may pin, larger ones always kept
    their pin: one segment per non-reader, so at -m 16 they pinned every
    segment and honest sets failed with SERVER_ERROR out of memory. Large
    values now count against the same share and are copied past it (the
    copy counted in client memory like any queued byte): every honest set is
    STORED, the newest keys read back, and what the non-readers hold stays
    within client_mem_limit."""
    srv = start_server("-m", "16", "-o", "client_mem_limit=32")
    c = srv.connect(timeout=30 * slow_factor())
    val = b"b" * 400_000
    old = 40  # 16 MB: the cache is full, two values a segment
    for i in range(old):
        assert c.call(b"set big%03d 0 0 %d\r\n" % (i, len(val)) + val) == b"STORED\r\n"
    present = [i for i in range(old) if c.get(f"big{i:03d}") is not None]
    assert len(present) >= 30
    hogs = []
    try:
        for n in range(30):
            h = socket.socket()
            h.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            h.connect(("127.0.0.1", srv.port))
            # one value each, from segments all over the cache
            h.sendall(b"get big%03d\r\n" % present[n * len(present) // 30])
            hogs.append(h)
        time.sleep(0.3 * slow_factor())  # their replies are queued, unread
        if not srv.is_memcached:
            owed = int(stats(c)["response_obj_bytes"])
            assert owed <= (32 << 20), f"non-readers are owed {owed} bytes"
        honest_sets_turn_the_cache_over(c)
        # the non-readers still get their values whole once they read
        for n, h in enumerate(hogs[:5]):
            h.settimeout(10 * slow_factor())
            got = b""
            while not got.endswith(b"END\r\n"):
                d = h.recv(1 << 20)
                assert d, f"non-reader {n} cut off after {len(got)} bytes"
                got += d
            assert got.endswith(b"\r\n" + val + b"\r\nEND\r\n")
    finally:
        for h in hogs:
            h.close()


def sanitizer_env():
    """ASan's quarantine keeps freed memory for a while (up to 256 MiB), so
    RSS would grow by what was freed; without it what is freed is reused,
    as in a release build, and RSS shows only what is held."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
    return env


def pipeline_rounds(c, rounds, line, want):
    """`rounds` writes of `line`, each reply read whole before the next."""
    for _ in range(rounds):
        c.send(line)
        assert c.read_exact(len(want)) == want


def test_pipelining_after_a_large_reply_stays_flat(start_server):
    """25.2: one reply copied in a piece larger than the connection's drained
    16 KiB block (`stats detail dump` of 600 prefixes, 22 KB) left that
    block first in the queue forever, so no later block but the last was
    freed while the connection lived: a client then pipelining 100 gets of a
    500-byte value a round, reading every reply, grew the server by ~47 MiB
    every 1,000 rounds (10 -> 152 MiB over 3,000), none of it counted in
    response_obj_bytes. Every written block is now freed wherever it
    stands: RSS stays flat and what the queue keeps is counted."""
    srv = start_server("-m", "64", env=sanitizer_env())
    c = srv.connect(timeout=30)
    assert c.call("stats detail on") == b"OK\r\n"
    c.send(b"".join(b"set p%d:k 0 0 1 noreply\r\nx\r\n" % i for i in range(600)))
    assert c.set("v", b"v" * 500) == b"STORED\r\n"
    dump = c.call("stats detail dump", until=b"END\r\n")
    assert dump.count(b"PREFIX p") >= 600 and len(dump) > 20_000, len(dump)
    line = b"get v\r\n" * 100
    want = (b"VALUE v 0 500\r\n" + b"v" * 500 + b"\r\nEND\r\n") * 100
    pipeline_rounds(c, 300, line, want)  # the allocator's steady state
    base = rss_mib(srv)
    seen = [base]
    for _ in range(6):
        pipeline_rounds(c, 500, line, want)
        seen.append(rss_mib(srv))
    print("RSS over 3,000 rounds: " + " -> ".join(f"{r:.1f}" for r in seen) + " MiB")
    # main grew 140 MiB here; a flat server moves by an allocator's arena
    assert max(seen) - base <= 12, "RSS " + " -> ".join(f"{r:.0f}" for r in seen) + " MiB"
    if not srv.is_memcached:
        # what it keeps between replies, counted: one block and a small
        # segment table (REPLY_KEPT_MAX), whatever the replies were
        owed = int(stats(c)["response_obj_bytes"])
        assert 0 < owed <= 32 * 1024, owed
