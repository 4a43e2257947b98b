# SPDX-License-Identifier: BSD-3-Clause
"""Expiry without sleeping: a debug build moves its clock with `debugtime`.

`debugtime p` pauses the server clock, `debugtime <n>` moves it n seconds on,
`debugtime r` lets it run again (memcached's debug-build commands)."""
import pytest

from helpers import stats


@pytest.fixture
def clk(debug_server):
    c = debug_server.connect()
    assert c.call("debugtime p") == b"OK\r\n"
    c.call("flush_all 0")

    def advance(n):
        assert c.call(f"debugtime {n}") == b"OK\r\n"

    c.advance = advance
    yield c
    c.call("debugtime r")
    c.close()


def test_relative_exptime(clk):
    clk.set("ex1", "v", exptime=10)
    clk.advance(9)
    assert clk.get("ex1") == b"v"
    clk.advance(2)
    assert clk.get("ex1") is None


def test_zero_never_expires(clk):
    clk.set("ex2", "v", exptime=0)
    clk.advance(100 * 86400)
    assert clk.get("ex2") == b"v"


def test_thirty_days_is_still_relative(clk):
    clk.set("ex3", "v", exptime=2592000)
    clk.advance(2592000 - 5)
    assert clk.get("ex3") == b"v"
    clk.advance(10)
    assert clk.get("ex3") is None


def test_absolute_exptime(clk):
    now = int(stats(clk)["time"])
    clk.set("ex4", "v", exptime=now + 20)
    clk.advance(15)
    assert clk.get("ex4") == b"v"
    clk.advance(10)
    assert clk.get("ex4") is None


def test_absolute_in_the_past_is_expired(clk):
    now = int(stats(clk)["time"])
    assert clk.set("ex5", "v", exptime=now - 100) == b"STORED\r\n"
    assert clk.get("ex5") is None
    # beyond 30 days but before the server started: already expired too
    assert clk.set("ex6", "v", exptime=2592001) == b"STORED\r\n"
    assert clk.get("ex6") is None


def test_touch_extends(clk):
    clk.set("ex7", "v", exptime=5)
    assert clk.call("touch ex7 100") == b"TOUCHED\r\n"
    clk.advance(50)
    assert clk.get("ex7") == b"v"
    assert clk.call("touch ex7 -1") == b"TOUCHED\r\n"
    assert clk.get("ex7") is None


def test_gat_updates_ttl(clk):
    clk.set("ex8", "v", exptime=5)
    assert clk.call("gat 100 ex8", until=b"END\r\n") == b"VALUE ex8 0 1\r\nv\r\nEND\r\n"
    clk.advance(50)
    assert clk.get("ex8") == b"v"


def test_expired_counts_and_add_over_expired(clk):
    clk.set("ex9", "v", exptime=1)
    clk.advance(3)
    before = int(stats(clk)["get_expired"])
    assert clk.get("ex9") is None
    assert int(stats(clk)["get_expired"]) == before + 1
    assert clk.store("add", "ex9", "w") == b"STORED\r\n"


def test_flush_all_delay(clk):
    clk.set("fd1", "v")
    assert clk.call("flush_all 2") == b"OK\r\n"
    assert clk.get("fd1") == b"v"
    clk.advance(3)
    assert clk.get("fd1") is None
    # items stored after the flush time are visible
    clk.set("fd2", "w")
    assert clk.get("fd2") == b"w"


def test_flush_counts_get_flushed(clk):
    """An item older than the second before the flush stays until read (or
    reclaimed): the read counts get_flushed."""
    clk.set("fd3", "v")
    clk.advance(2)
    clk.call("flush_all")
    before = int(stats(clk)["get_flushed"])
    assert clk.get("fd3") is None
    assert int(stats(clk)["get_flushed"]) == before + 1


def test_flush_unlinks_its_second_at_once(clk):
    """memcached 1.6.45 (its do_item_flush_expired): an immediate flush_all
    unlinks the items accessed in its second and the one before there and
    then, uncounted, so a read right after it is a plain miss (1.6.18 left
    them to be read as get_flushed)."""
    clk.set("fd4", "v")
    clk.advance(1)
    clk.set("fd5", "v")
    before = stats(clk)
    assert clk.call("flush_all") == b"OK\r\n"
    assert int(stats(clk)["curr_items"]) == int(before["curr_items"]) - 2
    assert clk.get("fd4") is None
    assert clk.get("fd5") is None
    after = stats(clk)
    assert int(after["get_flushed"]) == int(before["get_flushed"])
    assert int(after["get_misses"]) == int(before["get_misses"]) + 2
    # stored after the flush in its second: kept
    clk.set("fd6", "w")
    assert clk.get("fd6") == b"w"


