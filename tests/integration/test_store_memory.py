# SPDX-License-Identifier: BSD-3-Clause
"""Item memory as `stats slabs` total_malloced shows it (docs/store-expiry.md
"Expiry", docs/observability.md "Size classes"), beside memcached 1.6.45's
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
    """Beside 1.6.45 with -o no_modern, where its allocations reclaim the
    expired items from the LRU tail themselves. (With its LRU maintainer on
    a moved clock, 1.6.45 sometimes takes a second page: its maintainer
    had not reclaimed them yet; issue_14.t sleeps instead.) Its page there
    is a class's chunks, not 1 MiB."""
    ours = expired_round_trip(start_server("-o", "no_modern", binary=debug_binary))
    ref = expired_round_trip(start_server("-o", "no_modern", binary=ref_debug()))
    assert ours[0] == ours[1] and ref[0] == ref[1]
    for name in ("curr_items", "evictions", "get_expired", "reclaimed", "expired_unfetched"):
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


def test_rewritten_keys_reuse_their_segments(start_server):
    """Below -m, a segment whose items were all overwritten is taken by the
    next segment a write needs, before fresh memory is mapped: 20 keys of
    100 KiB rewritten 100 times (200 MB of sets) stay in a few segments, not
    in all of -m 64 (docs/store.md "Segments")."""
    c = start_server("-m", "64").connect()
    big = "v" * (100 * 1024)
    for _ in range(100):
        for i in range(20):
            assert c.set(f"re{i}", big) == b"STORED\r\n"
    assert int(stats(c, "slabs")["total_malloced"]) <= 16 << 20
    assert int(stats(c)["curr_items"]) == 20
    assert c.call("get re7", until=b"END\r\n") == b"VALUE re7 0 %d\r\n%s\r\nEND\r\n" % (
        len(big), big.encode())


def ref_release(shared=False):
    """memcached 1.6.45, or skip. shared: the behaviour compared is 1.6.18's
    too, so Debian's memcached stands in when 1.6.45 is absent."""
    ref = helpers.ref_or_debian(REF) if shared else REF
    if not os.access(ref, os.X_OK):
        pytest.skip(f"{os.path.normpath(REF)} is absent: no 1.6.45 to compare with")
    return ref


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
    ref = initial_malloc_run(start_server("-m", "4098", "-M", env=env, binary=ref_release(shared=True)))
    assert ours == ref


RECLAIM_STATS = ("reclaimed", "expired_unfetched", "get_flushed", "get_expired", "curr_items")


def flush_then_set(srv, flat_at_run_time=False, expire=True):
    """memcached's t/issue_183.t on a paused clock: set, two seconds,
    flush_all, the same set again; then (expire) an expired key of a size
    class of its own, so it is that class's LRU tail in memcached, added
    again."""
    c = srv.connect()
    assert c.call("debugtime p") == b"OK\r\n"
    if flat_at_run_time:
        assert c.call("lru mode flat") == b"OK\r\n"
    assert c.set("key", "1") == b"STORED\r\n"
    assert c.call("debugtime 2") == b"OK\r\n"
    assert c.call("flush_all") == b"OK\r\n"
    assert c.set("key", "1") == b"STORED\r\n"
    st = stats(c)
    out = [{k: st[k] for k in RECLAIM_STATS}]
    if expire:
        assert c.set("exp", "x" * 2000, exptime=1) == b"STORED\r\n"
        assert c.call("debugtime 2") == b"OK\r\n"
        assert c.store("add", "exp", "y" * 2000) == b"STORED\r\n"
        st = stats(c)
        out.append({k: st[k] for k in RECLAIM_STATS})
    c.call("debugtime r")
    c.close()
    return out


def test_flat_lru_set_reclaims_flushed_item(start_server, debug_binary):
    """issue_183.t subtest 5: with -o no_modern (no segmented LRU) the
    second set counts the flushed item reclaimed at once, as memcached's
    allocation reclaims it from the LRU tail; it counted get_flushed."""
    got = flush_then_set(start_server("-o", "no_modern", binary=debug_binary))
    assert got[0] == {"reclaimed": "1", "expired_unfetched": "1", "get_flushed": "0",
                      "get_expired": "0", "curr_items": "1"}


