# SPDX-License-Identifier: BSD-3-Clause
"""memcached's `extstore` run-time command and the ext_* lines of `stats
settings`, side by side with memcached 1.6.45 (../shared/ref) with and
without -o ext_path: every reply byte for byte, then `stats settings` line
by line (names, order, values). Skips when the reference is absent."""
import os

import pytest

from helpers import ROOT

REF_BIN = os.environ.get("NODELAY_REF") or os.path.join(ROOT, "..", "shared", "ref",
                                                        "memcached-1.6.45")

# Each subcommand, its prefixes (matched in memcached's order), numbers it
# refuses, free_memchunks' two forms, noreply, and settings that stick.
COMMANDS = [
    "extstore", "extstore item_size", "extstore item_size 100", "extstore item_size 100 noreply",
    "extstore item 7", "extstore i 9", "extstore item_age 10", "extstore low_ttl 5",
    "extstore recache_rate 3", "extstore compact_under 4", "extstore drop_under 2",
    "extstore max_sleep 77", "extstore max_frag 0.5", "extstore max_frag abc",
    "extstore max_frag 1e999", "extstore max_frag 1e-400", "extstore max_frag -1",
    "extstore max_frag 0x1p3", "extstore max_frag 0.0000000000000000000000000000001",
    "extstore drop_unread 1", "extstore drop_unread 5", "extstore drop_unread yes",
    "extstore drop_unread -1", "extstore free_memchunks 1 2", "extstore free_memchunks 1",
    "extstore free_memchunks 64 2", "extstore free_memchunks 63 2",
    "extstore free_memchunks x 2", "extstore free_memchunks 1 2 3", "extstore f 1 2",
    "extstore free 1", "extstore item_size -1", "extstore item_size +5",
    "extstore item_size 0x10", "extstore item_size 4294967296", "extstore item_size 0005",
    "extstore item_size 4294967295", "extstore bogus 1", "extstore item_size_x 1",
    "EXTSTORE item_size 5", "extstore noreply", "extstore item_size noreply",
    "extstore m 0.3", "extstore d 3", "extstore item_size 12 34",
    "slabs automove freeratio 0.25", "slabs automove ratio 1e999",
]


def settings_lines(srv):
    c = srv.connect()
    raw = c.call("stats settings", until=b"END\r\n").decode()
    c.close()
    return [l for l in raw.split("\r\n") if l.startswith("STAT ") and
            not l.startswith("STAT tcpport ")]


def replies(srv, commands):
    """Each command's reply (b"" when silent), fenced by mn."""
    c = srv.connect()
    out = []
    for cmd in commands:
        c.send(cmd + "\r\nmn\r\n")
        out.append(c.read_until(b"MN\r\n")[:-4])
    c.close()
    return out


def ref_or_skip():
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    return REF_BIN


def flags(case, d):
    return [a.replace("{d}", str(d)) for a in case]


@pytest.mark.parametrize("case", [[], ["-o", "ext_path={d}/f:64m"]], ids=["no_ext", "ext_path"])
def test_extstore_command_as_memcached(start_server, tmp_path, case):
    ref_bin = ref_or_skip()
    (tmp_path / "mc").mkdir()
    (tmp_path / "nd").mkdir()
    ref = start_server(*flags(case, tmp_path / "mc"), binary=ref_bin)
    ours = start_server(*flags(case, tmp_path / "nd"))
    want = replies(ref, COMMANDS)
    got = replies(ours, COMMANDS)
    for cmd, w, g in zip(COMMANDS, want, got):
        assert g == w, f"{cmd!r}: nodelay {g!r}, memcached {w!r}"
    assert settings_lines(ours) == settings_lines(ref)


# memcached's defaults for the thresholds (a hundredth of the pages of the
# file named last, at least one), values it keeps in 32 bits, a threshold
# given with and without the other. 2 MB pages keep the page counts with
# small files: nodelay reserves its flash files whole at start.
START = [
    [],
    ["-o", "ext_path={d}/f:64m"],
    ["-o", "ext_page_size=2,ext_wbuf_size=2,ext_path={d}/f:2g,ext_path={d}/g:64m"],
    ["-o", "ext_page_size=2,ext_wbuf_size=2,ext_path={d}/f:64m,ext_path={d}/g:2g"],
    ["-o", "ext_path={d}/f:1g,ext_page_size=2,ext_wbuf_size=2"],
    ["-o", "ext_page_size=2,ext_wbuf_size=2,ext_path={d}/f:398m"],
    ["-o", "ext_path={d}/f:64m,ext_compact_under=5"],
    ["-o", "ext_path={d}/f:64m,ext_drop_under=7"],
    ["-o", "ext_item_size=4294967296,ext_item_age=18446744073709551615,ext_max_sleep=5000000000,"
           "ext_wbuf_size=4096,ext_max_frag=123.456,slab_automove_freeratio=1e-5"],
    ["-o", "ext_wbuf_size=8,ext_compact_under=3,ext_low_ttl=9,ext_recache_rate=1,ext_drop_unread"],
]


@pytest.mark.parametrize("case", START, ids=lambda c: " ".join(c) or "defaults")
def test_stats_settings_as_memcached(start_server, tmp_path, case):
    ref_bin = ref_or_skip()
    (tmp_path / "mc").mkdir()
    (tmp_path / "nd").mkdir()
    want = settings_lines(start_server(*flags(case, tmp_path / "mc"), binary=ref_bin))
    got = settings_lines(start_server(*flags(case, tmp_path / "nd")))
    assert got == want
