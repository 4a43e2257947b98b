# SPDX-License-Identifier: BSD-3-Clause
"""The differential fuzzer (diff_fuzz.py) over items on flash: before a
batch of generated cases runs, every key those cases name is set in both
servers (nodelay and memcached 1.6.45, each with a flash file) with a value
that qualifies for flash, both are made to move them (`extstore item_age
0`), each key is seen on flash in both dumps (`lru_crawler metadump all`:
` ext_page=` on its line), and both stop moving items (`extstore item_age
3600`) so that what a case itself writes stays in RAM in both. Then each case's requests go to both and the replies must
match byte for byte after test_differential's normalisations and the flash
ones below. A difference is run again on keys placed afresh, waiting
longer, as diff_fuzz rechecks on a fresh pair.

NODELAY_FLASH_FUZZ_CASES (default 1000 generated cases; those naming no key
are left to test_diff_fuzz) and NODELAY_FUZZ_SEED (default 1) make a longer
or another run; `python3 tests/integration/test_diff_fuzz_flash.py COUNT
SEED FIRST` runs it by hand and prints each difference."""
import base64
import os
import random
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import diff_fuzz  # noqa: E402
import helpers  # noqa: E402
from test_differential import load_differences  # noqa: E402

CASES = int(os.environ.get("NODELAY_FLASH_FUZZ_CASES", "1000"))
SEED = int(os.environ.get("NODELAY_FUZZ_SEED", "1"))
BATCH = 150  # cases whose keys are placed on flash at once
PLACE_WAIT = 20.0  # s for both servers to have every key of a batch on flash

# Both servers move items idle 0 s while placing (`extstore item_age 0`;
# memcached's storage thread: at once; nodelay's housekeeper: each
# ext_max_sleep, 10 ms here), and at other times only those idle an hour,
# none in a run (not memcached's default of never: nodelay's housekeeper
# then sleeps a second, and reads a new age only when it wakes);
# a value of 100 bytes or more qualifies in both (nodelay: value + 2 >=
# ext_item_size; memcached: a slab class at least ext_item_size's).
FLASH_OPTS = "ext_item_age=3600,ext_item_size=64,ext_wbuf_size=2,ext_page_size=8,ext_max_sleep=10000"
NO_MOVE = b"extstore item_age 3600\r\n"
MOVE = b"extstore item_age 0\r\n"

# Cases after which the extstore settings are set back (`extstore` changes
# when and which items move, and what compaction drops) and the rest of
# the batch is placed again (flush_all empties both caches); diff_fuzz's
# restarts stay for the rest of server-wide state.
RESETS = (b"flush_all", b"extstore")
# The settings `extstore <name> <value>` sets, as `stats settings` names
# them with ext_ before (drop_unread there says yes or no).
EXT_SETTINGS = ("item_size", "item_age", "low_ttl", "recache_rate", "compact_under",
                "drop_under", "max_sleep", "max_frag", "drop_unread")

# D21: memcached decides whether a read from flash recaches the item when
# the read completes, after the requests that came in the same read of the
# socket have bumped its header (`get k k`, a gat then a touch); nodelay
# decides when the reading request runs. A case whose step names a key
# twice runs with recaching off in both (`extstore recache_rate 0`).
NO_RECACHE = b"extstore recache_rate 0\r\n"
RECACHE = b"extstore recache_rate 2000\r\n"  # memcached's default

# Flash normalisations, each naming its docs/compat-differences.md entry.
#   D16: `me`'s la= of an item on flash is the access time it had when it
#   went there (memcached's: when its header was made, at the move), and
#   the two servers move at different moments.
#   D20: `t` of an item touched with a negative TTL (mg T-1 t): memcached
#   prints its clock arithmetic wrapped to 32 bits, nodelay t0; the
#   placed items make it visible (a key mg T-1 finds).
FLASH_NORMS = [(re.compile(rb"(ME \S+ exp=\S+ la=)\d+"), rb"\1<la>"),
               (re.compile(rb"(?<= )t42949\d{5}(?=[ \r])"), rb"t0")]
#   D14: `slabs reassign` answers NOSPARE here (no pages move) and, with
#   the placed items filling its pages, OK in memcached: such cases are
#   left to test_diff_fuzz.
UNCOMPARED = (b"slabs reassign",)


def case_keys(index, steps):
    """The keys case index's requests name, as (key bytes, is binary):
    diff_fuzz.Gen's keys z<index>_<j>, the 250-byte ones, and the binary
    keys its meta requests send in base64. A key named only inside a
    longer one is placed too (harmless: no request reads it)."""
    blob = b"".join(steps)
    out = []
    for j in range(4):
        base = f"z{index}_{j}"
        for key in (base, base + "k" * (250 - len(base))):
            if key.encode() in blob:
                out.append((key.encode(), False))
            for tail in (b" x", b"\r\n", b"\x00\xff"):
                raw = key.encode() + tail
                if len(raw) <= 250 and base64.b64encode(raw) in blob:
                    out.append((raw, True))
    return out


