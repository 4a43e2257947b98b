# SPDX-License-Identifier: BSD-3-Clause
"""The flash tier under an operator's and a failing disk's faults
(docs/store-flash.md "Faults", docs/restarts.md "The flash tier"): the
flash file cut under a running server and then a kill -9, another
server's flash file put in its place, bytes of it flipped while the
server runs, `extstore` settings thrown at it under load, a full
filesystem, a file size limit (ulimit -f) below the file. Each key reads as its last acknowledged value or misses,
never an older or another's value; the server keeps answering; the fault
is counted."""
import os
import random
import resource
import signal
import subprocess
import threading
import time
import zlib

import pytest

import helpers
from helpers import get_value, stats
from test_flash_restart import start
from test_restart import kill9, mem_file  # noqa: F401

pytestmark = pytest.mark.skipif(
    helpers.is_memcached(helpers.server_bin()),
    reason="nodelay's flash tier and -e restore")

KEYS = 6000


def value_of(key, ver, n):
    """Bytes that name their key and version, with a sum of them."""
    head = b"%s:%d:" % (key, ver)
    body = random.Random(head).randbytes(n)
    return head + body + b":%08x" % zlib.crc32(head + body)


class Model:
    """The last acknowledged value of each key (None: deleted)."""

    def __init__(self, seed, prefix=b"k", ver0=0):
        self.rng = random.Random(seed)
        self.keys = [b"%s:%d" % (prefix, i) for i in range(KEYS)]
        self.last = {}
        self.ver = ver0

    def write(self, c, keys, deletes=0.0, sizes=(600, 5000)):
        """Sets (or deletes) keys, 32 a pipeline, each reply awaited."""
        for at in range(0, len(keys), 32):
            reqs, what = [], []
            for k in keys[at:at + 32]:
                if self.rng.random() < deletes:
                    reqs.append(b"delete %s\r\n" % k)
                    what.append((k, None))
                else:
                    self.ver += 1
                    v = value_of(k, self.ver, self.rng.randint(*sizes))
                    reqs.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v))
                    what.append((k, v))
            c.send(b"".join(reqs))
            for k, v in what:
                line = c.readline()
                assert line == (b"STORED\r\n" if v is not None else line), line
                assert v is not None or line in (b"DELETED\r\n", b"NOT_FOUND\r\n"), line
                self.last[k] = v

    def check(self, c, keys=None):
        """Every key its last value or a miss: the number of hits."""
        hits = 0
        for k in keys or list(self.last):
            got = get_value(c, k)
            if got is not None:
                assert got == self.last[k], (k, got[:24], (self.last[k] or b"<deleted>")[:24])
                hits += 1
        return hits


def flash_flags(flash, mem=None, mb=64):
    return ["-m", "8", "-t", "2", *(["-e", mem] if mem else []), "-o",
            f"ext_path={flash}:{mb}m,ext_wbuf_size=2,ext_page_size=2,ext_item_age=0"]


def counters(srv):
    c = srv.connect()
    try:
        st, own = stats(c), stats(c, "nodelay")
    finally:
        c.close()
    return {k: int(v) for k, v in {**st, **own}.items()
            if k in ("extstore_objects_used", "badcrc_from_extstore", "extstore_read_errors",
                     "extstore_write_errors", "restore_discarded_corrupt")}


def settled(srv):
    """Waits until the idle flush has moved what it will (ext_item_age=0)."""
    last = None
    for _ in range(40):
        now = counters(srv)["extstore_objects_used"]
        if now == last:
            return now
        last = now
        time.sleep(0.25)
    return last


def filled_with_e(start_server, mem_file, tmp_path, seed):
    """A server with -e and a flash tier, every key written, a third of
    them again or deleted, the idle flush done: (flash file, flags,
    server, model, a connection, items on flash)."""
    flash = tmp_path / "flash"
    fl = flash_flags(flash, mem_file)
    srv = start(start_server, *fl)
    m = Model(seed)
    c = srv.connect(timeout=30)
    m.write(c, m.keys)
    m.write(c, m.keys[::3], deletes=0.3)
    return flash, fl, srv, m, c, settled(srv)


