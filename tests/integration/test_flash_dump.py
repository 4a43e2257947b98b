# SPDX-License-Identifier: BSD-3-Clause
"""lru_crawler metadump and mgdump list the items on flash as well as those
in RAM (docs/store-flash.md "Dumps"), as memcached 1.6.45 does: a dump
that starts from them (memcached-tool's, a key migration) loses none.
The dump reads the flash segments with the worker's asynchronous reads,
a part at a time; items deleted or overwritten are never listed as they
were, segments dropped under the dump are skipped, and a device error
ends the dump (END), counted."""
import os
import re
import threading
import time

import pytest

from helpers import Server, drop_big_files, is_memcached, send_paced, server_bin, stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF_BIN = os.environ.get("NODELAY_REF") or os.path.join(ROOT, "..", "shared", "ref",
                                                        "memcached-1.6.45")

LINE = re.compile(rb"key=(\S+) exp=(-1|\d+) la=\d+ cas=\d+ fetch=(yes|no) cls=(\d+) "
                  rb"size=(\d+) flags=(\d+)( ext_page=\d+ ext_offset=\d+)? ")

pytestmark = pytest.mark.skipif(is_memcached(server_bin()),
                                reason="nodelay's flash tier (memcached's: the differential)")


def key_of(i):
    # lengths from 2 to 241: the header class memcached reports moves with them
    return b"k%d" % i + b"y" * (i % 240)


def fill(c, n, size=4000, flags=lambda i: i % 2, exp=lambda i: 0):
    reqs = [b"set %s %d %d %d noreply\r\n%s\r\n" % (key_of(i), flags(i), exp(i), size,
                                                   b"%d" % i + b"x" * (size - len(b"%d" % i)))
            for i in range(n)]
    send_paced(c, reqs, 50)


def metadump(c, arg="all"):
    """key -> list of (exp, fetch, cls, size, flags, on flash) per line."""
    c.send(b"lru_crawler metadump %s\r\n" % arg.encode())
    raw = c.read_until(b"END\r\n")
    assert raw.startswith(b"OK\r\n"), raw[:80]
    body = raw[4:-len(b"END\r\n")]
    out = {}
    for line in body.split(b"\n")[:-1]:
        m = LINE.fullmatch(line)
        assert m, line
        out.setdefault(m.group(1), []).append(
            (m.group(2), m.group(3), int(m.group(4)), int(m.group(5)), int(m.group(6)),
             m.group(7) is not None))
    return out


def mc_size(nkey, nvalue, flags):
    return 48 + 8 + nkey + 1 + nvalue + 2 + (4 if flags else 0)


def flash_server(start_server, tmp_path, ram="16", size="64m", *extra):
    srv = start_server("-m", ram, "-t", "1", "-o", f"ext_path={tmp_path}/flash:{size}", *extra)
    if "no flash tier" in srv.stderr():
        pytest.skip("this build has no flash tier")
    return srv


def settle(c, want):
    """Wait until the idle flush has moved `want` items to flash and every
    full segment is on the device: a dump copies a segment still queued for
    the writer thread from its buffer, reading nothing (a writer behind on
    a loaded machine left the whole fill there)."""
    deadline = time.monotonic() + 20
    while True:
        st = stats(c)
        if int(st["extstore_objects_used"]) >= want and st["extstore_io_queue"] == "0":
            return
        assert time.monotonic() < deadline, st
        time.sleep(0.05)


