# SPDX-License-Identifier: BSD-3-Clause
"""`stats extstore` over a socket, side by side with memcached 1.6.45
(../shared/ref; NODELAY_REF names another) run with the same options: a
block of four rows per flash page, "STAT <page>:version|bytes|bucket|
free_bucket <number>", pages numbered from 0, in memcached's order, then
END; END alone without ext_path. nodelay's pages are its flash segments
(docs/store-flash.md "Counters"), so it has more of them than memcached
has ext_page_size pages; the rows' names, order and format are the same.
The values mean what memcached's do: a page written holds a version from
1 and its live bytes, a free one 0 and 0. /metrics has them summed, the
same whatever the number of pages: pages and live bytes per bucket, free
pages, and written pages by fill. Skips the comparison when the reference
is absent."""
import os
import re
import time
import urllib.request

import pytest

import helpers
from helpers import ROOT, Server, stats

REF_BIN = os.environ.get("NODELAY_REF") or os.path.join(ROOT, "..", "shared", "ref",
                                                        "memcached-1.6.45")
ROW = re.compile(rb"^STAT (\d+):(version|bytes|bucket|free_bucket) (\d+)$")
NAMES = [b"version", b"bytes", b"bucket", b"free_bucket"]
VLEN = 20000
KEYS = 40


def start(binary, d, extra=()):
    srv = Server(binary, ["-m", "64", "-t", "1", *extra], workdir=str(d))
    srv.start()
    return srv


def ext_flags(d):
    return ["-o", f"ext_path={d}/f:64m,ext_page_size=8,ext_wbuf_size=2,ext_item_age=1"]


def pages(c):
    """The reply's rows as [(page, name, value)], checked line by line."""
    raw = c.call("stats extstore", until=b"END\r\n")
    assert raw.endswith(b"\r\nEND\r\n") or raw == b"END\r\n"
    rows = []
    for line in raw.split(b"\r\n")[:-2]:
        m = ROW.match(line)
        assert m, f"not a stats extstore row: {line!r}"
        rows.append((int(m.group(1)), m.group(2), int(m.group(3))))
    return rows


def shape(rows):
    """Each page's names in order; pages 0..n-1 in order."""
    by_page = {}
    for page, name, _ in rows:
        by_page.setdefault(page, []).append(name)
    assert list(by_page) == list(range(len(by_page)))
    return set(tuple(v) for v in by_page.values())


def fill_and_flush(c):
    for k in range(KEYS):
        assert c.call(b"set k%d 0 0 %d\r\n%s" % (k, VLEN, b"v" * VLEN)) == b"STORED\r\n"
    deadline = time.monotonic() + 20
    while int(stats(c)["extstore_objects_written"]) < KEYS:
        assert time.monotonic() < deadline, "the items did not go to flash"
        time.sleep(0.2)


def values(rows):
    out = {}
    for page, name, v in rows:
        out.setdefault(page, {})[name.decode()] = v
    return out


def check_meanings(rows, live_bytes_at_least):
    v = values(rows)
    used = [p for p in v.values() if p["version"]]
    assert used, "no page written"
    assert all(p["bytes"] == 0 for p in v.values() if not p["version"])
    assert all(p["free_bucket"] == 0 for p in v.values())
    assert sum(p["bytes"] for p in used) >= live_bytes_at_least
    assert sorted(p["version"] for p in used) == list(range(1, len(used) + 1))


def ref_then_ours(server_bin, tmp_path):
    """(name, binary, a folder of its own): memcached 1.6.45, then nodelay;
    skips without the reference."""
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    for name, binary in (("mc", REF_BIN), ("nd", server_bin)):
        d = tmp_path / name
        d.mkdir()
        yield name, binary, d


def test_stats_extstore_as_memcached(server_bin, tmp_path):
    got = {}
    for name, binary, d in ref_then_ours(server_bin, tmp_path):
        srv = start(binary, d, ext_flags(d))
        try:
            c = srv.connect(timeout=10)
            empty = pages(c)
            fill_and_flush(c)
            full = pages(c)
            got[name] = (empty, full)
        finally:
            srv.stop()
        plain = start(binary, d)
        try:
            assert plain.connect().call("stats extstore", until=b"END\r\n") == b"END\r\n"
        finally:
            plain.stop()
    for name in got:
        empty, full = got[name]
        assert shape(empty) == {tuple(NAMES)}, name
        assert shape(full) == {tuple(NAMES)}, name
        assert all(v == 0 for _, _, v in empty), name
        # every item written, live: their bytes are on the pages
        check_meanings(full, KEYS * VLEN)
    # nodelay's pages are its 2 MB segments: 32 where memcached has 8
    assert len(got["mc"][0]) == 8 * 4
    assert len(got["nd"][0]) == 32 * 4


def start_with_metrics(start_server, *flags):
    """A server with /metrics on a free port: (server, port); skips on a
    build without libmicrohttpd."""
    port = helpers.free_port()
    try:
        return start_server(*flags, "-o", f"metrics_listen={port}"), port
    except helpers.ServerError as e:
        if "without libmicrohttpd" in str(e):
            pytest.skip("this build has no libmicrohttpd")
        raise


def metrics_text(port):
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")
WBUF = 2 << 20  # ext_flags' ext_wbuf_size: a page's size


