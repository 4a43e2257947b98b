# SPDX-License-Identifier: BSD-3-Clause
"""lru_crawler metadump / mgdump stream every live key (memcached-tool dumps
and cache warmers rely on it); -X turns them off."""
import re

import pytest

from helpers import expect, target

# 1.6.45 adds flags= and ends the line with a space before its bare newline
LINE = re.compile(rb"key=(\S+) exp=(-1|\d+) la=\d+ cas=\d+ fetch=(yes|no) cls=\d+ size=(\d+)"
                  + expect(rb" flags=\d+ ", rb""))


def test_metadump_lists_every_key(start_server):
    c = start_server().connect()
    keys = [f"dk{i}" for i in range(300)] + ["dk/slash", "dk%pct"]
    c.send("".join(f"set {k} {i} {0 if i % 2 else 1000} 1 noreply\r\nv\r\n"
                   for i, k in enumerate(keys)).encode())
    assert c.call("version").startswith(b"VERSION")
    c.get("dk0")
    c.send(b"lru_crawler metadump all\r\n")
    raw = c.read_until(b"END\r\n")
    if target() != "memcached":
        assert raw.startswith(b"OK\r\n"), raw[:80]
        raw = raw[4:]
    lines = raw[:-len(b"END\r\n")].split(b"\n")
    assert lines[-1] == b""
    seen = {}
    for line in lines[:-1]:
        m = LINE.fullmatch(line)
        assert m, line
        seen[m.group(1)] = m
    from urllib.parse import quote
    want = {quote(k, safe="").encode() for k in keys}
    assert want <= set(seen), sorted(want - set(seen))[:5]
    assert seen[b"dk0"].group(3) == b"yes"
    assert seen[b"dk1"].group(2) == b"-1"
    assert seen[b"dk0"].group(2) != b"-1"
    # size= is memcached's item size: 48-byte header, CAS, key + NUL,
    # value + CRLF, 4 bytes of non-zero flags
    assert seen[b"dk0"].group(4) == str(48 + 8 + 4 + 3).encode()
    assert seen[b"dk1"].group(4) == str(48 + 8 + 4 + 3 + 4).encode()


def test_mgdump_lists_every_key(start_server):
    if target() == "memcached":
        pytest.skip("memcached 1.6.18 has no mgdump")
    c = start_server().connect()
    keys = [f"mk{i}" for i in range(100)]
    c.send("".join(f"set {k} 0 0 1 noreply\r\nv\r\n" for k in keys).encode())
    assert c.call("version").startswith(b"VERSION")
    c.send(b"lru_crawler mgdump all\r\n")
    raw = c.read_until(b"EN\r\n")
    assert raw.startswith(b"OK\r\n")
    got = set(re.findall(rb"^mg (\S+)\r$", raw, re.M))
    assert {k.encode() for k in keys} <= got


def test_dump_disabled_by_X(start_server):
    c = start_server("-X").connect()
    assert c.call("lru_crawler metadump all") == b"ERROR metadump not allowed\r\n"
    # 1.6.45's wording (1.6.18 has no mgdump: ERROR)
    for arg in ("all", "hash", "1", "bogus"):
        assert c.call("lru_crawler mgdump " + arg) == expect(b"ERROR key dump not allowed\r\n",
                                                             b"ERROR\r\n")
    assert c.call("stats cachedump 1 1") == b"CLIENT_ERROR stats cachedump not allowed\r\n"


def test_mgdump_replay_of_binary_keys_changes_only_them(start_server):
    """Keys that are not plain tokens (stored with b: `x\\r\\nflush_all`, a
    space) are dumped base64 with b, as 1.6.45 does; replaying the dump -
    what it is for - then touches those keys only: nothing is flushed, no
    other request runs."""
    if target() == "memcached":
        pytest.skip("memcached 1.6.18 has no mgdump")
    import base64
    c = start_server().connect()
    odd = [b"x\r\nflush_all", b"a b", b"tab\tkey", b"\x01ctl", b"hi\xff"]
    for i, k in enumerate(odd):
        assert c.call(b"ms " + base64.b64encode(k) + b" 2 b\r\nv%d" % i) == b"HD\r\n"
    for i in range(20):
        assert c.call(b"set plain%d 0 0 2\r\np%d" % (i, i % 10)) == b"STORED\r\n"
    c.send(b"lru_crawler mgdump all\r\n")
    raw = c.read_until(b"EN\r\n")
    assert raw.startswith(b"OK\r\n")
    lines = raw[4:-4].split(b"\r\n")[:-1]
    assert len(lines) == len(odd) + 20, lines
    b64 = {base64.b64decode(l[3:-2]) for l in lines if l.endswith(b" b")}
    assert b64 == set(odd)
    assert all(re.fullmatch(rb"mg [!-~]+( b)?", l) for l in lines), lines
    # replay on a second connection, as a warmer would: one reply per line
    replay = b"".join(l + b" v\r\n" for l in lines) + b"mn\r\n"
    c.send(replay)
    out = c.read_until(b"MN\r\n")
    assert out.count(b"VA 2") == len(lines), out
    assert b"OK" not in out and b"ERROR" not in out
    # nothing else happened: every key still holds its value
    for i, k in enumerate(odd):
        assert c.call(b"mg " + base64.b64encode(k) + b" b v", until=b"\r\n") == b"VA 2\r\n"
        assert c.read_until(b"\r\n") == b"v%d\r\n" % i
    for i in range(20):
        assert c.get("plain%d" % i) == b"p%d" % (i % 10)
