"""lru_crawler metadump / mgdump stream every live key (memcached-tool dumps
and cache warmers rely on it); -X turns them off."""
import re

import pytest

from helpers import expect, target

LINE = re.compile(rb"key=(\S+) exp=(-1|\d+) la=\d+ cas=\d+ fetch=(yes|no) cls=\d+ size=\d+"
                  + expect(rb" flags=\d+", rb""))


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
    if target() != "memcached":
        assert c.call("lru_crawler mgdump all") == b"ERROR mgdump not allowed\r\n"
    assert c.call("stats cachedump 1 1") == b"CLIENT_ERROR stats cachedump not allowed\r\n"
