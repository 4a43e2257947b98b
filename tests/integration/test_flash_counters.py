# SPDX-License-Identifier: BSD-3-Clause
"""The extstore read counters side by side with memcached 1.6.45
(../shared/ref; NODELAY_REF names another): each workload runs on items
both servers have on flash, and what it moves of get_extstore,
get_aborted_extstore, get_oom_extstore, recache_from_extstore,
miss_from_extstore, badcrc_from_extstore and extstore_objects_read must be
the same. memcached reads flash only for a request that sends the value
(get, gat, mg v); its sets, deletes, touches, appends and mg without v work
on the header it keeps in RAM, and a header flushed or expired is a miss
found in RAM. miss_from_extstore counts a read whose item turned out gone
or bad. nodelay keeps a tag, not the key, in RAM, so it reads flash for
those too (docs/store-flash.md): those reads are its own and count
nothing. extstore_bytes_read differs by the items' header sizes
(docs/compat-differences.md). Skips when the reference is absent."""
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers import ROOT, Server, stats

REF_BIN = os.environ.get("NODELAY_REF") or os.path.join(ROOT, "..", "shared", "ref",
                                                        "memcached-1.6.45")
KEYS = 400
VLEN = 700
COUNTERS = ("get_extstore", "get_aborted_extstore", "get_oom_extstore", "recache_from_extstore",
            "miss_from_extstore", "badcrc_from_extstore", "extstore_objects_read")


def key(i):
    return b"key:%d" % i


def value(i):
    return (b"%d-" % i) * (VLEN // 4) + b"x" * (VLEN - len((b"%d-" % i) * (VLEN // 4)))


def replies(c, lines, until=b"\r\n"):
    """Send every line at once, then read one reply (to `until`) each."""
    c.send(b"".join(lines))
    return [c.read_until(until) for _ in lines]


def overwrite(c):
    return replies(c, [b"set %s 0 0 3\r\nnew\r\n" % key(i) for i in range(KEYS)])


def delete(c):
    return replies(c, [b"delete %s\r\n" % key(i) for i in range(KEYS)])


def delete_absent(c):
    # keys never set: tags like the flash items' are read by nodelay
    return replies(c, [b"delete absent:%d\r\n" % i for i in range(4 * KEYS)])


def add_new(c):
    return replies(c, [b"add new:%d 0 0 1\r\nn\r\n" % i for i in range(4 * KEYS)])


def get_hit(c):
    return replies(c, [b"get %s\r\n" % key(i) for i in range(KEYS)], b"END\r\n")


def get_after_flush(c):
    assert c.call(b"flush_all 0") == b"OK\r\n"
    time.sleep(1.1)  # past the flush's second on both servers' clocks
    return replies(c, [b"get %s\r\n" % key(i) for i in range(KEYS)], b"END\r\n")


def touch_gat(c):
    out = replies(c, [b"touch %s 0\r\n" % key(i) for i in range(0, KEYS, 2)])
    return out + replies(c, [b"gat 0 %s\r\n" % key(i) for i in range(1, KEYS, 2)], b"END\r\n")


def mg_no_value(c):
    return replies(c, [b"mg %s s f t\r\n" % key(i) for i in range(KEYS)])


def append(c):
    return replies(c, [b"append %s 0 0 1\r\na\r\n" % key(i) for i in range(KEYS)])


def meta_writes(c):
    out = replies(c, [b"ms %s 1 MR\r\nr\r\n" % key(i) for i in range(0, KEYS, 2)])
    return out + replies(c, [b"md %s\r\n" % key(i) for i in range(1, KEYS, 2)])


def mg_value(c):
    c.send(b"".join(b"mg %s v\r\n" % key(i) for i in range(KEYS)))
    return [c.readline() + c.readline() for _ in range(KEYS)]


def cas_incr(c):
    out = replies(c, [b"cas %s 0 0 1 1\r\nc\r\n" % key(i) for i in range(0, KEYS, 2)])
    return out + replies(c, [b"incr %s 1\r\n" % key(i) for i in range(1, KEYS, 2)])


def delete_after_flush(c):
    assert c.call(b"flush_all 0") == b"OK\r\n"
    time.sleep(1.1)
    return delete(c)


WORKLOADS = [overwrite, delete, delete_absent, add_new, get_hit, get_after_flush, touch_gat,
             mg_no_value, append, meta_writes, cas_incr, mg_value, delete_after_flush]


def counters(c):
    s = stats(c)
    return {k: int(s.get(k, 0)) for k in COUNTERS}


def run(binary, d, workload):
    """The workload's replies and the counters it moved, its KEYS items
    having gone to flash first."""
    srv = Server(binary, ["-m", "64", "-t", "1", "-o",
                          f"ext_path={d}/f:64m,ext_item_age=0,ext_item_size=512,"
                          "ext_wbuf_size=2,ext_page_size=8"], workdir=str(d))
    srv.start()
    try:
        c = srv.connect(timeout=20)
        for i in range(KEYS):
            c.send(b"set %s 0 0 %d noreply\r\n%s\r\n" % (key(i), VLEN, value(i)))
        assert c.call(b"mn") == b"MN\r\n"
        deadline = time.monotonic() + 20
        while int(stats(c).get("extstore_objects_written", 0)) < KEYS:
            assert time.monotonic() < deadline, "the items did not go to flash"
            time.sleep(0.1)
        before = counters(c)
        got = workload(c)
        after = counters(c)
        c.close()
        return got, {k: after[k] - before[k] for k in COUNTERS}
    finally:
        srv.stop()


@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.__name__ for w in WORKLOADS])
def test_flash_counters_as_memcached(server_bin, tmp_path, workload):
    if "asan" in server_bin or "tsan" in server_bin:
        # what a request counts is the same code in every build; the
        # sanitizers' runs read these paths in the other flash tests
        pytest.skip("counters are compared in the release run")
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    (tmp_path / "nd").mkdir()
    (tmp_path / "mc").mkdir()
    # the two servers side by side: each waits on its own moves to flash
    with ThreadPoolExecutor(2) as pool:
        ref = pool.submit(run, REF_BIN, tmp_path / "mc", workload)
        ours = pool.submit(run, server_bin, tmp_path / "nd", workload)
        (want_replies, want), (got_replies, got) = ref.result(), ours.result()
    assert got_replies == want_replies
    assert got == want
