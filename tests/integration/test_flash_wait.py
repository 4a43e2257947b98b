# SPDX-License-Identifier: BSD-3-Clause
"""A request whose keys are on flash waits for their reads without its
worker waiting (docs/server-net.md, "Waiting for flash").

The debug builds' seam (src/proto/proto_flash.c): with NODELAY_DEBUG_FLASH=
PREFIX:MS every request that needs a key starting with PREFIX waits once,
MS ms, for a "read" completed through the worker's event loop as the flash
tier's are. Each test checks that its requests did wait (they take MS ms at
least; `flash_waits` counts them): a server without the waiting side (or the
seam) answers at once and fails there. Over real sockets, -t 1 so that every
connection shares the one worker."""
import os
import socket
import struct
import time

import pytest

import helpers
from helpers import Server, bin_read, bin_request, stats

PREFIX = b"fl"
DELAY = 0.4  # s: the seam's read time; bounds below are lower bounds only


def start(server_bin, tmp_path_factory, delay_ms):
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for the flash seam")
    env = dict(os.environ, NODELAY_DEBUG_FLASH=f"{PREFIX.decode()}:{delay_ms}")
    srv = Server(binary, ["-t", "1"], env=env, workdir=str(tmp_path_factory.mktemp("flash")))
    srv.start()
    return srv


@pytest.fixture(scope="module")
def srv(server_bin, tmp_path_factory):
    s = start(server_bin, tmp_path_factory, int(DELAY * 1000))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def quick_srv(server_bin, tmp_path_factory):
    """Reads that complete at the loop's next turn."""
    s = start(server_bin, tmp_path_factory, 0)
    yield s
    s.stop()


def waits(c):
    return int(stats(c, "nodelay").get("flash_waits", -1))


def recv_first(sock, timeout=10.0):
    """The bytes of the first segment(s) that arrive: one write of the
    server's comes whole in one recv on loopback."""
    sock.settimeout(timeout)
    return sock.recv(1 << 20)


def test_multiget_mixing_waiting_keys_answers_in_order_in_one_write(srv):
    c = srv.connect()
    vals = {b"mr1": b"a", b"fl_m1": b"bb" * 10, b"mr2": b"ccc", b"fl_m2": b"d" * 3000}
    for k, v in vals.items():
        assert c.set(k, v) == b"STORED\r\n"
    before = waits(c)
    keys = [b"mr1", b"fl_m1", b"nothere", b"mr2", b"fl_m2", b"mr1"]
    want = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(vals[k]), vals[k])
                    for k in keys if k in vals) + b"END\r\n"
    t0 = time.monotonic()
    c.send(b"get " + b" ".join(keys) + b"\r\n")
    got = recv_first(c.sock)
    took = time.monotonic() - t0
    assert took >= DELAY * 0.95, f"answered in {took:.3f} s: the flash keys did not wait"
    # nothing was sent before the wait, and all of it in one write after
    assert got == want
    assert waits(c) == before + 1
    c.close()


def test_pipelined_requests_after_a_waiting_one_stay_in_order(srv):
    c = srv.connect()
    assert c.set(b"pr1", b"one") == b"STORED\r\n"
    assert c.set(b"fl_p1", b"flash") == b"STORED\r\n"
    assert c.set(b"fl_p2", b"gone") == b"STORED\r\n"
    c.send(b"get pr1\r\nget fl_p1\r\nset pr2 0 0 1\r\nz\r\nget pr2\r\n"
           b"delete fl_p2\r\nget fl_p2\r\nincr pr9 1\r\n")
    first = recv_first(c.sock)
    # the replies of the requests before the waiting one leave at once
    assert first == b"VALUE pr1 0 3\r\none\r\nEND\r\n"
    rest = (b"VALUE fl_p1 0 5\r\nflash\r\nEND\r\nSTORED\r\nVALUE pr2 0 1\r\nz\r\nEND\r\n"
            b"DELETED\r\nEND\r\nNOT_FOUND\r\n")
    assert c.read_exact(len(rest)) == rest
    c.close()


