# SPDX-License-Identifier: BSD-3-Clause
"""A differential fuzzer: requests generated from the text, meta and binary
grammars (docs/protocol-*.md), then mutated (tokens dropped, repeated or
swapped for bad numbers, noreply anywhere, odd separators, long keys, values
holding \\r\\n, binary headers with odd lengths, opcodes and extras), go to
nodelay and to memcached 1.6.45; the replies must match byte for byte after
test_differential's normalisations.

Every case uses its own keys, so cases do not see each other's items; a case
that changes what a later case could see (a delayed flush_all, the memory
limit, the crawler switch)
restarts the pair after it. The generator is seeded: case N of seed S is the
same request on every run.

    python3 tests/integration/diff_fuzz.py [count] [seed]

runs it by hand (NODELAY_BIN, NODELAY_REF as for the tests) and prints each
difference with its seed and index; test_diff_fuzz.py runs a bounded number.
"""
import os
import base64
import random
import re
import struct
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
import helpers  # noqa: E402
from test_differential import (  # noqa: E402
    REF_1645, load_differences, normalise, run_case)

QUIET = 0.1  # a case whose sentinel is swallowed (a value still owed) ends here
RECHECK_QUIET = 1.0  # a difference is run again with this, so load cannot fake one

# 1.6.45 differences nodelay keeps (docs/compat-differences.md): cases the
# fuzzer does not generate, with the entry that explains them.
#   D4: `delete <key> <a> <b>` (two extra words) - never generated
#   D9: a retrieval with a key over 250 bytes after other commands in the same
#       read - a long key goes only in a case's own step
#   D15: `ma` and `mg` with an over-long opaque - O tokens stay short on
#       them (diff_cases.txt's mg_opaque_long has the reply)
#   D16: dumps - lru_crawler metadump/mgdump are not generated
#   D20: `t` of an item made by N with a negative TTL - N is never negative
#   D19: binary framing - an unknown opcode gets no key or extras; a header
#       whose key and extras pass its body is followed by that many bytes
#       (memcached waits for them); a reply memcached drops when it closes
#       or holds while it waits is accepted as a prefix (deferred())
STATS = re.compile(rb"(?:STAT [^\r\n]*\r\n)+")
NORM_STATS = b"<stats>"

BAD_NUMS = ["", "-1", "+1", "-0", "0x10", "1.5", " 1", "1 ", "\t1", "01", "1a",
            "4294967295", "4294967296", "2147483647", "2147483648", "-2147483648",
            "-2147483649", "18446744073709551615", "18446744073709551616",
            "99999999999999999999999", "-", "+", "9" * 40]
SEPS = [" "] * 12 + ["  ", "\t", " \t"]
# Each server numbers its own CAS values (the cas normalisations): a request
# compares with 0 or with one neither reaches.
NO_CAS = 1 << 40


