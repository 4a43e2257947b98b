# SPDX-License-Identifier: BSD-3-Clause
"""The delayed-ACK trap (DESIGN.md): no single request may take 40 ms or more.

Clients with and without TCP_NODELAY; values around the loopback MSS and the
64 KiB boundaries; sets whose command and data leave in two writes (a Nagle
client's second write waits for the server's ACK of the first: the server
must ACK at once); multigets of 100 keys; pipelines of 50 mixed commands;
over the text, meta and binary protocols; and requests that ask no reply
(noreply, quiet commands, quiet misses) followed by a request in a second
write, over TCP and TLS. A request over the limit is tried again (a
scheduler hiccup); a delayed ACK is systematic and misses every time."""
import itertools
import random
import shutil
import struct
import time

import pytest

from helpers import Server, bin_read, bin_request, speaks_binary, speaks_meta

pytestmark = pytest.mark.trap

LIMIT = 0.040
SIZES = [1, 1400, 1500, 16 * 1024, 65535, 65536, 65537, 200 * 1024, 1024 * 1024]
REPS = 3


@pytest.fixture(scope="module")
def trap_server(server_bin, tmp_path_factory):
    srv = Server(server_bin, ["-I", "2m", "-m", "256"], workdir=str(tmp_path_factory.mktemp("trap")))
    srv.start()
    yield srv
    srv.stop()


def client(srv, nodelay, proto):
    if proto == "meta" and not speaks_meta(srv):
        pytest.skip("the server does not answer meta commands yet")
    if proto == "binary" and not speaks_binary(srv):
        pytest.skip("the server does not answer the binary protocol yet")
    c = srv.connect(nodelay=nodelay)
    # leave the kernel's quick-ACK phase of a fresh connection: the trap only
    # shows once ACKs would be delayed
    for _ in range(20):
        ping(c, proto)
    return c


def ping(c, proto):
    if proto == "binary":
        c.send(bin_request(0x0A))
        assert bin_read(c)["status"] == 0
    else:
        assert c.call("version").startswith(b"VERSION")


def timed(label, fn):
    dt = 0.0
    for _ in range(2):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        if dt < LIMIT:
            return dt
    pytest.fail(f"{label}: {dt * 1000:.1f} ms, twice (limit {LIMIT * 1000:.0f} ms)")


# ---- one request of each kind, per protocol ---------------------------------

def set_req(proto, key, value, split):
    """(first write, second write or None, reader)"""
    if proto == "text":
        head = b"set %s 0 0 %d\r\n" % (key, len(value))
        body = value + b"\r\n"
        return head, body, lambda c: c.read_until(b"\r\n") == b"STORED\r\n"
    if proto == "meta":
        head = b"ms %s %d T0\r\n" % (key, len(value))
        body = value + b"\r\n"
        return head, body, lambda c: c.read_until(b"\r\n") == b"HD\r\n"
    pkt = bin_request(0x01, key=key, value=value, extras=struct.pack(">II", 0, 0))
    cut = 24 + 8 + len(key)
    return pkt[:cut], pkt[cut:], lambda c: bin_read(c)["status"] == 0


def do_set(c, proto, key, value, split):
    head, body, check = set_req(proto, key, value, split)
    if split:
        c.send(head)
        c.send(body)
    else:
        c.send(head + body)
    assert check(c)


def do_get(c, proto, key, value):
    if proto == "text":
        c.send(b"get %s\r\n" % key)
        want = b"VALUE %s 0 %d\r\n" % (key, len(value)) + value + b"\r\nEND\r\n"
        assert c.read_exact(len(want)) == want
    elif proto == "meta":
        c.send(b"mg %s v\r\n" % key)
        want = b"VA %d\r\n" % len(value) + value + b"\r\n"
        assert c.read_exact(len(want)) == want
    else:
        c.send(bin_request(0x00, key=key))
        r = bin_read(c)
        assert r["status"] == 0 and r["value"] == value


