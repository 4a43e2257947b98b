# SPDX-License-Identifier: BSD-3-Clause
"""Real client libraries and tools, unchanged, against the server."""
import os
import subprocess

import pytest

from helpers import speaks_binary

pytestmark = pytest.mark.clients
HERE = os.path.dirname(__file__)


def test_pymemcache(server):
    from pymemcache.client.base import Client
    c = Client(("127.0.0.1", server.port), no_delay=True, timeout=5)
    big = os.urandom(300 * 1024)
    assert c.set("pm1", b"v", expire=0)
    assert c.get("pm1") == b"v"
    assert c.set("pm2", big)
    assert c.get("pm2") == big
    assert c.add("pm1", b"x", noreply=False) is False
    assert c.replace("pm1", b"y", noreply=False) is True
    assert c.append("pm1", b"z", noreply=False) is True
    assert c.prepend("pm1", b"x", noreply=False) is True
    assert c.get("pm1") == b"xyz"
    assert c.get_many(["pm1", "pm2", "pm-missing"]) == {"pm1": b"xyz", "pm2": big}
    value, cas = c.gets("pm1")
    assert c.cas("pm1", b"new", cas, noreply=False) is True
    assert c.cas("pm1", b"newer", cas, noreply=False) is False
    c.set("pm3", b"10")
    assert c.incr("pm3", 5) == 15
    assert c.decr("pm3", 100) == 0
    assert c.incr("pm-missing", 1) is None
    assert c.touch("pm1", 100, noreply=False) is True
    assert c.delete("pm1", noreply=False) is True
    assert c.get("pm1") is None
    assert c.set_many({f"pmm{i}": b"%d" % i for i in range(300)}, noreply=False) == []
    assert len(c.get_many([f"pmm{i}" for i in range(300)])) == 300
    st = c.stats()
    assert b"curr_items" in st or "curr_items" in st
    assert c.version().startswith(b"1.6")
    assert c.flush_all(noreply=False) is True
    assert c.get("pm2") is None
    c.close()


def _pylibmc(server, binary):
    import pylibmc
    mc = pylibmc.Client([f"127.0.0.1:{server.port}"], binary=binary,
                        behaviors={"tcp_nodelay": True, "cas": True})
    big = os.urandom(500 * 1024)
    assert mc.set("pl1", b"v")
    assert mc.get("pl1") == b"v"
    assert mc.set("pl2", big)
    assert mc.get("pl2") == big
    assert mc.add("pl1", b"x") is False
    assert mc.replace("pl1", b"y")
    assert mc.append("pl1", b"z")
    assert mc.prepend("pl1", b"x")
    assert mc.get("pl1") == b"xyz"
    assert mc.get_multi(["pl1", "pl2", "pl-missing"]) == {"pl1": b"xyz", "pl2": big}
    mc.set("pl3", 10)
    assert mc.incr("pl3", 5) == 15
    assert mc.decr("pl3", 100) == 0
    value, cas = mc.gets("pl1")
    assert mc.cas("pl1", b"new", cas)
    assert not mc.cas("pl1", b"newer", cas)
    assert mc.touch("pl1", 100)
    assert mc.delete("pl1")
    assert mc.get("pl1") is None
    assert mc.set_multi({f"plm{i}": i for i in range(300)}) == []
    assert len(mc.get_multi([f"plm{i}" for i in range(300)])) == 300
    assert mc.get_stats()
    mc.flush_all()
    assert mc.get("pl2") is None
    mc.disconnect_all()


def test_pylibmc_text(server):
    _pylibmc(server, binary=False)


def test_pylibmc_binary(server):
    if not speaks_binary(server):
        pytest.skip("the server does not answer the binary protocol yet")
    _pylibmc(server, binary=True)


def test_cache_memcached_fast(server):
    r = subprocess.run(["perl", os.path.join(HERE, "clients", "cmf.pl"),
                        f"127.0.0.1:{server.port}"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not ok" not in r.stdout


def _memccapable(srv, mode):
    r = subprocess.run(["memccapable", "-h", "127.0.0.1", "-p", str(srv.port), "-t", "2", mode],
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "All tests passed" in out, out
    assert "[FAIL]" not in out, out


def test_memccapable_ascii(start_server):
    _memccapable(start_server(), "-a")


def test_memccapable_binary(start_server):
    srv = start_server()
    if not speaks_binary(srv):
        pytest.skip("the server does not answer the binary protocol yet")
    _memccapable(srv, "-b")

