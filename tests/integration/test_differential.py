# SPDX-License-Identifier: BSD-3-Clause
"""The differential test: every request in diff_cases.txt goes to nodelay and
to Debian's memcached 1.6.18, and the replies must match byte for byte,
except where docs/compat-differences.md lists an intended difference (then
each side must give exactly the reply listed for it) or a normalisation
(applied to both sides: values that differ by nature, such as CAS numbers).

The 1.6.45 variant sends diff_cases.txt and diff_cases_1645.txt (cases whose
answers only 1.6.45 defines: meta error strings, its request parser) to
nodelay and to memcached 1.6.45 from ../shared/ref, the release nodelay
follows; the only differences allowed are those in compat-differences.md's
"1.6.45 per-case differences" table. It skips when ../shared/ref is absent
(a clone without the project's shared folder).
"""
import codecs
import os
import re
import socket
import struct
import time

import pytest

import helpers
from helpers import ROOT, Server, target

HERE = os.path.dirname(__file__)
CASES = os.path.join(HERE, "diff_cases.txt")
CASES_1645 = os.path.join(HERE, "diff_cases_1645.txt")
# $NODELAY_REF names the 1.6.45 binary when the tree is not beside ../shared
# (a git worktree elsewhere), as in test_watch.py and test_logging.py
REF_1645 = os.environ.get("NODELAY_REF") or os.path.join(ROOT, "..", "shared", "ref",
                                                         "memcached-1.6.45")
DIFFS = os.path.join(ROOT, "docs", "compat-differences.md")

STEP = b"{step}"
CAS = b"{cas}"
PAUSE = b"{pause}"
TEXT_SENTINEL = b"mn\r\n"
TEXT_SENTINEL_REPLY = b"MN\r\n"
BIN_OPAQUE = 0x5E171E1
BIN_SENTINEL = struct.pack(">BBHBBHIIQ", 0x80, 0x0A, 0, 0, 0, 0, 0, BIN_OPAQUE, 0)
BIN_SENTINEL_REPLY = struct.pack(">BBHBBHIIQ", 0x81, 0x0A, 0, 0, 0, 0, 0, BIN_OPAQUE, 0)
QUIET = 1.0  # seconds to wait for a case whose sentinel never answers


def unescape(text):
    """Python-style escapes to bytes (text is ASCII apart from escapes)."""
    return codecs.escape_decode(text.encode("latin-1"))[0]


def expand(text):
    return re.sub(r"\{(.)\*(\d+)\}", lambda m: m.group(1) * int(m.group(2)), text)


def load_cases(path=CASES):
    cases = []
    with open(path, encoding="latin-1") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, sep, payload = line.partition(" | ")
            assert sep, f"bad line in diff_cases.txt: {line[:80]!r}"
            steps = [unescape(expand(p)) for p in payload.split("{step}")]
            cases.append((name.strip(), steps))
    return cases


def md_cell(cell):
    cell = cell.strip()
    assert cell.startswith("`") and cell.endswith("`"), cell
    return cell[1:-1]


