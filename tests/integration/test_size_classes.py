"""Size classes (issue 11.3): `stats items` / `stats slabs` per memcached
size class, by 1.6.45's class boundaries for the running -f / -n, from the
items really stored; metadump's and `me`'s cls= agree; memcached-tool
`display` shows one row per class in use.

The boundary comparisons run the 1.6.45 reference binary from ../shared/ref
(or $NODELAY_REF) and skip, saying so, when it is absent.
"""
import os
import re
import subprocess
import time

import pytest

import helpers
from helpers import stats

REF = os.environ.get("NODELAY_REF") or os.path.join(helpers.ROOT, "..", "shared", "ref",
                                                     "memcached-1.6.45")
TOOL = "/usr/share/memcached/scripts/memcached-tool"

# value sizes spread over many classes (all below slab_chunk_max: memcached
# chunks larger items over several classes)
SIZES = [1, 10, 40, 100, 300, 700, 1000, 3000, 5000, 20000, 50000, 120000, 200000]


def ref_bin():
    if not os.access(REF, os.X_OK):
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    return REF


def fill(c, sizes, flags=0):
    for n in sizes:
        assert c.call(f"set k{n} {flags} 0 {n}\r\n" + "v" * n) == b"STORED\r\n"


def classes(c):
    """{class id: (chunk_size, number, mem_requested, used_chunks)}"""
    sl, it = stats(c, "slabs"), stats(c, "items")
    out = {}
    for k, v in sl.items():
        m = re.match(r"^(\d+):chunk_size$", k)
        if m:
            i = m.group(1)
            out[int(i)] = (int(v), int(it[f"items:{i}:number"]),
                           int(it[f"items:{i}:mem_requested"]), int(sl[f"{i}:used_chunks"]))
    return out


@pytest.mark.parametrize("flags", [[], ["-f", "2", "-n", "100"], ["-f", "1.1", "-n", "20"],
                                   ["-o", "slab_chunk_max=256"]],
                         ids=["default", "f2-n100", "f1.1-n20", "chunk_max256k"])
def test_class_boundaries_match_1645(start_server, flags):
    ref = start_server(*flags, binary=ref_bin())
    ours = start_server(*flags)
    got = {}
    for name, srv in (("ref", ref), ("ours", ours)):
        c = srv.connect()
        fill(c, SIZES)
        fill(c, [2, 150, 4000], flags=7)  # flags make an item 4 bytes larger
        got[name] = classes(c)
        c.close()
    assert len(got["ref"]) >= 6
    assert got["ours"] == got["ref"]
    # and the active count with it
    for name, srv in (("ref", ref), ("ours", ours)):
        c = srv.connect()
        assert int(stats(c, "slabs")["active_slabs"]) == len(got[name])
        c.close()


def test_counts_follow_writes_and_deletes(start_server):
    srv = start_server()
    c = srv.connect()
    fill(c, [10, 11, 12])
    cls = classes(c)
    assert len(cls) == 1
    (cid, (chunk, number, mem, used)), = cls.items()
    assert (chunk, number, used) == (96, 3, 3)
    # memcached's item size: 48 + key + 1 + value + 2 + 8 (CAS)
    assert mem == sum(48 + len(f"k{n}") + 1 + n + 2 + 8 for n in (10, 11, 12))
    assert c.call("delete k11") == b"DELETED\r\n"
    # an overwrite moves the item to its new class
    fill(c, [5000], flags=0)
    assert c.call("set k10 0 0 5000\r\n" + "x" * 5000) == b"STORED\r\n"
    cls = classes(c)
    assert cls[cid][1] == 1
    big = [k for k in cls if k != cid]
    assert len(big) == 1 and cls[big[0]][1] == 2
    assert int(stats(c, "slabs")[f"{big[0]}:total_pages"]) >= 1
    c.close()


def test_age_grows(start_server):
    srv = start_server()
    c = srv.connect()
    fill(c, [10])
    assert int(stats(c, "items")["items:1:age"]) <= 1
    time.sleep(2.2)
    assert int(stats(c, "items")["items:1:age"]) >= 2
    c.close()


def test_metadump_and_me_agree_with_stats_items(start_server):
    srv = start_server()
    c = srv.connect()
    fill(c, SIZES)
    it = stats(c, "items")
    per_class = {int(k.split(":")[1]): int(v) for k, v in it.items()
                 if re.match(r"^items:\d+:number$", k)}
    dump = c.call("lru_crawler metadump all", until=b"END\r\n").decode()
    seen = {}
    for line in dump.splitlines():
        m = re.search(r"key=(\S+) .*cls=(\d+)", line)
        if m:
            seen[m.group(1)] = int(m.group(2))
    assert len(seen) == len(SIZES)
    counted = {}
    for cls in seen.values():
        counted[cls] = counted.get(cls, 0) + 1
    assert counted == per_class
    if helpers.speaks_meta(srv):
        for n in (1, 3000, 200000):
            line = c.call(f"me k{n}").decode()
            assert f" cls={seen[f'k{n}']} " in line + " "
    c.close()


def test_evictions_counted_per_class(start_server):
    srv = start_server("-m", "2")
    c = srv.connect()
    val = "e" * 2000
    for i in range(4000):
        c.send(f"set ev{i} 0 0 {len(val)} noreply\r\n{val}\r\n")
    assert c.call("mn") == b"MN\r\n"
    total = int(stats(c)["evictions"])
    assert total > 0
    it = stats(c, "items")
    per = sum(int(v) for k, v in it.items() if re.match(r"^items:\d+:evicted$", k))
    assert per == total
    c.close()


def test_memcached_tool_display_one_row_per_class(start_server):
    if not os.access(TOOL, os.X_OK) and not os.path.exists(TOOL):
        pytest.skip(f"{TOOL} is absent (Debian's memcached package ships it)")
    srv = start_server()
    c = srv.connect()
    fill(c, SIZES)
    ncls = len(classes(c))
    c.close()
    out = subprocess.run(["perl", TOOL, f"127.0.0.1:{srv.port}", "display"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    rows = [l for l in out.stdout.splitlines() if re.match(r"^\s*\d+\s+[\d.]+[BKM]\s", l)]
    assert len(rows) == ncls, out.stdout


def test_stats_sizes_as_1645(start_server):
    ref = ref_bin()
    for flags in ([], ["-o", "track_sizes"]):
        got = []
        for binary in (ref, None):
            srv = start_server(*flags, binary=binary)
            c = srv.connect()
            fill(c, SIZES)
            fill(c, [2, 150], flags=7)
            assert c.call("delete k300") == b"DELETED\r\n"
            got.append(c.call("stats sizes", until=b"END\r\n"))
            c.close()
        assert got[1] == got[0]
        if flags:
            counts = [int(l.split()[2]) for l in got[1].split(b"\r\n") if l.startswith(b"STAT ")]
            assert sum(counts) == len(SIZES) + 2 - 1  # the deleted one is gone
        else:
            assert got[1] == b"STAT sizes_status disabled\r\nEND\r\n"