def names_a_key_twice(index, steps):
    """Whether a step of the case names one of its keys twice (D21)."""
    keys = [k if not binary else base64.b64encode(k) for k, binary in case_keys(index, steps)]
    return any(step.count(k) > 1 for step in steps for k in keys)


def flash_value(r):
    """A value that qualifies for flash: 100 bytes to 20 KB, of digits
    (incr's and decr's own shape), text with CR LF inside, or any bytes."""
    n = r.choice([100, 101, 512, 1000, 4096, 20000])
    kind = r.randrange(3)
    if kind == 0:
        return (b"1234567890" * (n // 10 + 1))[:n]
    if kind == 1:
        return (b"a\r\nb" * (n // 4 + 1))[:n]
    return r.randbytes(n)


def set_request(key, binary, value, flags):
    if binary:  # meta with b: the key's bytes in base64
        return b"ms %s %d b F%d T0 q\r\n%s\r\n" % (base64.b64encode(key), len(value), flags, value)
    return b"set %s %d 0 %d noreply\r\n%s\r\n" % (key, flags, len(value), value)


def dump_key(token):
    """A metadump key as the bytes stored: memcached URI-encodes keys; a
    key stored with b (and nodelay's keys with a byte not a token's) is
    base64 followed by a ` b` word (docs/compat-differences.md D16)."""
    return re.sub(rb"%([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), token)


def on_flash(conn):
    """The keys a server's metadump lists on flash."""
    for _ in range(50):
        conn.send(b"lru_crawler metadump all\r\n")
        first = conn.readline()
        if not first.startswith(b"BUSY"):
            break
        time.sleep(0.05)
    text = first + conn.read_until(b"END\r\n")
    keys = set()
    for line in text.split(b"\n"):
        if b" ext_page=" not in line or not line.startswith(b"key="):
            continue
        words = line.split(b" ")
        raw = dump_key(words[0][4:])
        keys.add(raw)
        if b"b" in words[1:]:
            try:
                keys.add(base64.b64decode(raw, validate=True))
            except ValueError:
                pass
    return keys


def call(conn, line):
    conn.send(line)
    return conn.readline()


def place(servers, cases, seed):
    """Set every key of cases in each server with a value that qualifies
    (put_on_flash). Returns the keys (raw bytes) each server left off
    flash (an empty set for each where all are on it)."""
    reqs, want = [], set()
    for index, steps in cases:
        r = random.Random(f"flash:{seed}:{index}")
        for key, binary in case_keys(index, steps):
            if key in want:
                continue
            want.add(key)
            reqs.append(set_request(key, binary, flash_value(r),
                                    r.choice([0, 1, 65535, 4294967295])))
    return put_on_flash(servers, reqs, want)


def place_pair(pair, cases, seed):
    """place() on pair's servers (started if stopped). memcached's storage
    thread moves items from its LRUs' tails as its maintainer feeds them,
    and on a loaded machine it has once left a key in RAM past the wait:
    where only memcached left keys behind, the pair starts afresh and
    places them once more. nodelay leaving a key behind fails at once."""
    for again in (True, False):
        if pair.servers is None:
            pair.start()
        missing = place(pair.servers, cases, seed)
        if not missing[0] and missing[1] and again:
            pair.stop()
            continue
        for srv, left in zip(pair.servers, missing):
            assert not left, (f"not on flash after {PLACE_WAIT} s in {srv.binary}: "
                              f"{sorted(left)[:5]} ({len(left)})")
        return


def put_on_flash(servers, reqs, want):
    """Send the (quiet) sets reqs to each server, make it move items idle
    0 s, wait until its dump lists every key of want on flash, then stop
    its moves: what is written next stays in RAM."""

    def one(srv):
        c = srv.connect(timeout=30)
        try:
            assert call(c, MOVE) == b"OK\r\n"
            helpers.send_paced(c, reqs, 50)
            deadline = time.monotonic() + PLACE_WAIT * helpers.slow_factor()
            while True:
                missing = want - on_flash(c)
                if not missing:
                    break
                if time.monotonic() > deadline:
                    return missing
                time.sleep(0.05)
            assert call(c, NO_MOVE) == b"OK\r\n"
            # nothing moved back meanwhile (a read would, and none was made)
            return want - on_flash(c)
        finally:
            c.close()

    with ThreadPoolExecutor(len(servers)) as pool:
        return list(pool.map(one, servers))


def flash_server(binary, workdir, tag, opts=FLASH_OPTS):
    """A server of binary with a flash file of its own in workdir and the
    options above (no idle moves but put_on_flash's)."""
    return helpers.Server(binary, ["-m", "64", "-t", "2", "-o",
                                   f"ext_path={workdir}/flash-{tag}:64m,{opts}"],
                          workdir=workdir).start()


class FlashPair(diff_fuzz.Pair):
    """diff_fuzz's pair, each server with a flash file of its own."""

    def start(self):
        ours_bin, ref_bin, workdir, _ = self.args
        self.servers = tuple(flash_server(b, workdir, tag)
                             for b, tag in ((ours_bin, "nodelay"), (ref_bin, "memcached")))
        for srv in self.servers:
            c = srv.connect()
            srv.ext_settings = {k[4:]: v for k, v in helpers.stats(c, "settings").items()
                                if k.startswith("ext_")}
            c.close()
        if "no flash tier" in self.servers[0].stderr():
            self.stop()
            pytest.skip("this build has no flash tier: -o ext_path is checked, then not used")
        return self.servers

    def stop(self):
        super().stop()
        helpers.drop_big_files(self.args[2])


def compare(pair, index, steps, norms, quiet):
    ours, ref = diff_fuzz.compare(pair.servers, steps, norms, quiet)
    return diff_fuzz.normalise(ours, FLASH_NORMS), diff_fuzz.normalise(ref, FLASH_NORMS)


def restore_settings(servers):
    """Each server's extstore settings as at its start (FLASH_OPTS and the
    defaults)."""
    for srv in servers:
        c = srv.connect()
        for name in EXT_SETTINGS:
            value = srv.ext_settings[name]
            value = {"no": "0", "yes": "1"}.get(value, value)
            assert call(c, b"extstore %s %s\r\n" % (name.encode(), value.encode())) == b"OK\r\n"
        c.close()


def set_all(servers, line):
    for srv in servers:
        if srv.proc.poll() is None:
            c = srv.connect()
            assert call(c, line) == b"OK\r\n"
            c.close()


def run_case(pair, index, steps, norms, quiet):
    """Both transcripts of a case, recaching off for it where D21 says."""
    twice = names_a_key_twice(index, steps)
    if twice:
        set_all(pair.servers, NO_RECACHE)
    got = compare(pair, index, steps, norms, quiet)
    if twice:
        try:
            set_all(pair.servers, RECACHE)
        except OSError:
            pass  # the case stopped a server: the pair restarts
    return got


def run(ours_bin, ref_bin, workdir, count, seed, start=0, report=print):
    """Run cases start..start+count (those naming keys); returns the
    differences as (index, steps, ours, ref) and how many cases ran."""
    _, norms = load_differences()
    pair = FlashPair(ours_bin, ref_bin, workdir)
    cases = []
    for i in range(start, start + count):
        gen = diff_fuzz.Gen(seed, i)
        steps = gen.case()
        if case_keys(i, steps) and not any(w in b"".join(steps) for w in UNCOMPARED):
            cases.append((i, steps, gen.restart))
    diffs = []
    try:
        todo = list(cases)
        while todo:
            batch, todo = todo[:BATCH], todo[BATCH:]
            while batch:
                place_pair(pair, [(i, s) for i, s, _ in batch], seed)
                batch = run_batch(pair, batch, norms, seed, diffs, report)
    finally:
        pair.stop()
    return diffs, len(cases)


def run_batch(pair, batch, norms, seed, diffs, report):
    """Run a placed batch up to a case that changes what the rest would
    see; returns the cases still to run (placed again by the caller, on
    a fresh pair where this one is stopped)."""
    for n, (i, steps, restart) in enumerate(batch):
        ours, ref = run_case(pair, i, steps, norms, diff_fuzz.QUIET)
        if ours != ref:  # again on keys placed afresh, waiting longer
            pair.stop()
            place_pair(pair, [(i, steps)], seed)
            ours, ref = run_case(pair, i, steps, norms, diff_fuzz.RECHECK_QUIET)
            pair.stop()
            if ours != ref:
                diffs.append((i, steps, ours, ref))
                report(f"seed {seed} case {i}: {steps!r}\n  nodelay: {ours!r}\n"
                       f"  1.6.45:  {ref!r}")
            return batch[n + 1:]
        blob = b"".join(steps)
        closed = ours.endswith(b"<closed>") or ref.endswith(b"<closed>")
        dead = any(s.proc.poll() is not None for s in pair.servers)
        if restart or dead or closed and b"shutdown" in blob:
            pair.stop()
            return batch[n + 1:]
        if any(w in blob for w in RESETS):
            restore_settings(pair.servers)
            return batch[n + 1:]
    return []


def test_case_keys_found():
    """Most generated cases name a key the placement finds."""
    found = sum(bool(case_keys(i, diff_fuzz.Gen(1, i).case())) for i in range(200))
    assert found > 120, found
    steps = [b"mg " + base64.b64encode(b"z7_0\x00\xff") + b" b v\r\n"]
    assert case_keys(7, steps) == [(b"z7_0\x00\xff", True)]


def test_diff_fuzz_flash(server_bin, tmp_path):
    diff_fuzz.need_reference(server_bin)
    lines = []
    found, ran = run(server_bin, diff_fuzz.REF_1645, str(tmp_path), CASES, SEED,
                     report=lines.append)
    assert ran > CASES // 2
    assert not found, f"{len(found)} of {ran} cases differ:\n" + "\n".join(lines[:10])


if __name__ == "__main__":
    import tempfile
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    with tempfile.TemporaryDirectory() as d:
        found, ran = run(helpers.server_bin(), diff_fuzz.REF_1645, d, n, seed, first)
    print(f"{len(found)} differences in {ran} cases (seed {seed})")
