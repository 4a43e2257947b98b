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
    srv = start_server("-U", str(port))
    c = srv.connect()
    v = bytes(range(256)) * 40  # 10 KiB: more than one 1400-byte datagram
    c.set("ubig", v)
    assert udp_request(port, b"get ubig\r\n") == b"VALUE ubig 0 %d\r\n" % len(v) + v + b"\r\nEND\r\n"
