# SPDX-License-Identifier: BSD-3-Clause
"""Replies about an item on flash that depend on what memcached 1.6.45's
header item in RAM says of it (test_diff_fuzz_flash.py found each one):
its class in `me`, whether it was fetched, whether a request reads it
back into RAM (recache: only a read of the value, the second one), and
that a touch leaves it on flash. Each test runs on nodelay and, when
../shared/ref has it, on memcached 1.6.45 with the same expectations."""
import os
import re

import pytest

import diff_fuzz
import helpers
from test_diff_fuzz_flash import FLASH_OPTS, call, flash_server, put_on_flash

VALUE = b"v" * 1000
# memcached gives a recache up when the item's lock is busy (item_trylock),
# as it is while its storage thread looks at the COLD tail, every
# ext_max_sleep: at its default of a second, rarely (at 10 ms, a third of
# runs; at 1 s, 1 of 7); nodelay's idle flush then waits up to a second to
# start moving. recached() says which.
OPTS = FLASH_OPTS.replace("ext_max_sleep=10000", "ext_max_sleep=1000000")


def recached(srv, c, key):
    """Whether key is back in RAM (an append then works; it is not made on
    flash). memcached may have given the recache up (above): skipped."""
    got = call(c, b"append %s 0 0 1\r\nx\r\n" % key)
    if got == b"NOT_STORED\r\n" and srv.is_memcached:
        pytest.skip("memcached gave a recache up: the item's lock was busy")
    return got == b"STORED\r\n"


@pytest.fixture(params=["nodelay", "memcached-1.6.45"])
def srv(request, server_bin, tmp_path):
    if request.param == "nodelay":
        binary = server_bin
    else:
        binary = diff_fuzz.REF_1645
        if not os.access(binary, os.X_OK):
            pytest.skip(f"memcached 1.6.45 reference not found at {binary}")
    s = flash_server(binary, str(tmp_path), request.param, OPTS)
    if "no flash tier" in s.stderr():
        s.stop()
        pytest.skip("this build has no flash tier")
    left = put_on_flash([s], [b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(VALUE), VALUE)
                              for k in (b"k1", b"k2")], {b"k1", b"k2"})
    assert left == [set()], f"not on flash in {binary}: {left}"
    yield s
    s.proc.kill()
    s.proc.wait()
    helpers.drop_big_files(str(tmp_path))


def me(c, key):
    """`me`'s fields that do not depend on the clock."""
    line = call(c, b"me %s\r\n" % key)
    m = re.match(rb"ME \S+ exp=(\S+) la=\d+ cas=\d+ fetch=(\w+) cls=(\d+) size=(\d+)\r\n", line)
    assert m, line
    return m.group(1, 2, 3, 4)


def value_read(c, line):
    c.send(line)
    head = c.readline()
    assert head.startswith(b"VA 1000") or head.startswith(b"VALUE k"), head
    assert c.read_exact(len(VALUE) + 2) == VALUE + b"\r\n"
    if head.startswith(b"VALUE"):
        assert c.readline() == b"END\r\n"
    return head


