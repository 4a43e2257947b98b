# SPDX-License-Identifier: BSD-3-Clause
"""The idle flush (docs/store-flash.md "What moves when"): with
ext_item_age set, items idle that long go to flash while RAM is still far
from full, as memcached 1.6.45's storage write thread moves them, and come
back byte for byte; an item read again and again meanwhile stays in RAM,
and so do values under ext_item_size. Nothing is evicted."""
import time

import pytest

from helpers import Server, get_value as get, stats

IDLE = 300      # values of 1000 bytes: idle, they go
VIDLE = 1000
HOT_LEN = 3000  # one value read all along: another size class, it stays
SMALL = 20      # values of 100 bytes: under ext_item_size, they stay
VSMALL = 100


def value_of(n, length):
    return (b"%07d:" % n) * (length // 8) + b"x" * (length % 8)


def start(binary, tmp_path_factory, extra):
    d = tmp_path_factory.mktemp("idle")
    srv = Server(binary, ["-m", "64", "-t", "2", "-o",
                          f"ext_path={d}/flash:64m,ext_wbuf_size=2,ext_page_size=8" + extra],
                 workdir=str(d))
    srv.start()
    if "no flash tier" in srv.stderr():
        srv.stop()
        pytest.skip("this build has no flash tier: -o ext_path is checked, then not used")
    return srv


def items_by_class(c):
    out = {}
    for k, v in stats(c, "items").items():
        parts = k.split(":")
        if len(parts) == 3 and parts[2] == "number":
            out[int(parts[1])] = int(v)
    return out


def test_idle_items_go_to_flash_while_ram_is_free(server_bin, tmp_path_factory):
    srv = start(server_bin, tmp_path_factory, ",ext_item_age=2")
    try:
        c = srv.connect(timeout=30)
        for i in range(IDLE):
            v = value_of(i, VIDLE)
            c.send(b"set idle:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
        for i in range(SMALL):
            v = value_of(i, VSMALL)
            c.send(b"set small:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
        hot = value_of(7, HOT_LEN)
        c.send(b"set hot 0 0 %d\r\n%s\r\n" % (len(hot), hot))
        assert c.readline() == b"STORED\r\n"
        before = items_by_class(c)
        assert sum(before.values()) == IDLE + SMALL + 1, before
        # Read the hot key four times a second (its second read on bumps
        # its access time, as memcached's makes it ACTIVE) until the idle
        # ones have gone: 2 s of age and the housekeeper's second, with a
        # wide margin.
        written = 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert get(c, b"hot") == hot
            written = int(stats(c)["extstore_objects_written"])
            if written >= IDLE:
                break
            time.sleep(0.25)
        st = stats(c)
        assert written == IDLE, f"{written} of {IDLE} idle items written to flash"
        assert st["evictions"] == "0"
        assert int(st["extstore_objects_used"]) == IDLE
        after = items_by_class(c)
        # in RAM the hot item and the small ones; the idle ones, on flash,
        # count as the headers memcached keeps in RAM for them: in class 1
        assert sum(after.values()) == int(st["curr_items"]) == IDLE + SMALL + 1, after
        assert [n for n in after.values() if n] == [IDLE, SMALL, 1], after
        # every idle value back byte for byte, read from flash
        for i in range(IDLE):
            assert get(c, b"idle:%d" % i) == value_of(i, VIDLE), i
        for i in range(SMALL):
            assert get(c, b"small:%d" % i) == value_of(i, VSMALL), i
        st = stats(c)
        assert int(st["get_extstore"]) >= IDLE
        assert st["miss_from_extstore"] == "0" and st["badcrc_from_extstore"] == "0"
        assert st["evictions"] == "0"
        c.close()
    finally:
        srv.stop()


def test_age_changed_at_run_time_starts_the_flush(server_bin, tmp_path_factory):
    """ext_item_age at its default: no idle flush; `extstore item_age 1`
    (memcached's run-time command) starts it without a restart."""
    srv = start(server_bin, tmp_path_factory, "")
    try:
        c = srv.connect(timeout=30)
        for i in range(IDLE):
            v = value_of(i, VIDLE)
            c.send(b"set idle:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
        assert c.call("mn") == b"MN\r\n"
        time.sleep(2.5)
        assert stats(c)["extstore_objects_written"] == "0"
        assert c.call("extstore item_age 1") == b"OK\r\n"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if int(stats(c)["extstore_objects_written"]) >= IDLE:
                break
            time.sleep(0.25)
        assert int(stats(c)["extstore_objects_written"]) == IDLE
        assert get(c, b"idle:5") == value_of(5, VIDLE)
        c.close()
    finally:
        srv.stop()