class Gen:
    def __init__(self, seed, index):
        self.r = random.Random(f"{seed}:{index}")
        self.index = index
        self.restart = False  # the case changes server-wide state

    def key(self, j=0):
        r = self.r
        base = f"z{self.index}_{j}"
        roll = r.random()
        if roll < 0.04:
            return base + "k" * (250 - len(base))
        if roll < 0.07:
            return base + "k" * (251 - len(base))
        return base

    def num(self, good):
        r = self.r
        return r.choice(BAD_NUMS) if r.random() < 0.15 else str(good)

    def value(self):
        r = self.r
        return r.choice([b"", b"v", b"12", b"a\r\nb", b"\r\n", b"x" * 30, b"-3",
                         b"18446744073709551615", b"1\x002", b"\r", b"\n"])

    # --- grammar: each returns (tokens, data or None)
    def storage(self):
        r = self.r
        cmd = r.choice(["set", "add", "replace", "append", "prepend", "cas"])
        data = self.value()
        toks = [cmd, self.key(), self.num(r.choice([0, 1, 65535])),
                self.num(r.choice([0, 0, 100, -1])), self.num(len(data))]
        if cmd == "cas":
            toks.append(self.num(r.choice([NO_CAS, 0])))
        if r.random() < 0.3:
            toks.append("noreply")
        if r.random() < 0.1:  # the announced length and the data disagree
            data = data + b"x" if r.random() < 0.5 else data[:-1]
        return toks, data

    def retrieval(self):
        r = self.r
        cmd = r.choice(["get", "gets", "gat", "gats", "bget"])
        toks = [cmd] + ([self.num(r.choice([0, 100]))] if cmd.startswith("gat") else [])
        return toks + [self.key(j) for j in range(r.randint(0, 3))], None

    def onekey(self):
        r = self.r
        cmd = r.choice(["incr", "decr", "delete", "touch"])
        toks = [cmd, self.key()]
        if cmd in ("incr", "decr"):
            toks.append(self.num(r.choice([1, 0, 5, 18446744073709551615])))
        elif cmd == "touch":
            toks.append(self.num(r.choice([0, 10, -1])))
        elif r.random() < 0.3:
            toks.append(r.choice(["0", "5", "x"]))
        if r.random() < 0.3:
            toks.append("noreply")
        return toks, None

    def admin(self):
        r = self.r
        pick = r.choice([
            ["version"], ["flush_all"], ["flush_all", self.num(0)], ["flush_all", "noreply"],
            ["verbosity", self.num(1)], ["cache_memlimit", self.num(100)],
            ["shutdown"], ["shutdown", "graceful"], ["quit"], ["misbehave"],
            ["stats", r.choice(["", "items", "slabs", "sizes", "conns", "detail",
                                "settings", "foo", "reset", "cachedump"])],
            ["slabs", "reassign", self.num(1), self.num(2)],
            ["slabs", "automove", self.num(1)],
            ["lru_crawler", r.choice(["sleep", "tocrawl", "crawl", "enable", "disable"]),
             self.num(1)],
            ["lru", r.choice(["mode", "target_ratio", "flat", "segmented"]), self.num(1)],
            ["extstore", r.choice(["item_size", "item_age", "low_ttl", "recache_rate",
                                   "compact_under", "drop_under", "max_sleep", "max_frag",
                                   "drop_unread", "free_memchunks", "i", "m", "d", "f", "x"]),
             r.choice([self.num(1), "0.5", "1e999", "-1"])] + ([self.num(2)] * r.randint(0, 1)),
            ["watch", "nope"], ["mn"], ["me", self.key()], ["nosuchcmd"],
            ["GET", self.key()], ["auth"],
        ])
        pick = [t for t in pick if t != ""] if pick[0] == "stats" else pick
        if r.random() < 0.3:
            pick.append("noreply")
        # what a later case could see: a delayed flush, the memory limit,
        # the crawler switch (stats are normalised away, settings unseen)
        if pick[0] == "flush_all" and len(pick) > 1 or pick[0] == "cache_memlimit" or (
                pick[0] == "lru_crawler" and pick[1] in ("enable", "disable")):
            self.restart = True
        return pick, None

    META_FLAGS = "bcfhklqstuvxIOENRTCDFJMSPLZ"

    def meta(self):
        r = self.r
        cmd = r.choice(["mg", "ms", "md", "ma", "mn", "me"])
        toks = [cmd, self.key()]
        b64 = r.random() < 0.15  # a binary key, in base64 with b
        if b64:
            key = self.key().encode() + r.choice([b" x", b"\r\n", b"\x00\xff"])
            toks = [cmd, base64.b64encode(key).decode()]
        data = None
        if cmd == "ms":
            data = self.value()
            toks.append(self.num(len(data)))
        if b64:  # its flag, after ms's length
            toks.append("b")
        for _ in range(r.choice([0, 1, 2, 3, 4, 6])):
            f = r.choice(self.META_FLAGS)
            if f in "OENRTCDFJS":
                arg = r.choice(["", "5", "abc", "-1", "+5", "0"] + BAD_NUMS[8:14])
                if f == "C" and arg.lstrip("+").isdigit() and int(arg.lstrip("+")):
                    arg = str(NO_CAS)
                if f == "N" and arg.startswith("-") and arg[1:].isdigit():
                    arg = "5"  # D20
                if f == "O" and r.random() < 0.1 and not (cmd == "ma" and "N" in "".join(toks)):
                    arg = "o" * 40
                f += arg
            elif f == "M":
                f += r.choice(["", "S", "E", "A", "P", "R", "I", "+", "D", "-", "z", "SS"])
            toks.append(f)
        if r.random() < 0.1:
            toks.append(r.choice(toks[2:] or ["v"]))  # a duplicate flag
        if cmd in ("ma", "mg"):
            toks = [t if not t.startswith("O") else t[:8] for t in toks]  # D15
        if cmd == "ms" and data is not None and r.random() < 0.1:
            data += b"y"
        return toks, data

    # --- mutation of one command
    def mutate(self, toks):
        r = self.r
        toks = list(toks)
        for _ in range(r.choice([0, 0, 0, 1, 1, 2])):
            op = r.randrange(5)
            i = r.randrange(len(toks)) if toks else 0
            if op == 0 and toks:
                del toks[i]
            elif op == 1 and toks:
                toks.insert(i, toks[i])
            elif op == 2:
                toks.insert(i, r.choice(["noreply", "0", "x", "k" * 10, "-1"]))
            elif op == 3 and len(toks) > 1:
                toks[i] = r.choice(BAD_NUMS)
            elif op == 4:
                toks.append("noreply")
        return toks

    def command(self):
        r = self.r
        kind = r.choice([self.storage] * 3 + [self.retrieval] * 2 + [self.onekey] * 2 +
                        [self.admin] + [self.meta] * 4)
        toks, data = kind()
        toks = self.mutate(toks)
        if toks and toks[0] == "delete" and len(toks) > 3:
            toks = toks[:3]  # D4
        line = r.choice(SEPS).join(toks).encode("latin-1")
        eol = b"\r\n" if r.random() < 0.92 else r.choice([b"\n", b"\r\r\n", b" \r\n"])
        out = line + eol
        if data is not None:
            out += data + (b"\r\n" if r.random() < 0.95 else b"\n")
        return out

    # opcode: (extras, key?, value?) of a well-formed request
    BIN_SHAPES = {0x01: (8, 1, 1), 0x02: (8, 1, 1), 0x03: (8, 1, 1), 0x11: (8, 1, 1),
                  0x12: (8, 1, 1), 0x13: (8, 1, 1), 0x05: (20, 1, 0), 0x06: (20, 1, 0),
                  0x15: (20, 1, 0), 0x16: (20, 1, 0), 0x1c: (4, 1, 0), 0x1d: (4, 1, 0),
                  0x1e: (4, 1, 0), 0x23: (4, 1, 0), 0x24: (4, 1, 0), 0x1b: (4, 0, 0),
                  0x08: (4, 0, 0), 0x18: (4, 0, 0), 0x0e: (0, 1, 1), 0x0f: (0, 1, 1),
                  0x19: (0, 1, 1), 0x1a: (0, 1, 1), 0x07: (0, 0, 0), 0x17: (0, 0, 0),
                  0x0a: (0, 0, 0), 0x0b: (0, 0, 0)}  # the rest: a key alone

    def bin_extras(self, n):
        r = self.r
        if n == 8:  # flags, exptime
            return struct.pack(">II", r.choice([0, 1, 0xFFFFFFFF]), r.choice([0, 100]))
        if n == 20:  # delta, initial, exptime (0xffffffff: no create)
            return struct.pack(">QQI", r.choice([1, 0, 2**64 - 1]), r.choice([0, 5]),
                               r.choice([0, 0xFFFFFFFF]))
        return struct.pack(">I", r.choice([0, 1, 100]))[:n]

    def binary(self):
        r = self.r
        op = r.choice(list(range(0x00, 0x25)) + [0x30, 0x40, 0xff])
        if op in (0x10,):  # STAT: values are volatile
            op = 0x0a
        if op in (0x08, 0x18):  # FLUSH may carry a delay
            self.restart = True
        known = op <= 0x1e or op in (0x23, 0x24)  # no -S: SASL is unknown
        nextras, haskey, hasvalue = self.BIN_SHAPES.get(op, (0, 1, 0))
        value = r.choice([b"", b"v", b"12", b"a\r\nb", b"5"])
        if known and r.random() < 0.6:  # well formed
            key = self.key().encode() if haskey else b""
            extras = self.bin_extras(nextras)
            value = value if hasvalue else b""
        else:
            key = self.key().encode() if r.random() < 0.8 and known else b""
            extras = r.choice([b"", struct.pack(">I", 0), struct.pack(">II", 0, 0),
                               struct.pack(">QQI", 1, 0, 0), b"\x00" * r.randint(1, 30)])
            extras = extras if known else b""
        body = extras + key + value
        klen, elen, blen = len(key), len(extras), len(body)
        if r.random() < 0.2 and known:
            klen = r.choice([0, klen + 1, max(0, klen - 1), 251, 65535])
        if r.random() < 0.1 and known:
            elen = r.choice([0, elen + 1, 255])
        if r.random() < 0.15:
            blen = r.choice([0, max(0, blen - 1), blen + 1, klen + elen])
        if not known:
            blen = len(value)
        magic = 0x80 if r.random() < 0.97 else r.choice([0x81, 0x00])
        dtype = 0 if r.random() < 0.9 else r.randint(1, 255)
        vb = 0 if r.random() < 0.9 else r.randint(1, 65535)
        hdr = struct.pack(">BBHBBHIIQ", magic, op, klen, elen, dtype, vb, blen,
                          r.randint(0, 99), r.choice([0, 0, NO_CAS]))
        body = body[:blen]
        return hdr + body + b"p" * max(0, klen + elen - len(body))  # D19

    def case(self):
        """A list of steps (each sent and answered before the next)."""
        r = self.r
        if r.random() < 0.2:
            steps = [b"".join(self.binary() for _ in range(r.randint(1, 3)))]
            if r.random() < 0.2:  # text bytes after binary on one connection
                steps[0] += self.command()
            return steps
        steps = []
        for _ in range(r.randint(1, 3)):
            cmds = [self.command() for _ in range(r.randint(1, 3))]
            if any(len(c) > 250 for c in cmds) and len(cmds) > 1:
                cmds = cmds[:1]  # D9: a long key is alone in its read
            if r.random() < 0.03:  # a binary packet on a text connection
                cmds.append(self.binary())
            steps.append(b"".join(cmds))
        return steps


