# SPDX-License-Identifier: BSD-3-Clause
"""A flash item read back for a request is that request's, whatever else
the request reads (store_flash.h: READY means the lookups see the item):
one multiget of more flash items than RAM holds answers every one of them;
and the item read back keeps its last access time, as memcached 1.6.45's
(`mg k l` after a read from extstore shows the seconds since the access
before, not 0)."""
import pytest

import helpers
from helpers import send_paced, start_flash, stats

RAM_MB = 8
FLASH_MB = 128
VLEN = 4000


def value_of(n):
    return (b"%07d:" % n) * (VLEN // 8)


def start(binary, tmp_path_factory):
    return start_flash(binary, tmp_path_factory.mktemp("ext"), RAM_MB, FLASH_MB, threads=1)


def fill(srv, n):
    """Keys r:0..n-1, paced (the flash writer keeps up)."""
    c = srv.connect(timeout=30)
    send_paced(c, [b"set r:%d 0 0 %d noreply\r\n%s\r\n" % (i, VLEN, value_of(i))
                   for i in range(n)], 32)
    return c


def test_one_multiget_of_more_flash_items_than_ram_holds(server_bin, tmp_path_factory):
    srv = start(server_bin, tmp_path_factory)
    try:
        n = 3 * (RAM_MB << 20) // VLEN
        c = fill(srv, n)
        # the first 1.5 x RAM of keys, all on flash now, in one request
        k = (3 * (RAM_MB << 20) // 2) // VLEN
        keys = [b"r:%d" % i for i in range(k)]
        c.send(b"get " + b" ".join(keys) + b"\r\n")
        hits, wrong = 0, 0
        for _ in range(k + 1):
            line = c.readline()
            if line == b"END\r\n":
                break
            key = line.split()[1]
            v = c.read_exact(int(line.split()[3]) + 2)[:-2]
            hits += 1
            wrong += v != value_of(int(key[2:]))
        assert wrong == 0
        st = stats(c)
        st.update(stats(c, "nodelay"))
        lost = sum(int(st.get(f, 0)) for f in
                   ("evictions", "extstore_slots_dropped", "extstore_index_dropped",
                    "extstore_objects_evicted"))
        # a miss only where the server counted one lost or another key's
        # flash entry took its tag's place (about 1 in 2048)
        assert hits >= k - lost - k // 500 - 1, f"{hits} of {k} hits, {lost} counted lost"
        c.close()
    finally:
        srv.stop()


def test_read_back_keeps_its_last_access_time(server_bin, tmp_path_factory):
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for debugtime")
    srv = start(binary, tmp_path_factory)
    try:
        c = srv.connect(timeout=30)
        assert c.call("debugtime p") == b"OK\r\n"
        v = value_of(0)
        c.send(b"set first 0 0 %d\r\n%s\r\n" % (len(v), v))
        assert c.readline() == b"STORED\r\n"
        assert c.call("debugtime 100") == b"OK\r\n"
        fill(srv, 3 * (RAM_MB << 20) // VLEN).close()
        assert int(stats(c)["extstore_objects_written"]) > 0
        # memcached: HD l<seconds since the set> h0 t-1
        line = c.call("mg first l h t")
        assert line.startswith(b"HD "), line
        f = {t[:1]: t[1:] for t in line.split()[1:]}
        assert int(f[b"l"]) >= 100, line
        assert f[b"h"] == b"0" and f[b"t"] == b"-1", line
        # it was on flash, and is still: memcached counts a read of flash
        # only for a request that sends the value
        assert int(stats(c)["get_extstore"]) == 0
        assert c.call("mg first s v").startswith(b"VA ")
        assert c.readline() == v + b"\r\n"
        assert int(stats(c)["get_extstore"]) == 1
        c.close()
    finally:
        srv.stop()
