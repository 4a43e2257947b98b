# SPDX-License-Identifier: BSD-3-Clause
"""What a client sends while its request waits for flash, on a server with
a flash tier (docs/server-net.md, "Waiting for flash"): on io_uring the
connection's multishot receive stays started during the wait, so bytes
keep arriving. They must be kept within a bound, run in order after the
wake, and answered byte for byte as memcached 1.6.45 answers the same
stream; an end of input, a reset or a huge value sent during the wait
changes none of that.

The debug builds' seam (NODELAY_DEBUG_FLASH=fl:MS, src/proto/proto_flash.c)
makes every request naming a key that starts with "fl" wait MS ms, as a
flash read does, so the bytes sent after it arrive during the wait.
memcached, which never waits, gets the same stream: its replies are the
expected ones."""
import os
import socket
import struct
import threading
import time

import pytest

import helpers
from helpers import Server, start_flash, stats

DELAY = 0.3  # s: the seam's read time
REF = helpers.ref_or_debian(os.environ.get("NODELAY_REF", "/work/shared/ref/memcached-1.6.45"))


@pytest.fixture(scope="module")
def srv(server_bin, tmp_path_factory):
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for the flash seam")
    env = dict(os.environ, NODELAY_DEBUG_FLASH=f"fl:{int(DELAY * 1000)}")
    s = start_flash(binary, tmp_path_factory.mktemp("fwi"), 64, 64, 1, env=env)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    if not os.access(REF, os.X_OK):
        pytest.skip(f"no reference memcached at {REF}")
    s = Server(REF, ["-t", "1"], workdir=str(tmp_path_factory.mktemp("ref")))
    s.start()
    yield s
    s.stop()


def seed(c, tag):
    for k, v in ((b"fl_a", b"flash-a"), (b"ra", b"ram-a"), (b"num", b"10")):
        c.send(b"set %s%s 0 0 %d\r\n%s\r\n" % (k, tag, len(v), v))
        assert c.readline() == b"STORED\r\n"


def stream(tag):
    """Requests sent after the waiting one: more than one receive's bound,
    small and large values, values too large to store, every reply kind."""
    t = tag
    parts = []
    for i in range(300):
        parts.append(b"get ra%s\r\nincr num%s 1\r\n" % (t, t))
        if i % 50 == 0:
            parts.append(b"set v%d%s 3 0 3000\r\n%s\r\n" % (i, t, bytes([65 + i % 26]) * 3000))
    parts.append(b"set big%s 1 0 600000\r\n%s\r\n" % (t, b"q" * 600000))
    parts.append(b"set huge%s 0 0 2000000\r\n%s\r\n" % (t, b"h" * 2000000))
    parts.append(b"get big%s fl_a%s huge%s v0%s\r\n" % (t, t, t, t))
    parts.append(b"mg ra%s v f k\r\nmn\r\nbogus\r\ndelete v50%s\r\nget v50%s num%s\r\n"
                 % (t, t, t, t))
    return b"".join(parts)


def exchange(server, tag, ending, first=b"get fl_a%s\r\n", timeout=30.0):
    """Send the waiting request, then (during its wait) the stream, then
    `ending` (b"quit\\r\\n", "shut" or "close"); the replies until the
    server closes. A thread sends, so that neither side blocks the other."""
    c = server.connect(timeout=timeout)
    seed(c, tag)
    c.send(first % tag if b"%s" in first else first)
    time.sleep(DELAY / 3)
    body = stream(tag)

    def send():
        try:
            c.sock.sendall(body)
            if ending == "shut":
                c.sock.shutdown(socket.SHUT_WR)
            elif ending != "close":
                c.sock.sendall(ending)
        except OSError:
            pass

    th = threading.Thread(target=send)
    th.start()
    got = b""
    while True:
        try:
            chunk = c.sock.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        got += chunk
    th.join()
    c.close()
    return got


@pytest.mark.parametrize("ending", ["quit", "shut"])
def test_a_stream_sent_during_a_wait_is_answered_as_memcached_does(srv, ref, ending):
    tag = b"_" + ending.encode()
    want = exchange(ref, tag, b"quit\r\n")
    assert want.startswith(b"VALUE fl_a%s 0 7\r\nflash-a\r\nEND\r\n" % tag)
    before = stats(srv.connect(), "nodelay")
    t0 = time.monotonic()
    got = exchange(srv, tag, b"quit\r\n" if ending == "quit" else "shut")
    assert time.monotonic() - t0 >= DELAY * 0.95
    assert len(got) == len(want)
    assert got == want
    after = stats(srv.connect(), "nodelay")
    assert int(after["flash_waits"]) >= int(before["flash_waits"]) + 2
    if after.get("event_backend") == "io_uring" and int(after["multishot_receives"]) > 0:
        # the receive stayed started: bytes came during the wait, kept
        assert int(after["multishot_kept_bytes"]) > int(before["multishot_kept_bytes"])


