# SPDX-License-Identifier: BSD-3-Clause
"""The flash tier's store side over a socket (docs/store-flash.md): with
-o ext_path, items that leave RAM go to flash instead of being evicted,
`stats` has memcached 1.6.45's extstore rows in its order, host write
amplification is counted, and a read never returns another value.
(Reads served from flash over the wire need the sessions' probe: the
tests that read everything back come with it.)"""
import os
import random
import time

import pytest

from helpers import send_paced, stats

# memcached 1.6.45's extstore rows of `stats`, in its order
# (memcached-1.6.45 -o ext_path=F:64m).
EXTSTORE_ROWS = [
    "get_extstore", "get_aborted_extstore", "get_oom_extstore", "recache_from_extstore",
    "miss_from_extstore", "badcrc_from_extstore", "extstore_memory_pressure",
    "extstore_compact_lost", "extstore_compact_rescues", "extstore_compact_resc_cold",
    "extstore_compact_resc_old", "extstore_compact_skipped", "extstore_page_allocs",
    "extstore_page_evictions", "extstore_page_reclaims", "extstore_pages_free",
    "extstore_pages_used", "extstore_objects_evicted", "extstore_objects_read",
    "extstore_objects_written", "extstore_objects_used", "extstore_bytes_evicted",
    "extstore_bytes_written", "extstore_bytes_read", "extstore_bytes_used",
    "extstore_bytes_fragmented", "extstore_limit_maxbytes", "extstore_io_queue",
]

FLASH = ["-m", "8", "-o", "ext_page_size=4,ext_wbuf_size=2"]


def flash_args(tmp_path, size="64m"):
    return [*FLASH, "-o", f"ext_path={tmp_path}/flash:{size}"]


