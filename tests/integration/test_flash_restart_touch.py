# SPDX-License-Identifier: BSD-3-Clause
"""-e FILE with a flash tier: items on flash that a request touched or
marked stale (written to flash anew, pend_touched_back) come back after a
graceful restart with the expiry, CAS and stale mark they were given."""
import re
import time

import pytest

import helpers
from test_flash_restart import RAM_MB, VLEN, fill, flags, start, value_of
from test_restart import mem_file  # noqa: F401

pytestmark = pytest.mark.skipif(
    helpers.is_memcached(helpers.server_bin()),
    reason="nodelay's -e restore with its flash tier")


def flashed(c, keys):
    """Those of keys whose item is on flash: `me` gives the class of the
    header memcached keeps in RAM for one (1 here), a RAM item of VLEN
    bytes a larger one; `me` reads and changes nothing."""
    return [i for i in keys if re.search(rb" cls=1 ", c.call(f"me k:{i}"))]


def test_touched_and_marked_flash_items_survive_a_restart(start_server, mem_file, tmp_path):
    fl = flags(mem_file, tmp_path / "flash")
    srv = start(start_server, *fl)
    n = 3 * (RAM_MB << 20) // VLEN
    fill(srv, n)
    c = srv.connect(timeout=30)
    before = flashed(c, range(60))
    assert len(before) > 30, before
    # the first keys went to flash first: touch some, mark others stale
    want = {}
    for i in range(0, 60):
        if i % 3 == 0:
            assert c.call(f"touch k:{i} 100000") in (b"TOUCHED\r\n", b"NOT_FOUND\r\n")
        elif i % 3 == 1:
            assert c.call(f"md k:{i} I T50000") in (b"HD\r\n", b"NF\r\n")
    # written to flash anew, not kept in RAM
    assert flashed(c, range(60)) == before
    # (the first read of a value read before, on a connection, brings it
    # back to RAM: one such read, and the rest are still on flash)
    for i in range(0, 60):
        c.send(b"mg k:%d t c v f\r\n" % i)
        head = c.readline()
        if head.startswith(b"EN"):
            continue
        m = re.match(rb"VA (\d+) (.*)\r\n", head)
        assert m, head
        val = c.read_exact(int(m.group(1)) + 2)[:-2]
        assert val == value_of(i)
        fields = dict((f[:1], f[1:]) for f in m.group(2).split())
        want[i] = (fields[b"c"], fields[b"f"], b"X" in fields, int(fields[b"t"]),
                   time.monotonic())
    st = helpers.stats(c)
    c.close()
    assert len(want) > 30, len(want)
    srv.stop()
    srv = start(start_server, *fl)
    c = srv.connect(timeout=30)
    back = 0
    for i, (cas, fl_, stale, ttl, read_at) in want.items():
        c.send(b"mg k:%d t c v f\r\n" % i)
        head = c.readline()
        if head.startswith(b"EN"):
            continue
        back += 1
        m = re.match(rb"VA (\d+) (.*)\r\n", head)
        val = c.read_exact(int(m.group(1)) + 2)[:-2]
        assert val == value_of(i)
        fields = dict((f[:1], f[1:]) for f in m.group(2).split())
        assert (fields[b"c"], fields[b"f"], b"X" in fields) == (cas, fl_, stale), i
        # counted down by the time since it was read (the stop and start,
        # seconds under load), give or take the clocks' whole seconds
        down = time.monotonic() - read_at
        assert ttl - down - 2 <= int(fields[b"t"]) <= ttl + 2, (i, fields[b"t"], ttl, down)
    assert back > len(want) // 2, (back, len(want), st.get("extstore_objects_used"))