def test_me_reports_the_header_and_fetches_nothing(srv):
    c = srv.connect()
    # the class of the 48-byte header, CAS, key and item_hdr memcached keeps
    for _ in range(3):  # me reads nothing: still unfetched, still there
        assert me(c, b"k1") == (b"-1", b"no", b"1", b"1061")
    assert value_read(c, b"mg k1 h v\r\n") == b"VA 1000 h0\r\n"
    assert me(c, b"k1") == (b"-1", b"yes", b"1", b"1061")
    assert call(c, b"append k1 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"  # still on flash


def test_the_second_read_of_the_value_brings_it_back(srv):
    c = srv.connect()
    assert call(c, b"mg k1 s\r\n") == b"HD s1000\r\n"  # no value: no read
    assert call(c, b"mg k1 s\r\n") == b"HD s1000\r\n"
    assert call(c, b"append k1 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"
    value_read(c, b"get k1\r\n")  # read twice before: back in RAM
    assert recached(srv, c, b"k1")
    # one in ext_recache_rate (2000) such reads on a connection brings it
    # back, the first: here the next ones do not
    value_read(c, b"mg k2 v\r\n")
    value_read(c, b"mg k2 v\r\n")
    assert call(c, b"append k2 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"
    c = srv.connect()  # a new connection's first
    value_read(c, b"mg k2 v\r\n")
    assert recached(srv, c, b"k2")


def test_a_touch_leaves_it_on_flash(srv):
    c = srv.connect()
    assert value_read(c, b"gat 1000 k1\r\n") == b"VALUE k1 0 1000\r\n"
    assert call(c, b"touch k2 1000\r\n") == b"TOUCHED\r\n"
    for key in (b"k1", b"k2"):
        exp, fetched, cls, _ = me(c, key)
        assert (int(exp) in (999, 1000), fetched, cls) == (True, b"yes", b"1")
        assert call(c, b"prepend %s 0 0 1\r\nx\r\n" % key) == b"NOT_STORED\r\n"
    assert re.match(rb"HD t(999|1000)\r\n", call(c, b"mg k1 t\r\n"))


def test_a_cas_that_differs_comes_first_and_fetches_nothing(srv):
    c = srv.connect()
    cas = int(re.search(rb" cas=(\d+)", call(c, b"me k1\r\n")).group(1))  # not a fetch
    assert call(c, b"cas k1 0 0 1 %d\r\nx\r\n" % (cas + 100)) == b"EXISTS\r\n"
    assert call(c, b"md k1 C%d\r\n" % (cas + 100)) == b"EX\r\n"
    assert call(c, b"mg k1 h\r\n") == b"HD h0\r\n"
    # append and prepend check the CAS before they refuse a flash item
    assert call(c, b"ms k1 1 MA C%d\r\nx\r\n" % (cas + 100)) == b"EX\r\n"
    assert call(c, b"ms k1 1 MP C%d\r\nx\r\n" % cas) == b"NS\r\n"
    assert call(c, b"ms k1 1 MA\r\nx\r\n") == b"NS\r\n"


def test_a_flush_after_the_read_began_misses(srv):
    """A read made ahead for a later request of the same packet, then
    flush_all before that request runs: it misses, as memcached's does."""
    c = srv.connect()
    # the flash fuzzer's seed 6 case 1705 and case 3233
    assert call(c, b"replace k1 1 -1 4294967295\r\n1\x002\r\n").startswith(b"CLIENT_ERROR")
    assert c.readline() == b"ERROR\r\n"
    c.send(b"flush_all 0\r\nget\tk1\tk2\r\r\nget k1 noreply\r\nmn\r\n")
    assert c.read_until(b"MN\r\n") == b"OK\r\nERROR\r\nEND\r\nMN\r\n"
    d = srv.connect()
    d.send(b"incr k2 +1\r\nflush_all 0\r\nk2\r\n")
    assert d.read_until(b"ERROR\r\n").endswith(b"OK\r\nERROR\r\n")
    assert call(d, b"incr k2 1\r\n") == b"NOT_FOUND\r\n"


def test_a_mark_stale_leaves_it_on_flash(srv):
    c = srv.connect()
    assert call(c, b"md k1 I T100\r\n") == b"HD\r\n"
    assert me(c, b"k1")[2] == b"1"  # still the header's class
    value_read(c, b"get k1\r\n")  # a get does not win the token
    assert call(c, b"mg k1 s\r\n") == b"HD s1000 X W\r\n"
    assert call(c, b"mg k1 s\r\n") == b"HD s1000 Z X\r\n"
    assert call(c, b"append k1 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"


def test_a_write_of_the_same_value_is_a_ram_item(srv):
    """A cas, replace or set that writes the value and flags the flash item
    has makes a new item in RAM, as memcached's does: an append then works."""
    c = srv.connect()
    cas = int(re.search(rb" cas=(\d+)", call(c, b"me k1\r\n")).group(1))
    assert call(c, b"cas k1 0 0 1000 %d\r\n%s\r\n" % (cas, VALUE)) == b"STORED\r\n"
    assert call(c, b"append k1 0 0 1\r\nx\r\n") == b"STORED\r\n"
    assert call(c, b"replace k2 0 100 1000\r\n%s\r\n" % VALUE) == b"STORED\r\n"
    assert call(c, b"append k2 0 0 1\r\nx\r\n") == b"STORED\r\n"