def metric_samples(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            m = SAMPLE.match(line)
            assert m, line
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def pages_and_metrics(c, port):
    """`stats extstore` and /metrics of the same moment: retried until the
    rows are the same before and after the scrape."""
    for _ in range(50):
        rows = pages(c)
        text = metrics_text(port)
        if pages(c) == rows:
            return values(rows), text
        time.sleep(0.1)
    raise AssertionError("stats extstore never held still")


def check_sums(rows, text):
    """/metrics' extstore series are the sums of `stats extstore`'s pages."""
    got = metric_samples(text)
    assert not [k for k in got if "page=" in k]
    written = [p for p in rows.values() if p["version"]]
    assert {p["bucket"] for p in written} <= {0, 1, 3}
    for b in (0, 1, 3):
        mine = [p for p in written if p["bucket"] == b]
        assert got[f'nodelay_extstore_bucket_pages{{bucket="{b}"}}'] == len(mine)
        assert got[f'nodelay_extstore_bucket_bytes{{bucket="{b}"}}'] == sum(p["bytes"] for p in mine)
    assert got["nodelay_extstore_free_pages"] == len(rows) - len(written)
    fill = "nodelay_extstore_page_fill_ratio"
    for k in range(1, 11):
        le = f"{k / 10:g}"
        at_most = sum(1 for p in written if p["bytes"] * 10 <= k * WBUF)
        assert got[f'{fill}_bucket{{le="{le}"}}'] == at_most, le
    assert got[f'{fill}_bucket{{le="+Inf"}}'] == got[f"{fill}_count"] == len(written)
    assert abs(got[f"{fill}_sum"] - sum(p["bytes"] / WBUF for p in written)) < 1e-5 * len(rows)
    assert "# TYPE nodelay_extstore_bucket_bytes gauge" in text
    assert f"# TYPE {fill} histogram" in text


def test_stats_extstore_deletes_and_metrics(start_server, tmp_path):
    srv, port = start_with_metrics(start_server, *ext_flags(tmp_path))
    c = srv.connect(timeout=10)
    rows, text = pages_and_metrics(c, port)
    assert all(not p["version"] for p in rows.values())
    check_sums(rows, text)
    fill_and_flush(c)
    full, text = pages_and_metrics(c, port)
    check_sums(full, text)
    before = sum(p["bytes"] for p in full.values())
    for k in range(KEYS // 2):
        assert c.call("delete k%d" % k) == b"DELETED\r\n"
    rows, text = pages_and_metrics(c, port)
    assert sum(p["bytes"] for p in rows.values()) < before
    check_sums(rows, text)


PRESSURE = re.compile(r"^\d+\.\d\d$")


def fill_paced(c, n, vlen, prefix):
    """n sets of vlen bytes, noreply, a round trip every 500."""
    for i in range(0, n, 500):
        c.send(b"".join(b"set %s%d 0 0 %d noreply\r\n%s\r\n" % (prefix, k, vlen, b"v" * vlen)
                           for k in range(i, min(n, i + 500))))
        assert c.call("mn") == b"MN\r\n"


def pressure_after(c, at_least):
    """extstore_memory_pressure once it reaches at_least (memcached's slab
    automover sets it about once a second), as text."""
    deadline = time.monotonic() + 10
    while True:
        v = stats(c)["extstore_memory_pressure"]
        assert PRESSURE.match(v), v
        if float(v) >= at_least or time.monotonic() > deadline:
            return v
        time.sleep(0.2)


def test_memory_pressure_as_memcached(server_bin, tmp_path):
    """memcached 1.6.45's extstore_memory_pressure: the share (percent,
    "%.2f") of RAM pages held by classes too small for flash
    (ext_item_size), out of those, the larger classes' and the free ones.
    Small items raise it on both servers alike; large ones, which flash
    can take, do not."""
    got = {}
    for name, binary, d in ref_then_ours(server_bin, tmp_path):
        srv = start(binary, d, ["-o", f"ext_path={d}/f:64m"])
        try:
            c = srv.connect(timeout=10)
            start_v = pressure_after(c, 0)
            fill_paced(c, 2000, 2000, b"l")
            large = pressure_after(c, 0)
            # 20,000 items in the 192-byte class: about 4 MB of 64
            fill_paced(c, 20000, 100, b"s")
            small = pressure_after(c, 3)
            got[name] = (start_v, large, small)
        finally:
            srv.stop()
    for name, (start_v, large, small) in got.items():
        assert start_v == "0.00", (name, got)
        assert large == "0.00", (name, got)
        assert 3 <= float(small) <= 10, (name, got)


def test_memory_pressure_on_metrics(start_server, tmp_path):
    srv, port = start_with_metrics(start_server, "-m", "64", "-o", f"ext_path={tmp_path}/f:64m")
    c = srv.connect(timeout=10)
    fill_paced(c, 20000, 100, b"s")
    want = float(stats(c)["extstore_memory_pressure"])
    assert want > 0
    text = metrics_text(port)
    assert "# TYPE nodelay_extstore_memory_pressure gauge" in text
    line = next(l for l in text.splitlines() if l.startswith("nodelay_extstore_memory_pressure "))
    assert float(line.split()[1]) == want