@pytest.mark.parametrize("cut", ["zero", "half"])
def test_flash_file_cut_under_a_running_server_then_killed(start_server, mem_file, tmp_path, cut):
    """The flash file truncated under a server with -e: reads of the lost
    part miss (read_errors, a log line), writes go on, then kill -9 and a
    restart over the cut file: no key with a wrong or older value."""
    flash, fl, srv, m, c, on_flash = filled_with_e(start_server, mem_file, tmp_path, 1)
    assert on_flash > KEYS // 2
    os.truncate(flash, 0 if cut == "zero" else flash.stat().st_size // 2)
    m.check(c)
    m.write(c, m.keys[::2], deletes=0.1)
    m.check(c)
    if cut == "zero":
        assert counters(srv)["extstore_read_errors"] > 0
        assert "flash read of page" in srv.stderr()
    assert c.call("version").startswith(b"VERSION")
    c.close()
    kill9(srv)
    srv = start(start_server, *fl)
    c = srv.connect(timeout=30)
    assert m.check(c) > 0
    m.write(c, m.keys[1::2])
    assert m.check(c) > KEYS // 3


def test_another_servers_flash_file_in_its_place(start_server, mem_file, tmp_path):
    """Two servers with -e wrote the same keys (other versions); the
    second's flash file put at the first's path, while it runs and again
    while it is stopped: the first serves its own values or misses, never
    the other's, whose items fail its instance's sums."""
    fa, fb = tmp_path / "a", tmp_path / "b"
    mb = mem_file + ".b"
    try:
        a = start(start_server, *flash_flags(fa, mem_file))
        b = start(start_server, *flash_flags(fb, mb))
        ma, mb_ = Model(1), Model(2, ver0=10 ** 6)
        ca, cb = a.connect(timeout=30), b.connect(timeout=30)
        ma.write(ca, ma.keys)
        mb_.write(cb, mb_.keys)
        settled(a)
        settled(b)
        b.stop()
        os.unlink(fa)
        fa.write_bytes(fb.read_bytes())
        ma.write(ca, ma.keys[::2])  # into the unlinked file, still open
        ma.check(ca)
        a.stop()
        srv = start(start_server, *flash_flags(fa, mem_file))
        c = srv.connect(timeout=30)
        assert ma.check(c) >= 0
        srv.stop()
        os.unlink(fa)
        fa.write_bytes(fb.read_bytes())
        srv = start(start_server, *flash_flags(fa, mem_file))
        c = srv.connect(timeout=30)
        ma.check(c)
        ma.write(c, ma.keys[::3])
        assert ma.check(c) > 0
    finally:
        if os.path.exists(mb):
            os.unlink(mb)


def test_flash_bytes_flipped_under_a_running_server(start_server, mem_file, tmp_path):
    """Bytes of the flash file flipped at random while the server runs:
    each damaged item read is a miss, counted (badcrc_from_extstore);
    after a kill -9 and a restart, damaged items are not linked
    (restore_discarded_corrupt) and the rest read as written."""
    flash, fl, srv, m, c, on_flash = filled_with_e(start_server, mem_file, tmp_path, 3)
    rng = random.Random(4)
    size = flash.stat().st_size
    with open(flash, "r+b") as f:
        for _ in range(300):
            at = rng.randrange(size)
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
    m.check(c)
    assert counters(srv)["badcrc_from_extstore"] > 0
    c.close()
    kill9(srv)
    srv = start(start_server, *fl)
    c = srv.connect(timeout=30)
    # the items read damaged were dropped before the kill; of the rest, a
    # flipped byte costs one item (restore_discarded_corrupt)
    assert m.check(c) > on_flash // 2
    assert counters(srv)["restore_discarded_corrupt"] > 0


EXT_SUBS = ["item_size", "item_age", "low_ttl", "recache_rate", "compact_under", "drop_under",
            "max_sleep", "max_frag", "drop_unread", "free_memchunks"]
EXT_VALUES = ["0", "1", "63", "64", "4294967295", "4294967296", "18446744073709551615", "-1",
              "abc", "1e999", "nan", "inf", "-inf", "1.5", "", "0 0", "64 99999"]


def test_extstore_settings_thrown_under_load(start_server, mem_file, tmp_path):
    """`extstore` with every subcommand and huge, negative, odd and empty
    values, 50 a second for 5 s, while two clients write and read a small
    flash (compaction and drops busy): OK or ERROR each, every read its
    last value or a miss, and a restart after a kill -9 as good."""
    flash = tmp_path / "flash"
    fl = flash_flags(flash, mem_file, mb=16)
    srv = start(start_server, *fl)
    stop = threading.Event()
    errors = []
    models = [Model(10 + t, b"L%d" % t) for t in range(2)]

    def load(m):
        try:
            c = srv.connect(timeout=30)
            while not stop.is_set():
                ks = list(dict.fromkeys(m.rng.choice(m.keys) for _ in range(40)))
                m.write(c, ks, deletes=0.1, sizes=(1, 5000))
                m.check(c, ks)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=load, args=(m,)) for m in models]
    for t in threads:
        t.start()
    rng = random.Random(5)
    c = srv.connect(timeout=30)
    replies = set()
    deadline = time.monotonic() + 3
    try:
        while time.monotonic() < deadline and not errors:
            cmd = f"extstore {rng.choice(EXT_SUBS)} {rng.choice(EXT_VALUES)}".strip()
            replies.add(c.call(cmd))
            time.sleep(0.02)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[0]
    assert replies <= {b"OK\r\n", b"ERROR\r\n"}, replies
    c.close()
    kill9(srv)
    srv = start(start_server, *fl)
    c = srv.connect(timeout=30)
    for m in models:
        m.check(c)


