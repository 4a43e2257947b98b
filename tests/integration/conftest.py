# SPDX-License-Identifier: BSD-3-Clause
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


# The test files whose outcome can depend on the event backend: they drive
# accepts, reads, writes, partial writes, timers, closes and the backend's
# choice itself. `make test` runs only these (marked `backend`) on
# the second and third backends (epoll, poll); every test runs on the
# default one in the release and asan runs. The rest (settings, expiry's
# clock, stats and size classes, logging's lines, metrics' HTTP thread,
# restart files, packaging) runs the same code whatever the backend.
# docs/testing.md says why each is here.
BACKEND_MODULES = (
    "test_connections", "test_delayed_ack", "test_syscalls", "test_bad_clients",
    "test_hardening_uploads", "test_hardening_replies", "test_event_backend",
    "test_text_commands", "test_meta_binary", "test_udp", "test_differential",
    "test_dump", "test_tls", "test_watch", "test_listener", "test_flash_wait",
    "test_flash_wait_input",
)


# The longest files, about half of a full run's wall time (a package build,
# kill -9 loops with and without a flash tier, the reply-memory attacks, the
# differential fuzzer, the recache rate beside memcached's), marked `long`:
# `make test` runs them as a pytest process of their own beside the rest of
# the same run, so the full runs' wall time is their longer half. Rebalance
# by the per-file times in build/test-logs/pytest-*.xml when one half grows.
LONG_MODULES = (
    "test_deploy", "test_restart", "test_hardening_replies",
    "test_flash_restart", "test_diff_fuzz", "test_flash_recache_rate",
    "test_diff_fuzz_flash",
)


def pytest_configure(config):
    for name, doc in (
        ("concurrency", "many connections or threads at once; also run under TSan"),
        ("slow", "takes seconds; left out of the reduced (epoll/poll/tsan) runs"),
        ("clients", "real client libraries and tools"),
        ("trap", "the delayed-ACK trap; test-all.sh runs these with no other stage beside them"),
        ("backend", "in a file of BACKEND_MODULES (conftest.py): also run on epoll and poll"),
        ("long", "in a file of LONG_MODULES (conftest.py): run beside the rest of its run"),
    ):
        config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module.__name__ in BACKEND_MODULES:
            item.add_marker(pytest.mark.backend)
        if item.module.__name__ in LONG_MODULES:
            item.add_marker(pytest.mark.long)


def pytest_report_header(config):
    return [f"server under test: {helpers.server_bin()} ({helpers.target()})"]


@pytest.fixture(scope="session")
def server_bin():
    path = helpers.server_bin()
    if not os.access(path, os.X_OK):
        pytest.fail(f"server binary {path} not found: build it (make) or set NODELAY_BIN")
    return path


@pytest.fixture(autouse=True)
def _drop_big_files(request):
    """After a test with a tmp_path (and its servers, set up after this and
    so stopped before): helpers.drop_big_files says why."""
    d = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if d is not None:
        helpers.drop_big_files(d)


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