def test_dump_lists_ram_and_flash_items_once(start_server, tmp_path):
    srv = flash_server(start_server, tmp_path, "16", "64m", "-o", "ext_item_age=0")
    c = srv.connect()
    fill(c, 2000)
    settle(c, 2000)
    # then RAM-only items: under ext_item_size, they never go
    small = [b"small%d" % i for i in range(100)]
    send_paced(c, [b"set %s 3 0 5 noreply\r\nhello\r\n" % k for k in small], 50)
    st = stats(c)
    assert int(st["evictions"]) == 0 and int(st["curr_items"]) == 2100, st
    d = metadump(c)
    want = {key_of(i) for i in range(2000)} | set(small)
    assert set(d) == want, (len(set(d)), sorted(want - set(d))[:5])
    assert all(len(v) == 1 for v in d.values()), [k for k, v in d.items() if len(v) > 1][:5]
    flashed = [k for k, v in d.items() if v[0][5]]
    assert len(flashed) >= 1900, len(flashed)
    for i in (0, 1, 77, 1999):
        k = key_of(i)
        exp, fetch, cls, size, flags, ext = d[k][0]
        assert (exp, fetch, flags, ext) == (b"-1", b"no", i % 2, True)
        assert size == mc_size(len(k), 4000, i % 2)
        # memcached's header for a flash item: 48 + CAS + key + NUL + 12
        # bytes (+ 4 of flags) in its class
        assert cls >= 1
    assert d[b"small0"][0][2:5] == (1, mc_size(6, 5, 3), 3)
    # class filter: the header's class, as memcached's crawler walks it
    only1 = metadump(c, "1")
    assert set(only1) == {k for k, v in d.items() if v[0][2] == 1}
    # and it still answers
    assert c.call("version").startswith(b"VERSION")


def test_mgdump_lists_flash_keys(start_server, tmp_path):
    srv = flash_server(start_server, tmp_path, "16", "64m", "-o", "ext_item_age=0")
    c = srv.connect()
    fill(c, 1500)
    settle(c, 1500)
    c.send(b"lru_crawler mgdump all\r\n")
    raw = c.read_until(b"EN\r\n")
    assert raw.startswith(b"OK\r\n")
    got = re.findall(rb"^mg (\S+)\r$", raw, re.M)
    assert sorted(got) == sorted(key_of(i) for i in range(1500))


def test_dump_skips_deleted_and_overwritten_flash_items(start_server, tmp_path):
    srv = flash_server(start_server, tmp_path, "16", "64m", "-o", "ext_item_age=0")
    c = srv.connect()
    fill(c, 1500)
    settle(c, 1500)
    gone = [key_of(i) for i in range(0, 1500, 5)]
    newer = [key_of(i) for i in range(1, 1500, 5)]
    send_paced(c, [b"delete %s noreply\r\n" % k for k in gone], 50)
    send_paced(c, [b"set %s 7 0 4100 noreply\r\n%s\r\n" % (k, b"n" * 4100) for k in newer], 50)
    d = metadump(c)
    assert not set(gone) & set(d)
    for k in newer:
        assert len(d[k]) == 1, (k, d[k])
        assert d[k][0][3:5] == (mc_size(len(k), 4100, 7), 7), (k, d[k])
    assert len(d) == 1500 - len(gone)
    assert all(len(v) == 1 for v in d.values())
    # the overwritten ones go to flash again (the idle flush): still once
    settle(c, 1500 - len(gone))
    d = metadump(c)
    assert all(len(v) == 1 for v in d.values())
    assert all(d[k][0][3:5] == (mc_size(len(k), 4100, 7), 7) for k in newer)


def dump_under_churn(srv):
    """Sets and deletes from another connection while a slow client dumps,
    on a flash file small enough that segments are compacted and dropped
    under the dump: it ends, and lists no key deleted before it began, no
    key never set, no line that does not parse. Returns the segments freed
    while it ran."""
    c = srv.connect(timeout=60)
    fill(c, 2500, size=3000)
    settle(c, 2400)
    gone = {key_of(i) for i in range(0, 2500, 3)}
    send_paced(c, [b"delete %s noreply\r\n" % k for k in sorted(gone)], 50)
    stop = threading.Event()
    written = set()

    def churn():
        w = srv.connect(timeout=60)
        i = 0
        while not stop.is_set() and i < 6000:  # 18 MB: more than the file
            reqs = []
            for _ in range(50):
                k = b"churn%d" % (i % 3000)
                written.add(k)
                reqs.append(b"set %s 0 0 3000 noreply\r\n%s\r\n" % (k, b"c" * 3000))
                if i % 4 == 0:
                    reqs.append(b"delete churn%d noreply\r\n" % ((i * 7) % 3000))
                i += 1
            send_paced(w, reqs, len(reqs))
        w.close()

    def freed(st):
        return sum(int(st[k]) for k in ("extstore_page_reclaims", "extstore_page_evictions"))

    t = threading.Thread(target=churn)
    t.start()
    try:
        before = freed(stats(c))
        c.send(b"lru_crawler metadump all\r\n")
        raw = b""
        deadline = time.monotonic() + 120
        while not raw.endswith(b"END\r\n"):
            assert time.monotonic() < deadline, "the dump did not end"
            chunk = c.sock.recv(4096)  # a slow reader: the dump pauses
            assert chunk
            raw += chunk
            time.sleep(0.002)
        moved = freed(stats(c)) - before
    finally:
        stop.set()
        t.join()
    assert raw.startswith(b"OK\r\n")
    keys = set()
    for line in raw[4:-len(b"END\r\n")].split(b"\n")[:-1]:
        m = LINE.fullmatch(line)
        assert m, line
        keys.add(m.group(1))
    assert not keys & gone
    assert keys <= {key_of(i) for i in range(2500)} | written
    assert c.call("version").startswith(b"VERSION")
    return moved


