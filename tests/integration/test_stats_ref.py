# SPDX-License-Identifier: BSD-3-Clause
"""Plain `stats` side by side with memcached 1.6.45 itself (../shared/ref):
for each flag set that changes which rows memcached prints, both servers
print the same field names in the same order (values differ), and the
connection counts follow 1.6.45's definitions.

The reference binary lives outside the project (../shared/ref, see its
README, or $NODELAY_REF); without it these tests skip, saying so."""
import os
import signal
import socket
import time

import pytest

import helpers
from helpers import Server, bin_read, bin_request

# $NODELAY_REF (the binary) or $NODELAY_REF_DIR (its folder) say where the
# reference is when the tree is not beside ../shared, as in the other tests.
REF = os.environ.get("NODELAY_REF") or os.path.join(
    os.environ.get("NODELAY_REF_DIR") or os.path.join(helpers.ROOT, "..", "shared", "ref"),
    "memcached-1.6.45")


def need(ref):
    if not os.access(ref, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {os.path.normpath(REF)} (../shared/ref)")
    return ref


@pytest.fixture(scope="module")
def ref_bin():
    return need(REF)


@pytest.fixture(scope="module")
def ref_shared():
    """For what 1.6.18 does as 1.6.45 does: Debian's memcached stands in
    when 1.6.45 is absent (helpers.ref_or_debian)."""
    return need(helpers.ref_or_debian(REF))


@pytest.fixture
def pair(server_bin, ref_bin, tmp_path):
    """pair(*flags) -> (ours, ref), both stopped at teardown."""
    yield from start_pair(server_bin, ref_bin, tmp_path)


@pytest.fixture
def pair_shared(server_bin, ref_shared, tmp_path):
    """pair, for the comparisons 1.6.18 passes too."""
    yield from start_pair(server_bin, ref_shared, tmp_path)


def start_pair(server_bin, ref_bin, tmp_path):
    started = []

    def start(*flags):
        """{dir} in a flag: a folder of each server's own (an ext_path
        file is locked by the server that opens it)."""
        servers = []
        for i, binary in enumerate((server_bin, ref_bin)):
            d = tmp_path / f"{len(started)}-{i}"
            d.mkdir()
            srv = Server(binary, [f.replace("{dir}", str(d)) for f in flags],
                         workdir=str(tmp_path))
            started.append(srv)
            servers.append(srv.start())
        return servers

    yield start
    # memcached takes up to a second to exit: signal every server first
    for srv in started:
        if srv.proc is not None and srv.proc.poll() is None:
            srv.proc.send_signal(signal.SIGTERM)
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
    "udp": ["-U", "udp"],  # a free port, picked at start
    # extstore's rows, extstore_memory_pressure among them
    "ext_path": ["-o", "ext_path={dir}/f:64m"],
}


def test_field_names_match_memcached(pair):
    """Every flag set at once (memcached takes a second to stop, so the
    pairs run side by side), then each compared: the same names in order."""
    started = {}
    for label, flags in FLAG_SETS.items():
        flags = [str(udp_port()) if f == "udp" else f for f in flags]
        started[label] = pair(*flags)
    differ = {}
    for label, (ours, ref) in started.items():
        want, got = names(ref), names(ours)
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b),
                      min(len(want), len(got)))
            differ[label] = dict(missing=sorted(set(want) - set(got)),
                                 extra=sorted(set(got) - set(want)),
                                 first_difference=(at, want[at:at + 1], got[at:at + 1]))
    assert not differ, f"per flag set: {differ}"
    assert len(names(started["no_lru_crawler,no_lru_maintainer"][1])) == 84


def test_field_names_match_memcached_no_modern(pair_shared):
    ours, ref = pair_shared("-o", "no_modern")
    assert names(ours) == names(ref)


def settings_rows(srv):
    c = srv.connect()
    raw = c.call("stats settings", until=b"END\r\n").decode()
    c.close()
    return dict(line.split(" ", 2)[1:] for line in raw.split("\r\n") if line.startswith("STAT "))


# What -o no_modern changes, and how slab_chunk_max follows -I and the
# order of the flags that set it.
NO_MODERN_FIELDS = ("maxconns_fast", "slab_chunk_max", "slab_reassign", "slab_automove",
                    "lru_segmented", "hash_algorithm", "lru_crawler", "lru_maintainer_thread")


