# SPDX-License-Identifier: BSD-3-Clause
"""-e FILE: the cache survives a restart, graceful or after kill -9.

A graceful stop (SIGTERM or SIGUSR1) marks the file clean; the next start
with the same file and settings restores every live item with its flags,
CAS and remaining TTL, and the CAS counter goes on above them. After a kill
-9 the restore gives each key the value of its last acknowledged write (or
of one in flight), never one overwritten, deleted or flushed before. A file
that is damaged or made with other settings is discarded with a log line.
"""
import collections
import os
import random
import signal
import struct
import subprocess
import threading
import time

import pytest

import helpers
import memfile
from helpers import stats

pytestmark = pytest.mark.skipif(
    helpers.is_memcached(helpers.server_bin()),
    reason="nodelay's -e restore and stats nodelay; memcached's -e is tested by its restart.t")


@pytest.fixture
def mem_file(tmp_path):
    """A memory file on tmpfs, removed afterwards."""
    path = f"/dev/shm/nodelay-test-{os.getpid()}-{random.getrandbits(32):08x}"
    yield path
    for p in (path,):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def key_models(nthreads, per=400):
    """A model of every key, and each loader thread's own keys."""
    keysets = [[f"t{t}:k{i}" for i in range(per)] for t in range(nthreads)]
    return {k: KeyModel() for ks in keysets for k in ks}, keysets


def kill9(srv):
    srv.proc.kill()
    srv.proc.wait()
    srv.stopped = True


def graceful(srv, sig=signal.SIGTERM):
    srv.stop(sig)


def nodelay_stats(srv):
    c = srv.connect()
    try:
        return stats(c, "nodelay")
    finally:
        c.close()


def nodelay_stats_general(srv):
    c = srv.connect()
    try:
        return stats(c)
    finally:
        c.close()


def bin_cmd(c, opcode, key=b"", value=b"", extras=b"", cas=0):
    c.send(helpers.bin_request(opcode, key, value, extras, cas=cas))
    return helpers.bin_read(c)


def test_graceful_restore_text_meta_binary(start_server, mem_file):
    flags = ("-m", "32", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    want = {}
    for i in range(300):
        k = f"t{i}"
        v = os.urandom(random.randint(0, 3000))
        assert c.set(k, v, flags=i * 7919 % 2**32, exptime=0 if i % 3 else 1000) == b"STORED\r\n"
        want[k] = (i * 7919 % 2**32, v)
    # meta: ms with flags and TTL
    for i in range(100):
        k = f"m{i}"
        v = os.urandom(i * 13)
        c.send(b"ms %s %d F%d T500\r\n%s\r\n" % (k.encode(), len(v), i, v))
        assert c.readline() == b"HD\r\n"
        want[k] = (i, v)
    # binary set (opcode 1, its own connection): extras = flags(4) exptime(4)
    bc = srv.connect()
    for i in range(100):
        k = f"b{i}".encode()
        v = os.urandom(i * 7)
        r = bin_cmd(bc, 0x01, k, v, struct.pack(">II", 0xdead0000 + i, 0 if i % 2 else 2000))
        assert r["status"] == 0
        want[k.decode()] = (0xdead0000 + i, v)
    bc.close()
    # overwrites, deletes, append, incr
    assert c.set("t1", b"new", flags=5) == b"STORED\r\n"
    want["t1"] = (5, b"new")
    assert c.call("delete t2") == b"DELETED\r\n"
    del want["t2"]
    assert c.store("append", "t4", b"-tail") == b"STORED\r\n"
    want["t4"] = (want["t4"][0], want["t4"][1] + b"-tail")
    assert c.set("n", b"41") == b"STORED\r\n"
    assert c.call("incr n 1") == b"42\r\n"
    want["n"] = (0, b"42")
    before = c.get_multi(list(want), "gets")
    c.send(b"mg t0 t\r\n")
    ttl_before = int(c.readline().split()[1][1:])
    read_at = time.monotonic()
    c.close()
    assert set(before) == set(want)
    graceful(srv)

    srv2 = start_server(*flags)
    c = srv2.connect()
    after = c.get_multi(list(want) + ["t2"], "gets")
    assert "t2" not in after
    assert set(after) == set(want)
    for k, (fl, v) in want.items():
        assert after[k][0] == fl and after[k][1] == v, k
        assert after[k][2] == before[k][2], f"CAS of {k} changed"
    c.send(b"mg t0 t\r\n")
    ttl_after = int(c.readline().split()[1][1:])
    # counted down by the stop and start (seconds under load), never up
    down = time.monotonic() - read_at
    assert ttl_before - down - 2 <= ttl_after <= ttl_before, (ttl_before, ttl_after, down)
    # the CAS counter goes on above every restored CAS
    assert c.set("fresh", b"x") == b"STORED\r\n"
    assert c.gets("fresh")[2] > max(e[2] for e in before.values())
    st = stats(c, "nodelay")
    assert st["restore_mode"] == "graceful"
    assert int(st["restored_items"]) == len(want)
    assert int(st["restore_discarded_corrupt"]) == 0
    c.close()


def test_sigusr1_and_crash_restore(start_server, mem_file):
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.set("a", b"1", flags=3) == b"STORED\r\n"
    c.close()
    graceful(srv, signal.SIGUSR1)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["a"]) == {"a": (3, b"1")}
    assert c.set("b", b"2") == b"STORED\r\n"
    assert c.call("delete a") == b"DELETED\r\n"
    c.close()
    kill9(srv)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["a", "b"]) == {"b": (0, b"2")}
    assert stats(c, "nodelay")["restore_mode"] == "crash"
    c.close()


