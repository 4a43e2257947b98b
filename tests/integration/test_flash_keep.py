# SPDX-License-Identifier: BSD-3-Clause
"""Commands memcached 1.6.45 answers from an extstore item's header, with
its value left on flash (docs/store-flash.md "How a read is served"):
incr/decr answer non-numeric, append/prepend and add NOT_STORED, delete
deletes; none copies the item back into RAM (recache_from_extstore stays),
alone or pipelined behind a read that waits for flash. A get after them
still reads the value back whole, from flash, and leaves it there: only a
second read recaches, one in ext_recache_rate (docs/store-flash.md)."""
import pytest

from helpers import Server, stats

RAM_MB = 8
FLASH_MB = 128
VLEN = 4000


def value_of(n):
    return (b"%07d:" % n) * (VLEN // 8)


@pytest.fixture
def filled(server_bin, tmp_path_factory):
    """RAM filled three times over: the first third's keys are on flash."""
    d = tmp_path_factory.mktemp("keep")
    srv = Server(server_bin, ["-m", str(RAM_MB), "-t", "1", "-o",
                              f"ext_path={d}/flash:{FLASH_MB}m"], workdir=str(d))
    srv.start()
    if "no flash tier" in srv.stderr():
        srv.stop()
        pytest.skip("this build has no flash tier")
    c = srv.connect(timeout=30)
    n = 3 * (RAM_MB << 20) // VLEN
    batch = []
    for i in range(n):
        v = value_of(i)
        batch.append(b"set k:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
        if len(batch) == 32:
            c.send(b"".join(batch) + b"mn\r\n")
            assert c.read_exact(4) == b"MN\r\n"
            batch = []
    c.send(b"".join(batch))
    assert c.call("mn") == b"MN\r\n"
    assert int(stats(c)["extstore_objects_written"]) > n // 2
    yield srv, c
    c.close()
    srv.stop()


def recached(c):
    return int(stats(c)["recache_from_extstore"])


def flash_reads(c):
    return int(stats(c)["get_extstore"])


def get(c, key):
    line = c.call(b"get " + key)
    if line == b"END\r\n":
        return None
    v = c.read_exact(int(line.split()[3]) + 2)[:-2]
    assert c.readline() == b"END\r\n"
    return v


def test_commands_leave_a_flash_item_on_flash(filled):
    _, c = filled
    before = recached(c)
    assert c.call("incr k:1 1") == b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert c.call("decr k:1 1") == b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    c.send(b"append k:2 0 0 2\r\nhi\r\n")
    assert c.readline() == b"NOT_STORED\r\n"
    c.send(b"prepend k:2 0 0 2\r\nhi\r\n")
    assert c.readline() == b"NOT_STORED\r\n"
    c.send(b"add k:3 0 0 2\r\nhi\r\n")
    assert c.readline() == b"NOT_STORED\r\n"
    objects = int(stats(c)["extstore_objects_used"])
    assert c.call("delete k:4") == b"DELETED\r\n"
    assert int(stats(c)["extstore_objects_used"]) == objects - 1
    assert recached(c) == before, "a command copied a flash item back into RAM"
    # the values are untouched, and a get reads them back
    for k in (1, 2, 3):
        assert get(c, b"k:%d" % k) == value_of(k)
    assert get(c, b"k:4") is None
    # read from flash and left there (a first read since they went)
    assert recached(c) == before
    reads = flash_reads(c)
    # read again: the connection's first such read recaches (its counter
    # starts at 0), the next two of ext_recache_rate's 2000 do not
    for k in (1, 2, 3):
        assert get(c, b"k:%d" % k) == value_of(k)
    assert flash_reads(c) == reads + 3
    assert recached(c) == before + 1


def test_pipelined_behind_a_read_that_waits(filled):
    """Behind a get that waits for flash, the incr and the append wait in
    their turn and still leave their items where they are."""
    _, c = filled
    before = recached(c)
    reads = flash_reads(c)
    c.send(b"get k:10\r\nincr k:11 1\r\nappend k:12 0 0 2\r\nhi\r\nmn\r\n")
    line = c.readline()
    assert line.startswith(b"VALUE k:10 ")
    assert c.read_exact(VLEN + 2)[:-2] == value_of(10)
    assert c.readline() == b"END\r\n"
    assert c.readline() == b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert c.readline() == b"NOT_STORED\r\n"
    assert c.readline() == b"MN\r\n"
    assert flash_reads(c) == reads + 1  # k:10's get only
    assert recached(c) == before  # its first read: left on flash
