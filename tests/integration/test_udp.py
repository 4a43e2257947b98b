# SPDX-License-Identifier: BSD-3-Clause
"""UDP (-U): off by default; when asked, memcached's 8-byte frame header
(request id, sequence, datagram count, reserved) and replies over several
datagrams; the reflection bound, and the loopback sources it spares."""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys

import pytest

from helpers import ROOT, Server, free_port, ipv6_loopback_available, stats

REF_DIR = os.environ.get("NODELAY_REF_DIR") or os.path.join(ROOT, "..", "shared", "ref")
REF_BIN = os.path.join(REF_DIR, "memcached-1.6.45")


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

def udp_all(port, payload, seq=0, count=1, rid=11, quiet=0.3, host="127.0.0.1"):
    """Every datagram that answers one request datagram (none: []), sent to
    host (and so from it: the kernel picks the local address it was sent to)."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(quiet)
    s.sendto(struct.pack(">HHHH", rid, seq, count, 0) + payload, (host, port))
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


def attack_outcomes(binary, host, flags=(), workdir="/tmp"):
    """Start `binary` listening on host (TCP and UDP), load the keys ATTACKS
    ask for, send each of ATTACKS from host and return, for each, the bytes
    sent and the datagrams that answered it (latin-1 text, for JSON)."""
    port = free_port(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
    srv = Server(binary, ["-U", str(port)] + list(flags), workdir=workdir, host=host)
    srv.start()
    try:
        c = srv.connect()
        for i in range(1, 300):
            c.set("ua%d" % i, "v" * 200)
        c.set("ubig", "b" * 100000)
        c.set("usmall", "s" * 50)
        out = []
        for req in ATTACKS + [b"get usmall\r\n"]:
            got = udp_all(port, req, host=host)
            out.append([req.decode("latin-1"), 8 + len(req), [d.decode("latin-1") for d in got]])
        c.close()
    finally:
        srv.stop()
    return out


def check_bounded(outcomes):
    """At most 10x: dumps and watch get nothing, as memcached 1.6.45 answers
    them; larger replies become one SERVER_ERROR line; what fits is answered."""
    for req, sent, got in outcomes:
        req = req.encode("latin-1")
        got = [d.encode("latin-1") for d in got]
        out = sum(len(d) for d in got)
        assert out <= 10 * sent, (req[:40], out, sent)
        if req.startswith((b"lru_crawler", b"watch")):
            assert got == [], req
        elif req == b"get usmall\r\n":
            assert b"".join(d[8:] for d in got) == b"VALUE usmall 0 50\r\n" + b"s" * 50 + b"\r\nEND\r\n"
        elif out:
            assert b"".join(d[8:] for d in got) == b"SERVER_ERROR reply too large for UDP\r\n", req


def test_udp_amplification_bounded(server_bin, tmp_path):
    """Over UDP a datagram is answered with at most 10x its own bytes (frames
    both ways included). A loopback source is spared by default; with
    -o udp_trust_loopback=off it is bounded like any other."""
    check_bounded(attack_outcomes(server_bin, "127.0.0.1", ["-o", "udp_trust_loopback=off"],
                                  workdir=str(tmp_path)))


def other_address():
    """A non-loopback IPv4 address of this host (the source of a datagram it
    sends to itself there), or None. Connecting a UDP socket sends nothing."""
    for probe in ("192.0.2.1", "198.51.100.1", "10.255.255.254", "8.8.8.8"):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.connect((probe, 9))
            addr = s.getsockname()[0]
        except OSError:
            continue
        finally:
            s.close()
        if not addr.startswith("127.") and addr != "0.0.0.0":
            return addr
    return None


NETNS_ADDR = "10.255.0.1"


def test_udp_amplification_bounded_non_loopback(server_bin, tmp_path):
    """With the default settings a datagram from an address that is not
    loopback gets at most 10x. Sent from this host's own non-loopback
    address; on a host with none, inside a network namespace of our own
    (unshare -rn) where that address is put on lo, which is still not a
    loopback address."""
    addr = other_address()
    if addr is not None:
        check_bounded(attack_outcomes(server_bin, addr, workdir=str(tmp_path)))
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("no non-loopback address and no unshare/ip: see the unit test")
    code = ("import json, sys; sys.path.insert(0, %r); import test_udp; "
            "print(json.dumps(test_udp.attack_outcomes(%r, %r, workdir=%r)))"
            % (os.path.dirname(__file__), server_bin, NETNS_ADDR, str(tmp_path)))
    sh = "ip link set lo up && ip addr add %s/32 dev lo && exec %s -c %s" % (
        NETNS_ADDR, sys.executable, json.dumps(code))
    r = subprocess.run(["unshare", "-rn", "sh", "-c", sh], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0 and "unshare" in r.stderr and "Operation not permitted" in r.stderr:
        pytest.skip("no non-loopback address, no user namespaces: see the unit test")
    assert r.returncode == 0, r.stderr
    check_bounded(json.loads(r.stdout.splitlines()[-1]))


BIG = bytes(67 + i % 24 for i in range(20000))  # udp.t's 20,000 bytes of C..Z


def loopback_replies(start_server, host, binary=None):
    """The datagrams (in arrival order) answering a few gets over UDP from
    host, a loopback address."""
    port = free_port(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
    srv = start_server("-U", str(port), host=host, binary=binary)
    c = srv.connect()
    c.set("bigvalue", BIG)
    c.set("mid", b"m" * 5000)
    c.close()
    bin_get = struct.pack(">BBHBBHIIQ", 0x80, 0x00, 3, 0, 0, 0, 3, 0, 0) + b"mid"
    got = {req: udp_all(port, req, rid=53, quiet=0.5, host=host)
           for req in (b"get bigvalue\r\n", b"mg bigvalue v k f\r\n", b"get mid\r\n", bin_get)}
    # each server numbers its own stores: the binary header's CAS (bytes
    # 16-23 after the frame) is left out, as the differential test does
    d = got[bin_get][0]
    got[bin_get][0] = d[:24] + b"<cas8>.." + d[32:]
    return got


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_udp_loopback_reply_as_memcached(start_server, host):
    """A datagram from a loopback address (only this host can send one, and
    the reply cannot leave it) is not held to the 10x bound: udp.t's
    20,000-byte get over UDP gets all 15 datagrams, byte for byte as
    memcached 1.6.45 sends them (checked beside it when ../shared/ref is
    there)."""
    if ":" in host and not ipv6_loopback_available():
        pytest.skip("no IPv6 loopback")
    got = loopback_replies(start_server, host)
    big = got[b"get bigvalue\r\n"]
    assert [struct.unpack(">HHHH", d[:8]) for d in big] == [(53, i, 15, 0) for i in range(15)]
    assert all(len(d) == 1400 for d in big[:-1])
    assert b"".join(d[8:] for d in big) == b"VALUE bigvalue 0 20000\r\n" + BIG + b"\r\nEND\r\n"
    if not os.access(REF_BIN, os.X_OK):
        return
    want = loopback_replies(start_server, host, binary=REF_BIN)
    for req in want:
        assert got[req] == want[req], (req, [len(d) for d in got[req]], [len(d) for d in want[req]])


def test_udp_loopback_bounded_still(start_server):
    """A loopback datagram is answered with up to 4 MiB (what one TCP
    connection may owe before it pauses), whatever its size: a longer
    reply, which memcached would send, is the one SERVER_ERROR line, so one
    datagram cannot make a worker compose without bound."""
    port = free_port()
    srv = start_server("-U", str(port))
    c = srv.connect()
    v = b"x" * 1000000
    for i in range(5):
        c.set("lb%d" % i, v)
    c.close()
    # 4 x 1,000,023 + 5 bytes in 2,874 datagrams, frames included within
    # 4 MiB: sent (more than a socket buffer holds: the first one is checked)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(struct.pack(">HHHH", 5, 0, 1, 0) + b"get lb0 lb1 lb2 lb3\r\n", ("127.0.0.1", port))
    first = s.recvfrom(65536)[0]
    s.close()
    assert struct.unpack(">HHHH", first[:8])[1:] in [(i, 2874, 0) for i in range(2874)]
    assert first[8:] in (b"VALUE lb0 0 1000000\r\n" + v)[:1392] or first[8:] in v
    five = b"get lb0 lb1 lb2 lb3 lb4\r\n"
    got = udp_all(port, five, quiet=1.0)
    assert [d[8:] for d in got] == [b"SERVER_ERROR reply too large for UDP\r\n"]


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