def need_reference(server_bin):
    """Skip a pytest test unless nodelay (server_bin) and the reference
    memcached 1.6.45 are both there to compare."""
    import pytest  # here: the fuzzer runs by hand without pytest

    if not os.access(REF_1645, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {REF_1645} "
                    "(../shared/ref): the fuzzer compares with it")
    if helpers.is_memcached(server_bin):
        pytest.skip("the fuzzer compares nodelay with 1.6.45")


def upto_timeout(got):
    """A transcript up to its first <timeout>: once a side waits for bytes
    that the next step supplies, later steps answer in a different place."""
    i = got.find(b"<timeout>")
    return got if i < 0 else got[:i + len(b"<timeout>")]


def deferred(ours, ref, binary):
    """D19: memcached holds the replies of a read while it waits for a
    value's bytes, drops a read's queued replies when it closes the
    connection (binary framing, an over-long line), and swallows or closes
    on the requests after a binary one it misframes; nodelay answers them.
    memcached's bytes are then a prefix of nodelay's."""
    ends = ((b"<timeout>", b"<timeout>"), (b"<closed>", b"<closed>"))
    if binary:
        ends += ((b"<timeout>", b""), (b"<closed>", b""))
    for ref_end, ours_end in ends:
        if (ref.endswith(ref_end) and ours.endswith(ours_end)
                and ours.startswith(ref[:-len(ref_end)])):
            return True
    return False


