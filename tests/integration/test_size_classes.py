# SPDX-License-Identifier: BSD-3-Clause
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


def ref_bin(shared=False):
    """The memcached 1.6.45 to compare with, or skip.
    shared: the behaviour compared is 1.6.18's too, so Debian's memcached
    stands in when 1.6.45 is absent (helpers.ref_or_debian)."""
    ref = helpers.ref_or_debian(REF) if shared else REF
    if not os.access(ref, os.X_OK):
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    return ref


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
    # 1.6.18 sizes its classes as 1.6.45 does, but for slab_chunk_max
    ref = start_server(*flags, binary=ref_bin(shared="slab_chunk_max=256" not in flags))
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
    ref = ref_bin(shared=True)
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


# One of each command memcached counts per class, over text, meta and
# binary, on keys in two classes (values of 10 and 3000 bytes).
def per_class_workload(srv, c):
    import struct
    from helpers import bin_read, bin_request as R
    for key, n in (("small", 10), ("big", 3000)):
        assert c.call(f"set {key} 0 0 {n}\r\n" + "v" * n) == b"STORED\r\n"
        assert c.get(key) is not None
        assert c.get(key) is not None
        c.send(f"mg {key} v\r\n")
        c.read_until(b"\r\n" + b"v" * n + b"\r\n")
        assert c.call(f"touch {key} 100") == b"TOUCHED\r\n"
        c.send(f"gat 100 {key}\r\n")
        c.read_until(b"END\r\n")
        cas = c.call(f"gets {key}", until=b"END\r\n").split(b"\r\n")[0].split()[-1].decode()
        assert c.call(f"cas {key} 0 0 {n} 99999999\r\n" + "w" * n) == b"EXISTS\r\n"
        assert c.call(f"cas {key} 0 0 {n} {cas}\r\n" + "x" * n) == b"STORED\r\n"
        assert c.call(f"ms {key} {n}\r\n" + "y" * n) == b"HD\r\n"
    assert c.call("set num 0 0 2\r\n10") == b"STORED\r\n"
    assert c.call("incr num 5") == b"15\r\n"
    assert c.call("decr num 1") == b"14\r\n"
    assert c.call("ma num") == b"HD\r\n"
    b = srv.connect()  # the first byte picks a connection's protocol
    b.send(R(0x00, b"num"))                                      # binary GET
    bin_read(b)
    b.send(R(0x05, b"num", b"", struct.pack(">QQI", 1, 0, 0)))   # binary INCREMENT
    bin_read(b)
    b.close()
    assert c.call("delete small") == b"DELETED\r\n"
    assert c.call("md num") == b"HD\r\n"
    assert c.call("set keep 0 0 10\r\n" + "k" * 10) == b"STORED\r\n"  # keeps class 1 shown


CLASS_COUNTERS = ["get_hits", "cmd_set", "delete_hits", "incr_hits", "decr_hits", "cas_hits",
                  "cas_badval", "touch_hits"]


def class_counters(c):
    sl, it = stats(c, "slabs"), stats(c, "items")
    out = {}
    for k, v in sl.items():
        m = re.match(r"^(\d+):(\w+)$", k)
        if m and m.group(2) in CLASS_COUNTERS:
            out[(int(m.group(1)), m.group(2))] = int(v)
    for k, v in it.items():
        m = re.match(r"^items:(\d+):(hits_to_\w+)$", k)
        if m:
            out[(int(m.group(1)), m.group(2))] = int(v)
    return out


def test_per_class_counters(start_server):
    """stats slabs' per-class hit counters and stats items' hits_to_*, in the
    class of the item concerned; stats reset zeroes them."""
    srv = start_server()
    c = srv.connect()
    per_class_workload(srv, c)
    got = class_counters(c)
    small = int(re.match(r"^items:(\d+):", next(k for k in stats(c, "items"))).group(1))
    assert got[(small, "get_hits")] == 3 + 1 + 1  # get, get, mg; gets; num's binary GET
    assert got[(small, "touch_hits")] == 2
    assert got[(small, "cmd_set")] >= 5
    assert got[(small, "cas_hits")] == 1 and got[(small, "cas_badval")] == 1
    assert got[(small, "incr_hits")] == 3  # incr, ma, binary INCREMENT
    assert got[(small, "decr_hits")] == 1
    assert got[(small, "delete_hits")] == 2
    # new items are in a worker's open segment: HOT, as memcached puts them
    assert got[(small, "hits_to_hot")] == got[(small, "get_hits")]
    # every class's get_hits adds up to the total
    assert sum(v for (k, name), v in got.items() if name == "get_hits") == \
        int(stats(c)["get_hits"])
    assert c.call("stats reset") == b"RESET\r\n"
    assert all(v == 0 for v in class_counters(c).values()), class_counters(c)
    c.close()