@pytest.mark.parametrize("flags", [
    ["-o", "no_modern"],
    ["-o", "no_modern", "-I", "2m"],
    ["-I", "2m", "-o", "no_modern"],
    ["-I", "2m"],
    ["-I", "512k"],
    ["-o", "slab_chunk_max=64,no_modern"],
    ["-o", "no_modern,slab_chunk_max=64"],
], ids=" ".join)
def test_no_modern_and_slab_chunk_max_values_match_memcached(request, flags):
    # 1.6.18 agrees but for its slab_chunk_max combined with no_modern
    shared = not any("slab_chunk_max" in f for f in flags)
    ours, ref = request.getfixturevalue("pair_shared" if shared else "pair")(*flags)
    got, want = settings_rows(ours), settings_rows(ref)
    assert {f: got[f] for f in NO_MODERN_FIELDS} == {f: want[f] for f in NO_MODERN_FIELDS}


CONN_FIELDS = ("curr_connections", "total_connections", "connection_structures",
               "max_connections", "threads")


def conn_counts(srv, extra_udp=False):
    """Open three more clients, close two, and read the connection rows.

    One connection reads every row, opened first and kept: a descriptor the
    server has not yet seen closed (the start-up probe's, a stats reader's)
    would give the next client a higher one, and connection_structures
    counts the highest ever used."""
    c0 = srv.connect()

    def curr():
        rows = dict(line.split(" ", 2)[1:] for line in
                    c0.call("stats", until=b"END\r\n").decode().split("\r\n")
                    if line.startswith("STAT "))
        return rows, int(rows["curr_connections"])

    deadline = time.monotonic() + 10 * helpers.slow_factor()
    _, last = curr()
    steady = 0
    while steady < 3 and time.monotonic() < deadline:  # the probe's close seen
        time.sleep(0.05)
        _, n = curr()
        steady = steady + 1 if n == last else 0
        last = n
    extra = [srv.connect() for _ in range(3)]
    for c in extra:
        assert c.call("version").startswith(b"VERSION")
    for c in extra[:2]:
        c.close()
    rows, n = curr()
    while n > last + 1 and time.monotonic() < deadline:  # both closes seen
        time.sleep(0.02)
        rows, n = curr()
    extra[2].close()
    c0.close()
    return {k: rows[k] for k in CONN_FIELDS}


@pytest.mark.parametrize("flags", [[], ["-l", "127.0.0.2"], "udp"],
                         ids=["one listener", "two listeners", "udp"])
def test_connection_counts_follow_memcached(pair_shared, flags):
    """curr_connections is memcached's conn count (listeners, one UDP conn per
    thread, clients) minus one; connection_structures counts descriptors
    ever used; total_connections counts listeners too."""
    if flags == "udp":
        flags = ["-U", str(udp_port())]
    ours, ref = pair_shared(*flags)
    assert conn_counts(ours) == conn_counts(ref)


def bin_stat_names(srv, group=b""):
    c = srv.connect()
    c.send(bin_request(0x10, key=group, opaque=3))
    out = []
    while True:
        r = bin_read(c)
        assert r["status"] == 0 and r["opaque"] == 3
        if not r["key"]:
            break
        out.append(r["key"].decode())
    c.close()
    return out


@pytest.mark.parametrize("flags", [[], ["-o", "no_lru_crawler,no_lru_maintainer"]],
                         ids=["defaults", "no_lru_crawler,no_lru_maintainer"])
def test_binary_stat_names_match_memcached(pair, flags):
    """Binary STAT is the same rows, one packet each, as 1.6.45 sends them."""
    ours, ref = pair(*flags)
    want = bin_stat_names(ref)
    assert bin_stat_names(ours) == want
    assert want == names(ref)


def level(srv_conn):
    return int(helpers.stats(srv_conn)["hash_power_level"])


