"""Item memory as `stats slabs` total_malloced shows it (docs/store.md
"Expiry", "Stats and memcached's class lines"), beside memcached 1.6.45's
debug build where it is there (../shared/ref, or $NODELAY_REF + "-debug").

Expiry is moved with `debugtime` (both debug builds answer it), so nothing
here sleeps."""
import os

import pytest

import helpers
from helpers import stats

REF = os.environ.get("NODELAY_REF") or os.path.join(
    os.environ.get("NODELAY_REF_DIR") or os.path.join(helpers.ROOT, "..", "shared", "ref"),
    "memcached-1.6.45")
REF_DEBUG = REF + "-debug"

VALUE = "B" * 66560


@pytest.fixture
def debug_binary(server_bin):
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no server build answers debugtime (build CONFIG=debug)")
    return binary


def ref_debug():
    if not os.access(REF_DEBUG, os.X_OK):
        pytest.skip(f"{os.path.normpath(REF_DEBUG)} is absent: no 1.6.45 to compare with")
    return REF_DEBUG


def expired_round_trip(srv):
    """memcached's t/issue_14.t on a paused clock: ten 66,560-byte sets with
    TTL 2, four seconds, ten more. Returns total_malloced after each round
    and the plain stats after the second."""
    c = srv.connect()
    assert c.call("debugtime p") == b"OK\r\n"
    for i in range(10):
        assert c.set(f"key{i}", VALUE, exptime=2) == b"STORED\r\n"
    first = int(stats(c, "slabs")["total_malloced"])
    assert c.call("debugtime 4") == b"OK\r\n"
    for i in range(10, 20):
        assert c.set(f"key{i}", VALUE, exptime=2) == b"STORED\r\n"
    second = int(stats(c, "slabs")["total_malloced"])
    st = stats(c)
    c.call("debugtime r")
    c.close()
    return first, second, st


def test_expired_items_memory_is_reused(start_server, debug_binary):
    """issue_14.t subtest 21: the second round reuses the expired items'
    memory. They sat in the worker's open segment, which the second round
    filled up and followed with a new one (1 MiB -> 2 MiB); now the first
    write finds it spent and recycles it, counting the ten as reclaimed."""
    first, second, st = expired_round_trip(start_server(binary=debug_binary))
    assert first == second == 1 << 20
    assert int(st["curr_items"]) == 10
    assert int(st["reclaimed"]) == 10
    assert int(st["expired_unfetched"]) == 10
    assert int(st["get_expired"]) == 0
    assert int(st["evictions"]) == 0


def test_expired_items_memory_is_reused_as_1_6_45(start_server, debug_binary):
    ours = expired_round_trip(start_server(binary=debug_binary))
    ref = expired_round_trip(start_server(binary=ref_debug()))
    assert ours[0] == ours[1] and ref[0] == ref[1]
    assert ours[0] == ref[0]
    for name in ("curr_items", "evictions", "get_expired"):
        assert ours[2][name] == ref[2][name], name


def test_deleted_items_memory_is_reused(start_server):
    """The same for an open segment whose items were all deleted: the next
    write takes its room instead of a new segment's."""
    c = start_server().connect()
    for i in range(10):
        assert c.set(f"del{i}", VALUE) == b"STORED\r\n"
        assert c.call(f"delete del{i}") == b"DELETED\r\n"
    first = int(stats(c, "slabs")["total_malloced"])
    for i in range(10):
        assert c.set(f"new{i}", VALUE) == b"STORED\r\n"
    assert int(stats(c, "slabs")["total_malloced"]) == first == 1 << 20
    assert int(stats(c)["curr_items"]) == 10