def test_per_class_counters_match_1645(start_server):
    """The same numbers as 1.6.45 in every class. hits_to_* are compared as
    a sum only: which of memcached's LRUs an item sits in when hit depends
    on its maintainer thread's timing (HOT items move to COLD in the
    background), nodelay's on its segments."""
    ref = start_server(binary=ref_bin(shared=True))
    ours = start_server()
    got = []
    for srv in (ours, ref):
        c = srv.connect()
        per_class_workload(srv, c)
        counters = class_counters(c)
        for cls in {k for k, _ in counters}:
            lru = sum(counters.pop((cls, f"hits_to_{x}")) for x in ("hot", "warm", "cold", "temp"))
            assert lru == counters[(cls, "get_hits")]
        got.append(counters)
        c.close()
    assert got[0] == got[1]


def test_stats_reset_zeroes_class_events(start_server):
    srv = start_server("-m", "2")
    c = srv.connect()
    val = "e" * 2000
    for i in range(4000):
        c.send(f"set ev{i} 0 0 {len(val)} noreply\r\n{val}\r\n")
    assert c.call("mn") == b"MN\r\n"
    before = stats(c, "items")
    assert sum(int(v) for k, v in before.items() if k.endswith(":evicted")) > 0
    assert c.call("stats reset") == b"RESET\r\n"
    after = stats(c, "items")
    for name in ("evicted", "evicted_nonzero", "evicted_time", "evicted_unfetched", "reclaimed",
                 "expired_unfetched"):
        assert all(int(v) == 0 for k, v in after.items() if k.endswith(":" + name)), name
    # the levels stay
    assert sum(int(v) for k, v in after.items() if k.endswith(":number")) > 0
    c.close()


def test_hot_warm_cold_counts(start_server):
    """number_hot/warm/cold: a worker's open segment, the main queue, the
    small queue (docs/store-eviction.md). A fresh item is hot; once its segment is
    sealed it is cold; read and carried by eviction it is warm."""
    srv = start_server("-m", "8", "-t", "1")
    c = srv.connect()
    assert c.call("set fresh 0 0 10\r\n" + "f" * 10) == b"STORED\r\n"
    it = stats(c, "items")
    assert it["items:1:number_hot"] == "1" and it["items:1:number_cold"] == "0"
    # fill past -m with 2000-byte values, reading a few of the first ones
    val = "w" * 2000
    for i in range(8000):
        c.send(f"set w{i} 0 0 {len(val)} noreply\r\n{val}\r\n")
        if i < 300 and i % 3 == 0:
            c.send(f"mg w{i}\r\n")
    assert c.call("mn", until=b"MN\r\n").endswith(b"MN\r\n")
    it = stats(c, "items")
    cls = next(k.split(":")[1] for k, v in it.items()
               if k.endswith(":number") and int(v) > 100)
    n = {x: int(it[f"items:{cls}:number_{x}"]) for x in ("hot", "warm", "cold")}
    assert sum(n.values()) == int(it[f"items:{cls}:number"])
    assert n["hot"] > 0 and n["cold"] > 0 and n["warm"] > 0, n
    c.close()


def cas_class_workload(srv, c):
    """cas, ms C and binary SET with a CAS whose new value falls in another
    class than the item it replaces, or fails to."""
    import struct
    from helpers import bin_read, bin_request as R

    def gets_cas(key):
        return int(c.call(f"gets {key}", until=b"END\r\n").split(b"\r\n")[0].split()[-1])

    for key, old, new in (("up", 10, 3000), ("down", 3000, 10)):
        assert c.call(f"set {key} 0 0 {old}\r\n" + "o" * old) == b"STORED\r\n"
        cas = gets_cas(key)
        assert c.call(f"cas {key} 0 0 {new} {cas + 1000}\r\n" + "w" * new) == b"EXISTS\r\n"
        assert c.call(f"cas {key} 0 0 {new} {cas}\r\n" + "n" * new) == b"STORED\r\n"
        cas = gets_cas(key)  # the item now has the `new` size
        assert c.call(f"ms {key} {old} C{cas + 1000}\r\n" + "w" * old) == b"EX\r\n"
        assert c.call(f"ms {key} {old} C{cas}\r\n" + "m" * old) == b"HD\r\n"
    assert c.call("set bk 0 0 10\r\n" + "b" * 10) == b"STORED\r\n"
    cas = gets_cas("bk")
    b = srv.connect()
    extras = struct.pack(">II", 0, 0)
    b.send(R(0x01, b"bk", b"B" * 3000, extras, cas=cas + 1000))  # binary SET, wrong CAS
    assert bin_read(b)["status"] == 0x0002  # key exists
    b.send(R(0x01, b"bk", b"B" * 3000, extras, cas=cas))
    assert bin_read(b)["status"] == 0
    b.close()