def test_replies_before_a_wait_leave_before_it_in_a_large_batch(srv):
    """A batch larger than one receive (io_uring's 2 KiB) whose last request
    waits: the replies before it do not wait for the device."""
    c = srv.connect()
    assert c.set(b"lb1", b"one") == b"STORED\r\n"
    assert c.set(b"fl_lb", b"flash") == b"STORED\r\n"
    n = 400
    c.send(b"get lb1\r\n" * n + b"get fl_lb\r\n")
    t0 = time.monotonic()
    one = b"VALUE lb1 0 3\r\none\r\nEND\r\n"
    assert c.read_exact(len(one) * n) == one * n
    # the waiting request's reply is not here yet: it leaves after the read
    early = c.arrived()
    assert early == b"", "the waiting request answered with those before it, no wait between"
    want = b"VALUE fl_lb 0 5\r\nflash\r\nEND\r\n"
    assert c.read_exact(len(want)) == want
    assert time.monotonic() - t0 >= DELAY * 0.95
    c.close()


def test_other_connections_are_served_while_one_waits(srv):
    a, b = srv.connect(), srv.connect()
    assert a.set(b"fl_o1", b"slow") == b"STORED\r\n"
    assert b.set(b"or1", b"fast") == b"STORED\r\n"
    t0 = time.monotonic()
    a.send(b"get fl_o1\r\n")
    time.sleep(DELAY / 8)
    for _ in range(5):
        assert b.get(b"or1") == b"fast"
    served = time.monotonic() - t0
    # a is still waiting: b was served by the same (only) worker meanwhile
    assert a.arrived() == b""
    assert served < DELAY, "the other connection was not served while one waited"
    want = b"VALUE fl_o1 0 4\r\nslow\r\nEND\r\n"
    assert a.read_exact(len(want)) == want
    assert time.monotonic() - t0 >= DELAY * 0.95
    a.close()
    b.close()


def test_a_client_that_closes_while_waiting(srv):
    c = srv.connect()
    assert c.set(b"fl_c1", b"x" * 100) == b"STORED\r\n"
    before = waits(c)
    # a reset while waiting: the session goes, its read completes into nothing
    for _ in range(3):
        d = srv.connect()
        d.send(b"get fl_c1 fl_c2\r\nget fl_c1\r\n")
        time.sleep(0.05)
        d.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        d.close()
    # a half-close while waiting: answered after the wait, then closed
    h = srv.connect()
    t0 = time.monotonic()
    h.send(b"get fl_c1\r\n")
    h.sock.shutdown(socket.SHUT_WR)
    want = b"VALUE fl_c1 0 100\r\n" + b"x" * 100 + b"\r\nEND\r\n"
    assert h.read_exact(len(want)) == want
    assert time.monotonic() - t0 >= DELAY * 0.95
    assert h.closed_by_peer()
    time.sleep(DELAY * 1.5)  # every seam read is due
    assert c.get(b"fl_c1") == b"x" * 100
    assert waits(c) >= before + 5
    assert int(stats(c)["curr_connections"]) >= 1
    c.close()


def test_every_text_command_that_reads_the_item_waits(srv):
    c = srv.connect()
    cases = [
        (b"set fl_t1 5 0 2\r\n10\r\n", b"STORED\r\n", False),
        (b"incr fl_t1 5\r\n", b"15\r\n", True),
        (b"decr fl_t1 3\r\n", b"12\r\n", True),
        (b"append fl_t1 0 0 1\r\na\r\n", b"STORED\r\n", True),
        (b"prepend fl_t1 0 0 1\r\np\r\n", b"STORED\r\n", True),
        (b"get fl_t1\r\n", b"VALUE fl_t1 5 4\r\np12a\r\nEND\r\n", True),
        (b"touch fl_t1 100\r\n", b"TOUCHED\r\n", True),
        (b"gat 0 fl_t1\r\n", b"VALUE fl_t1 5 4\r\np12a\r\nEND\r\n", True),
        (b"add fl_t1 0 0 1\r\nq\r\n", b"NOT_STORED\r\n", True),
        (b"replace fl_t1 0 0 1\r\nr\r\n", b"STORED\r\n", True),
        (b"cas fl_t1 0 0 1 1\r\nc\r\n", b"EXISTS\r\n", True),
        (b"delete fl_t1\r\n", b"DELETED\r\n", True),
        (b"delete fl_t1 noreply\r\nget fl_t1\r\n", b"END\r\n", True),
    ]
    for req, want, waited in cases:
        before = waits(c)
        t0 = time.monotonic()
        c.send(req)
        assert c.read_exact(len(want)) == want, req
        took = time.monotonic() - t0
        if waited:
            assert took >= DELAY * 0.95, f"{req!r} answered in {took:.3f} s without waiting"
            assert waits(c) > before, req
    # gets / gats: the CAS each reports is the item's
    c.send(b"set fl_t2 0 0 1\r\nv\r\n")
    assert c.readline() == b"STORED\r\n"
    flags, val, cas = c.get_multi([b"fl_t2"], "gets")["fl_t2"]
    assert val == b"v"
    c.send(b"cas fl_t2 0 0 1 %d\r\nw\r\n" % cas)
    assert c.readline() == b"STORED\r\n"
    assert c.get_multi([b"0", b"fl_t2"], "gats")["fl_t2"][1] == b"w"
    c.close()