def test_flush_all_survives(start_server, mem_file):
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    for i in range(50):
        c.set(f"k{i}", b"v")
    assert c.call("flush_all") == b"OK\r\n"
    c.set("after", b"yes")
    c.close()
    kill9(srv)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi([f"k{i}" for i in range(50)] + ["after"]) == {"after": (0, b"yes")}
    c.close()


def start_expect_log(start_server, flags):
    srv = start_server(*flags, "-v")
    return srv


def test_ttl_counts_time_spent_down(start_server, mem_file):
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.set("short", b"s", exptime=2) == b"STORED\r\n"
    set_at = time.monotonic()
    assert c.set("long", b"l", exptime=100) == b"STORED\r\n"
    c.close()
    graceful(srv)
    time.sleep(3)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["short", "long"]) == {"long": (0, b"l")}
    c.send(b"mg long t\r\n")
    ttl = int(c.readline().split()[1][1:])
    # at least the 3 s down have passed; at most what the test has taken
    # (a slow start under load adds to it), with a second of rounding
    elapsed = time.monotonic() - set_at
    assert 100 - elapsed - 2 <= ttl <= 97, (ttl, elapsed)
    st = stats(c, "nodelay")
    assert int(st["restore_discarded_expired"]) == 1
    c.close()


def fill_some(srv, n=200):
    c = srv.connect()
    for i in range(n):
        assert c.set(f"k{i}", b"v%d" % i * 20, flags=i) == b"STORED\r\n"
    c.close()


def test_other_settings_discard_the_file(start_server, mem_file):
    srv = start_server("-m", "16", "-e", mem_file)
    fill_some(srv)
    graceful(srv)
    for flags in (("-m", "32"), ("-m", "16", "-I", "2m"), ("-m", "16", "-C")):
        srv = start_server(*flags, "-e", mem_file)
        c = srv.connect()
        assert c.get("k1") is None
        assert stats(c, "nodelay")["restore_mode"] == "discarded"
        c.close()
        graceful(srv)
        assert "made with other settings" in srv.stderr()
        assert "discarding it and starting empty" in srv.stderr()


