# SPDX-License-Identifier: BSD-3-Clause
"""Segments on transparent huge pages (docs/store.md "Huge pages"): a cache
past its first 4 MiB of segments gets them, a small one keeps small pages,
and the values read back intact either way. Skips when THP is off here
(`never`), and for memcached, which has no such behaviour by default."""
import os
import time

import pytest

from helpers import Server

THP = "/sys/kernel/mm/transparent_hugepage/enabled"


def thp_mode():
    try:
        text = open(THP).read()
    except OSError:
        return None
    return text[text.index("[") + 1:text.index("]")]


def anon_huge_kb(pid):
    for line in open(f"/proc/{pid}/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0


def fill(conn, prefix, n, size):
    value = lambda i: (b"%s-%d-" % (prefix, i) * size)[:size]
    batch = b""
    for i in range(n):
        batch += b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, i, size, value(i))
        if len(batch) > 256 * 1024:
            conn.send(batch)
            batch = b""
    conn.send(batch)
    assert conn.call("mn", until=b"MN\r\n") == b"MN\r\n"
    return value


@pytest.fixture
def srv(server_bin, tmp_path):
    s = Server(server_bin, ["-m", "64"], workdir=str(tmp_path))
    if s.is_memcached:
        pytest.skip("memcached maps no huge pages unless -L asks")
    mode = thp_mode()
    if mode in (None, "never"):
        pytest.skip(f"transparent huge pages are {mode or 'absent'} on this machine")
    s.start()
    yield s
    s.stop()


def test_small_cache_keeps_small_pages(srv):
    c = srv.connect()
    value = fill(c, b"s", 200, 1000)  # 200 KB: well inside the first 4 MiB
    assert c.call("get s7", until=b"END\r\n") == b"VALUE s7 0 1000\r\n" + value(7) + b"\r\nEND\r\n"
    assert anon_huge_kb(srv.proc.pid) == 0


def test_large_cache_gets_huge_pages(srv):
    c = srv.connect()
    n, size = 24 * 1024, 1000  # 24 MiB of items: past 4 MiB, below -m 64
    value = fill(c, b"h", n, size)
    # The filler faults pages in ahead of need; the sets that came first
    # went to small pages, those after to huge ones. Should the sets have
    # outrun the filler, new keys take new segments, now with pages ready
    # (rewritten ones would reuse their own emptied segments: store.md
    # "Segments"): 8 MiB at a time, 56 MiB at most, still below -m 64.
    more, m = [], 8 * 1024
    while anon_huge_kb(srv.proc.pid) < 8 * 1024 and len(more) < 4:
        time.sleep(0.2)
        prefix = b"g%d-" % len(more)
        more.append((prefix, fill(c, prefix, m, size)))
    assert anon_huge_kb(srv.proc.pid) >= 8 * 1024
    for prefix, val, count in [(b"h", value, n)] + [(p, v, m) for p, v in more]:
        for i in (0, 1, count // 2, count - 1):
            got = c.call(b"get %s%d" % (prefix, i), until=b"END\r\n")
            assert got == b"VALUE %s%d 0 %d\r\n%s\r\nEND\r\n" % (prefix, i, size, val(i))
