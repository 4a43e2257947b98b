"""UDP (-U): off by default; when asked, memcached's 8-byte frame header
(request id, sequence, datagram count, reserved) and replies over several
datagrams."""
import socket
import struct

from helpers import free_port, stats


def udp_request(port, payload, rid=7, timeout=3.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    s.sendto(struct.pack(">HHHH", rid, 0, 1, 0) + payload, ("127.0.0.1", port))
    parts, total = {}, None
    while total is None or len(parts) < total:
        data, _ = s.recvfrom(65536)
        r, seq, total, _res = struct.unpack(">HHHH", data[:8])
        assert r == rid
        parts[seq] = data[8:]
    s.close()
    return b"".join(parts[i] for i in range(total))


def test_udp_off_by_default(conn):
    assert stats(conn, "settings")["udpport"] == "0"


def test_udp_get_set(start_server):
    port = free_port()
    srv = start_server("-U", str(port))
    assert stats(srv.connect(), "settings")["udpport"] == str(port)
    assert udp_request(port, b"set u1 3 0 2\r\nhi\r\n") == b"STORED\r\n"
    assert udp_request(port, b"get u1\r\n", rid=9) == b"VALUE u1 3 2\r\nhi\r\nEND\r\n"
    assert udp_request(port, b"version\r\n").startswith(b"VERSION 1.6.")


def test_udp_reply_spans_datagrams(start_server):
    port = free_port()
    # 10 KiB for a 16-byte request: past the default amplification bound
    srv = start_server("-U", str(port), "-o", "udp_amplification=0")
    c = srv.connect()
    v = bytes(range(256)) * 40  # 10 KiB: more than one 1400-byte datagram
    c.set("ubig", v)
    assert udp_request(port, b"get ubig\r\n") == b"VALUE ubig 0 %d\r\n" % len(v) + v + b"\r\nEND\r\n"


# ---- reflection (issue 9.5) and the frame's sequence number (9.8) -----------------

def udp_all(port, payload, seq=0, count=1, rid=11, quiet=0.3):
    """Every datagram that answers one request datagram (none: [])."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(quiet)
    s.sendto(struct.pack(">HHHH", rid, seq, count, 0) + payload, ("127.0.0.1", port))
    out = []
    try:
        while True:
            out.append(s.recvfrom(65536)[0])
    except socket.timeout:
        pass
    s.close()
    return out


ATTACKS = [
    b"lru_crawler metadump all\r\n",
    b"lru_crawler mgdump all\r\n",
    b"stats\r\n",
    b"stats settings\r\n",
    b"stats items\r\n",
    b"stats slabs\r\n",
    b"stats conns\r\n",
    b"stats cachedump 1 0\r\n",
    b"get" + b" ua1" * 300 + b"\r\n",
    b"get ubig\r\n",
    b"mg ubig v\r\n",
    b"get ua1 ua2 ua3 ua4 ua5 ua6 ua7 ua8 ua9\r\n",
    b"watch\r\n",
]


def test_udp_amplification_bounded(start_server):
    """Over UDP a datagram is answered with at most 10x its own bytes (frames
    both ways included): dumps and watch get nothing, as memcached 1.6.45
    answers them; larger replies become one SERVER_ERROR line."""
    port = free_port()
    srv = start_server("-U", str(port))
    c = srv.connect()
    for i in range(1, 300):
        c.set("ua%d" % i, "v" * 200)
    c.set("ubig", "b" * 100000)
    for req in ATTACKS:
        sent = 8 + len(req)
        got = udp_all(port, req)
        out = sum(len(d) for d in got)
        assert out <= 10 * sent, (req[:40], out, sent)
        if req.startswith((b"lru_crawler", b"watch")):
            assert got == [], req
        elif out:
            assert b"".join(d[8:] for d in got) == b"SERVER_ERROR reply too large for UDP\r\n", req
    # what fits is answered as before
    c.set("usmall", "s" * 50)
    assert udp_request(port, b"get usmall\r\n") == b"VALUE usmall 0 50\r\n" + b"s" * 50 + b"\r\nEND\r\n"


def test_udp_amplification_switch(start_server):
    port = free_port()
    srv = start_server("-U", str(port), "-o", "udp_amplification=0")
    assert udp_request(port, b"stats\r\n").startswith(b"STAT pid ")


def test_udp_sequence_number_ignored(start_server):
    """memcached 1.6.18 and 1.6.45 read only the datagram count: seq=1 of 1
    is answered (as 0 of 1), a count other than 1 is dropped."""
    port = free_port()
    srv = start_server("-U", str(port))
    srv.connect().set("useq", "q")
    got = udp_all(port, b"get useq\r\n", seq=1)
    assert len(got) == 1
    assert struct.unpack(">HHHH", got[0][:8]) == (11, 0, 1, 0)
    assert got[0][8:] == b"VALUE useq 0 1\r\nq\r\nEND\r\n"
    assert udp_all(port, b"get useq\r\n", count=2) == []
    assert udp_all(port, b"get useq\r\n", seq=1, count=2) == []