def damage(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


DATA_OFF = 2 << 20  # segment data starts at the first 2 MiB boundary (persist.h)


def test_damaged_file_after_graceful_stop_is_discarded(start_server, mem_file):
    srv = start_server("-m", "16", "-e", mem_file)
    fill_some(srv)
    graceful(srv)
    # one byte of one value, deep in the first segment
    with open(mem_file, "rb") as f:
        f.seek(DATA_OFF + 3000)
        b = f.read(1)
    damage(mem_file, DATA_OFF + 3000, bytes([b[0] ^ 0x20]))
    srv = start_server("-m", "16", "-e", mem_file)
    c = srv.connect()
    assert c.get_multi([f"k{i}" for i in range(200)]) == {}
    assert stats(c, "nodelay")["restore_mode"] == "discarded"
    c.close()
    graceful(srv)
    assert "fails its checksums" in srv.stderr()


def test_damaged_value_after_crash_is_dropped(start_server, mem_file):
    srv = start_server("-m", "16", "-e", mem_file)
    c = srv.connect()
    for i in range(100):
        assert c.set(f"key{i:03d}", b"%03d" % i * 100) == b"STORED\r\n"
    c.close()
    kill9(srv)
    with open(mem_file, "rb") as f:
        f.seek(DATA_OFF)
        seg = f.read(1 << 20)
    at = seg.find(b"key050")
    assert at > 0
    damage(mem_file, DATA_OFF + at + 6 + 50, b"X")  # inside key050's value
    srv = start_server("-m", "16", "-e", mem_file)
    c = srv.connect()
    got = c.get_multi([f"key{i:03d}" for i in range(100)])
    assert "key050" not in got
    assert len(got) == 99
    for k, (fl, v) in got.items():
        assert v == k[3:].encode() * 100
    st = stats(c, "nodelay")
    assert st["restore_mode"] == "crash"
    assert int(st["restore_discarded_corrupt"]) == 1
    c.close()


def test_truncated_and_garbage_files(start_server, mem_file):
    srv = start_server("-m", "16", "-e", mem_file)
    fill_some(srv)
    graceful(srv)
    size = os.path.getsize(mem_file)
    os.truncate(mem_file, size // 2)
    srv = start_server("-m", "16", "-e", mem_file)
    c = srv.connect()
    assert c.get("k1") is None
    assert stats(c, "nodelay")["restore_mode"] == "discarded"
    assert c.set("k1", b"again") == b"STORED\r\n"
    c.close()
    graceful(srv)
    assert "truncated" in srv.stderr()
    assert os.path.getsize(mem_file) == size
    with open(mem_file, "wb") as f:
        f.write(os.urandom(100000))
    srv = start_server("-m", "16", "-e", mem_file)
    c = srv.connect()
    assert c.get("k1") is None
    c.close()
    graceful(srv)
    assert "not a nodelay memory file" in srv.stderr()


def test_header_damage_after_crash_is_discarded(start_server, mem_file):
    srv = start_server("-m", "16", "-e", mem_file)
    fill_some(srv)
    kill9(srv)
    damage(mem_file, 40, b"\xff")  # inside the settings block
    srv = start_server("-m", "16", "-e", mem_file)
    c = srv.connect()
    assert c.get("k1") is None
    c.close()
    graceful(srv)
    assert "header is damaged" in srv.stderr()


def item_header_at(img, key, value):
    """File offset of the layout byte of the item holding key and value
    (default settings: CAS on, no flags, no expiry, a value under 128
    bytes: layout, nkey, 1-byte length, a 2-byte atime (its segment's clock
    holds it: no AT32 bit), a 2-byte CAS delta (both CAS bits set, the
    store's first few CAS numbers), checksum)."""
    at = img.find(key + value)
    assert at > 0
    p = at - 11
    assert img[p] & 0x9f == 0x1c and img[p + 1] == len(key) and img[p + 2] == len(value), \
        img[p:p + 3]
    return p


def test_one_bad_bit_in_a_dead_header_after_crash(start_server, mem_file):
    """After a kill -9, one damaged bit (the DEAD bit) in the layout byte
    of an overwritten item, or of a deleted one, never serves it: no
    checksum can cover that byte, so a dead item's state differs from a
    live one's in two bits."""
    flags = ("-m", "16", "-e", mem_file)
    old, new, gone = b"OLD-VALUE-" * 5, b"NEW-VALUE-" * 5, b"DELETED-VALUE-" * 3
    srv = start_server(*flags)
    c = srv.connect()
    assert c.set("k", old) == b"STORED\r\n"
    assert c.set("k", new) == b"STORED\r\n"
    assert c.set("gone", gone) == b"STORED\r\n"
    assert c.call("delete gone") == b"DELETED\r\n"
    c.close()
    kill9(srv)
    with open(mem_file, "rb") as f:
        img = f.read()
    for key, value in ((b"k", old), (b"gone", gone)):
        p = item_header_at(img, key, value)
        damage(mem_file, p, bytes([img[p] ^ 0x40]))
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["k", "gone"]) == {"k": (0, new)}
    st = stats(c, "nodelay")
    assert st["restore_mode"] == "crash"
    c.close()


HB_UNIX_AT, CAS_CEILING_AT, OLDEST_LIVE_AT = 88, 104, 120  # struct pm_hdr (persist.h)


def test_one_bad_bit_in_the_flush_state_after_crash(start_server, mem_file):
    """One damaged bit in the flush_all state the header holds (here one
    that moves the flush 12 days ahead, so not yet in force) never brings
    back what the flush hid: the state is kept twice, with checksums."""
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    c = srv.connect()
    assert c.set("flushed", b"before") == b"STORED\r\n"
    time.sleep(2.2)  # older than the flush's second: hidden, not unlinked
    assert c.call("flush_all") == b"OK\r\n"
    assert c.set("kept", b"after") == b"STORED\r\n"
    c.close()
    kill9(srv)
    with open(mem_file, "rb") as f:
        f.seek(OLDEST_LIVE_AT)
        ol = struct.unpack("<I", f.read(4))[0]
    assert ol > 0
    damage(mem_file, OLDEST_LIVE_AT, struct.pack("<I", ol ^ (1 << 20)))
    srv = start_server(*flags)
    c = srv.connect()
    assert c.get_multi(["flushed", "kept"]) == {"kept": (0, b"after")}
    assert stats(c, "nodelay")["restore_mode"] == "crash"
    c.close()


@pytest.mark.parametrize("hb_unix", ["20 years ago", "INT64_MIN", "2 days ahead"])
def test_impossible_heartbeat_after_crash_discards_the_file(start_server, mem_file, hb_unix):
    """A heartbeat the clock cannot carry (its time far in the past: a wall
    clock wrong while the server ran, or damage) or one in the future is a
    damaged file: discarded, and the new clock starts afresh, so items
    written afterwards read back as written and uptime is sane."""
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    fill_some(srv, 20)
    kill9(srv)
    t = {"20 years ago": int(time.time()) - 20 * 365 * 86400, "INT64_MIN": -2**63,
         "2 days ahead": int(time.time()) + 2 * 86400}[hb_unix]
    damage(mem_file, HB_UNIX_AT, struct.pack("<q", t))
    srv = start_server(*flags)
    c = srv.connect()
    st = stats(c)
    assert int(st["uptime"]) < 3600, st["uptime"]
    assert c.set("fresh", b"v", exptime=1000) == b"STORED\r\n"
    c.send(b"mg fresh v t\r\n")
    line = c.readline()
    assert line.split()[0] == b"VA" and b"X" not in line and b"Z" not in line, line
    assert c.readline() == b"v\r\n"
    assert c.get("k1") is None
    assert stats(c, "nodelay")["restore_mode"] == "discarded"
    c.close()
    graceful(srv)
    assert "its clock cannot be right" in srv.stderr()


def test_impossible_cas_ceiling_after_crash_discards_the_file(start_server, mem_file):
    """A CAS ceiling near 2^64 cannot have been written: the file is
    discarded rather than the CAS counter wrapped."""
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    fill_some(srv, 20)
    kill9(srv)
    damage(mem_file, CAS_CEILING_AT, struct.pack("<Q", 2**64 - 3))
    srv = start_server(*flags)
    c = srv.connect()
    cas = []
    for i in range(5):
        assert c.set(f"n{i}", b"v") == b"STORED\r\n"
        cas.append(c.gets(f"n{i}")[2])
    assert all(0 < x < 2**62 for x in cas) and cas == sorted(set(cas)), cas
    assert c.get("k1") is None
    assert stats(c, "nodelay")["restore_mode"] == "discarded"
    c.close()
    graceful(srv)
    assert "its CAS ceiling cannot be right" in srv.stderr()


def test_file_on_disk_works_with_a_warning(start_server, tmp_path):
    path = str(tmp_path / "mem")  # /tmp is not tmpfs here; skip if it is
    if subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True,
                      text=True).stdout.strip() in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on tmpfs")
    srv = start_server("-m", "8", "-e", path)
    fill_some(srv)
    graceful(srv)
    assert "is not on tmpfs or ramfs" in srv.stderr()
    srv = start_server("-m", "8", "-e", path)
    c = srv.connect()
    assert c.get_multi(["k3"]) == {"k3": (3, b"v3" * 20)}
    c.close()