def test_cas_counted_in_old_items_class(start_server):
    """memcached counts cas_hits and cas_badval in the class of the item the
    CAS was compared with (do_store_item: ITEM_clsid(old_it)), not the new
    value's: text cas, ms C and binary SET each once in each direction."""
    srv = start_server()
    c = srv.connect()
    cas_class_workload(srv, c)
    got = class_counters(c)
    cls = {}
    for n in (10, 3000):
        assert c.call(f"set probe{n} 0 0 {n}\r\n" + "p" * n) == b"STORED\r\n"
        cls[n] = int(c.call(f"me probe{n}").split(b"cls=")[1].split()[0])
    small, big = cls[10], cls[3000]
    assert small != big
    # up: cas on a small item (small), ms on the big one (big); down: the
    # other way round; bk: binary SET on a small item
    assert got.get((small, "cas_hits"), 0) == 3 and got.get((small, "cas_badval"), 0) == 3
    assert got.get((big, "cas_hits"), 0) == 2 and got.get((big, "cas_badval"), 0) == 2
    c.close()


def test_cas_class_counters_match_1645(start_server):
    ref = start_server(binary=ref_bin(shared=True))
    ours = start_server()
    got = []
    for srv in (ours, ref):
        c = srv.connect()
        cas_class_workload(srv, c)
        counters = class_counters(c)
        got.append({k: v for k, v in counters.items() if k[1] in ("cas_hits", "cas_badval") and v})
        c.close()
    assert got[0] == got[1]


def expiring_fill(c):
    """lru-crawler.t's items: 30 that never expire, 30 of TTL 1 (class 1),
    and 10 of TTL 1 in another class (512-byte values)."""
    for i in range(30):
        c.send(f"set if{i} 0 0 2 noreply\r\nok\r\n")
        c.send(f"set sf{i} 0 1 2 noreply\r\nok\r\n")
    for i in range(10):
        c.send(f"set mf{i} 0 1 512 noreply\r\n{'m' * 512}\r\n")
    assert c.call("mn") == b"MN\r\n"


def crawl_and_wait(c, classes):
    assert c.call(f"lru_crawler crawl {classes}") == b"OK\r\n"
    deadline = time.monotonic() + 10
    while stats(c).get("lru_crawler_running") != "0":
        assert time.monotonic() < deadline, "the crawl did not end"
        time.sleep(0.05)


CRAWL_ROWS = ("curr_items", "reclaimed", "crawler_reclaimed", "crawler_items_checked",
              "expired_unfetched")


def test_crawler_counts_match_1645(start_server):
    """`lru_crawler crawl` reclaims a class's expired items as memcached's
    crawler: crawler_reclaimed (not reclaimed) and crawler_items_checked,
    per class too; without the LRU maintainer nothing reaps them before.
    A class whose items are all gone keeps its stats slabs block, used
    chunks 0, and leaves stats items (t/lru-crawler.t)."""
    ref = ref_bin(shared=True)
    conns = {}
    for name, binary in (("ref", ref), ("ours", None)):
        srv = start_server("-m", "32", "-o", "no_modern,lru_crawler", binary=binary)
        conns[name] = srv.connect()
        expiring_fill(conns[name])
    time.sleep(3)
    got = {}
    for name, c in conns.items():
        before = stats(c)
        crawl_and_wait(c, "1")
        st, it, sl = stats(c), stats(c, "items"), stats(c, "slabs")
        mcls = next(k.split(":")[1] for k, v in it.items()
                    if k.endswith(":number") and k != "items:1:number")
        got[name] = {
            "before": {k: before[k] for k in ("curr_items", "reclaimed")},
            "after": {k: st[k] for k in CRAWL_ROWS},
            "class1": {k: it[f"items:1:{k}"] for k in
                       ("number", "crawler_reclaimed", "crawler_items_checked",
                        "expired_unfetched", "reclaimed")},
            "other": (it[f"items:{mcls}:number"], it[f"items:{mcls}:crawler_items_checked"]),
            "used": sl["1:used_chunks"],
        }
        # every class: the expired class-1 items are gone, the 30 immortal
        # ones stay; the other class's 10 go now
        crawl_and_wait(c, "all")
        it, sl = stats(c, "items"), stats(c, "slabs")
        got[name]["all"] = (stats(c)["crawler_reclaimed"], sl[f"{mcls}:used_chunks"],
                            f"items:{mcls}:number" in it, sl["active_slabs"])
    assert got["ours"] == got["ref"]
    assert got["ours"]["after"]["crawler_reclaimed"] == "30"
    assert got["ours"]["class1"]["crawler_reclaimed"] == "30"
    assert got["ours"]["all"] == ("40", "0", False, "2")
    for c in conns.values():
        c.close()


