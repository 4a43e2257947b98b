"""Plain `stats` side by side with memcached 1.6.45 itself (../shared/ref):
for each flag set that changes which rows memcached prints, both servers
print the same field names in the same order (values differ), and the
connection counts follow 1.6.45's definitions.

The reference binary lives outside the project (../shared/ref, see its
README, or $NODELAY_REF_DIR); without it these tests skip, saying so."""
import os
import socket
import time

import pytest

import helpers
from helpers import Server

# $NODELAY_REF_DIR overrides where the reference lives (a worktree's ../shared
# is not the project's).
REF = os.path.join(os.environ.get("NODELAY_REF_DIR") or
                   os.path.join(helpers.ROOT, "..", "shared", "ref"), "memcached-1.6.45")


@pytest.fixture(scope="module")
def ref_bin():
    if not os.access(REF, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {os.path.normpath(REF)}")
    return REF


@pytest.fixture
def pair(server_bin, ref_bin, tmp_path):
    """pair(*flags) -> (ours, ref), both stopped at teardown."""
    started = []

    def start(*flags):
        servers = []
        for binary in (server_bin, ref_bin):
            srv = Server(binary, list(flags), workdir=str(tmp_path))
            started.append(srv)
            servers.append(srv.start())
        return servers

    yield start
    for srv in started:
        srv.stop()


def stat_rows(srv):
    c = srv.connect()
    raw = c.call("stats", until=b"END\r\n").decode()
    c.close()
    rows = [line.split(" ", 2)[1:] for line in raw.split("\r\n") if line.startswith("STAT ")]
    return rows


def names(srv):
    return [name for name, _ in stat_rows(srv)]


def udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


FLAG_SETS = {
    "defaults": [],
    # issue 12 item 7: 1.6.45 prints 84 fields here
    "no_lru_crawler,no_lru_maintainer": ["-o", "no_lru_crawler,no_lru_maintainer"],
    "no_lru_crawler": ["-o", "no_lru_crawler"],
    "no_lru_maintainer": ["-o", "no_lru_maintainer"],
    "no_slab_reassign": ["-o", "no_slab_reassign"],
    "no_maxconns_fast": ["-o", "no_maxconns_fast"],
    "idle_timeout": ["-o", "idle_timeout=30"],
    "one thread, -R": ["-t", "1", "-R", "5"],
    "ascii only": ["-B", "ascii"],
}


@pytest.mark.parametrize("flags", list(FLAG_SETS.values()), ids=list(FLAG_SETS))
def test_field_names_match_memcached(pair, flags):
    ours, ref = pair(*flags)
    want = names(ref)
    assert names(ours) == want
    if flags == ["-o", "no_lru_crawler,no_lru_maintainer"]:
        assert len(want) == 84


def test_field_names_match_memcached_with_udp(pair):
    ours, ref = pair("-U", str(udp_port()))
    assert names(ours) == names(ref)


@pytest.mark.xfail(reason="-o no_modern leaves maxconns_fast on (and slab_automove_window, "
                          "slab_chunk_max as they were): the settings table's to fix",
                   strict=False)
def test_field_names_match_memcached_no_modern(pair):
    ours, ref = pair("-o", "no_modern")
    assert names(ours) == names(ref)


CONN_FIELDS = ("curr_connections", "total_connections", "connection_structures",
               "max_connections", "threads")


def conn_counts(srv, extra_udp=False):
    """Open three more clients, close two, and read the connection rows."""
    extra = [srv.connect() for _ in range(3)]
    for c in extra:
        assert c.call("version").startswith(b"VERSION")
    for c in extra[:2]:
        c.close()
    time.sleep(0.2 * helpers.slow_factor())  # both servers notice the closes
    rows = dict(stat_rows(srv))
    extra[2].close()
    return {k: rows[k] for k in CONN_FIELDS}


@pytest.mark.parametrize("flags", [[], ["-l", "127.0.0.2"], "udp"],
                         ids=["one listener", "two listeners", "udp"])
def test_connection_counts_follow_memcached(pair, flags):
    """curr_connections is memcached's conn count (listeners, one UDP conn per
    thread, clients) minus one; connection_structures counts descriptors
    ever used; total_connections counts listeners too."""
    if flags == "udp":
        flags = ["-U", str(udp_port())]
    ours, ref = pair(*flags)
    assert conn_counts(ours) == conn_counts(ref)
