# SPDX-License-Identifier: BSD-3-Clause
"""What a request read from flash is dropped when the request is done, also
when it never waited: an item still in a flash writer's buffer is copied at
the probe, which answers READY at once (store_flash.c). Kept past its
request, that copy answered the key's next probes on the connection without
a read: once the key went to flash again (a new slot), every get of it on
that connection missed until some request there waited for the device, and
then it hit again. Here each key goes to flash, is read back, goes to flash
again (the idle flush, ext_item_age=0) and must still be read on the same
connection, with appends (refused on a flash item) and flush_all between."""
import time

import pytest

from helpers import Server, get_value as get, stats

VLEN = 2000
KEYS = 20


def value_of(n, salt=b""):
    return (salt + b"%07d:" % n) * (VLEN // (8 + len(salt)))


@pytest.fixture
def srv(server_bin, tmp_path):
    # writer buffers of 8 MiB: every item moved here stays in one, not
    # yet on the device, so every read of it is a copy at the probe; an
    # item read twice since it went to flash comes back to RAM
    # (ext_recache_rate=1), to go to flash again
    s = Server(server_bin, ["-m", "64", "-t", "1", "-o",
                            f"ext_path={tmp_path}/flash:64m,ext_wbuf_size=8,ext_page_size=8,"
                            "ext_item_age=0,ext_recache_rate=1"], workdir=str(tmp_path))
    s.start()
    if "no flash tier" in s.stderr():
        s.stop()
        pytest.skip("this build has no flash tier")
    yield s
    s.stop()


def written(c):
    return int(stats(c)["extstore_objects_written"])


def wait_written(c, n):
    """Until the idle flush has moved n items to flash in all (it runs each
    second)."""
    deadline = time.monotonic() + 15
    while written(c) < n:
        assert time.monotonic() < deadline, (written(c), n)
        time.sleep(0.05)


def set_all(c, salt):
    for i in range(KEYS):
        v = value_of(i, salt)
        assert c.call(b"set w:%d 0 0 %d\r\n%s" % (i, len(v), v)) == b"STORED\r\n"


def test_a_key_read_from_a_writer_buffer_reads_again_after_it_moves_again(srv):
    c = srv.connect(timeout=10)
    admin = srv.connect(timeout=10)
    set_all(c, b"")
    wait_written(admin, KEYS)
    for _ in range(2):  # from the writer's buffer, back into RAM
        for i in range(KEYS):
            assert get(c, b"w:%d" % i) == value_of(i)
    wait_written(admin, 2 * KEYS)  # to flash again, other slots
    for i in range(KEYS):
        assert get(c, b"w:%d" % i) == value_of(i), i


def test_appends_refused_on_flash_items_then_flush_all(srv):
    c = srv.connect(timeout=10)
    admin = srv.connect(timeout=10)
    set_all(c, b"a")
    wait_written(admin, KEYS)
    for i in range(KEYS):  # each left on flash, as memcached's
        assert c.call(b"append w:%d 0 0 2\r\n+x" % i) == b"NOT_STORED\r\n"
    for _ in range(2):  # back into RAM
        for i in range(KEYS):
            assert get(c, b"w:%d" % i) == value_of(i, b"a"), i
    wait_written(admin, 2 * KEYS)
    for i in range(KEYS // 2):
        assert c.call(b"append w:%d 0 0 2\r\n+y" % i) == b"NOT_STORED\r\n"
    assert admin.call(b"flush_all") == b"OK\r\n"
    for i in range(KEYS):
        assert get(c, b"w:%d" % i) is None, i
    set_all(c, b"b")
    wait_written(admin, 3 * KEYS)
    for i in range(KEYS):
        assert get(c, b"w:%d" % i) == value_of(i, b"b"), i
