"""-e FILE: the cache survives a restart, graceful or after kill -9.

A graceful stop (SIGTERM or SIGUSR1) marks the file clean; the next start
with the same file and settings restores every live item with its flags,
CAS and remaining TTL, and the CAS counter goes on above them. After a kill
-9 the restore gives each key the value of its last acknowledged write (or
of one in flight), never one overwritten, deleted or flushed before. A file
that is damaged or made with other settings is discarded with a log line.
"""
import os
import random
import signal
import struct
import subprocess
import threading
import time

import pytest

import helpers
from helpers import stats

pytestmark = pytest.mark.skipif(
    helpers.is_memcached(helpers.server_bin()),
    reason="nodelay's -e restore and stats nodelay; memcached's -e is tested by its restart.t")


@pytest.fixture
def mem_file(tmp_path):
    """A memory file on tmpfs, removed afterwards."""
    path = f"/dev/shm/nodelay-test-{os.getpid()}-{random.getrandbits(32):08x}"
    yield path
    for p in (path,):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def kill9(srv):
    srv.proc.kill()
    srv.proc.wait()
    srv.stopped = True


def graceful(srv, sig=signal.SIGTERM):
    srv.stop(sig)


def nodelay_stats(srv):
    c = srv.connect()
    try:
        return stats(c, "nodelay")
    finally:
        c.close()


def bin_cmd(c, opcode, key=b"", value=b"", extras=b"", cas=0):
    c.send(helpers.bin_request(opcode, key, value, extras, cas=cas))
    return helpers.bin_read(c)


def test_graceful_restore_text_meta_binary(start_server, mem_file):
    flags = ("-m", "32", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    want = {}
    for i in range(300):
        k = f"t{i}"
        v = os.urandom(random.randint(0, 3000))
        assert c.set(k, v, flags=i * 7919 % 2**32, exptime=0 if i % 3 else 1000) == b"STORED\r\n"
        want[k] = (i * 7919 % 2**32, v)
    # meta: ms with flags and TTL
    for i in range(100):
        k = f"m{i}"
        v = os.urandom(i * 13)
        c.send(b"ms %s %d F%d T500\r\n%s\r\n" % (k.encode(), len(v), i, v))
        assert c.readline() == b"HD\r\n"
        want[k] = (i, v)
    # binary set (opcode 1, its own connection): extras = flags(4) exptime(4)
    bc = srv.connect()
    for i in range(100):
        k = f"b{i}".encode()
        v = os.urandom(i * 7)
        r = bin_cmd(bc, 0x01, k, v, struct.pack(">II", 0xdead0000 + i, 0 if i % 2 else 2000))
        assert r["status"] == 0
        want[k.decode()] = (0xdead0000 + i, v)
    bc.close()
    # overwrites, deletes, append, incr
    assert c.set("t1", b"new", flags=5) == b"STORED\r\n"
    want["t1"] = (5, b"new")
    assert c.call("delete t2") == b"DELETED\r\n"
    del want["t2"]
    assert c.store("append", "t4", b"-tail") == b"STORED\r\n"
    want["t4"] = (want["t4"][0], want["t4"][1] + b"-tail")
    assert c.set("n", b"41") == b"STORED\r\n"
    assert c.call("incr n 1") == b"42\r\n"
    want["n"] = (0, b"42")
    before = c.get_multi(list(want), "gets")
    c.send(b"mg t0 t\r\n")
    ttl_before = int(c.readline().split()[1][1:])
    c.close()
    assert set(before) == set(want)
    graceful(srv)

    srv2 = start_server(*flags)
    c = srv2.connect()
    after = c.get_multi(list(want) + ["t2"], "gets")
    assert "t2" not in after
    assert set(after) == set(want)
    for k, (fl, v) in want.items():
        assert after[k][0] == fl and after[k][1] == v, k
        assert after[k][2] == before[k][2], f"CAS of {k} changed"
    c.send(b"mg t0 t\r\n")
    ttl_after = int(c.readline().split()[1][1:])
    assert ttl_before - 3 <= ttl_after <= ttl_before
    # the CAS counter goes on above every restored CAS
    assert c.set("fresh", b"x") == b"STORED\r\n"
    assert c.gets("fresh")[2] > max(e[2] for e in before.values())
    st = stats(c, "nodelay")
    assert st["restore_mode"] == "graceful"
    assert int(st["restored_items"]) == len(want)
    assert int(st["restore_discarded_corrupt"]) == 0
    c.close()


def test_sigusr1_and_crash_restore(start_server, mem_file):
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.set("a", b"1", flags=3) == b"STORED\r\n"
    c.close()
    graceful(srv, signal.SIGUSR1)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["a"]) == {"a": (3, b"1")}
    assert c.set("b", b"2") == b"STORED\r\n"
    assert c.call("delete a") == b"DELETED\r\n"
    c.close()
    kill9(srv)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["a", "b"]) == {"b": (0, b"2")}
    assert stats(c, "nodelay")["restore_mode"] == "crash"
    c.close()


def test_flush_all_survives(start_server, mem_file):
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    for i in range(50):
        c.set(f"k{i}", b"v")
    assert c.call("flush_all") == b"OK\r\n"
    c.set("after", b"yes")
    c.close()
    kill9(srv)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi([f"k{i}" for i in range(50)] + ["after"]) == {"after": (0, b"yes")}
    c.close()
