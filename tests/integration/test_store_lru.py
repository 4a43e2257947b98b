# SPDX-License-Identifier: BSD-3-Clause
"""The store's eviction and reclaim rules next to memcached 1.6.45's:
-o temporary_ttl (memcached's TEMP LRU, issue 12.4) and when flushed items
count as `reclaimed` (issue 12.8). The reference binary lives in
../shared/ref (see its README); tests that need it skip without it."""
import math
import os
import re
import time

import pytest

import helpers
from helpers import ROOT, Server, is_memcached, stats

# $NODELAY_REF_DIR overrides it (a worktree elsewhere than beside ../shared)
REF = os.path.join(os.environ.get("NODELAY_REF_DIR", os.path.join(ROOT, "..", "shared", "ref")),
                   "memcached-1.6.45")
TEMP_FLAGS = ("-m", "2", "-o", "lru_maintainer,lru_crawler,temporary_ttl=61")
VALUE = b"x" * 66560


def ref_server(tmp_path, flags, shared=False):
    """memcached 1.6.45 started with flags, or skip. shared: the behaviour
    compared is 1.6.18's too, so Debian's memcached stands in when 1.6.45 is
    absent (helpers.ref_or_debian)."""
    ref = helpers.ref_or_debian(REF) if shared else REF
    if not os.access(ref, os.X_OK):
        pytest.skip("memcached 1.6.45 reference not found at ../shared/ref (see its README)")
    return Server(ref, list(flags), workdir=str(tmp_path)).start()


def canary_after_long_writes(srv, conn=None):
    """A TTL-30 canary, then 100 writes of the same size with TTL 3600 (the
    canary's bytes many times over at -m 2): what mg says of the canary."""
    c = conn or srv.connect()
    t0 = time.monotonic()
    assert c.store("set", "canary", VALUE, exptime=30) == b"STORED\r\n"
    for i in range(100):
        r = c.store("set", f"long{i}", VALUE, exptime=3600)
        assert r == b"STORED\r\n", f"{srv.binary}: set {i}: {r!r}"
    reply = c.call("mg canary s t")
    if conn is None:
        c.close()
    # The TTL left counts down while the writes run (over a second on a
    # loaded machine): a kept canary reads t30 minus the seconds that took,
    # give or take the clock's tick, and is returned as t30.
    m = re.fullmatch(rb"HD s(\d+) t(\d+)\r\n", reply)
    if m:
        left, spent = int(m.group(2)), math.ceil(time.monotonic() - t0)
        assert 30 - spent - 1 <= left <= 30, f"{srv.binary}: {reply!r} after {spent} s"
        reply = b"HD s%s t30\r\n" % m.group(1)
    return reply


def test_temporary_ttl_spares_short_lived_items(start_server, server_bin):
    if is_memcached(server_bin):
        pytest.skip("nodelay's own check; the 1.6.45 comparison is below")
    assert canary_after_long_writes(start_server(*TEMP_FLAGS)) == b"HD s66560 t30\r\n"
    # only when temporary_ttl is set, as memcached: else it is evicted first
    plain = start_server("-m", "2", "-o", "lru_maintainer,lru_crawler")
    assert canary_after_long_writes(plain) == b"EN\r\n"


def test_temporary_ttl_matches_memcached_1645(start_server, server_bin, tmp_path):
    ref = ref_server(tmp_path, TEMP_FLAGS, shared=True)
    try:
        want = canary_after_long_writes(ref)
    finally:
        ref.stop()
    assert want == b"HD s66560 t30\r\n"
    if not is_memcached(server_bin):
        assert canary_after_long_writes(start_server(*TEMP_FLAGS)) == want


def temp_items_still_evictable(srv):
    """When nothing but short-TTL items is left, writes still succeed."""
    c = srv.connect()
    replies = {c.store("set", f"t{i}", VALUE, exptime=20) for i in range(60)}
    c.close()
    return replies


def test_temporary_ttl_never_refuses_writes(start_server, server_bin):
    if is_memcached(server_bin):
        pytest.skip("nodelay's rule: short-TTL items are a last resort, not a refusal")
    assert temp_items_still_evictable(start_server(*TEMP_FLAGS)) == {b"STORED\r\n"}


def flush_then_counts(servers):
    """set, 2 s, flush_all on every server at once; then each server's
    (reclaimed + crawler_reclaimed, expired_unfetched, curr_items) once its
    flushed item is gone (polled for up to half a second)."""
    conns = [s.connect() for s in servers]
    for c in conns:
        assert c.set("fl", "v") == b"STORED\r\n"
    time.sleep(2.0)
    for c in conns:
        assert c.call("flush_all") == b"OK\r\n"
    out = []
    for c in conns:
        deadline = time.monotonic() + 0.5
        while True:
            st = stats(c)
            if st["curr_items"] == "0" or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        out.append((int(st["reclaimed"]) + int(st["crawler_reclaimed"]),
                    int(st["expired_unfetched"]), int(st["curr_items"])))
        # the key is free for a new value at once
        assert c.set("fl", "w") == b"STORED\r\n" and c.get("fl") == b"w"
        c.close()
    return out


@pytest.mark.slow
def test_flushed_items_reclaimed_soon(start_server, server_bin, tmp_path):
    """memcached's LRU maintainer reclaims a flushed item within a fraction of
    a second of flush_all, counting it `reclaimed` and, never fetched,
    `expired_unfetched` (lru_pull_tail); another of its threads sometimes
    gets there first and counts `crawler_reclaimed`, or nothing. nodelay's housekeeper did
    so only on its next one-second tick, and did not count
    expired_unfetched."""
    servers = [start_server()]
    if os.access(REF, os.X_OK):
        servers.append(Server(REF, [], workdir=str(tmp_path)).start())
    try:
        counts = flush_then_counts(servers)
    finally:
        for s in servers[1:]:
            s.stop()
    if not is_memcached(server_bin):
        assert counts[0] == (1, 1, 0)
    # every server has reclaimed it within the half second (which of
    # memcached's threads gets there, and so which counter it bumps, if
    # any, varies from run to run: seen 1/1, crawler_reclaimed, and none)
    assert all(c[2] == 0 for c in counts), counts


def test_lru_temp_ttl_at_run_time(start_server, tmp_path):
    """`lru temp_ttl 61` turns the same protection on in a running server
    (and a negative TTL off), as in memcached 1.6.45 when it is there."""
    servers = [start_server("-m", "2", "-o", "lru_maintainer,lru_crawler")]
    if os.access(REF, os.X_OK):
        servers.append(Server(REF, ["-m", "2", "-o", "lru_maintainer,lru_crawler"],
                              workdir=str(tmp_path)).start())
    try:
        for srv in servers:
            # one connection, so one worker: at -m 2 (two segments) another
            # worker's open segments could hold all of it (docs/store.md)
            c = srv.connect()
            assert c.call("lru temp_ttl 61") == b"OK\r\n"
            assert canary_after_long_writes(srv, c) == b"HD s66560 t30\r\n", srv.binary
            assert c.call("lru temp_ttl -1") == b"OK\r\n"
            assert c.call("flush_all") == b"OK\r\n"
            assert canary_after_long_writes(srv, c) == b"EN\r\n", srv.binary
            c.close()
    finally:
        for s in servers[1:]:
            s.stop()