def test_meta_commands_wait_with_every_flag(srv):
    c = srv.connect()
    assert c.call(b"ms fl_mt 3 F7 T0\r\nabc") == b"HD\r\n"
    before = waits(c)
    c.send(b"mg fl_mt s v f k O123 c t\r\nmg fl_mt q k v\r\nmg fl_none q k v\r\n"
           b"mg fl_none k O9\r\nmn\r\n")
    line = c.readline()
    parts = line.split()
    assert parts[0] == b"VA" and parts[1] == b"3" and b"s3" in parts and b"f7" in parts
    assert b"kfl_mt" in parts and b"O123" in parts and b"t-1" in parts
    assert c.readline() == b"abc\r\n"
    hit_q = c.readline().split()
    assert hit_q[:2] == [b"VA", b"3"] and b"kfl_mt" in hit_q
    assert c.readline() == b"abc\r\n"
    assert c.readline() == b"EN kfl_none O9\r\n"
    assert c.readline() == b"MN\r\n"
    assert waits(c) >= before + 4
    # ms in modes that read the old item; ma; md
    assert c.call(b"ms fl_mt 1 MA\r\nd") == b"HD\r\n"
    assert c.call(b"ms fl_mt 1 MP\r\nz") == b"HD\r\n"
    assert c.call(b"ms fl_mt 1 ME\r\nq") == b"NS\r\n"
    assert c.call(b"mg fl_mt v") == b"VA 5\r\n" and c.readline() == b"zabcd\r\n"
    assert c.call(b"ms fl_n 2\r\n41") == b"HD\r\n"
    assert c.call(b"ma fl_n D1 v") == b"VA 2\r\n" and c.readline() == b"42\r\n"
    c.send(b"md fl_n q\r\nmd fl_n\r\nmn\r\n")
    assert c.readline() == b"NF\r\n"
    assert c.readline() == b"MN\r\n"
    # base64 keys are probed decoded: ZmxfYjY0 is fl_b64
    assert c.call(b"ms ZmxfYjY0 2 b\r\nhi") == b"HD\r\n"
    t0 = time.monotonic()
    assert c.call(b"mg ZmxfYjY0 b v") == b"VA 2\r\n" and c.readline() == b"hi\r\n"
    assert time.monotonic() - t0 >= DELAY * 0.95
    c.close()


def test_binary_requests_wait_and_quiet_batches_stay_in_order(srv):
    if not helpers.speaks_binary(srv):
        pytest.skip("no binary protocol")
    c, t = srv.connect(), srv.connect()  # t: the counter, over text
    zero8 = b"\0" * 8
    c.send(bin_request(0x01, key=b"fl_b1", value=b"bin1", extras=struct.pack(">II", 3, 0)))
    assert bin_read(c)["status"] == 0
    c.send(bin_request(0x01, key=b"br1", value=b"ram", extras=zero8))
    assert bin_read(c)["status"] == 0
    before = waits(t)
    t0 = time.monotonic()
    # a binary multiget: GETKQ ... NOOP, RAM and flash keys mixed
    c.send(bin_request(0x0D, key=b"br1", opaque=1) + bin_request(0x0D, key=b"fl_b1", opaque=2)
           + bin_request(0x0D, key=b"fl_b9", opaque=3) + bin_request(0x0D, key=b"br1", opaque=4)
           + bin_request(0x0A, opaque=5))
    got = [bin_read(c) for _ in range(4)]
    assert [(r["opcode"], r["opaque"], r["key"], r["value"]) for r in got] == [
        (0x0D, 1, b"br1", b"ram"), (0x0D, 2, b"fl_b1", b"bin1"), (0x0D, 4, b"br1", b"ram"),
        (0x0A, 5, b"", b"")]
    assert struct.unpack(">I", got[1]["extras"])[0] == 3
    assert time.monotonic() - t0 >= DELAY * 0.95
    assert waits(t) >= before + 2
    # increment, append, a set with the item's CAS, delete
    c.send(bin_request(0x01, key=b"fl_b2", value=b"7", extras=zero8))
    assert bin_read(c)["status"] == 0
    c.send(bin_request(0x05, key=b"fl_b2", extras=struct.pack(">QQI", 2, 0, 0)))
    r = bin_read(c)
    assert r["status"] == 0 and struct.unpack(">Q", r["value"])[0] == 9
    c.send(bin_request(0x0E, key=b"fl_b2", value=b"x"))
    assert bin_read(c)["status"] == 0
    c.send(bin_request(0x00, key=b"fl_b2"))
    r = bin_read(c)
    assert r["value"] == b"9x"
    c.send(bin_request(0x01, key=b"fl_b2", value=b"new", extras=zero8, cas=r["cas"]))
    assert bin_read(c)["status"] == 0
    c.send(bin_request(0x01, key=b"fl_b2", value=b"old", extras=zero8, cas=r["cas"]))
    assert bin_read(c)["status"] == 0x02  # EEXISTS: the CAS moved on
    c.send(bin_request(0x04, key=b"fl_b2"))
    assert bin_read(c)["status"] == 0
    c.send(bin_request(0x00, key=b"fl_b2"))
    assert bin_read(c)["status"] == 0x01
    c.close()
    t.close()


