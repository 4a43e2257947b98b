# SPDX-License-Identifier: BSD-3-Clause
"""Where a flash read goes (docs/store-flash.md, "How a read is served"):
on the io_uring backend, out on the worker's own ring (O_DIRECT where the
filesystem allows it), on epoll to the read threads; `stats nodelay`
counts device reads by path (extstore_ring_reads, extstore_pool_reads).
A read that fails is a miss, counted and logged, on either path. And a
read the device is slow to answer holds up only the request that needs
it: debug builds' NODELAY_DEBUG_FLASH_DEV=MS makes every device read
take MS ms more, on either path, and another connection on the same
worker (-t 1) is served meanwhile. Runs on both backends
(NODELAY_ARGS="-o io_uring=off" for epoll)."""
import os
import time

import pytest

import helpers
from helpers import send_paced, start_flash, stats

RAM_MB = 8
FLASH_MB = 128
VLEN = 4000
DELAY = 1.5  # s: the slow device's extra time per read; bounds below are lower bounds


def value_of(n):
    return (b"%07d:" % n) * (VLEN // 8)


def start(binary, tmp_path_factory, env=None):
    return start_flash(binary, tmp_path_factory.mktemp("ring"), RAM_MB, FLASH_MB, threads=1,
                       env=env)


def fill(srv):
    """Three times -m of keys r:N, paced (the flash writer keeps up): the
    early ones are on the device once it is done."""
    n = 3 * (RAM_MB << 20) // VLEN
    c = srv.connect(timeout=30)
    send_paced(c, [b"set r:%d 0 0 %d noreply\r\n%s\r\n" % (i, VLEN, value_of(i))
                   for i in range(n)], 32)
    assert int(stats(c)["extstore_objects_written"]) > 0
    for _ in range(200):  # full segments on the device, not in a buffer
        if stats(c)["extstore_io_queue"] == "0":
            break
        time.sleep(0.05)
    return c


def reads(c):
    """The backend, and the device reads each path took so far (None: not
    counted)."""
    st = stats(c, "nodelay")
    n = [int(st[k]) if k in st else None for k in ("extstore_ring_reads", "extstore_pool_reads")]
    return st["event_backend"], n[0], n[1]


def check_path(backend, before, after):
    """The ring's reads, and only its, under io_uring; the pool's, and only
    its, elsewhere."""
    assert after[1] is not None, "no count of flash reads by path"
    ring, pool = after[1] - before[1], after[2] - before[2]
    if backend == "io_uring":
        assert ring > 0 and pool == 0, f"io_uring: {ring} ring reads, {pool} pool reads"
    else:
        assert pool > 0 and ring == 0, f"{backend}: {ring} ring reads, {pool} pool reads"


def test_flash_reads_take_the_backends_path(server_bin, tmp_path_factory):
    srv = start(server_bin, tmp_path_factory)
    try:
        c = fill(srv)
        before = reads(c)
        got = 0
        for i in range(0, 200, 5):
            v = c.get(b"r:%d" % i)
            if v is not None:
                assert v == value_of(i)
                got += 1
        assert got >= 30, f"{got} of 40 early keys came back from flash"
        assert int(stats(c)["get_extstore"]) >= got
        check_path(before[0], before, reads(c))
        c.close()
    finally:
        srv.stop()


def test_a_slow_device_read_holds_up_no_other_connection(server_bin, tmp_path_factory):
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for NODELAY_DEBUG_FLASH_DEV")
    env = dict(os.environ, NODELAY_DEBUG_FLASH_DEV=str(int(DELAY * 1000)))
    srv = start(binary, tmp_path_factory, env)
    try:
        c = fill(srv)
        before = reads(c)
        other = srv.connect(timeout=30)
        t0 = time.monotonic()
        c.send(b"get r:3\r\n")
        # The other connection, on the same worker, while the read is out:
        # served, and before the read is back.
        for i in range(10):
            assert other.set(b"ram:%d" % i, b"v%d" % i) == b"STORED\r\n"
            assert other.get(b"ram:%d" % i) == b"v%d" % i
        served = time.monotonic() - t0
        early = c.arrived()
        assert early == b"", (f"the flash get answered within {served:.3f} s, before the "
                              f"other connection was done: the device read was not slow")
        want = b"VALUE r:3 0 %d\r\n%s\r\nEND\r\n" % (VLEN, value_of(3))
        assert c.read_exact(len(want)) == want
        took = time.monotonic() - t0
        assert took >= DELAY * 0.95, f"answered in {took:.3f} s: the read did not wait"
        check_path(before[0], before, reads(c))
        other.close()
        c.close()
    finally:
        srv.stop()


def test_a_failed_read_is_a_miss_counted_and_logged(server_bin, tmp_path_factory):
    """The file cut to nothing under the server: each read of a flash item
    comes back short on the backend's path, and is a miss, counted
    (extstore_read_errors) and logged, never a wrong value or a stall."""
    srv = start(server_bin, tmp_path_factory)
    try:
        c = fill(srv)  # the writer's queue empty: no write after the cut
        before = reads(c)
        errors = int(stats(c, "nodelay")["extstore_read_errors"])
        os.truncate(os.path.join(srv.workdir, "flash"), 0)
        for i in range(0, 200, 5):
            assert c.get(b"r:%d" % i) is None
        assert c.call("version").startswith(b"VERSION")
        assert int(stats(c, "nodelay")["extstore_read_errors"]) > errors
        check_path(before[0], before, reads(c))
        assert "flash read of page" in srv.stderr()
        c.close()
    finally:
        srv.stop()


def test_a_stop_with_reads_out_waits_for_them(server_bin, tmp_path_factory):
    """SIGTERM while slow reads are out on the backend's path: the worker
    reaps them before their buffers go (the ring's are the kernel's until
    they end), exits 0, and a sanitizer build reports nothing."""
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for NODELAY_DEBUG_FLASH_DEV")
    env = dict(os.environ, NODELAY_DEBUG_FLASH_DEV=str(int(DELAY * 1000)))
    srv = start(binary, tmp_path_factory, env)
    stopped = False
    try:
        c = fill(srv)
        before = reads(c)
        waiter = srv.connect(timeout=30)
        waiter.send(b"get r:1 r:2 r:3\r\n")
        after = before
        for _ in range(100):  # the reads are out once counted
            after = reads(c)
            if after[1] is None or after[1] + after[2] >= before[1] + before[2] + 3:
                break
            time.sleep(0.02)
        check_path(before[0], before, after)
        assert waiter.arrived() == b"", "the reads were not out when the stop came"
        stopped = True
        srv.stop()  # exit 0 within its bound, no sanitizer report
        assert "did not complete" not in srv.stderr()
    finally:
        if not stopped:
            srv.stop()
