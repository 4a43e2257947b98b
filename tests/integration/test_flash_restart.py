# SPDX-License-Identifier: BSD-3-Clause
"""-e FILE with -o ext_path: the flash tier survives a restart.

A graceful stop writes the flash writers' buffers out and marks the flash
record in the memory file clean; the next start links every live flash
item again, byte for byte. After a kill -9 under load each key reads as
its last acknowledged write, one in flight, or a miss: never a value
deleted or overwritten before (the liveness bits, docs/restarts.md "The
flash tier"). A flash file truncated or replaced between runs, or other
flash settings, give misses, never wrong values.
"""
import os
import random
import threading
import time

import pytest

import helpers
from helpers import stats
from test_restart import (ABSENT, Loader, KeyModel, check_restored, key_models,  # noqa: F401
                          kill9, mem_file, report_bad)
import memfile

pytestmark = pytest.mark.skipif(
    helpers.is_memcached(helpers.server_bin()),
    reason="nodelay's -e restore with its flash tier")

RAM_MB = 8
FLASH_MB = 64
VLEN = 3000


def value_of(n, salt=b""):
    return (salt + b"%07d:" % n) * (VLEN // (8 + len(salt)))


def flags(mem_file, flash):
    return ("-m", str(RAM_MB), "-t", "2", "-e", mem_file, "-o",
            f"ext_path={flash}:{FLASH_MB}m,ext_wbuf_size=2,ext_page_size=2")


def start(start_server, *fl):
    srv = start_server(*fl)
    if "no flash tier" in srv.stderr():
        pytest.skip("this build has no flash tier")
    return srv


def fill(srv, n, salt=b"", wait_flash=True):
    """n keys set, 32 to a fenced write (helpers.send_paced: behind the
    flash writer too unless wait_flash is False)."""
    c = srv.connect(timeout=30)
    sets = []
    for i in range(n):
        v = value_of(i, salt)
        sets.append(b"set k:%d %d 0 %d noreply\r\n%s\r\n" % (i, i, len(v), v))
    helpers.send_paced(c, sets, 32, wait_flash)
    c.close()


def read_all(srv, n):
    """key -> (flags, value) for every key that hits, one key a request: a
    multi-get whose flash reads come back into RAM may push another of its
    keys out to flash meanwhile, and that one then misses for it."""
    c = srv.connect(timeout=30)
    got = {}
    for i in range(n):
        got.update(c.get_multi([f"k:{i}"]))
    c.close()
    return got


def flash_items(srv):
    c = srv.connect()
    try:
        return int(stats(c).get("extstore_objects_used", "0"))
    finally:
        c.close()


def counts(srv):
    """curr_items, extstore_objects_used and `stats items`' numbers by
    class, read until two reads agree."""
    c = srv.connect()
    try:
        last = None
        for _ in range(50):
            st = stats(c)
            number = {int(k.split(":")[1]): int(v) for k, v in stats(c, "items").items()
                      if k.endswith(":number")}
            now = (int(st["curr_items"]), int(st["extstore_objects_used"]), number)
            if now == last:
                return now
            last = now
            time.sleep(0.1)
        raise AssertionError("stats never held still")
    finally:
        c.close()


def test_graceful_restart_keeps_flash_items(start_server, mem_file, tmp_path):
    """RAM filled three times over (two thirds on flash), some deleted and
    overwritten, a graceful stop: every key back with its value and flags,
    the deleted ones missing, the overwritten ones with their new value."""
    flash = tmp_path / "flash"
    fl = flags(mem_file, flash)
    srv = start(start_server, *fl)
    n = 3 * (RAM_MB << 20) // VLEN
    fill(srv, n)
    on_flash = flash_items(srv)
    assert on_flash > n // 3, on_flash
    c = srv.connect(timeout=30)
    deleted = set(range(0, n, 7))
    for i in sorted(deleted):
        assert c.call(f"delete k:{i}") in (b"DELETED\r\n", b"NOT_FOUND\r\n")
    over = set(range(3, n, 11)) - deleted
    for i in sorted(over):
        v = value_of(i, b"new")
        assert c.set(f"k:{i}", v, flags=i) == b"STORED\r\n"
    c.close()
    before = read_all(srv, n)
    srv.stop()
    srv = start(start_server, *fl)
    assert "discarding" not in srv.stderr(), srv.stderr()
    # the flash items restored count as memcached's RAM headers for them
    # (keys of up to 7 bytes, flags: class 1), the classes sum to curr_items
    curr, used, number = counts(srv)
    assert sum(number.values()) == curr and number.get(1) == used > 0, (curr, used, number)
    after = read_all(srv, n)
    assert after == before
    for i in deleted:
        assert f"k:{i}" not in after
    for i in over:
        if f"k:{i}" in after:
            assert after[f"k:{i}"] == (i, value_of(i, b"new"))
    # most of it (a fill that outruns the flash writer evicts some)
    assert len(after) > n // 2, (len(after), n, len(deleted))
    assert flash_items(srv) > 0


def flash_reads(srv):
    """(items served from flash, device reads, device bytes read) so far."""
    c = srv.connect()
    try:
        st, own = stats(c), stats(c, "nodelay")
    finally:
        c.close()
    return (int(st["get_extstore"]), int(own["extstore_ring_reads"]) + int(own["extstore_pool_reads"]),
            int(own["extstore_device_bytes_read"]))


def filled(start_server, mem_file, tmp_path):
    """A server filled three times past its RAM, the fill on the device:
    (its flags, its flash file, it, the keys set)."""
    flash = tmp_path / "flash"
    fl = flags(mem_file, flash)
    srv = start(start_server, *fl)
    n = 3 * (RAM_MB << 20) // VLEN
    fill(srv, n)
    time.sleep(0.5)  # the writer thread has what the fill filled
    return fl, flash, srv, n


def test_restored_segment_reads_its_items_whole_and_no_more(start_server, mem_file, tmp_path):
    """A first read takes its segment's largest item, 16 KiB when that is
    not known. After a restart the restored segments know it again: one
    read a flash hit, of the blocks around the 3 KB item (4 or 8 KiB),
    as before the restart, not 16 KiB."""
    fl, _, srv, n = filled(start_server, mem_file, tmp_path)
    srv.stop()
    srv = start(start_server, *fl)
    hits0, reads0, bytes0 = flash_reads(srv)
    got = read_all(srv, n)
    hits, reads, nbytes = (b - a for a, b in zip((hits0, reads0, bytes0), flash_reads(srv)))
    assert len(got) > n // 2 and hits > n // 3, (len(got), hits, n)
    assert reads == hits, (reads, hits)
    assert nbytes <= reads * 8192, nbytes / reads


def changed_run(start_server, mem_file, tmp_path):
    """A run whose flash items are partly deleted and overwritten after an
    early copy of its flash file was taken: (flags, n, the latest value or
    None of every key, the early copy's bytes)."""
    fl, flash, srv, n = filled(start_server, mem_file, tmp_path)
    early = flash.read_bytes()
    c = srv.connect(timeout=30)
    latest = {i: (i, value_of(i)) for i in range(n)}
    for i in range(0, n, 5):
        assert c.call(f"delete k:{i}") in (b"DELETED\r\n", b"NOT_FOUND\r\n")
        latest[i] = None
    for i in range(2, n, 5):
        assert c.set(f"k:{i}", value_of(i, b"new"), flags=i) == b"STORED\r\n"
        latest[i] = (i, value_of(i, b"new"))
    c.close()
    fill_more = [(n + i) for i in range(n)]  # push the overwrites to flash too
    c = srv.connect(timeout=30)
    for j in fill_more:
        v = value_of(j)
        assert c.set(f"k:{j}", v, flags=j) == b"STORED\r\n"
        latest[j] = (j, v)
    c.close()
    srv.stop()
    return fl, flash, latest, early


def check_latest_or_miss(srv, latest):
    """Every key reads as its latest value or misses; returns the hits."""
    c = srv.connect(timeout=30)
    hits = 0
    for i, want in latest.items():
        got = c.get_multi([f"k:{i}"]).get(f"k:{i}")
        if got is not None:
            assert got == want, (i, got[1][:20], want and want[1][:20])
            hits += 1
    c.close()
    return hits


@pytest.mark.parametrize("how", ["truncated", "garbage", "older_copy"])
def test_flash_file_changed_between_runs(start_server, mem_file, tmp_path, how):
    """The flash file truncated, overwritten with garbage, or replaced by a
    copy taken earlier in the run (before deletes and overwrites): every
    key reads as its latest value or misses, never an older one; the RAM
    items stay."""
    fl, flash, latest, early = changed_run(start_server, mem_file, tmp_path)
    size = flash.stat().st_size
    if how == "truncated":
        os.truncate(flash, 0)
    elif how == "garbage":
        flash.write_bytes(random.Random(5).randbytes(size))
    else:
        flash.write_bytes(early)
    srv = start(start_server, *fl)
    hits = check_latest_or_miss(srv, latest)
    # the RAM part at least: about -m of the newest values
    assert hits > (RAM_MB << 20) // VLEN // 4, hits


def test_other_flash_settings_drop_only_flash_items(start_server, mem_file, tmp_path):
    """A restart with another flash file size: one log line, the flash
    items gone, the RAM items restored, no key with an older value."""
    fl, flash, latest, _ = changed_run(start_server, mem_file, tmp_path)
    srv = start(start_server, *fl)
    hits_same = check_latest_or_miss(srv, latest)
    srv.stop()
    other = tuple(a.replace(f"flash:{FLASH_MB}m", f"flash:{FLASH_MB * 2}m") for a in fl)
    srv = start(start_server, *other)
    assert "discarding the flash tier's items" in srv.stderr(), srv.stderr()
    assert "starting empty" not in srv.stderr()
    hits = check_latest_or_miss(srv, latest)
    assert (RAM_MB << 20) // VLEN // 4 < hits < hits_same, (hits, hits_same)
    assert flash_items(srv) == 0


def test_graceful_stop_with_a_segment_write_under_way(start_server, mem_file, tmp_path):
    """Every segment write 300 ms long (a debug build), a graceful stop
    while the writer thread is in the middle of one: the flash record is
    closed clean only after that write is done, so the next start keeps
    every flash item rather than discarding them all for a record that
    changed after its checksum. Either thread may take the last write of
    the stop's queue: six stops, each with a fresh backlog."""
    binary = helpers.debug_bin(helpers.server_bin())
    if binary is None:
        pytest.skip("no debug build (CONFIG=debug or asan) for NODELAY_DEBUG_FLASH_WRITE")
    env = dict(os.environ, NODELAY_DEBUG_FLASH_WRITE="300")
    fl = flags(mem_file, tmp_path / "flash")
    srv = start_server(*fl, binary=binary, env=env)
    for r in range(6):
        # a few segments' worth queued behind the writer thread
        fill(srv, 4000, b"%d" % r, wait_flash=False)
        before = flash_items(srv)
        srv.stop()
        srv = start_server(*fl, binary=binary, env=env)
        assert "discarding" not in srv.stderr(), srv.stderr()
        assert flash_items(srv) >= before > 0, (flash_items(srv), before)


# (flash file MB, share of NODELAY_RESTART_SECONDS, largest value of client 0):
# roomy: idle items all go to flash each second (ext_item_age=0); tight: a
# flash of eight segments, so segments are compacted and dropped too.
KILL9_FLASH = {
    "roomy": (64, 0.3, 200 * 1000),
    "tight": (16, 0.3, 200 * 1000),
}


class FlashLoader(Loader):
    """test_restart.py's client, with values mostly large enough for flash
    (ext_item_size, 512 bytes). A read of a flash item may miss once while
    compaction or the idle flush moves it between the request's probe and
    its lookup: a miss is read again a few times before the key counts as
    gone. Its appends are refused on flash items (NOT_STORED, as
    memcached's), and the key is then read back."""

    def reread(self, c, k, got, m):
        for _ in range(5):
            if got is not ABSENT or m.acked is ABSENT:
                break
            time.sleep(0.01)
            r = c.get_multi([k])
            got = r[k][1] if k in r else ABSENT
        return got

    def value(self):
        r = self.rng.random()
        n = self.rng.randint(0, 200) if r < 0.2 else (
            self.rng.randint(500, 6000) if r < 0.95 else self.rng.randint(6000, self.max_value))
        return (b"%d:%d:" % (self.tid, self.ops)) + self.rng.randbytes(n)


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(KILL9_FLASH))
def test_kill9_under_load_with_flash(start_server, mem_file, tmp_path, mode):
    """kill -9 at random under four clients' sets, appends, incrs, deletes
    and flush_alls (test_restart.py's loader), with items moving to flash
    every second: after each restart every key reads as its last
    acknowledged value, the one in flight, or a miss (a flash copy may be
    lost with a writer's buffer or a dropped segment), never a value
    deleted or overwritten before."""
    flash_mb, share, max0 = KILL9_FLASH[mode]
    seconds = float(os.environ.get("NODELAY_RESTART_SECONDS", "60")) * share
    rng = random.Random(int(os.environ.get("NODELAY_RESTART_SEED", "21")))
    fl = ("-v", "-m", "8", "-t", "2", "-e", mem_file, "-o",
          f"ext_path={tmp_path}/flash:{flash_mb}m,ext_wbuf_size=2,ext_page_size=2,"
          "ext_item_age=0")
    nthreads = 4
    models, keysets = key_models(nthreads)
    counts = dict(restarts=0, items_checked=0, acked_lost=0, stale_resurrected=0,
                  corrupt_served=0, ops=0, flushes=0, refused=0, clients_lost=0,
                  flash_linked=0)
    deadline = time.monotonic() + seconds
    srv = start(start_server, *fl)
    reports = []
    while True:
        locks = [threading.Lock() for _ in range(nthreads)]
        loaders = [FlashLoader(srv, t, keysets[t], models, max0 if t == 0 else 20000,
                          random.Random(rng.random()), locks, True, counts["restarts"])
                   for t in range(nthreads)]
        for ld in loaders:
            ld.start()
        time.sleep(rng.uniform(1.0, 4.0))
        for ld in loaders:
            ld.killing = True
        kill9(srv)
        for ld in loaders:
            ld.stop = True
        for ld in loaders:
            ld.join(timeout=20)
            if ld.error:
                k = ld.error.args[0][0] if ld.error.args and isinstance(ld.error.args[0], tuple) else None
                if k in models:
                    print("\n".join(models[k].events))
                raise ld.error
            counts["ops"] += ld.ops
            counts["flushes"] += ld.flushes
            counts["refused"] += ld.refused
            counts["clients_lost"] += ld.lost is not None
        before = memfile.run_state(mem_file)
        srv = start(start_server, *fl)
        assert "discarding" not in srv.stderr(), srv.stderr()
        counts["restarts"] += 1
        log = srv.stderr()
        if "linked " in log:
            counts["flash_linked"] += int(log.rsplit("linked ", 1)[1].split()[0])
        bad = []
        # one key a get: a multi-get's flash reads brought back into RAM may
        # push another of its keys out to flash, which it then misses
        check_restored(srv, models, counts, counts["restarts"], bad, batch=1)
        bad = [b for b in bad if b["kind"] != "acked_lost"]
        if bad:
            reports.append(f"after restart {counts['restarts']}:\n" +
                           report_bad(bad, mem_file, before))
        # until flash items came back at least once (a slow build may fill
        # few segments before its kills: a writer's buffer is lost at one)
        if time.monotonic() > deadline and counts["restarts"] >= 3 and (
                counts["flash_linked"] > 0 or counts["restarts"] >= 15):
            break
    print(f"kill -9 loop with flash ({mode}):", counts)
    why = f"{counts}\n" + "\n".join(reports)
    assert counts["stale_resurrected"] == 0, why
    assert counts["corrupt_served"] == 0, why
    assert counts["flash_linked"] > 0, why