def test_flush_without_cas(start_server, server_bin):
    """-C: the flush keeps a store made after it in its own second, as with
    CAS (1.6.45; 1.6.18 lost it), and flush_all 2 hides what is stored up
    to the second before its time."""
    import helpers
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no server build answers debugtime (build CONFIG=debug)")
    c = start_server("-C", binary=binary).connect()
    assert c.call("debugtime p") == b"OK\r\n"
    c.set("nc1", "old")
    assert c.call("flush_all") == b"OK\r\n"
    assert c.get("nc1") is None
    c.set("nc1", "new")
    assert c.get("nc1") == b"new"
    assert c.call("flush_all 2") == b"OK\r\n"
    c.set("nc2", "v")
    assert c.call("debugtime 1") == b"OK\r\n"
    c.set("nc3", "v")
    assert c.call("debugtime 1") == b"OK\r\n"
    c.set("nc4", "v")
    assert c.call("debugtime 1") == b"OK\r\n"
    assert [c.get(k) for k in ("nc1", "nc2", "nc3", "nc4")] == [None, None, None, b"v"]
    c.call("debugtime r")


def test_expired_items_reclaimed_without_reads(clk):
    """Expired items are reclaimed by the store itself, not only when read."""
    import time
    # Earlier tests' items on this server may be reclaimed meanwhile (already
    # expired by the debug clock): judge by the count with ours in it.
    for i in range(200):
        clk.set(f"rc{i}", "v" * 100, exptime=2)
    full = int(stats(clk)["curr_items"])
    assert full >= 200
    clk.advance(5)
    clk.call("debugtime r")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if int(stats(clk)["curr_items"]) <= full - 200:
            break
        time.sleep(0.2)
    assert int(stats(clk)["curr_items"]) <= full - 200


def test_clock_moved_inside_one_read(clk):
    """A read's requests run at one time (clock_hold), but a debugtime among
    them moves it for those after it, and a flush_all among them flushes
    for those after it."""
    clk.send(b"set inr 0 10 1\r\nv\r\nget inr\r\ndebugtime 11\r\nget inr\r\n"
             b"set inr2 0 0 1\r\nw\r\nget inr2\r\nflush_all\r\nget inr2\r\n")
    want = (b"STORED\r\nVALUE inr 0 1\r\nv\r\nEND\r\nOK\r\nEND\r\n"
            b"STORED\r\nVALUE inr2 0 1\r\nw\r\nEND\r\nOK\r\nEND\r\n")
    assert clk.read_exact(len(want)) == want


def test_last_access_past_the_segments_seconds(clk):
    """An item's access time is kept in 2 bytes relative to its segment:
    seconds for its first 4,096, then 64-second steps (docs/store.md
    "Items"). A write is always exact, a hit's bump at most 63 seconds
    early, and `flush_all` then hides only what it should."""
    def la(key):
        line = clk.call(f"mg {key} l")
        assert line.startswith(b"HD l"), line
        return int(line[4:])

    clk.set("la1", "v")
    assert clk.call("mg la1 l u") == b"HD l0\r\n"
    clk.advance(5000)
    assert la("la1") == 5000  # the first fetch marks it fetched, no bump
    assert la("la1") == 5000  # this one bumps it
    assert 0 <= la("la1") <= 63
    # a write into the same (now old) segment keeps its second
    clk.set("la2", "v")
    assert clk.call("mg la2 l u") == b"HD l0\r\n"
    clk.advance(7)
    assert clk.call("mg la2 l u") == b"HD l7\r\n"
    # a flush_all hides both; a set after it is seen at once
    assert clk.call("flush_all") == b"OK\r\n"
    clk.advance(1)
    assert clk.get("la1") is None and clk.get("la2") is None
    clk.set("la3", "v")
    assert clk.get("la3") == b"v"
    assert clk.call("mg la3 l u") == b"HD l0\r\n"