def load_differences(table="per-case"):
    """(per-case {name: (memcached_reply, nodelay_reply)}, [(regex, repl)]) from
    the table whose section title starts with `table`."""
    per_case, norms = {}, []
    section = None
    with open(DIFFS, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                section = line[3:].strip().lower()
                continue
            if not line.startswith("| `"):
                continue
            cells = line.strip().strip("|").split(" | ")
            if section.startswith(table):
                name, ref, ours = (md_cell(c) for c in cells[:3])
                assert name not in per_case, f"{name} listed twice"
                per_case[name] = (unescape(ref), unescape(ours))
            elif section.startswith("normalisations"):
                pattern, repl = md_cell(cells[1]), md_cell(cells[2])
                norms.append((re.compile(pattern.encode()), repl.encode()))
    return per_case, norms


def run_case(srv, steps, quiet=QUIET):
    """Send each step then a no-op sentinel; collect the replies up to the
    sentinel's, or up to close, or until the server goes quiet."""
    binary = steps[0][:1] == b"\x80"
    sentinel, sentinel_reply = ((BIN_SENTINEL, BIN_SENTINEL_REPLY) if binary
                                else (TEXT_SENTINEL, TEXT_SENTINEL_REPLY))
    s = socket.create_connection((srv.host, srv.port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    transcript = b""
    try:
        for i, step in enumerate(steps):
            if i:
                transcript += b"\n--step--\n"
            if CAS in step:
                found = re.findall(rb"VALUE \S+ \d+ \d+ (\d+)\r\n", transcript)
                step = step.replace(CAS, found[-1] if found else b"0")
            # every `mn` line in the case answers MN too (binary: every NOOP
            # with the sentinel's opaque, which cases never use)
            want_sentinels = (len(re.findall(rb"(?:^|\n)mn(?:[ \r\n]|$)", step)) + 1
                              if not binary else step.count(sentinel) + 1)
            try:
                *parts, last = step.split(PAUSE)
                for part in parts:
                    s.sendall(part)
                    time.sleep(0.3)
                s.sendall(last + sentinel)
            except (BrokenPipeError, ConnectionResetError):
                transcript += b"<closed>"
                break
            reply = b""
            s.settimeout(quiet)
            end = None
            while end is None:
                try:
                    chunk = s.recv(1 << 20)
                except socket.timeout:
                    end = b"<timeout>"
                    break
                except ConnectionResetError:
                    end = b"<closed>"
                    break
                if not chunk:
                    end = b"<closed>"
                    break
                reply += chunk
                if reply.endswith(sentinel_reply) and reply.count(sentinel_reply) >= want_sentinels:
                    reply = reply[: -len(sentinel_reply)]
                    end = b""
            transcript += reply + end
            if end == b"<closed>":
                break
    finally:
        s.close()
    return transcript


def normalise(data, norms):
    for pattern, repl in norms:
        data = pattern.sub(repl, data)
    return data


CASE_LIST = load_cases()
CASE_LIST_1645 = CASE_LIST + load_cases(CASES_1645)


def start_pair(server_bin, ref_bin, workdir):
    """nodelay and a reference memcached, both with default flags; yields
    them and stops both (each must exit cleanly)."""
    ours = Server(server_bin, [], workdir=workdir).start()
    ref = Server(ref_bin, [], workdir=workdir).start()
    yield ours, ref
    errors = []
    for srv in (ours, ref):
        try:
            srv.stop()
        except AssertionError as e:
            errors.append(str(e))
    assert not errors, errors


def run_ref_case(ref, steps):
    """The reference's reply to a case. memcached answers `BUSY` while its
    slab rebalancer is moving a page, which its automover starts on its own
    (a `slabs reassign` case once got `BUSY currently processing reassign
    request` where 1.6.45 otherwise answers NOSPARE): that answer means try
    again, so its settled answer is waited for, up to 2 s."""
    deadline = time.monotonic() + 2
    while True:
        got = run_case(ref, steps)
        if not got.startswith(b"BUSY ") or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def check_case(pair, name, steps, per_case, ref_name):
    """Send one case to both; they must agree, or give exactly the replies
    listed for the case."""
    ours, ref = pair
    _, norms = load_differences_cached()
    got_ref = normalise(run_ref_case(ref, steps), norms)
    got_ours = normalise(run_case(ours, steps), norms)
    if name in per_case:
        want_ref, want_ours = per_case[name]
        assert got_ref == want_ref, (
            f"memcached {ref_name} no longer answers as compat-differences.md says for {name}")
        if target() == "memcached":
            want_ours = want_ref  # validating the suite against the reference itself
        assert got_ours == want_ours, f"{name}: not the intended (listed) reply"
    else:
        assert got_ours == got_ref, f"{name}: differs from memcached {ref_name}"


@pytest.fixture(scope="module")
def pair(server_bin, memcached_bin, tmp_path_factory):
    yield from start_pair(server_bin, memcached_bin, str(tmp_path_factory.mktemp("diff")))


def test_case_file_and_difference_list_agree():
    names = [n for n, _ in CASE_LIST]
    assert len(names) == len(set(names)), "duplicate case names"
    assert len(names) >= 300
    per_case, norms = load_differences()
    unknown = set(per_case) - set(names)
    assert not unknown, f"compat-differences.md lists unknown cases: {sorted(unknown)}"
    assert norms, "no normalisations parsed from compat-differences.md"


@pytest.mark.parametrize("name,steps", CASE_LIST, ids=[n for n, _ in CASE_LIST])
def test_differential(pair, name, steps):
    check_case(pair, name, steps, load_differences_cached()[0], "1.6.18")


_diff_cache = []


def load_differences_cached():
    if not _diff_cache:
        _diff_cache.append(load_differences())
    return _diff_cache[0]


@pytest.fixture(scope="module")
def pair_1645(server_bin, tmp_path_factory):
    if not os.access(REF_1645, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {REF_1645} (../shared/ref)")
    if helpers.is_memcached(server_bin):
        pytest.skip("the 1.6.45 variant compares nodelay with 1.6.45")
    yield from start_pair(server_bin, REF_1645, str(tmp_path_factory.mktemp("diff1645")))


def test_1645_case_files_and_difference_list_agree():
    names = [n for n, _ in CASE_LIST_1645]
    assert len(names) == len(set(names)), "duplicate case names across the two case files"
    per_case, _ = load_differences("1.6.45 per-case")
    unknown = set(per_case) - set(names)
    assert not unknown, f"compat-differences.md lists unknown 1.6.45 cases: {sorted(unknown)}"


_diff_cache_1645 = []


@pytest.mark.parametrize("name,steps", CASE_LIST_1645, ids=[n for n, _ in CASE_LIST_1645])
def test_differential_1645(pair_1645, name, steps):
    if not _diff_cache_1645:
        _diff_cache_1645.append(load_differences("1.6.45 per-case"))
    check_case(pair_1645, name, steps, _diff_cache_1645[0][0], "1.6.45")
