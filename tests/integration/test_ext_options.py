# SPDX-License-Identifier: BSD-3-Clause
"""memcached's extstore options (-o ext_*): a bad value fails start-up with
memcached 1.6.45's message and exit code, compared side by side with the
reference binary when ../shared/ref has it; a good one starts the server,
whose flash tier acts on every ext_* option (no start-up note names one as
inert)."""
import os
import signal
import subprocess

import pytest

from helpers import EXTRA_ARGS, Server, is_memcached

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REF_DIR = os.environ.get("NODELAY_REF_DIR") or os.path.join(ROOT, "..", "shared", "ref")
REF_BIN = os.path.join(REF_DIR, "memcached-1.6.45")

# Each: the -o list ({d} is a fresh directory), or a full argument list.
BAD = [
    "ext_path={d}/nodir/x:64m",                     # cannot open: 1
    "ext_path=/dev/null:64m",                       # not a file: 1
    "ext_path={d}:64m",                             # a directory: 1
    "ext_path={d}/f",                               # no size: 1
    "ext_path={d}/f:64q",                           # bad suffix: 1
    "ext_path={d}/f:64",                            # no suffix: 1
    "ext_path={d}/f:64mb",
    "ext_path={d}/f:64k",
    "ext_path=",
    "ext_path",
    "ext_path=:64m",
    "ext_path={d}/f:64m:foo",                       # unknown bucket
    "ext_path={d}/f:64m:cold",
    "ext_path={d}/f:64m:OLD",
    "ext_path={d}/f:1m",                            # smaller than a page: 64
    "ext_path={d}/f:64m,ext_path={d}/g:1m",
    "ext_path={d}/f:m",
    "ext_path={d}/f:64m,ext_page_size=128",
    "ext_path={d}/f:64m,ext_page_size=3",           # not divisible by wbuf: 1
    "ext_path={d}/f:64m,ext_page_size=4098",        # 32 bits: 2 MB
    "ext_path={d}/f:64m,ext_page_size=6,ext_wbuf_size=3",  # not 2 MB multiples
    "ext_path={d}/f:64m,ext_wbuf_size=1",
    "ext_path={d}/f:64m,ext_wbuf_size=0",           # -I larger than wbuf: 64
    "ext_path={d}/f:4096g",                         # too many pages
    "ext_path={d}/f:-64m",
    "ext_path={d}/f:64m,ext_page_size=abc",
    "ext_path={d}/f:64m,ext_page_size=-1",
    "ext_path={d}/f:64m,ext_page_size=0x10",
    "ext_path={d}/f:64m,ext_page_size",
    "ext_path={d}/f:64m,ext_wbuf_size=x",
    "ext_path={d}/f:64m,ext_threads=abc",
    "ext_path={d}/f:64m,ext_threads=",
    "ext_path={d}/f:64m,ext_item_size=-5",
    "ext_path={d}/f:64m,ext_item_size=18446744073709551616",
    "ext_path={d}/f:64m,ext_item_age=1.5",
    "ext_path={d}/f:64m,ext_low_ttl=-1",
    "ext_path={d}/f:64m,ext_recache_rate=abc",
    "ext_path={d}/f:64m,ext_compact_under=abc",
    "ext_path={d}/f:64m,ext_drop_under=abc",
    "ext_path={d}/f:64m,ext_max_sleep=abc",
    "ext_path={d}/f:64m,ext_max_frag=abc",
    "ext_path={d}/f:64m,ext_max_frag=1e999",
    "ext_path={d}/f:64m,ext_max_frag=0.5x",
    "ext_path={d}/f:64m,ext_max_frag",
    "ext_path={d}/f:64m,ext_foo=1",                 # not an ext option
    ["-I", "8m", "-o", "ext_path={d}/f:64m"],       # -I above the 4 MB write buffer
    ["-U", "11211", "-o", "ext_path={d}/f:64m"],    # UDP: refused, 64
    ["-U", "11211", "-o", "ext_path={d}/f:1m"],     # ... before the file's size is
    ["-I", "8m", "-U", "11211", "-o", "ext_path={d}/f:64m"],  # ... after -I
]
# Accepted by memcached (it starts): nodelay starts too.
GOOD = [
    "ext_path={d}/f:64m",
    "ext_path={d}/f:64M,ext_path={d}/g:1g:compact",
    "ext_path={d}/f:64m:coldcompact,ext_path={d}/g:64m:old,ext_path={d}/h:64m:default",
    "ext_path={d}/f:64m,ext_max_frag=2,ext_threads=0,ext_item_size=0,ext_drop_unread",
    "ext_path={d}/f:64m,ext_page_size=12,ext_wbuf_size=4,ext_threads= 5,ext_max_frag=nan",
    "ext_path={d}/f:64m,ext_item_size=18446744073709551615,ext_io_depth=2,ext_max_sleep=5",
    "ext_page_size=0,ext_wbuf_size=0,ext_max_frag=-3",   # no ext_path: not checked
    ["-I", "2m", "-o", "ext_path={d}/f:64m,ext_wbuf_size=2"],
]


def argv_for(case, d):
    args = case if isinstance(case, list) else ["-o", case]
    args = [a.replace("{d}", str(d)) for a in args]
    return ["-p", "0", "-U", "0", *args]


def launch(binary, args, extra=()):
    argv = [binary, *args, *extra]
    if os.geteuid() == 0:
        argv[1:1] = ["-u", "root"]
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def outcome(binary, args, extra=(), wait=1.5):
    """(exit code, stderr) of a process that exits within `wait` seconds,
    else ("running", stderr so far) after stopping it."""
    p = launch(binary, args, extra)
    try:
        out, err = p.communicate(timeout=wait)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        return "running", err