def test_one_damaged_flash_item_costs_that_item_alone(start_server, mem_file, tmp_path):
    """One byte of a flash item's value flipped between runs (bit rot): that
    key misses, counted (restore_discarded_corrupt); every other item of
    its segment, before and after it, comes back as it was."""
    fl, flash, srv, n = filled(start_server, mem_file, tmp_path)
    before = read_all(srv, n)
    srv.stop()
    img = flash.read_bytes()
    # a key of the first third (on flash, early in a segment: items follow it)
    for victim in range(n // 10, n // 3):
        at = img.find(value_of(victim)[:64])
        if at > 0 and f"k:{victim}" in before:
            break
    assert at > 0
    with open(flash, "r+b") as f:
        f.seek(at + VLEN // 2)
        b = f.read(1)
        f.seek(at + VLEN // 2)
        f.write(bytes([b[0] ^ 0x10]))
    srv = start(start_server, *fl)
    after = read_all(srv, n)
    want = dict(before)
    del want[f"k:{victim}"]
    lost = sorted(int(k[2:]) for k in set(want) - set(after))
    assert after == {k: v for k, v in want.items() if k in after}  # nothing wrong
    assert lost == [], (victim, len(lost), lost[:10])
    c = srv.connect()
    assert int(stats(c, "nodelay")["restore_discarded_corrupt"]) >= 1
    c.close()


def test_damaged_ram_part_keeps_flash_items(start_server, mem_file, tmp_path):
    """After a graceful stop, a memory file whose RAM part fails its
    checksums: the RAM items are discarded and the log says so, and that
    the flash tier's items are kept, which the restart then links."""
    flash = tmp_path / "flash"
    fl = flags(mem_file, flash)
    srv = start(start_server, *fl)
    fill(srv, 3 * (RAM_MB << 20) // VLEN)
    assert flash_items(srv) > 0
    srv.stop()
    data_off = 2 << 20  # the first segment's data (persist.h)
    with open(mem_file, "r+b") as f:
        f.seek(data_off + 3000)
        b = f.read(1)
        f.seek(data_off + 3000)
        f.write(bytes([b[0] ^ 0x20]))
    srv = start(start_server, *fl)
    log = srv.stderr()
    assert "fails its checksums after a graceful stop" in log, log
    assert "discarding its RAM items and keeping the flash tier's" in log, log
    assert "starting empty" not in log, log
    assert flash_items(srv) > 0
    c = srv.connect()
    assert stats(c, "nodelay")["restore_mode"] == "discarded"
    c.close()