def transcript(srv, steps, norms, quiet):
    return upto_timeout(normalise(STATS.sub(NORM_STATS, run_case(srv, steps, quiet)), norms))


def compare(pair, steps, norms, quiet=QUIET):
    """Both servers' transcripts (nodelay's, memcached's), the two run at
    once."""
    with ThreadPoolExecutor(2) as pool:
        ours, ref = pool.map(lambda srv: transcript(srv, steps, norms, quiet), pair)
    if deferred(ours, ref, steps[0][:1] == b"\x80"):
        ours = ref
    return ours, ref


class Pair:
    def __init__(self, ours_bin, ref_bin, workdir, flags=()):
        self.args = (ours_bin, ref_bin, workdir, list(flags))
        self.servers = None

    def start(self):
        ours_bin, ref_bin, workdir, flags = self.args
        self.servers = (helpers.Server(ours_bin, flags, workdir=workdir).start(),
                        helpers.Server(ref_bin, flags, workdir=workdir).start())
        return self.servers

    def stop(self):
        for srv in self.servers or ():
            if srv.proc and srv.proc.poll() is None:
                srv.proc.kill()
                srv.proc.wait()
        self.servers = None


def run(ours_bin, ref_bin, workdir, count, seed, start=0, report=print):
    """Run cases start..start+count; returns the differences as
    (index, steps, ours, ref)."""
    _, norms = load_differences()
    pair = Pair(ours_bin, ref_bin, workdir)
    diffs = []
    try:
        for i in range(start, start + count):
            if pair.servers is None:
                pair.start()
            gen = Gen(seed, i)
            steps = gen.case()
            ours, ref = compare(pair.servers, steps, norms)
            if ours != ref:  # again on a fresh pair, waiting longer
                pair.stop()
                ours, ref = compare(pair.start(), steps, norms, RECHECK_QUIET)
            if ours != ref:
                diffs.append((i, steps, ours, ref))
                report(f"seed {seed} case {i}: {steps!r}\n  nodelay: {ours!r}\n"
                       f"  1.6.45:  {ref!r}")
            closed = ours.endswith(b"<closed>") or ref.endswith(b"<closed>")
            dead = any(s.proc.poll() is not None for s in pair.servers)
            if gen.restart or dead or closed and b"shutdown" in b"".join(steps):
                pair.stop()
    finally:
        pair.stop()
    return diffs


if __name__ == "__main__":
    import tempfile
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    with tempfile.TemporaryDirectory() as d:
        found = run(helpers.server_bin(), REF_1645, d, n, seed, first)
    print(f"{len(found)} differences in {n} cases (seed {seed})")