@pytest.mark.parametrize("proto", ["text", "meta", "binary"])
@pytest.mark.parametrize("nodelay", [True, False], ids=["nodelay", "nagle"])
@pytest.mark.parametrize("size", SIZES)
def test_set_get_sizes(trap_server, proto, nodelay, size):
    c = client(trap_server, nodelay, proto)
    value = bytes(random.Random(size).getrandbits(8) for _ in range(256)) * (size // 256 + 1)
    value = value[:size]
    key = b"trap-%s-%d" % (proto.encode(), size)
    for rep in range(REPS):
        timed(f"{proto} set {size} B in one write", lambda: do_set(c, proto, key, value, False))
        timed(f"{proto} set {size} B in two writes", lambda: do_set(c, proto, key, value, True))
        timed(f"{proto} get {size} B", lambda: do_get(c, proto, key, value))
    c.close()


def multiget(c, proto, keys, values):
    if proto == "text":
        c.send(b"get " + b" ".join(keys) + b"\r\n")
        got = c.read_values()
        assert len(got) == len(keys)
    elif proto == "meta":
        c.send(b"".join(b"mg %s k v q\r\n" % k for k in keys) + b"mn\r\n")
        raw = c.read_until(b"MN\r\n")
        assert raw.count(b"VA ") >= len(keys)
    else:
        c.send(b"".join(bin_request(0x0D, key=k) for k in keys) + bin_request(0x0A))
        n = 0
        while True:
            r = bin_read(c)
            if r["opcode"] == 0x0A:
                break
            n += 1
        assert n == len(keys)


@pytest.mark.parametrize("proto", ["text", "meta", "binary"])
@pytest.mark.parametrize("nodelay", [True, False], ids=["nodelay", "nagle"])
@pytest.mark.parametrize("vsize", [100, 1400, 16 * 1024])
def test_multiget_100_keys(trap_server, proto, nodelay, vsize):
    c = client(trap_server, nodelay, proto)
    keys = [b"tm-%d-%d" % (vsize, i) for i in range(100)]
    value = b"v" * vsize
    for k in keys:
        do_set(c, proto, k, value, False)
    for rep in range(REPS):
        timed(f"{proto} multiget of 100 x {vsize} B", lambda: multiget(c, proto, keys, value))
    c.close()


def pipeline(proto, n=50):
    """50 mixed commands as bytes, and a function that reads all the replies."""
    rnd = random.Random(n)
    parts = []
    if proto in ("text", "meta"):
        for i in range(n):
            k = b"tp%d" % (i % 10)
            op = i % 5
            v = b"x" * rnd.choice([1, 100, 1400, 5000])
            if proto == "text":
                parts.append([b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v),
                              b"get %s\r\n" % k, b"delete %s\r\n" % k,
                              b"incr tpn 1\r\n", b"touch %s 100\r\n" % k][op])
            else:
                parts.append([b"ms %s %d\r\n%s\r\n" % (k, len(v), v),
                              b"mg %s v\r\n" % k, b"md %s\r\n" % k,
                              b"ma tpn\r\n", b"mg %s T100\r\n" % k][op])
        parts.append(b"version\r\n" if proto == "text" else b"mn\r\n")
        end = b"VERSION " if proto == "text" else b"MN\r\n"
        return b"".join(parts), lambda c: c.read_until(end)
    for i in range(n):
        k = b"tp%d" % (i % 10)
        v = b"x" * rnd.choice([1, 100, 1400, 5000])
        parts.append([bin_request(0x11, key=k, value=v, extras=struct.pack(">II", 0, 0)),
                      bin_request(0x0D, key=k),
                      bin_request(0x14, key=k),
                      bin_request(0x15, key=b"tpn", extras=struct.pack(">QQI", 1, 0, 0)),
                      bin_request(0x0C, key=k)][i % 5])
    parts.append(bin_request(0x0A))

    def read_all(c):
        while bin_read(c)["opcode"] != 0x0A:
            pass
    return b"".join(parts), read_all


@pytest.mark.parametrize("proto", ["text", "meta", "binary"])
@pytest.mark.parametrize("nodelay", [True, False], ids=["nodelay", "nagle"])
@pytest.mark.parametrize("split", [False, True], ids=["one-write", "two-writes"])
def test_pipeline_of_50(trap_server, proto, nodelay, split):
    c = client(trap_server, nodelay, proto)
    if proto == "text":
        c.call(b"set tpn 0 0 1\r\n0")
    data, read_all = pipeline(proto)

    def run():
        if split:
            # the first command is a set: cut before its data, so the first
            # write is an incomplete request with no reply to carry an ACK
            cut = data.index(b"\r\n") + 2 if proto != "binary" else 24 + 8 + 3
            c.send(data[:cut])
            c.send(data[cut:])
        else:
            c.send(data)
        read_all(c)

    for rep in range(REPS):
        timed(f"{proto} pipeline of 50 ({'two writes' if split else 'one write'})", run)
    c.close()


# ---- requests that ask no reply, then a request in a second write ----------
#
# A client without TCP_NODELAY writes requests that ask no reply, then its
# next request in a second write. Nagle holds that write until the first is
# acknowledged, and no reply of the server's carries the ACK: the server
# must acknowledge at once (docs/server-net.md), or every round waits for its
# delayed ACK (>= 40 ms). Each round must take under SILENT_LIMIT; one over
# it is tried again, up to SILENT_TRIES times in all: a loaded machine
# misses 5 ms now and then, a delayed ACK misses every try by 35 ms or more.