def test_full_filesystem(start_server, tmp_path):
    """The flash file on an 8 MB tmpfs, its blocks given back (truncated)
    and the filesystem then filled: each segment write fails (ENOSPC),
    counted and logged, its items miss; the server answers throughout and
    writes again once there is room. Needs root to mount."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)],
            capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        flash = mnt / "flash"
        srv = start(start_server, *flash_flags(flash, mb=6))
        m = Model(6)
        c = srv.connect(timeout=30)
        m.write(c, m.keys, sizes=(600, 3000))
        settled(srv)
        os.truncate(flash, 0)
        with open(mnt / "filler", "wb") as f:
            with pytest.raises(OSError):
                while True:
                    f.write(b"x" * 65536)
                    f.flush()
        m.write(c, m.keys, sizes=(600, 3000))
        settled(srv)
        m.check(c)
        assert counters(srv)["extstore_write_errors"] > 0
        assert "No space left on device" in srv.stderr()
        assert c.call("version").startswith(b"VERSION")
        os.unlink(mnt / "filler")
        before = counters(srv)["extstore_write_errors"]
        m.write(c, m.keys, sizes=(600, 3000))
        assert settled(srv) > 0
        assert m.check(c) > 0
        assert counters(srv)["extstore_write_errors"] == before
        srv.stop()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_file_size_limit_below_the_flash_file(start_server, tmp_path):
    """A file size limit (ulimit -f, systemd's LimitFSIZE) lowered under a
    running server below its flash file: a segment write past it fails
    (EFBIG), counted and logged, its items miss, and the server goes on;
    the kernel's SIGXFSZ for it does not kill the server."""
    flash = tmp_path / "flash"
    srv = start(start_server, *flash_flags(flash))
    limit = 8 << 20
    resource.prlimit(srv.proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
    m = Model(7)
    c = srv.connect(timeout=30)
    try:
        for _ in range(3):  # some 30 MB to flash: past the limit
            m.write(c, m.keys)
        settled(srv)
    except OSError:
        pass
    assert srv.proc.poll() is None, (srv.proc.returncode, -signal.SIGXFSZ)
    assert counters(srv)["extstore_write_errors"] > 0
    assert "File too large" in srv.stderr()
    assert m.check(c) > 0
    assert c.call("version").startswith(b"VERSION")


@pytest.mark.parametrize("what", ["ext_path", "-e"])
def test_file_size_limit_below_the_files_at_start(server_bin, tmp_path, what):
    """Started under a file size limit below its flash file (or -e file):
    a message naming the file and exit 71, not death by SIGXFSZ."""
    limit = 8 << 20
    args = ["-o", f"ext_path={tmp_path}/flash:64m"] if what == "ext_path" else \
        ["-m", "64", "-e", f"{tmp_path}/mem"]
    argv = [server_bin, "-p", "0", "-U", "0", *(["-u", "root"] if os.geteuid() == 0 else []),
            *helpers.EXTRA_ARGS, *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert p.returncode == 71, (p.returncode, p.stderr)
    assert "File too large" in p.stderr and str(tmp_path) in p.stderr, p.stderr