@pytest.mark.trap
def test_no_reply_after_a_wait_is_acknowledged_at_once(quick_srv):
    """A quiet miss that waited queues no reply: the read after the wake is
    ACKed at once, so a Nagle client's next request is not held 40 ms."""
    c = quick_srv.connect(nodelay=False)
    for _ in range(20):  # past the kernel's quick-ACK phase of a new connection
        assert c.call("version").startswith(b"VERSION")
    before = waits(c)
    rounds = 10
    for _ in range(rounds):
        for attempt in range(3):
            t0 = time.perf_counter()
            c.send(b"mg fl_quiet_miss v q\r\n")
            c.send(b"mn\r\n")  # a second write: Nagle holds it for the ACK
            assert c.readline() == b"MN\r\n"
            dt = time.perf_counter() - t0
            if dt < 0.040:
                break
        else:
            pytest.fail(f"a quiet miss that waited, then mn in a second write: {dt * 1000:.1f} ms")
    assert waits(c) >= before + rounds
    c.close()


def test_a_wait_keeps_the_multishot_receive(quick_srv):
    """An idle connection's multishot receive stays started while its
    request waits for flash (a client at pipeline 1 sends nothing until the
    reply): 40 gets that each wait, one at a time, are served by at most two
    starts (one ends by itself after 2 KiB), not a stop and a start each."""
    c = quick_srv.connect()
    s = stats(c, "nodelay")
    if s.get("event_backend") != "io_uring" or int(s.get("multishot_receives", 0)) == 0:
        pytest.skip("multishot receives are io_uring's on a kernel that bounds them")
    assert c.set(b"fl_ms", b"v" * 600) == b"STORED\r\n"
    before, started = waits(c), int(stats(c, "nodelay")["multishot_receives"])
    for _ in range(40):
        assert c.call("get fl_ms", until=b"END\r\n") == b"VALUE fl_ms 0 600\r\n%s\r\nEND\r\n" % (b"v" * 600)
    s = stats(c, "nodelay")
    assert waits(c) >= before + 40
    # the two stats requests' own receives are in it too
    assert int(s["multishot_receives"]) - started <= 3
    c.close()


def test_bytes_sent_during_a_wait_run_after_it_in_order(srv):
    """What a client sends while its request waits for flash (the receive
    still started) is kept and run once the wait ends, in order."""
    c = srv.connect()
    assert c.set(b"fl_d1", b"first") == b"STORED\r\n"
    assert c.set(b"dw2", b"second") == b"STORED\r\n"
    before = waits(c)
    t0 = time.monotonic()
    c.send(b"get fl_d1\r\n")
    time.sleep(DELAY / 4)
    c.send(b"get dw2\r\nset dw3 0 0 1\r\nx\r\nget dw3 fl_d1\r\n")
    want = (b"VALUE fl_d1 0 5\r\nfirst\r\nEND\r\nVALUE dw2 0 6\r\nsecond\r\nEND\r\nSTORED\r\n"
            b"VALUE dw3 0 1\r\nx\r\nVALUE fl_d1 0 5\r\nfirst\r\nEND\r\n")
    assert c.read_exact(len(want)) == want
    assert time.monotonic() - t0 >= DELAY * 0.95
    assert waits(c) >= before + 2
    c.close()