SILENT_LIMIT = 0.005
SILENT_TRIES = 5
SILENT_ROUNDS = 5
# The size of the cases' large values: over plain TCP 20 KiB, read straight
# into item memory (a read buffer holds 16 KiB); over TLS 8 KiB, in one
# record. Either way under what makes the kernel ACK by itself (a read of
# more than one segment of the peer's: larger values never trapped).
BIG = {"tcp": 20 * 1024, "tls": 8 * 1024}
SEQ = itertools.count()


def text_cases():
    def set_noreply(n, big):
        k = b"sn%d" % n
        return (b"set %s 0 0 5 noreply\r\nhello\r\n" % k, b"get %s\r\n" % k,
                b"VALUE %s 0 5\r\nhello\r\nEND\r\n" % k)

    def writes_noreply(n, big):
        k = b"wn%d" % n
        return (b"add %s 0 0 1 noreply\r\n1\r\nappend %s 0 0 1 noreply\r\n2\r\n"
                b"incr %s 5 noreply\r\ntouch %s 100 noreply\r\ndelete %s noreply\r\n"
                % (k, k, k, k, k), b"get %s\r\n" % k, b"END\r\n")

    def big_set_noreply(n, big):
        k = b"bn%d" % n
        return (b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, big, b"b" * big), b"mn\r\n", b"MN\r\n")
    return {"set-noreply": set_noreply, "add-append-incr-touch-delete-noreply": writes_noreply,
            "big-set-noreply": big_set_noreply}


def meta_cases():
    def ms_q(n, big):
        k = b"mq%d" % n
        return b"ms %s 5 q\r\nhello\r\n" % k, b"mg %s v\r\n" % k, b"VA 5\r\nhello\r\n"

    def ms_ma_md_q(n, big):
        k = b"mm%d" % n
        return (b"ms %s 1 q\r\n1\r\nma %s q\r\nmd %s q\r\n" % (k, k, k), b"mg %s v\r\n" % k,
                b"EN\r\n")

    def mg_q_miss(n, big):
        return b"mg nokey%d v q\r\nmg nokey%d k s q\r\n" % (n, n), b"mn\r\n", b"MN\r\n"

    def big_ms_q(n, big):
        k = b"mb%d" % n
        return b"ms %s %d q\r\n%s\r\n" % (k, big, b"m" * big), b"mn\r\n", b"MN\r\n"
    return {"ms-q": ms_q, "ms-ma-md-q": ms_ma_md_q, "mg-q-misses": mg_q_miss,
            "big-ms-q": big_ms_q}


def binary_cases():
    zero = struct.pack(">II", 0, 0)

    def setq(n, big):
        k = b"bq%d" % n
        return (bin_request(0x11, key=k, value=b"hello", extras=zero), bin_request(0x00, key=k),
                b"hello")

    def addq_incrq_appendq_deleteq(n, big):
        k = b"ba%d" % n
        first = (bin_request(0x12, key=k, value=b"1", extras=zero)
                 + bin_request(0x15, key=k, extras=struct.pack(">QQI", 1, 0, 0))
                 + bin_request(0x19, key=k, value=b"0")
                 + bin_request(0x14, key=k))
        return first, bin_request(0x0A), b""

    def getq_misses(n, big):
        return (bin_request(0x09, key=b"nokey%d" % n) + bin_request(0x0D, key=b"nokey%d" % n),
                bin_request(0x0A), b"")

    def big_setq(n, big):
        return (bin_request(0x11, key=b"bb%d" % n, value=b"q" * big, extras=zero),
                bin_request(0x0A), b"")
    return {"setq": setq, "addq-incrq-appendq-deleteq": addq_incrq_appendq_deleteq,
            "getq-getkq-misses": getq_misses, "big-setq": big_setq}


SILENT_CASES = [(proto, name, fn) for proto, cases in
                (("text", text_cases()), ("meta", meta_cases()), ("binary", binary_cases()))
                for name, fn in cases.items()]