def test_file_owned_by_another_user_is_refused(server_bin, mem_file, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the file away")
    with open(mem_file, "wb"):
        pass
    os.chown(mem_file, 65534, 65534)
    srv = helpers.Server(server_bin, ["-e", mem_file], workdir=str(tmp_path))
    with pytest.raises(helpers.ServerError) as e:
        srv.start(timeout=5)
    assert "owned by uid 65534" in str(e.value)


# ---- kill -9 under load -----------------------------------------------------

ABSENT = None


class KeyModel:
    """What a key may read as after a kill: its last acknowledged state, or
    the result of the one write still in flight (each key has one writer).
    For a failure's report it also keeps which request wrote each value and
    the key's last requests."""

    def __init__(self):
        self.acked = ABSENT
        self.inflight = []  # possible results of the write in flight
        self.history = {}  # every value it ever held (stale if seen later): who wrote it
        self.events = collections.deque(maxlen=12)  # the key's last requests, for a report

    def allowed(self):
        return [self.acked] + self.inflight

    def note(self, what):
        self.events.append(what)

    def held(self, v, origin):
        self.history.setdefault(v, origin)


def short(v):
    """A value for a report: its length and first bytes."""
    return "ABSENT" if v is ABSENT else f"{len(v)}B {v[:24]!r}"


class Loader(threading.Thread):
    """One client: its own keys, one request at a time, every reply checked
    and recorded. With evicts, a reply that shows the key gone is learnt
    from instead of failing."""

    def __init__(self, srv, tid, keys, models, max_value, rng, locks, evicts=False, cycle=0):
        super().__init__(daemon=True)
        self.evicts = evicts
        self.srv, self.tid, self.keys, self.models = srv, tid, keys, models
        self.max_value, self.rng, self.locks = max_value, rng, locks
        self.cycle = cycle  # which server run (restarts so far), for reports
        self.stop = False
        self.ops = 0
        self.flushes = 0
        self.refused = 0
        self.error = None
        self.killing = False  # set just before the kill: a connection lost earlier is noted
        self.lost = None  # how the connection was lost before the kill, if it was

    def value(self):
        r = self.rng.random()
        n = self.rng.randint(0, 200) if r < 0.9 else self.rng.randint(200, self.max_value)
        return (b"%d:%d:" % (self.tid, self.ops)) + self.rng.randbytes(n)

    def run(self):
        try:
            c = self.srv.connect(timeout=10)
        except OSError:
            return
        try:
            while not self.stop:
                # each client holds its lock for a request; flush_all takes them all
                if not self.take(self.locks[self.tid]):
                    return
                try:
                    self.one(c)
                finally:
                    self.locks[self.tid].release()
                self.ops += 1
        except (OSError, EOFError) as e:
            # the kill; or, before it, a timeout or a closed connection: then
            # this client's request in flight may still land at any time
            if not self.killing:
                self.lost = f"client {self.tid} lost its connection at op {self.ops}: {e!r}"
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def take(self, lock):
        """Take this client's lock for a request; False when the run stops
        first, or after 10 s (a flush_all cut off keeps it: see one)."""
        deadline = time.monotonic() + 10
        while not lock.acquire(timeout=0.05):
            if self.stop or time.monotonic() > deadline:
                return False
        return True

    def reread(self, c, k, got, m):
        """What a read that missed means: here, that the key is gone (a
        flash tier's client reads again, test_flash_restart.py)."""
        return got

    def relearn(self, c, k, m):
        r = c.get_multi([k])
        m.acked = self.reread(c, k, r[k][1] if k in r else ABSENT, m)
        m.inflight = []
        m.note(f"run {self.cycle}: refused; read back {short(m.acked)}")
        self.refused += 1

    def acked(self, m, v, what):
        m.acked, m.inflight = v, []
        if v is not ABSENT:
            m.held(v, f"{what} (client {self.tid}, run {self.cycle}, op {self.ops})")
        m.note(f"run {self.cycle} op {self.ops}: {what} -> {short(v)}")

    def one(self, c):
        k = self.rng.choice(self.keys)
        m = self.models[k]
        op = self.rng.random()
        if op < 0.45:
            v = self.value()
            m.inflight = [v, ABSENT]
            m.note(f"run {self.cycle} op {self.ops}: set {short(v)} sent")
            r = c.set(k, v)
            if r.startswith(b"SERVER_ERROR"):  # -M and full: see what is left
                self.relearn(c, k, m)
                return
            assert r == b"STORED\r\n", r
            self.acked(m, v, "set")
        elif op < 0.6:
            tail = b"+%d" % self.ops
            m.inflight = [m.acked + tail] if m.acked is not None else []
            m.note(f"run {self.cycle} op {self.ops}: append {tail!r} sent")
            r = c.store("append", k, tail)
            if r.startswith(b"SERVER_ERROR") or (self.evicts and r == b"NOT_STORED\r\n"):
                self.relearn(c, k, m)
                return
            if m.acked is None:
                assert r == b"NOT_STORED\r\n", r
                m.inflight = []
                m.note(f"run {self.cycle} op {self.ops}: append NOT_STORED")
            else:
                assert r == b"STORED\r\n", r
                self.acked(m, m.acked + tail, "append")
        elif op < 0.72:
            # a numeric value, then incr it
            m.inflight = [b"100", ABSENT]
            m.note(f"run {self.cycle} op {self.ops}: set 100 sent")
            r = c.set(k, b"100")
            if r.startswith(b"SERVER_ERROR"):
                self.relearn(c, k, m)
                return
            assert r == b"STORED\r\n", r
            self.acked(m, b"100", "set 100")
            m.inflight = [b"107"]
            m.note(f"run {self.cycle} op {self.ops}: incr 7 sent")
            r = c.call(f"incr {k} 7")
            if r.startswith(b"SERVER_ERROR") or (self.evicts and r == b"NOT_FOUND\r\n"):
                self.relearn(c, k, m)
                return
            assert r == b"107\r\n", r
            self.acked(m, b"107", "incr")
        elif op < 0.9:
            m.inflight = [ABSENT]
            m.note(f"run {self.cycle} op {self.ops}: delete sent")
            r = c.call(f"delete {k}")
            assert r in (b"DELETED\r\n", b"NOT_FOUND\r\n"), r
            assert self.evicts or (r == b"DELETED\r\n") == (m.acked is not None), (k, r, m.acked)
            self.acked(m, ABSENT, "delete " + r.decode().strip())
        elif op < 0.998 or self.tid != 0:
            r = c.get_multi([k])
            got = r[k][1] if k in r else ABSENT
            if got is ABSENT:
                got = self.reread(c, k, got, m)
            if self.evicts and got is ABSENT:
                m.acked = ABSENT
            assert got == m.acked, (k, got and got[:40], m.acked and m.acked[:40])
        else:
            # flush_all with every other client parked between requests
            held = []
            cut = False
            try:
                for lk in self.locks[1:]:
                    if not lk.acquire(timeout=10):
                        return
                    held.append(lk)
                # Every other client is parked between requests, its keys
                # with nothing in flight; but one whose connection was lost
                # may have left a request that lands after the flush.
                before = [(mm, mm.inflight) for mm in self.models.values()]
                for mm, fl in before:
                    mm.inflight = fl + [ABSENT]
                cut = True
                assert c.call("flush_all") == b"OK\r\n"
                cut = False
                for mm, fl in before:
                    mm.acked, mm.inflight = ABSENT, fl
                    mm.note(f"run {self.cycle}: flush_all by client {self.tid} -> ABSENT")
                self.flushes += 1
            finally:
                # Cut off (the kill, or a lost connection), the flush may
                # have run: ABSENT stays in flight for every key only while
                # no other request of it is sent, so the other clients stay
                # parked until the run stops. Released, the next one's
                # request would replace it, and a key the flush emptied
                # would count as lost.
                for mm, fl in before if cut else []:
                    mm.note(f"run {self.cycle}: flush_all by client {self.tid} cut off "
                            "(may have run)")
                for lk in held if not cut else []:
                    lk.release()


def check_restored(srv, models, counts, cycle=0, bad=None, batch=100):
    """Read every key back after a restart and classify it (batch keys a
    get); each key that is not as allowed goes into bad with what the
    report needs."""
    c = srv.connect(timeout=20)
    keys = list(models)
    for i in range(0, len(keys), batch):
        got = c.get_multi(keys[i:i + batch])
        for k in keys[i:i + batch]:
            m = models[k]
            v = got[k][1] if k in got else ABSENT
            counts["items_checked"] += 1
            kind = None
            if v in m.allowed():
                pass  # the in-flight write may have landed
            elif v is ABSENT:
                kind = "acked_lost"
            elif v in m.history:
                kind = "stale_resurrected"
            else:
                kind = "corrupt_served"
            if kind:
                counts[kind] += 1
                if bad is not None:
                    bad.append(dict(
                        key=k, kind=kind, got=short(v),
                        got_from=m.history.get(v, "never acknowledged") if v is not ABSENT else "",
                        acked=short(m.acked),
                        acked_from=m.history.get(m.acked, "") if m.acked is not ABSENT else "",
                        inflight=[short(x) for x in m.inflight], events=list(m.events)))
            if v != m.acked:
                m.note(f"run {cycle}: restored as {short(v)}")
            m.acked, m.inflight = v, []  # go on from what the server holds
            if v is not ABSENT:
                # an in-flight write that landed: seen again after a later
                # overwrite, it is stale, not corrupt
                m.held(v, f"restored after run {cycle - 1}")
    st = stats(c)
    c.close()
    return st


def report_bad(bad, mem_file, before):
    """A failure's report for the test log: each key's values, the requests
    that wrote them, the key's last requests, its copies in the memory file
    (state bits, CAS, whether the restore's walk reaches each) and the
    file's run state and journal as the kill left them."""
    lines = []
    for b in bad[:10]:
        lines.append(f"{b['kind']}: key {b['key']} read {b['got']} (written by {b['got_from']}); "
                     f"last acknowledged {b['acked']} ({b['acked_from']}); "
                     f"in flight {b['inflight']}")
        lines += ["  " + e for e in b["events"]]
        try:
            lines.append(" copies in the memory file after the restore:")
            lines += memfile.key_copies(mem_file, b["key"])
        except (OSError, ValueError, IndexError) as e:
            lines.append(f"  (cannot read the memory file: {e})")
    lines.append("the memory file after the kill, before the restore:")
    lines += ["  " + x for x in before]
    return "\n".join(lines)


# (-m, extra flags, share of the time, largest value of client 0, evicts):
# room for everything; eviction (acknowledged writes may be evicted, nothing
# stale may return); -M, where overwrites make segments compacted in place.
KILL9_MODES = {
    "roomy": ("256", (), 0.5, 1000 * 1000, False),  # values up to -I 1m
    "evicting": ("8", (), 0.25, 256 * 1024, True),
    "compacting": ("8", ("-M",), 0.25, 8000, False),
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(KILL9_MODES))
def test_kill9_under_load_loses_and_resurrects_nothing(start_server, mem_file, mode):
    mem, extra, share, max0, evicts = KILL9_MODES[mode]
    seconds = float(os.environ.get("NODELAY_RESTART_SECONDS", "60")) * share
    rng = random.Random(int(os.environ.get("NODELAY_RESTART_SEED", "14")))
    flags = ("-m", mem, "-I", "1m", "-t", "2", *extra, "-e", mem_file)
    nthreads = 4
    models, keysets = key_models(nthreads)
    counts = dict(restarts=0, items_checked=0, acked_lost=0, stale_resurrected=0,
                  corrupt_served=0, ops=0, flushes=0, evictions=0, refused=0, clients_lost=0)
    deadline = time.monotonic() + seconds
    srv = start_server(*flags)
    reports = []
    while True:
        locks = [threading.Lock() for _ in range(nthreads)]
        loaders = [Loader(srv, t, keysets[t], models, max0 if t == 0 else min(max0, 20000),
                          random.Random(rng.random()), locks, evicts, counts["restarts"])
                   for t in range(nthreads)]
        for ld in loaders:
            ld.start()
        time.sleep(rng.uniform(0.2, 1.2))
        try:  # what was evicted before the kill (no eviction is possible after)
            counts["evictions"] += int(nodelay_stats_general(srv).get("evictions", "0"))
        except (OSError, EOFError):
            pass
        for ld in loaders:
            ld.killing = True
        kill9(srv)
        for ld in loaders:
            ld.stop = True
        lost = []
        for ld in loaders:
            ld.join(timeout=20)
            if ld.error:
                raise ld.error
            if ld.lost:
                lost.append(ld.lost)
            counts["ops"] += ld.ops
            counts["flushes"] += ld.flushes
        counts["clients_lost"] += len(lost)
        # the journal and run state, before the restore clears them
        before = lost + memfile.run_state(mem_file)
        srv = start_server(*flags)
        counts["restarts"] += 1
        bad = []
        st = check_restored(srv, models, counts, counts["restarts"], bad)
        if bad and not (evicts and all(b["kind"] == "acked_lost" for b in bad)):
            reports.append(f"after restart {counts['restarts']}:\n" +
                           report_bad(bad, mem_file, before))
        counts["evictions"] += int(st.get("evictions", "0"))
        counts["refused"] += sum(ld.refused for ld in loaders)
        if time.monotonic() > deadline and counts["restarts"] >= 3:
            break
    print(f"kill -9 loop ({mode}):", counts)
    for r in reports:
        print(r)
    why = f"{counts}\n" + "\n".join(reports)
    if not evicts:
        assert counts["evictions"] == 0, why
        assert counts["acked_lost"] == 0, why
    assert counts["stale_resurrected"] == 0, why
    assert counts["corrupt_served"] == 0, why
    assert counts["restarts"] >= 3


class Scripted:
    """A loader's dice, scripted: random() gives the next of ops (then the
    last again), every other draw is a seeded Random's."""

    def __init__(self, ops):
        self.ops, self.rng = list(ops), random.Random(5)

    def random(self):
        return self.ops.pop(0) if len(self.ops) > 1 else self.ops[0]

    def __getattr__(self, name):
        return getattr(self.rng, name)


class ReplyLostToKill:
    """Client 0's connection: its flush_all reaches the server and runs
    there, then the kill takes the server before the OK is read."""

    def __init__(self, c, srv, loaders):
        self.c, self.srv, self.loaders = c, srv, loaders

    def call(self, line):
        assert line == "flush_all" and self.c.call(line) == b"OK\r\n"
        for ld in self.loaders:
            ld.killing = True
        kill9(self.srv)
        raise ConnectionResetError("the kill, before the reply was read")


def test_flush_all_cut_by_the_kill_may_have_flushed_every_key(start_server, mem_file):
    """The kill -9 loop's model (Loader): a flush_all that the server ran
    but whose OK the kill took may have emptied every key. Client 1 appends
    to its key; client 0's flush_all runs between two of its requests, and
    the kill lands before the OK is read. The restart serves the key
    flushed, rightly. Client 1, parked for the flush, must send nothing
    more: its next request's outcomes would replace the ABSENT the flush
    left in flight, and the key would count as an acknowledged write lost."""
    flags = ("-m", "16", "-e", mem_file)
    srv = start_server(*flags)
    models, keysets = key_models(2, per=1)
    locks = [threading.Lock() for _ in range(2)]
    # client 1: a set, then appends until the run stops; client 0: flush_all
    loaders = [Loader(srv, 0, keysets[0], models, 100, Scripted([0.999]), locks),
               Loader(srv, 1, keysets[1], models, 100, Scripted([0.1, 0.5]), locks)]
    loaders[1].start()
    deadline = time.monotonic() + 10
    while loaders[1].ops < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert loaders[1].ops >= 3 and loaders[1].error is None
    real = srv.connect
    srv.connect = lambda timeout=10: ReplyLostToKill(real(timeout=timeout), srv, loaders)
    loaders[0].start()
    loaders[0].join(timeout=20)
    for ld in loaders:
        ld.stop = True
    for ld in loaders:
        ld.join(timeout=20)
        assert ld.error is None, ld.error
    m = models[keysets[1][0]]
    assert m.acked is not ABSENT and m.inflight == [ABSENT], m.events
    srv = start_server(*flags)
    counts = collections.Counter()
    bad = []
    check_restored(srv, models, counts, 1, bad)
    assert counts["items_checked"] == 2
    assert bad == [], report_bad(bad, mem_file, [])
    assert m.acked is ABSENT  # the flush ran


def test_a_second_server_on_the_file_is_refused(start_server, server_bin, mem_file, tmp_path):
    """One server per memory file: a second one started on it (by mistake,
    or before the first has exited) would restore from, or lay out afresh,
    the memory the first is writing. It waits a moment for the lock, then
    refuses to start; the first server and its items are untouched."""
    srv = start_server("-e", mem_file)
    fill_some(srv, 50)
    other = helpers.Server(server_bin, ["-e", mem_file], workdir=str(tmp_path))
    t0 = time.monotonic()
    with pytest.raises(helpers.ServerError) as e:
        other.start(timeout=10)
    assert "in use by another server" in str(e.value)
    assert time.monotonic() - t0 >= 1.5  # it asked again for a while first
    c = srv.connect()
    assert c.get_multi(["k7"]) == {"k7": (7, b"v7" * 20)}
    c.close()
    # ... and the lock goes with its holder, however it stops.
    kill9(srv)
    srv = start_server("-e", mem_file)
    c = srv.connect()
    assert c.get_multi(["k7", "k49"]) == {"k7": (7, b"v7" * 20), "k49": (49, b"v49" * 20)}
    assert stats(c, "nodelay")["restore_mode"] == "crash"
    c.close()


def test_memcached_meta_file_is_refused(server_bin, mem_file, tmp_path):
    """FILE.meta is memcached's restart metadata: the file is memcached's,
    and nodelay refuses it as memcached refuses a .meta it cannot read."""
    with open(mem_file + ".meta", "w"):
        pass
    try:
        srv = helpers.Server(server_bin, ["-e", mem_file], workdir=str(tmp_path))
        with pytest.raises(helpers.ServerError) as e:
            srv.start(timeout=5)
        assert "memcached's restart metadata" in str(e.value)
    finally:
        os.unlink(mem_file + ".meta")


def test_index_size_survives_a_restart(start_server, mem_file):
    """As memcached's restart keeps its hash power: the index comes back at
    the level it had, even when most items were deleted meanwhile (its
    table is sized for the items it holds)."""
    srv = start_server("-m", "64", "-e", mem_file)
    c = srv.connect()
    level = int(stats(c)["hash_power_level"])
    payload = b"".join(b"set z%d 0 0 0 noreply\r\n\r\n" % i for i in range(200000))
    c.send(payload)
    assert c.call("mn") == b"MN\r\n"
    grown = int(stats(c)["hash_power_level"])
    assert grown > level
    c.send(b"".join(b"delete z%d noreply\r\n" % i for i in range(199990)))
    assert c.call("mn") == b"MN\r\n"
    time.sleep(1.2)  # a heartbeat records the size
    c.close()
    graceful(srv, signal.SIGUSR1)
    srv = start_server("-m", "64", "-e", mem_file)
    c = srv.connect()
    assert int(stats(c)["hash_power_level"]) == grown
    assert len(c.get_multi([f"z{i}" for i in range(199990, 200000)])) == 10
    c.close()
