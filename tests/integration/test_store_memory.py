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


def ref_release():
    if not os.access(REF, os.X_OK):
        pytest.skip(f"{os.path.normpath(REF)} is absent: no 1.6.45 to compare with")
    return REF


def initial_malloc_run(srv):
    """memcached's t/64bit.t, then a cache_memlimit: the hook's bytes stay
    counted against the raised limit."""
    c = srv.connect()
    out = []
    sl = stats(c, "slabs")
    out.append((sl["total_malloced"], sl["active_slabs"], stats(c)["limit_maxbytes"]))
    big = "a" * (400 * 1024)
    out += [c.set(f"big{i}", big) for i in range(1, 6)]
    sl = stats(c, "slabs")
    out.append((sl["total_malloced"], sl["active_slabs"]))
    out.append(c.call("cache_memlimit 4100"))
    out.append(c.set("big9", big))
    out.append(stats(c, "slabs")["total_malloced"])
    c.close()
    return out


@pytest.mark.parametrize("initial", ["4294967328", "5000000000"])
def test_initial_malloc_hook_as_1_6_45(start_server, initial):
    """T_MEMD_INITIAL_MALLOC (memcached's test hook, with its 64bit.t's
    T_MEMD_SLABS_ALLOC=0, which 1.6.45 does not read): total_malloced starts
    at it, -m's rest holds one segment (one 1 MiB page in memcached), so the
    third 400 KiB set under -M is refused; past -m (5e9) the first one is
    still granted, as memcached grants a class its first page."""
    env = dict(os.environ, T_MEMD_INITIAL_MALLOC=initial, T_MEMD_SLABS_ALLOC="0")
    ours = initial_malloc_run(start_server("-m", "4098", "-M", env=env))
    assert ours[0] == (initial, "0", "4297064448")
    assert ours[1:3] == [b"STORED\r\n"] * 2
    assert ours[3] == b"SERVER_ERROR out of memory storing object\r\n"
    assert ours[6] == (str(int(initial) + (1 << 20)), "1")
    ref = initial_malloc_run(start_server("-m", "4098", "-M", env=env, binary=ref_release()))
    assert ours == ref