def value_of(i, n=1000):
    return (b"%010d" % i) * (n // 10)


def test_extstore_rows_as_memcached(start_server, tmp_path):
    srv = start_server(*flash_args(tmp_path))
    c = srv.connect()
    names = list(stats(c))
    assert [n for n in names if "extstore" in n] == EXTSTORE_ROWS
    st = stats(c)
    assert st["extstore_limit_maxbytes"] == str(64 << 20)
    assert int(st["extstore_pages_free"]) == 16
    # and none without ext_path, as memcached
    plain = start_server("-m", "8")
    assert not [n for n in stats(plain.connect()) if "extstore" in n]


def send_disk_paced(c, sets, every):
    """The sets, a round trip every `every`, and no more while two segments
    wait for the disk: a client that outruns the device sees its items
    evicted (extstore_skipped_full), which is not what these tests are
    about."""
    for i in range(0, len(sets), every):
        send_paced(c, sets[i:i + every], every)
        deadline = time.monotonic() + 30
        while int(stats(c)["extstore_io_queue"]) > 1 and time.monotonic() < deadline:
            time.sleep(0.005)


def fill(c, n, vlen=1000):
    """n sets, paced by the disk (send_disk_paced), a round trip every 250."""
    send_disk_paced(c, [b"set key:%08d %d 0 %d noreply\r\n%s\r\n" % (k, k, vlen, value_of(k, vlen))
                        for k in range(n)], 250)


def test_fill_past_ram_goes_to_flash(start_server, tmp_path):
    srv = start_server(*flash_args(tmp_path))
    c = srv.connect()
    n = 24000  # 24 MB of values past -m 8
    fill(c, n)
    st = stats(c)
    written = int(st["extstore_objects_written"])
    assert written > n // 2, st
    # nothing evicted but what found no free write buffer
    own = stats(c, "nodelay")
    assert int(st["evictions"]) == int(own["extstore_skipped_full"])
    assert int(st["curr_items"]) > n * 9 // 10
    # host write amplification: device bytes per value byte moved, both
    # counted as a segment reaches the device: all the items written but
    # those still in the writers' buffers (three of ext_wbuf_size, 2 MB)
    moved = int(own["extstore_value_bytes_moved"])
    assert written * 1000 - 3 * (2 << 20) <= moved <= written * 1000
    assert int(own["extstore_device_bytes_written"]) <= moved * 1.3
    assert int(own["extstore_write_errors"]) == 0
    # every read is the key's own value or a miss
    for i in range(0, n, 97):
        got = c.get_multi([b"key:%08d" % i])
        if got:
            assert got["key:%08d" % i] == (i, value_of(i))


def test_overwrite_of_a_flash_item_wins(start_server, tmp_path):
    """A key written again after its item went to flash: the new value,
    never the flash copy, whatever reads it afterwards."""
    srv = start_server(*flash_args(tmp_path))
    c = srv.connect()
    fill(c, 16000)
    assert int(stats(c)["extstore_objects_written"]) > 0
    for i in range(0, 4000, 7):
        assert c.set(b"key:%08d" % i, b"new%d" % i) == b"STORED\r\n"
    for i in range(0, 4000, 7):
        assert c.get(b"key:%08d" % i) == b"new%d" % i


def test_flash_file_truncated_underneath(start_server, tmp_path):
    """The file cut to nothing under the server: writes and reads that fail
    cost misses and counters, never a wrong value or a stalled server."""
    srv = start_server(*flash_args(tmp_path))
    c = srv.connect()
    fill(c, 12000)
    before = int(stats(c)["extstore_objects_written"])
    os.truncate(tmp_path / "flash", 0)
    fill(c, 12000)
    assert int(stats(c)["extstore_objects_written"]) > before  # the tier goes on
    for i in range(0, 12000, 53):
        got = c.get_multi([b"key:%08d" % i])
        if got:
            assert got["key:%08d" % i] == (i, value_of(i))
    assert c.call("version").startswith(b"VERSION")


def idle_flush_gap(c, key):
    """Seconds from a set just after an idle-flush pass (one item seen
    leaving RAM) to the pass that takes the next: the housekeeper's pace."""
    def written():
        return int(stats(c)["extstore_objects_written"])

    n = written()
    assert c.set(key + "-a", value_of(1)) == b"STORED\r\n"
    deadline = time.monotonic() + 10
    while written() == n:
        assert time.monotonic() < deadline, "the idle flush took nothing"
        time.sleep(0.002)
    t = time.monotonic()
    assert c.set(key + "-b", value_of(2)) == b"STORED\r\n"
    while written() == n + 1:
        assert time.monotonic() < t + 10, "the idle flush took nothing"
        time.sleep(0.002)
    return time.monotonic() - t


def test_max_sleep_bounds_the_idle_flush_pause(start_server, tmp_path):
    """ext_max_sleep is the longest pause of memcached's storage threads:
    nodelay's idle flush, a pass a second, comes at least that often (and
    `extstore max_sleep` changes it at run time)."""
    srv = start_server(*flash_args(tmp_path), "-o", "ext_item_age=0")
    c = srv.connect()
    # Three gaps each: one is short when the second item lands in a bucket
    # that the pass which took the first has yet to reach (a pass walks the
    # buckets in order, slower on a loaded machine), or long when a pass
    # waits for a write buffer; the pace shows in the longest and in the
    # shortest.
    paced = [idle_flush_gap(c, "paced%d" % i) for i in range(3)]
    assert max(paced) > 0.5, paced  # a second between passes
    assert c.call("extstore max_sleep 20000") == b"OK\r\n"
    idle_flush_gap(c, "settle")  # the wait begun before the change ends
    fast = [idle_flush_gap(c, "fast%d" % i) for i in range(3)]
    assert min(fast) < 0.5, fast
    c.close()
    fast = start_server(*FLASH, "-o", f"ext_path={tmp_path}/g:64m,ext_item_age=0,"
                        "ext_max_sleep=20000")
    assert idle_flush_gap(fast.connect(), "fast") < 0.5


def test_compact_under_0_at_run_time_stops_compaction(start_server, tmp_path):
    """`extstore compact_under 0` stops compaction, as in memcached (its
    chunked-extstore.t sets it so): the same overwrites as below rescue
    nothing; the writers drop whole segments instead, and every read is the
    key's last value or a miss. Set back to a page, compaction resumes.
    Paced by the disk: a device slower than the client (a busy CI machine)
    would take few of the items leaving RAM, and the flash, never short of
    room, would need no compaction."""
    srv = start_server("-m", "8", "-o", "ext_page_size=2,ext_wbuf_size=2",
                       "-o", f"ext_path={tmp_path}/flash:32m")
    c = srv.connect()
    assert c.call("extstore compact_under 0") == b"OK\r\n"
    vlen, n = 1000, 36000

    def value(k, r):
        return (b"%08d.%d" % (k, r)) * (vlen // 10)

    def rewrite(r):
        keys = list(range(n))
        random.Random(r).shuffle(keys)
        send_disk_paced(c, [b"set key:%08d %d 0 %d noreply\r\n%s\r\n" % (k, r, vlen, value(k, r))
                            for k in keys], 500)

    # Until the writers had to drop a page for room.
    shown = ("extstore_page_evictions", "extstore_compact_rescues", "evictions",
             "extstore_objects_written", "extstore_bytes_used")
    for r in range(12):
        rewrite(r)
        st = stats(c)
        if r >= 2 and int(st["extstore_page_evictions"]) > 0:
            break
    seen = {k: st[k] for k in shown}
    assert int(st["extstore_page_evictions"]) > 0, seen  # room came from drops
    assert int(st["extstore_compact_rescues"]) == 0, seen
    for k in range(0, n, 37):
        got = c.get_multi([b"key:%08d" % k])
        if got:
            assert got["key:%08d" % k] == (r, value(k, r))
    assert c.call("extstore compact_under 1") == b"OK\r\n"
    rewrite(r + 1)
    # compaction has a thread of its own, beside the client: its count
    deadline = time.monotonic() + 10
    while int((st := stats(c))["extstore_compact_rescues"]) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert int(st["extstore_compact_rescues"]) > 0, {k: st[k] for k in shown}


@pytest.mark.parametrize("under", ["", ",ext_compact_under=4"], ids=["default", "under4"])
def test_compaction_keeps_up_under_overwrites(start_server, tmp_path, under):
    """Keys worth -m plus 90 % of the flash file, set four times over in a
    new random order each time, as fast as the client is answered:
    compaction runs between segment writes, not only when the writer thread
    is idle, so the live rest of the overwritten segments is rewritten
    (about 36,000 items here; none before it had a thread of its own)
    within its rewrite budget (host write amplification about 1.3),
    nothing a rescue took is lost, and every read is the key's last value
    or a miss (docs/store-flash.md "Compaction"). So with the default
    ext_compact_under too (one page of the 16, a segment each): the
    compactor starts above the writers' drop point, not under it."""
    srv = start_server("-m", "8", "-o", "ext_page_size=2,ext_wbuf_size=2" + under,
                       "-o", f"ext_path={tmp_path}/flash:32m")
    c = srv.connect()
    vlen, n = 1000, 36000  # 8 MB of RAM and 28 of the 32 MB file

    def value(k, r):
        return (b"%08d.%d" % (k, r)) * (vlen // 10)

    for r in range(4):
        keys = list(range(n))
        random.Random(r).shuffle(keys)
        send_paced(c, [b"set key:%08d %d 0 %d noreply\r\n%s\r\n" % (k, r, vlen, value(k, r))
                       for k in keys], 500)
    st, own = stats(c), stats(c, "nodelay")
    assert int(st["extstore_compact_rescues"]) > n // 10, st
    assert int(st["extstore_compact_lost"]) == 0
    moved = int(own["extstore_value_bytes_moved"])
    assert int(own["extstore_device_bytes_written"]) <= moved * 1.4
    for k in range(0, n, 37):
        got = c.get_multi([b"key:%08d" % k])
        if got:
            assert got["key:%08d" % k] == (3, value(k, 3))