def have_ref():
    return os.access(REF_BIN, os.X_OK)


def want(case, d):
    """memcached's answer when it is here; else the one recorded from it."""
    if not have_ref():
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    return outcome(REF_BIN, argv_for(case, d))


@pytest.mark.parametrize("case", BAD, ids=lambda c: " ".join(c) if isinstance(c, list) else c)
def test_bad_ext_value_fails_as_memcached(server_bin, tmp_path, case):
    (tmp_path / "mc").mkdir()
    (tmp_path / "nd").mkdir()
    code, err = want(case, tmp_path / "mc")
    assert code != "running", "memcached 1.6.45 started with this: not a bad value"
    got_code, got_err = outcome(server_bin, argv_for(case, tmp_path / "nd"), EXTRA_ARGS, wait=10)
    # The files are opened after the start-up notes are printed (the notes
    # come before -d detaches, the open after -u drops privileges), so a
    # file that cannot be opened follows its note: that line aside, the
    # words are memcached's.
    got_err = "".join(l for l in got_err.splitlines(True) if not l.startswith("nodelay: -o ext_"))
    assert (got_code, got_err) == (code, err.replace(str(tmp_path / "mc"), str(tmp_path / "nd")))


@pytest.mark.parametrize("case", GOOD, ids=lambda c: " ".join(c) if isinstance(c, list) else c)
def test_good_ext_value_starts_as_memcached(server_bin, tmp_path, case):
    (tmp_path / "mc").mkdir()
    (tmp_path / "nd").mkdir()
    code, err = want(case, tmp_path / "mc")
    assert code == "running", (code, err)
    got_code, got_err = outcome(server_bin, argv_for(case, tmp_path / "nd"), EXTRA_ARGS)
    assert got_code == "running", (got_code, got_err)
    # the flash tier acts on every ext_* option: none is named as inert
    notes = [l for l in got_err.splitlines() if l.startswith("nodelay: -o ext_")]
    assert notes == [], got_err
    # the files memcached creates, nodelay creates
    made = sorted(p.name for p in (tmp_path / "mc").iterdir())
    assert sorted(p.name for p in (tmp_path / "nd").iterdir()) == made


# Where memcached 1.6.45 dies of SIGFPE (a page size of 0 bytes in its 32
# bits), nodelay refuses with a message and exit 64
# (docs/compat-differences.md).
@pytest.mark.parametrize("pages", ["0", "4096"])
def test_zero_page_size_refused_where_memcached_crashes(server_bin, tmp_path, pages):
    case = f"ext_path={{d}}/f:64m,ext_page_size={pages}"
    if have_ref():
        code, _ = outcome(REF_BIN, argv_for(case, tmp_path))
        assert code == -signal.SIGFPE
    code, err = outcome(server_bin, argv_for(case, tmp_path), EXTRA_ARGS, wait=10)
    assert code == 64
    assert "ext_page_size" in err and "cannot use" in err


# Two 2 MB pages (memcached wants sizes in 2 MB steps): a small file, as
# the test's files stay on disk until pytest drops them.
HELD = "ext_page_size=2,ext_wbuf_size=2,ext_path={d}/f:4m"


def held_file_outcome(binary, d):
    """(exit code, stderr) of a second server started on the ext_path file
    of a first one, which still answers over its socket afterwards."""
    first = Server(binary, ["-o", HELD.format(d=d)], workdir=str(d))
    first.start()
    try:
        c = first.connect()
        assert c.set("held", "v1") == b"STORED\r\n"
        got = outcome(binary, argv_for(HELD, d),
                      () if is_memcached(binary) else EXTRA_ARGS, wait=10)
        assert c.get("held") == b"v1"
        c.close()
    finally:
        first.stop()
    code, err = got
    return code, "".join(l for l in err.splitlines(True) if not l.startswith("nodelay: -o ext_"))


def test_second_server_on_a_held_file_fails_as_memcached(server_bin, tmp_path):
    """Two servers on one file would overwrite each other's segments:
    memcached locks the file and a second server fails (its extstore.t,
    subtest 1); the lock goes with the server that held it."""
    (tmp_path / "mc").mkdir()
    (tmp_path / "nd").mkdir()
    want_err = ("Failed to initialize external storage: failed to open file\n"
                "extstore open: Resource temporarily unavailable\n")
    if have_ref():
        assert held_file_outcome(REF_BIN, tmp_path / "mc") == (1, want_err)
    assert held_file_outcome(server_bin, tmp_path / "nd") == (1, want_err)
    code, err = outcome(server_bin, argv_for(HELD, tmp_path / "nd"), EXTRA_ARGS)
    assert code == "running", err


# One file named twice (or by two paths): memcached 1.6.45 starts and its
# two devices overwrite each other's pages. nodelay refuses it as a file
# another server holds, in memcached's words for that and its exit code.
@pytest.mark.parametrize("twice", ["{d}/f:64m,ext_path={d}/f:64m",
                                   "{d}/f:64m,ext_path={d}/./f:64m",
                                   "{d}/f:64m,ext_path={d}/g:64m,ext_path={d}/l:64m"])
def test_one_file_twice_is_refused(server_bin, tmp_path, twice):
    if is_memcached(server_bin):
        pytest.skip("memcached starts with it")
    (tmp_path / "f").touch()
    os.link(tmp_path / "f", tmp_path / "l")
    code, err = outcome(server_bin, argv_for("ext_path=" + twice, tmp_path), EXTRA_ARGS, wait=10)
    err = "".join(l for l in err.splitlines(True) if not l.startswith("nodelay: -o ext_"))
    assert (code, err) == (1, "Failed to initialize external storage: failed to open file\n"
                              "extstore open: Resource temporarily unavailable\n")