@pytest.mark.parametrize("flags", [[], ["-o", "no_lru_maintainer"], ["-o", "no_modern"]],
                         ids=["defaults", "no_lru_maintainer", "no_modern"])
def test_background_reaping_follows_the_maintainer_as_1645(start_server, flags):
    """memcached reaps expired items in the background only with its LRU
    maintainer; so does the housekeeper. (How many the maintainer has reaped
    after 3 s depends on its LRU tails and its sleeps: with it, only that it
    reaps is compared.)"""
    conns = {}
    for name, binary in (("ref", ref_bin(shared=True)), ("ours", None)):
        conns[name] = start_server("-m", "32", *flags, binary=binary).connect()
        for i in range(10):
            conns[name].send(f"set sf{i} 0 1 2 noreply\r\nok\r\n")
        for i in range(10):
            conns[name].send(f"set if{i} 0 0 2 noreply\r\nok\r\n")
        assert conns[name].call("mn") == b"MN\r\n"
    time.sleep(3)
    got = {name: {k: int(stats(c)[k]) for k in ("curr_items", "reclaimed", "crawler_reclaimed")}
           for name, c in conns.items()}
    if flags:
        assert got["ours"] == got["ref"] == {"curr_items": 20, "reclaimed": 0,
                                             "crawler_reclaimed": 0}
    else:
        assert got["ours"] == {"curr_items": 10, "reclaimed": 10, "crawler_reclaimed": 0}
        assert got["ref"]["reclaimed"] > 0 and got["ref"]["crawler_reclaimed"] == 0
    for c in conns.values():
        c.close()


def test_crawl_answers(start_server):
    srv = start_server("-o", "lru_crawler")
    c = srv.connect()
    assert c.call("lru_crawler crawl ,") == b"NOTSTARTED no items to crawl\r\n"
    assert c.call("lru_crawler crawl 64") == b"BADCLASS invalid class id\r\n"
    starts = int(stats(c)["lru_crawler_starts"])
    crawl_and_wait(c, "1,2")
    c.send("lru_crawler metadump all\r\n")
    c.read_until(b"END\r\n")
    assert int(stats(c)["lru_crawler_starts"]) == starts + 2
    assert c.call("lru_crawler disable") == b"OK\r\n"
    assert c.call("lru_crawler crawl 1") == b"CLIENT_ERROR lru crawler disabled\r\n"
    c.close()


def test_moves_to_cold_and_warm(start_server):
    """t/lru-maintainer.t's canary at -m 6: the items of a sealed worker
    segment move to COLD (moves_to_cold, as soon as the segment is full);
    the canary, read twice there, moves to WARM when eviction reaches its
    segment (moves_to_warm) and survives 100 writes of its size."""
    srv = start_server("-m", "6", "-o", "lru_maintainer,lru_crawler")
    c = srv.connect()
    val = "B" * 66560
    assert c.call(f"set canary 0 0 66560\r\n{val}") == b"STORED\r\n"
    for i in range(30):
        assert c.call(f"set key{i} 0 0 66560\r\n{val}") == b"STORED\r\n"
    it = stats(c, "items")
    assert int(it["items:31:moves_to_cold"]) >= 15
    assert int(stats(c)["moves_to_cold"]) == int(it["items:31:moves_to_cold"])
    for _ in range(2):
        assert c.get("canary") is not None
    assert it["items:31:moves_to_warm"] == "0"
    for i in range(30, 100):
        assert c.call(f"set key{i} 0 0 66560\r\n{val}") == b"STORED\r\n"
    st, it = stats(c), stats(c, "items")
    assert int(st["evictions"]) > 0
    assert int(it["items:31:moves_to_warm"]) >= 1
    assert st["moves_to_warm"] == it["items:31:moves_to_warm"]
    assert c.get("canary") is not None
    c.close()