CHURN_FLASH = ["-m", "8", "-t", "1", "-o", "ext_item_age=0,ext_page_size=2,ext_wbuf_size=2"]


def test_dump_under_concurrent_sets_and_deletes(start_server, tmp_path):
    srv = flash_server(start_server, tmp_path, "8", "16m", *CHURN_FLASH[4:])
    dump_under_churn(srv)


@pytest.mark.slow
def test_dump_with_segments_dropped_under_it(tmp_path):
    """The same with every device read 10 ms slower (a debug build), so
    the dump spans many segment drops and rewrites: it skips them."""
    import helpers
    binary = helpers.debug_bin(server_bin())
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for NODELAY_DEBUG_FLASH_DEV")
    srv = Server(binary, CHURN_FLASH + ["-o", f"ext_path={tmp_path}/flash:16m"],
                 workdir=str(tmp_path), env=dict(os.environ, NODELAY_DEBUG_FLASH_DEV="10"))
    srv.start()
    try:
        # segments did go under it (else this tested nothing of that)
        assert dump_under_churn(srv) > 0
    finally:
        srv.stop()


def test_dump_ends_on_a_device_error(start_server, tmp_path):
    """The flash file cut to nothing: the dump's reads fail, and it ends
    with END, counted in extstore_read_errors (and logged); the server goes
    on."""
    srv = flash_server(start_server, tmp_path, "16", "64m", "-o", "ext_item_age=0")
    c = srv.connect()
    fill(c, 1500)
    settle(c, 1500)
    errors = int(stats(c, "nodelay")["extstore_read_errors"])
    os.truncate(tmp_path / "flash", 0)
    d = metadump(c)
    assert len(d) < 1500
    assert int(stats(c, "nodelay")["extstore_read_errors"]) > errors
    assert "for a dump failed" in srv.stderr()
    c.send(b"lru_crawler mgdump all\r\n")
    assert c.read_until(b"EN\r\n").startswith(b"OK\r\n")
    assert c.call("version").startswith(b"VERSION")


TTL = 100000  # s: the TTL the fill gives a third of its items


