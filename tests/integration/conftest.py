"""Fixtures that start a real server binary on a free port and talk to it.

The binary under test is $NODELAY_BIN (default build/release-epoll/nodelay).
Pointing it at /usr/bin/memcached runs the suite against Debian's memcached
1.6.18, which is how the tests themselves are validated: where 1.6.18 and
1.6.45 answer differently, a test states both (see helpers.expect).
"""
import os
import shutil

import pytest

import helpers
from helpers import Server

ROOT = helpers.ROOT


def pytest_configure(config):
    for name, doc in (
        ("concurrency", "many connections or threads at once; also run under TSan"),
        ("slow", "takes seconds; left out of the reduced (poll/tsan) runs"),
        ("clients", "real client libraries and tools"),
        ("trap", "the delayed-ACK trap"),
    ):
        config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_report_header(config):
    return [f"server under test: {helpers.server_bin()} ({helpers.target()})"]


@pytest.fixture(scope="session")
def server_bin():
    path = helpers.server_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"server binary {path} not found: build it (make) or set NODELAY_BIN")
    return path


@pytest.fixture
def start_server(server_bin, tmp_path):
    """Factory: start_server(*flags, binary=None) -> Server; every server is
    stopped at teardown and must exit cleanly (SIGTERM -> exit 0, no
    sanitizer report)."""
    started = []

    def factory(*flags, binary=None, **kw):
        srv = Server(binary or server_bin, list(flags), workdir=str(tmp_path), **kw)
        srv.start()
        started.append(srv)
        return srv

    yield factory
    errors = []
    for srv in started:
        try:
            srv.stop()
        except AssertionError as e:
            errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors))


@pytest.fixture(scope="module")
def server(server_bin, tmp_path_factory):
    """One server with default flags for a whole module; tests use their own keys."""
    srv = Server(server_bin, [], workdir=str(tmp_path_factory.mktemp("srv")))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def conn(server):
    c = server.connect()
    yield c
    c.close()


@pytest.fixture(scope="module")
def debug_server(server_bin, tmp_path_factory):
    """A server whose clock the tests can move (`debugtime`): the binary under
    test if it is a debug/asan build, else build/debug-<event>/nodelay."""
    binary = helpers.debug_bin(server_bin)
    if binary is None:
        pytest.skip("no server build answers debugtime (build CONFIG=debug)")
    srv = Server(binary, [], workdir=str(tmp_path_factory.mktemp("dbg")))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def memcached_bin():
    path = shutil.which("memcached") or "/usr/bin/memcached"
    if not os.access(path, os.X_OK):
        pytest.skip("Debian memcached is not installed")
    return path
