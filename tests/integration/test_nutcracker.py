# SPDX-License-Identifier: BSD-3-Clause
"""Scale-out behind the proxy users already run: nutcracker (twemproxy) in
front of three nodelay nodes, ketama distribution, auto_eject_hosts. One node
is killed mid-load: the pool must eject it, keep serving the other nodes'
keys throughout, and take it back once it is restarted (issue 10)."""
import json
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest

import helpers

pytestmark = [pytest.mark.slow, pytest.mark.clients]

RETRY_MS = 1000  # server_retry_timeout: how long an ejected node stays out
KEYS = [f"nc:{i}" for i in range(300)]


def request(sock, line):
    """One text request; its reply up to END / STORED / an error line."""
    sock.sendall(line)
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
        if buf.endswith((b"END\r\n", b"STORED\r\n", b"NOT_STORED\r\n")) or (
                buf.endswith(b"\r\n") and buf.split(b" ", 1)[0] in (
                    b"SERVER_ERROR", b"CLIENT_ERROR", b"ERROR\r\n")):
            return buf


def set_key(sock, key, value):
    return request(sock, b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value))


def get_key(sock, key):
    """The value, None for a miss; raises on an error reply."""
    r = request(sock, b"get %s\r\n" % key.encode())
    if r == b"END\r\n":
        return None
    if not r.startswith(b"VALUE "):
        raise IOError(r)
    return r.split(b"\r\n")[1]


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout * helpers.slow_factor())
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout * helpers.slow_factor()
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except (OSError, IOError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def pool_stats(stats_port):
    with socket.create_connection(("127.0.0.1", stats_port), timeout=5) as s:
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return json.loads(data)["nodelay_pool"]


@pytest.fixture
def node(start_server):
    """start_node(port) -> a nodelay on 127.0.0.1:port (a fixed port, so a
    restarted node comes back where the proxy expects it)."""
    def start_node(port):
        return start_server("-p", str(port), "-U", "0", "-l", "127.0.0.1", listen=False,
                            port=port)
    return start_node


@pytest.fixture
def proxy(tmp_path):
    exe = shutil.which("nutcracker")
    if not exe:
        pytest.skip("nutcracker is absent (Debian package nutcracker; scripts/install-deps.sh)")
    procs = []

    def start_proxy(node_ports):
        port, stats_port = helpers.free_port(), helpers.free_port()
        servers = "".join(f"   - 127.0.0.1:{p}:1 node{i}\n" for i, p in enumerate(node_ports))
        conf = tmp_path / "nutcracker.yml"
        conf.write_text(f"""nodelay_pool:
  listen: 127.0.0.1:{port}
  hash: md5
  distribution: ketama
  timeout: 1000
  preconnect: true
  auto_eject_hosts: true
  server_retry_timeout: {RETRY_MS}
  server_failure_limit: 1
  servers:
{servers}""")
        log = tmp_path / "nutcracker.log"
        proc = subprocess.Popen([exe, "-c", str(conf), "-s", str(stats_port), "-a", "127.0.0.1",
                                 "-i", "100", "-o", str(log), "-p", str(tmp_path / "nc.pid"),
                                 "-v", "5"], stdin=subprocess.DEVNULL)
        procs.append(proc)
        wait_for(lambda: connect(port).close() is None, 10, "nutcracker to listen")
        return port, stats_port

    yield start_proxy
    for p in procs:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def owner(nodes, key):
    """Which node holds key, asked directly."""
    held = []
    for i, n in enumerate(nodes):
        c = n.connect()
        try:
            if c.get(key) is not None:
                held.append(i)
        finally:
            c.close()
    assert len(held) <= 1, f"{key} is on nodes {held}"
    return held[0] if held else None


def test_ketama_pool_ejects_and_takes_back(node, proxy):
    ports = [helpers.free_port() for _ in range(3)]
    nodes = [node(p) for p in ports]
    pport, sport = proxy(ports)
    c = connect(pport)
    for k in KEYS:
        assert set_key(c, k, b"v-" + k.encode()) == b"STORED\r\n"
    placed = {k: owner(nodes, k) for k in KEYS}
    by_node = [[k for k in KEYS if placed[k] == i] for i in range(3)]
    assert all(len(ks) > len(KEYS) // 10 for ks in by_node), [len(ks) for ks in by_node]
    victim = 1
    others = by_node[0] + by_node[2]

    # load through the proxy on the surviving nodes' keys, while node 1 dies
    errors, served, stop = [], [0], threading.Event()

    def load():
        s = connect(pport)
        try:
            while not stop.is_set():
                for k in others[:50]:
                    v = get_key(s, k)
                    if v != b"v-" + k.encode():
                        errors.append((k, v))
                    served[0] += 1
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            errors.append(repr(e))
        finally:
            s.close()

    t = threading.Thread(target=load)
    t.start()
    time.sleep(0.3)
    before = served[0]
    dead = nodes[victim]
    dead.proc.kill()
    dead.proc.wait()
    dead.stopped = True  # killed on purpose: not a clean-exit check

    # the victim's keys fail at first, then the pool ejects it and maps them
    # to the other nodes: a set and get of one of them succeed again
    k = by_node[victim][0]
    wait_for(lambda: set_key(c, k, b"moved") == b"STORED\r\n" and get_key(c, k) == b"moved",
             RETRY_MS / 1000 * 5, "the pool to eject the dead node")
    wait_for(lambda: pool_stats(sport)["server_ejects"] >= 1, 5, "server_ejects in the stats")
    assert owner([nodes[0], nodes[2]], k) is not None
    time.sleep(0.5)
    stop.set()
    t.join(30)
    assert not errors, f"the surviving nodes' keys failed while a node was down: {errors[:5]}"
    assert served[0] > before, "no load ran while the node was down"
    for k2 in others:
        assert get_key(c, k2) == b"v-" + k2.encode(), k2

    # restarted (empty, same port), it is taken back after server_retry_timeout:
    # its keys land on it again
    back = node(ports[victim])
    probe = by_node[victim][1]

    def on_victim():
        if set_key(c, probe, b"back") != b"STORED\r\n":
            return False
        d = back.connect()
        try:
            return d.get(probe) == b"back"
        finally:
            d.close()
    wait_for(on_victim, RETRY_MS / 1000 * 10, "the pool to take the restarted node back")
    assert get_key(c, probe) == b"back"
    for k2 in others:
        assert get_key(c, k2) == b"v-" + k2.encode(), k2
    c.close()