def test_bytes_kept_during_a_wait_stay_within_one_receive(srv):
    """Over 4 MB sent during one wait: what the server took meanwhile is at
    most one multishot receive's bound, the rest left in the socket."""
    c = srv.connect(timeout=30.0)
    s = stats(c, "nodelay")
    if s.get("event_backend") != "io_uring" or int(s.get("multishot_receives", 0)) == 0:
        pytest.skip("multishot receives are io_uring's on a kernel that bounds them")
    assert c.set(b"fl_k", b"k") == b"STORED\r\n"
    kept = int(stats(c, "nodelay")["multishot_kept_bytes"])
    c.send(b"get fl_k\r\n")
    time.sleep(DELAY / 3)
    th = threading.Thread(target=lambda: c.sock.sendall(b"set x 0 0 1 noreply\r\nx\r\n" * 200000
                                                        + b"mn\r\n"))
    th.start()
    time.sleep(DELAY / 3)
    o = srv.connect()
    during = int(stats(o, "nodelay")["multishot_kept_bytes"]) - kept
    assert 0 < during < 2 * 2048, f"{during} bytes kept during one wait"
    assert c.read_until(b"MN\r\n") == b"VALUE fl_k 0 1\r\nk\r\nEND\r\nMN\r\n"
    th.join()
    c.close()
    o.close()


@pytest.mark.parametrize("how", ["reset", "close"])
def test_a_client_gone_during_a_wait_with_bytes_kept(srv, how):
    """The multishot receive ends with an error (a reset) or the end of
    input (a close) behind kept bytes, while the request waits: the server
    lives on and frees the connection."""
    o = srv.connect()
    base = int(stats(o)["curr_connections"])
    for i in range(4):
        c = srv.connect()
        c.set(b"fl_g", b"g" * 100)
        c.send(b"get fl_g\r\n")
        time.sleep(DELAY / 4)
        c.send(b"get fl_g\r\n" * 500 + b"set y 0 0 5000\r\n" + b"y" * 3000)
        time.sleep(0.02)
        if how == "reset":
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()
    time.sleep(DELAY * 2)
    assert o.get(b"fl_g") == b"g" * 100
    deadline = time.monotonic() + 5
    while int(stats(o)["curr_connections"]) > base and time.monotonic() < deadline:
        time.sleep(0.05)
    assert int(stats(o)["curr_connections"]) == base
    o.close()


def test_a_stream_sent_during_a_device_read(server_bin, ref, tmp_path_factory):
    """The same, with the wait a real flash read made slow (debug builds'
    NODELAY_DEBUG_FLASH_DEV): -m 8 filled three times over, an early key
    read from the device, the stream sent meanwhile, then the end of
    input."""
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for NODELAY_DEBUG_FLASH_DEV")
    env = dict(os.environ, NODELAY_DEBUG_FLASH_DEV=str(int(DELAY * 1000)))
    srv = start_flash(binary, tmp_path_factory.mktemp("dev"), 8, 128, 1, env=env)
    try:
        vlen = 4000
        c = srv.connect(timeout=30)
        helpers.send_paced(c, [b"set r:%d 0 0 %d noreply\r\n%s\r\n" % (i, vlen, b"%07d:" % i * 500)
                               for i in range(3 * (8 << 20) // vlen)], 32)
        for _ in range(200):  # full segments on the device, not in a buffer
            if stats(c)["extstore_io_queue"] == "0":
                break
            time.sleep(0.05)
        read = int(stats(c)["get_extstore"])
        first = b"get r:3\r\n"
        head = b"VALUE r:3 0 4000\r\n%s\r\nEND\r\n" % (b"%07d:" % 3 * 500)
        tag = b"_dev"
        r = ref.connect()
        assert r.set(b"r:3", b"%07d:" % 3 * 500) == b"STORED\r\n"
        r.close()
        want = exchange(ref, tag, b"quit\r\n", first)
        assert want.startswith(head)
        t0 = time.monotonic()
        got = exchange(srv, tag, "shut", first, timeout=60.0)
        assert time.monotonic() - t0 >= DELAY * 0.95
        assert int(stats(c)["get_extstore"]) > read, "r:3 was not read from the device"
        assert len(got) == len(want)
        assert got == want
        c.close()
    finally:
        srv.stop()