@pytest.mark.parametrize("flags,flat", [
    (("-o", "no_modern"), False),
    (("-o", "no_lru_maintainer"), False),
    ((), True),    # `lru mode flat` at run time
])
def test_flat_lru_counts_as_1_6_45(start_server, debug_binary, flags, flat):
    """The same counts as 1.6.45's debug build, in each way of running it
    without its segmented LRU."""
    ours = flush_then_set(start_server(*flags, binary=debug_binary), flat)
    ref = flush_then_set(start_server(*flags, binary=ref_debug()), flat)
    assert ours == ref


def test_segmented_lru_set_counts_get_flushed(start_server, debug_binary):
    """With the segmented LRU (the default) the set finds the flushed item
    itself and counts get_flushed, as 1.6.45's do_store_item does when its
    LRU maintainer has not reclaimed the item first (it does within about
    0.2 s, sometimes sooner: so this is not compared with it); nodelay's
    housekeeper reclaims 100 ms after the flush."""
    got = flush_then_set(start_server(binary=debug_binary), expire=False)
    assert got[0] == {"reclaimed": "0", "expired_unfetched": "0", "get_flushed": "1",
                      "get_expired": "0", "curr_items": "1"}


def test_touch_with_no_room_for_the_ttl_is_refused_not_a_miss(start_server):
    """-M, full: an item stored without an expiry needs a copy with room for
    one to take a TTL, and when none can be made the touch, gat, mg T and
    binary TOUCH / GAT are refused for memory, as a write is; never answered
    as a miss of a key that is there (which a client would act on). The
    item keeps its old expiry (docs/compat-differences.md: memcached, whose
    items all hold one, touches it)."""
    srv = start_server("-m", "8", "-M")
    if helpers.is_memcached(srv.binary):
        pytest.skip("memcached touches it: nodelay refuses for memory")
    c = srv.connect()
    for i in range(5):
        assert c.set(f"k{i}", "hello") == b"STORED\r\n"
    # keys with an expiry already (a gat of them needs no room), for a gat
    # that pauses (2,048 keys a turn) before it meets k0
    many = 2100
    c.send(b"".join(b"set a%d 0 1000 1 noreply\r\nx\r\n" % i for i in range(many)))
    assert c.call("mn") == b"MN\r\n"
    helpers.fill_until_refused(c, 60000)
    oom = b"SERVER_ERROR out of memory storing object\r\n"
    assert c.call("touch k0 1000") == oom
    assert c.call("gat 1000 k1") == oom
    assert c.call("mg k2 T1000 v") == oom
    b = srv.connect()  # a connection speaks the protocol of its first byte
    for op, key in ((0x1C, b"k3"), (0x1D, b"k4")):  # TOUCH, GAT
        b.send(helpers.bin_request(op, key=key, extras=b"\x00\x00\x03\xe8"))
        assert helpers.bin_read(b)["status"] == 0x82
    # a paused gat ends the values it sent before the error: a whole reply
    c.send(b"gat 2000 " + b" ".join(b"a%d" % i for i in range(many)) + b" k0\r\n")
    got = c.read_until(oom)
    values = got[:-len(oom)]
    assert values.count(b"VALUE ") == values.count(b" 0 1\r\nx\r\n") > 0, values[-200:]
    assert values.endswith(b"\r\nx\r\n") or not values
    assert c.call("mn") == b"MN\r\n"
    for i in range(5):  # all still there, with no expiry
        assert c.call(f"mg k{i} v t", until=b"hello\r\n") == b"VA 5 t-1\r\nhello\r\n"


def rss_mib(srv):
    with open(f"/proc/{srv.proc.pid}/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS")) / 1024


@pytest.mark.skipif(helpers.is_memcached(helpers.server_bin()), reason="nodelay's segment table")
def test_vast_cache_memlimit_costs_nothing_until_filled(start_server):
    """cache_memlimit 2592000 (2.5 TB) is taken at once, as 1.6.45 takes it,
    with no memory: the segments' headers are made as segments are first
    used, not for every one the limit allows (1.6 GB of them, made under
    the pool's lock while every writer waited)."""
    srv = start_server("-m", "64")
    c = srv.connect()
    before = rss_mib(srv)
    assert c.call(b"cache_memlimit 2592000") == b"OK\r\n"
    assert c.call(b"set vast 0 0 1\r\nx") == b"STORED\r\n"
    assert stats(c)["limit_maxbytes"] == str(2592000 << 20)
    assert rss_mib(srv) - before < 64, (before, rss_mib(srv))
    # and lowered again, the cache goes on in its segments
    assert c.call(b"cache_memlimit 8") == b"OK\r\n"
    assert c.call(b"get vast", until=b"END\r\n") == b"VALUE vast 0 1\r\nx\r\nEND\r\n"