def test_hash_power_level_grows_at_memcached_item_counts(pair_shared):
    """`-o hashpower=N` and `hash_power_level` keep memcached's contract:
    2^N chains, doubled once the items pass 1.5 a chain. nodelay's buckets
    stand for four chains each (docs/store-index.md "Index"), so both servers
    report the same level before and after each threshold."""
    ours, ref = pair_shared("-o", "hashpower=13")  # 1.6.45 refuses 12 at -t 4
    conns = [ours.connect(), ref.connect()]
    assert [level(c) for c in conns] == [13, 13]
    count = 0
    for want_before, threshold in ((13, 12288), (14, 24576)):
        batch = b"".join(b"set k%d 0 0 1 noreply\r\nx\r\n" % i for i in range(count, threshold))
        count = threshold
        for c in conns:
            c.send(batch)
            assert c.call("mn") == b"MN\r\n"
        time.sleep(0.3)  # memcached grows on its maintenance thread
        assert [level(c) for c in conns] == [want_before, want_before]
        for c in conns:
            c.send(b"set k%d 0 0 1 noreply\r\nx\r\n" % count)
            assert c.call("mn") == b"MN\r\n"
        count += 1
        deadline = time.monotonic() + 5
        while [level(c) for c in conns] != [want_before + 1] * 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [level(c) for c in conns] == [want_before + 1, want_before + 1]


# The flag sets that change which `stats items` / `stats settings` rows
# 1.6.45 prints, or their values: no_lru_maintainer drops the per-LRU rows
# and turns lru_segmented off; temporary_ttl adds number_temp.
SUB_FLAG_SETS = {
    "defaults": [],
    "no_lru_crawler,no_lru_maintainer": ["-o", "no_lru_crawler,no_lru_maintainer"],
    "no_modern": ["-o", "no_modern"],
    "temporary_ttl": ["-o", "temporary_ttl=30"],
}


def sub_rows(srv, group):
    """[(name, value)] of `stats <group>`; `stats conns` names without their
    fd, each once (fds differ between the servers)."""
    c = srv.connect()
    raw = c.call(f"stats {group}", until=b"END\r\n").decode()
    c.close()
    rows = [tuple(line.split(" ", 2)[1:]) for line in raw.split("\r\n") if line.startswith("STAT ")]
    if group == "conns":
        names = []
        for name, _ in rows:
            field = name.split(":", 1)[1]
            if field not in names:
                names.append(field)
        return [(n, None) for n in names]
    if group == "settings":
        # the ports the helper picked
        return [(n, v) for n, v in rows if n != "tcpport"]
    return [(n, None) for n, _ in rows]


@pytest.mark.parametrize("label", SUB_FLAG_SETS)
def test_items_slabs_conns_settings_match_memcached(pair, label):
    """`stats items`, `stats slabs` and `stats conns` print 1.6.45's field
    names in its order, and `stats settings` its names and values, once
    both hold the same items in three classes. Nothing is deleted: memcached
    keeps an emptied class's pages, and its `stats slabs` block, nodelay's
    pages are the segments holding a live item (docs/store.md "Size
    classes")."""
    ours, ref = pair(*SUB_FLAG_SETS[label])
    for srv in (ours, ref):
        c = srv.connect()
        for n in (10, 300, 3000):
            assert c.call(f"set sub{n} 0 0 {n}\r\n" + "v" * n) == b"STORED\r\n"
        assert c.get("sub300") == b"v" * 300
        c.close()
    for group in ("items", "slabs", "conns", "settings"):
        got, want = sub_rows(ours, group), sub_rows(ref, group)
        assert got == want, (group, [r for r in want if r not in got], [r for r in got if r not in want])
    assert len(sub_rows(ref, "items")) >= 3 * 14


def test_items_after_lru_mode_flat_match_memcached(pair_shared):
    """`lru mode flat` turns lru_segmented off at run time, but `stats items`
    keeps its per-LRU rows then: 1.6.45 leaves them out only without the
    maintainer."""
    ours, ref = pair_shared()
    for srv in (ours, ref):
        c = srv.connect()
        assert c.call("set flat 0 0 1\r\nv") == b"STORED\r\n"
        assert c.call("lru mode flat") == b"OK\r\n"
        c.close()
    got, want = sub_rows(ours, "items"), sub_rows(ref, "items")
    assert got == want
    assert ("items:1:number_hot", None) in got
    assert dict(sub_rows(ours, "settings"))["lru_segmented"] == "no"