def silent_rounds(c, transport, proto, name, make):
    def one_round():
        first, second, want = make(next(SEQ), BIG[transport])
        c.send(first)
        c.send(second)  # a second write: Nagle holds it until `first` is ACKed
        if proto == "binary":
            r = bin_read(c)
            # nothing answered the silent requests: this is the second's reply
            assert (r["opcode"], r["status"], r["value"]) == (second[1], 0, want), r
        else:
            assert c.read_exact(len(want)) == want

    for _ in range(SILENT_ROUNDS):
        dt = 0.0
        for _ in range(SILENT_TRIES):
            t = time.perf_counter()
            one_round()
            dt = time.perf_counter() - t
            if dt < SILENT_LIMIT:
                break
        else:
            pytest.fail(f"{proto} {name} over {transport}, then a request in a second write "
                        f"(no TCP_NODELAY): "
                        f"{dt * 1000:.1f} ms, {SILENT_TRIES} times (limit "
                        f"{SILENT_LIMIT * 1000:.0f} ms)")


@pytest.mark.parametrize("proto,name,make", SILENT_CASES,
                         ids=[f"{p}-{n}" for p, n, _ in SILENT_CASES])
def test_no_reply_then_request_over_tcp(trap_server, proto, name, make):
    c = client(trap_server, False, proto)
    silent_rounds(c, "tcp", proto, name, make)
    c.close()


@pytest.fixture(scope="module")
def tls_trap_server(server_bin, tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not installed")
    from test_tls import make_pki, tls_flags
    pki = make_pki(tmp_path_factory)
    srv = Server(server_bin, tls_flags(pki) + ["-I", "2m", "-m", "256"],
                 workdir=str(tmp_path_factory.mktemp("trap-tls")))
    srv.start()
    srv.pki = pki
    yield srv
    srv.stop()


@pytest.mark.parametrize("proto,name,make", SILENT_CASES,
                         ids=[f"{p}-{n}" for p, n, _ in SILENT_CASES])
def test_no_reply_then_request_over_tls(tls_trap_server, proto, name, make):
    from test_tls import client_ctx, tls_connect
    c = tls_connect(tls_trap_server, client_ctx(tls_trap_server.pki), nodelay=False)
    for _ in range(20):  # leave the quick-ACK phase (the first byte picks the protocol)
        ping(c, proto)
    silent_rounds(c, "tls", proto, name, make)
    c.close()


# ---- a value, then its "\r\n" in a second write -----------------------------
#
# The request is incomplete until the "\r\n": the client's second write
# waits for the ACK of its first, as a command line's data does, whatever
# the size of the value (all of it read with the line, or not).

def crlf_cases():
    def text(size):
        def make(n, big):
            return (b"set cr%d 0 0 %d\r\n%s" % (n, size, b"c" * size), b"\r\n", b"STORED\r\n")
        return make

    def meta(size):
        def make(n, big):
            return b"ms cr%d %d\r\n%s" % (n, size, b"c" * size), b"\r\n", b"HD\r\n"
        return make
    return [(proto, f"{size}B-value-then-crlf", fn(size))
            for proto, fn in (("text", text), ("meta", meta)) for size in (5, 3000, 8000)]


CRLF_CASES = crlf_cases()


@pytest.mark.parametrize("proto,name,make", CRLF_CASES, ids=[f"{p}-{n}" for p, n, _ in CRLF_CASES])
def test_value_then_crlf_over_tcp(trap_server, proto, name, make):
    c = client(trap_server, False, proto)
    silent_rounds(c, "tcp", proto, name, make)
    c.close()


@pytest.mark.parametrize("proto,name,make", CRLF_CASES, ids=[f"{p}-{n}" for p, n, _ in CRLF_CASES])
def test_value_then_crlf_over_tls(tls_trap_server, proto, name, make):
    from test_tls import client_ctx, tls_connect
    c = tls_connect(tls_trap_server, client_ctx(tls_trap_server.pki), nodelay=False)
    for _ in range(20):
        ping(c, proto)
    silent_rounds(c, "tls", proto, name, make)
    c.close()


def test_memcached_reference_two_write_set(memcached_bin, tmp_path):
    """Informational: Debian's memcached 1.6.18 stalls ~44 ms on a two-write
    set from a Nagle client. Reported as xfail, never a failure."""
    srv = Server(memcached_bin, [], workdir=str(tmp_path))
    srv.start()
    try:
        c = client(srv, False, "text")
        times = []
        for _ in range(5):
            t = time.perf_counter()
            do_set(c, "text", b"ref", b"v", True)
            times.append(time.perf_counter() - t)
        c.close()
    finally:
        srv.stop()
    median = sorted(times)[len(times) // 2] * 1000
    if median >= LIMIT * 1000:
        pytest.xfail(f"memcached 1.6.18 two-write set: median {median:.1f} ms (the trap nodelay avoids)")
    print(f"memcached 1.6.18 two-write set: median {median:.1f} ms")