def test_dump_matches_memcached_1645(tmp_path):
    """The same fill, paced so neither server loses an item, into both:
    the same keys, and for each its exp, flags, size and class (memcached
    reports the class of the header it keeps in RAM for a flash item)."""
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip(f"{REF_BIN} is absent: no memcached 1.6.45 to compare with")
    dumps = []
    for binary in (REF_BIN, server_bin()):
        d = tmp_path / os.path.basename(binary)
        d.mkdir()
        srv = Server(binary, ["-m", "16", "-t", "1", "-o",
                              f"ext_path={d}/flash:64m,ext_item_age=0"], workdir=str(d))
        srv.start()
        try:
            c = srv.connect()
            t0 = time.time()
            fill(c, 1200, exp=lambda i: 0 if i % 3 else TTL)
            t1 = time.time()
            send_paced(c, [b"set small%d 5 0 3 noreply\r\nabc\r\n" % i for i in range(50)], 50)
            settle(c, 1200)
            st = stats(c)
            assert int(st["evictions"]) == 0, st
            dump = metadump(c)
            if binary == REF_BIN:
                # memcached's crawler can pass over an item its flash
                # writer moves at that moment (a fresh-clone run's dump
                # lacked one of the 50 small items nodelay listed): a
                # second dump fills the gap; nodelay's one dump must hold all
                for k, v in metadump(c).items():
                    dump.setdefault(k, v)
            dumps.append((dump, t0, t1))
        finally:
            srv.stop()
            drop_big_files(d)
    (ref, ref_t0, ref_t1), (got, got_t0, got_t1) = dumps
    assert set(ref) == set(got), sorted(set(ref) ^ set(got))[:5]
    for k in ref:
        assert len(got[k]) == 1
        r, g = ref[k][0], got[k][0]
        # exp (unix time): the same TTL from each server's own clock (whole
        # seconds, a tick behind at most), counted from that server's fill;
        # the two fills are apart by the first server's run, seconds on a
        # loaded machine
        assert (r[0] == b"-1") == (g[0] == b"-1"), (k, r, g)
        if r[0] != b"-1":
            assert ref_t0 - 3 <= int(r[0]) - TTL <= ref_t1 + 1, (k, r, ref_t0, ref_t1)
            assert got_t0 - 3 <= int(g[0]) - TTL <= got_t1 + 1, (k, g, got_t0, got_t1)
        assert r[1:5] == g[1:5], (k, r, g)
        assert r[5] == g[5], (k, r, g)


def slow_flash_server(tmp_path, delay_ms):
    """A debug build whose device reads each take delay_ms more
    (NODELAY_DEBUG_FLASH_DEV), -t 1: one worker for every connection."""
    import helpers
    binary = helpers.debug_bin(server_bin())
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for NODELAY_DEBUG_FLASH_DEV")
    env = dict(os.environ, NODELAY_DEBUG_FLASH_DEV=str(delay_ms))
    srv = Server(binary, ["-m", "16", "-t", "1", "-o",
                          f"ext_path={tmp_path}/flash:64m,ext_item_age=0"],
                 workdir=str(tmp_path), env=env)
    srv.start()
    return srv


def test_a_dump_waits_for_the_device_not_the_worker(tmp_path):
    """Each part of a segment is a device read made slow: while the dump
    waits for one, another connection on the same worker is served."""
    srv = slow_flash_server(tmp_path, 100)
    try:
        c = srv.connect(timeout=60)
        fill(c, 1500)
        settle(c, 1500)
        other = srv.connect()
        c.send(b"lru_crawler metadump all\r\n")
        t0 = time.monotonic()
        for i in range(10):
            assert other.set(b"ram:%d" % i, b"v%d" % i) == b"STORED\r\n"
            assert other.get(b"ram:%d" % i) == b"v%d" % i
        served = time.monotonic() - t0
        raw = c.read_until(b"END\r\n")
        took = time.monotonic() - t0
        # 1,500 items of 4 KB: about 90 parts of 64 KiB, 100 ms each
        assert took > 2.0, took
        assert served < took / 4, (served, took)
        keys = {LINE.fullmatch(line).group(1) for line in raw[4:-5].split(b"\n")[:-1]}
        assert {key_of(i) for i in range(1500)} <= keys
    finally:
        srv.stop()


def test_a_dump_cut_off_while_a_part_is_read(tmp_path):
    """The client goes while the dump's read is out, then the server
    stops: the part's buffer is freed when its read completes, and the
    server exits cleanly (a sanitizer build reports no leak or misuse)."""
    srv = slow_flash_server(tmp_path, 300)
    try:
        c = srv.connect(timeout=60)
        fill(c, 600)
        settle(c, 600)
        for _ in range(3):
            d = srv.connect()
            d.send(b"lru_crawler metadump all\r\n")
            time.sleep(0.1)
            d.close()
        time.sleep(0.5)
        assert c.call("version").startswith(b"VERSION")
        d = srv.connect()
        d.send(b"lru_crawler mgdump all\r\n")
        time.sleep(0.1)
    finally:
        srv.stop()
