# SPDX-License-Identifier: BSD-3-Clause
"""-vv and -vvv print what memcached 1.6.45 prints: commands, the replies
memcached logs (">fd STORED", "sending key", "NOREPLY ..."), and at -vvv
each lookup and the connection's state changes. Compared line by line with
the 1.6.45 reference in ../shared/ref when it is there."""
import os
import re
import time

import pytest

import helpers

REF = os.environ.get("NODELAY_REF") or os.path.join(helpers.ROOT, "..", "shared", "ref",
                                                     "memcached-1.6.45")

# One request per entry, each answered before the next is sent.
SESSION = [
    (b"set foo 0 0 3\r\nbar\r\n", b"STORED\r\n"),
    (b"get foo\r\n", b"END\r\n"),
    (b"get nope\r\n", b"END\r\n"),
    (b"gets foo a\r\n", b"END\r\n"),
    (b"add foo 0 0 1\r\nx\r\n", b"NOT_STORED\r\n"),
    (b"replace nf 0 0 1\r\nx\r\n", b"NOT_STORED\r\n"),
    (b"cas nf 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n"),
    (b"set n 0 0 1\r\n5\r\n", b"STORED\r\n"),
    (b"incr n 2\r\n", b"7\r\n"),
    (b"delete foo\r\n", b"DELETED\r\n"),
    (b"touch n 10\r\n", b"TOUCHED\r\n"),
    (b"mn\r\n", b"MN\r\n"),
    (b"bogus\r\n", b"ERROR\r\n"),
    (b"set foo 0 0 bad\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    (b"flush_all\r\n", b"OK\r\n"),
    (b"version\r\n", b"VERSION 1.6.45\r\n"),
]


def run_session(srv):
    c = srv.connect()
    for req, until in SESSION:
        c.send(req)
        c.read_until(until)
    c.send(b"set q 0 0 2 noreply\r\nab\r\n")
    assert c.call("mn") == b"MN\r\n"
    c.close()


def client_lines(text, fd_hint=None):
    """The lines about the client connection, its fd replaced by N."""
    out = []
    for line in text.splitlines():
        if "server listening" in line or "client connection" in line:
            continue
        m = re.match(r"^([<>])(\d+) (.*)$", line)
        if m:
            out.append(f"{m.group(1)}N {m.group(3)}")
            continue
        m = re.match(r"^(\d+): (Client using the \w+ protocol|going from \w+ to \w+)$", line)
        if m:
            out.append("N: " + m.group(2))
            continue
        if line.startswith("> FOUND KEY ") or line.startswith("> NOT FOUND "):
            out.append(line)
    return out


def wait_for(srv, text, count=1, timeout=5.0):
    deadline = time.monotonic() + timeout * helpers.slow_factor()
    while srv.stderr().count(text) < count:
        assert time.monotonic() < deadline, f"{text!r} never logged:\n{srv.stderr()[-2000:]}"
        time.sleep(0.02)


def logged(start_server, binary, level):
    srv = start_server(level, "-t", "1", binary=binary)
    run_session(srv)
    wait_for(srv, "NOREPLY STORED")
    wait_for(srv, "connection closed", count=2)  # the readiness probe's, then ours
    return client_lines(srv.stderr())


def ref_bin(shared=False):
    """The memcached 1.6.45 to compare with, or skip.
    shared: the behaviour compared is 1.6.18's too, so Debian's memcached
    stands in when 1.6.45 is absent (helpers.ref_or_debian)."""
    ref = helpers.ref_or_debian(REF) if shared else REF
    if not os.access(ref, os.X_OK):
        pytest.skip("../shared/ref/memcached-1.6.45 is absent: no 1.6.45 to compare with")
    return ref


def test_vv_logs_commands_and_replies(start_server, server_bin):
    lines = logged(start_server, server_bin, "-vv")
    # (the fixture's readiness probe connected and left first)
    assert lines.index("N: Client using the ascii protocol") < lines.index("<N set foo 0 0 3")
    for want in ["<N set foo 0 0 3", ">N STORED", "<N get foo", ">N sending key foo", ">N END",
                 ">N NOT_STORED", ">N NOT_FOUND", ">N MN", ">N ERROR",
                 ">N CLIENT_ERROR bad command line format", ">N OK", ">N VERSION 1.6.45",
                 ">N NOREPLY STORED"]:
        assert want in lines, want
    # memcached 1.6.45 does not log these replies
    for unwanted in [">N DELETED", ">N TOUCHED", ">N 7"]:
        assert unwanted not in lines
    assert not any("FOUND" in l or "going from" in l for l in lines if not l.startswith(">N"))


def test_vv_matches_1_6_45(start_server, server_bin):
    ref = logged(start_server, ref_bin(), "-vv")
    ours = logged(start_server, server_bin, "-vv")
    assert ours == ref


def test_vvv_adds_lookups_and_states(start_server, server_bin):
    lines = logged(start_server, server_bin, "-vvv")
    assert "> NOT FOUND foo" in lines  # the set's lookup
    assert "> FOUND KEY foo" in lines
    assert "> NOT FOUND nope" in lines
    states = [l for l in lines if "going from" in l]
    assert states, "no state changes logged"
    names = {"conn_new_cmd", "conn_read", "conn_parse_cmd", "conn_nread", "conn_mwrite",
             "conn_closing", "conn_waiting"}
    for l in states:
        a, b = re.match(r"N: going from (\w+) to (\w+)", l).groups()
        assert a in names and b in names and a != b


def test_vvv_lookups_match_1_6_45(start_server, server_bin):
    """The lookup lines come in memcached's order (state names differ:
    nodelay's connection has fewer states than memcached's machine)."""
    def lookups(lines):
        return [l for l in lines if "FOUND" in l and not l.startswith(">N")]
    ref = lookups(logged(start_server, ref_bin(), "-vvv"))
    ours = lookups(logged(start_server, server_bin, "-vvv"))
    assert ours == ref


def test_verbosity_command_raises_the_level(start_server):
    srv = start_server()
    c = srv.connect()
    assert c.call("verbosity 2") == b"OK\r\n"
    c.set("vk", "v")
    deadline = time.monotonic() + 5 * helpers.slow_factor()
    while "<" not in srv.stderr() or "STORED" not in srv.stderr():
        assert time.monotonic() < deadline, srv.stderr()
        time.sleep(0.02)
    assert re.search(r"^<\d+ set vk 0 0 1$", srv.stderr(), re.M)
    assert re.search(r"^>\d+ STORED$", srv.stderr(), re.M)
    assert c.call("verbosity 0") == b"OK\r\n"
    before = srv.stderr()
    c.set("vk2", "v")
    c.call("mn")
    assert "vk2" not in srv.stderr()[len(before):]


def binary_session(srv):
    import struct
    from helpers import bin_read, bin_request as R
    setx = struct.pack(">II", 0, 0)
    arith = struct.pack(">QQI", 2, 5, 0)
    c = srv.connect()
    for req in [R(0x01, b"foo", b"bar", setx),             # SET
                R(0x00, b"foo"), R(0x00, b"nope"),          # GET hit, miss
                R(0x0c, b"foo"),                            # GETK
                R(0x02, b"foo", b"x", setx),                # ADD: exists
                R(0x03, b"nf", b"x", setx),                 # REPLACE: not found
                R(0x05, b"n", b"", arith), R(0x06, b"n", b"", arith),  # INCR (creates), DECR
                R(0x04, b"foo"), R(0x04, b"foo"),           # DELETE hit, miss
                R(0x0e, b"n", b"z"),                        # APPEND
                R(0x1c, b"n", b"", struct.pack(">I", 10)),  # TOUCH
                R(0x1d, b"n", b"", struct.pack(">I", 10)),  # GAT
                R(0x0a), R(0x0b),                           # NOOP, VERSION
                R(0x08, b"", b"", struct.pack(">I", 0)),    # FLUSH
                R(0x42)]:                                   # unknown
        c.send(req)
        bin_read(c)
    c.send(R(0x10, b"settings"))                            # STAT settings
    while bin_read(c)["key"]:
        pass
    c.send(R(0x11, b"q", b"ab", setx) + R(0x0a))            # SETQ (no reply), NOOP
    bin_read(c)
    c.close()


def binary_logged(start_server, binary):
    srv = start_server("-vv", "-t", "1", binary=binary)
    binary_session(srv)
    wait_for(srv, "connection closed", count=2)
    out = []
    dump_row = None
    for line in srv.stderr().splitlines():
        line = re.sub(r"^([<>])\d+", r"\1N", line)
        if re.match(r"^[<>]N (Read binary protocol data|Writing bin response):$", line):
            dump_row = 0 if line.startswith(">") else None
        elif dump_row is not None and re.match(r"^>N   (0x[0-9a-f]{2} ?){4}$", line):
            dump_row += 1
            if dump_row >= 5:  # the CAS: each server numbers its own
                line = ">N   CAS"
        else:
            dump_row = None
        if re.match(r"^([<>]N (Read|Writing|  |GET|TOUCH|SET|ADD|REPLACE|STATS)|incr |Deleting "
                    r"|Value len)", line) and "connection" not in line:
            out.append(line)
    return out


def test_vv_binary_logs_headers_and_commands(start_server, server_bin):
    lines = binary_logged(start_server, server_bin)
    # every request header as read, every response header as written
    assert lines.count("<N Read binary protocol data:") == 20
    assert lines.count(">N Writing bin response:") == 18  # not the STATs, not SETQ's
    for want in ["<N SET foo Value len is 3", "<N GET foo", "<N GET nope", "<N ADD foo Value len is 1",
                 "<N REPLACE nf Value len is 1", "incr n 2, 5, 0", "Deleting foo", "Value len is 1",
                 "<N TOUCH n", "<N STATS settings", "<N SET q Value len is 2",
                 ">N Writing an error: Not found", ">N Writing an error: Data exists for key.",
                 ">N Writing an error: Unknown command"]:
        assert want in lines, want
    i = lines.index("<N SET foo Value len is 3")
    assert lines[i - 7:i] == ["<N Read binary protocol data:", "<N    0x80 0x01 0x00 0x03",
                              "<N    0x08 0x00 0x00 0x00", "<N    0x00 0x00 0x00 0x0e",
                              "<N    0x00 0x00 0x00 0x00", "<N    0x00 0x00 0x00 0x00",
                              "<N    0x00 0x00 0x00 0x00"]
    assert lines[i + 1:i + 3] == [">N Writing bin response:", ">N   0x81 0x01 0x00 0x00"]


def test_vv_binary_matches_1_6_45(start_server, server_bin):
    ref = binary_logged(start_server, ref_bin(shared=True))
    ours = binary_logged(start_server, server_bin)
    assert ours == ref


# ---- binary SASL (-S) ---------------------------------------------------------

# One connection per entry. Only exchanges whose outcome does not depend on
# a password database: Debian's memcached checks passwords in Cyrus's sasldb,
# nodelay in the MEMCACHED_SASL_PWDB file (test_vv_sasl_password_lines).
SASL_SESSIONS = [
    [(0x20, b"", b""), (0x21, b"NOPE", b"abc")],           # LIST_MECHS, AUTH: no such mech
    [(0x22, b"PLAIN", b"\0alice\0secret")],                 # STEP before any AUTH
    [(0x21, b"PLAIN", b""), (0x22, b"PLAIN", b"alice")],    # AUTH: continue; STEP: one field
    [(0x21, b"plain", b"\0alice")],                         # two fields
    [(0x21, b"PLAIN", b"\0alice\0secret\0x")],              # four fields
    [(0x21, b"X" * 40, b"abc")],                            # mechanism name too long
    [(0x0b, b"", b""), (0x00, b"k", b"")],                  # VERSION; GET unauthenticated
]

SASL_LINE = re.compile(r"^(authenticated\(\) in cmd|mech:  |SASL \(severity|sasl result code|"
                       r"Unknown sasl response|N: SASL_STEP called|>N Writing an error|INFO: User|"
                       r"WARNING: Failed to authenticate)")


def sasl_logged(start_server, binary, level, tmp_path, sessions=SASL_SESSIONS, pwdb=""):
    from helpers import bin_read, bin_request as R
    conf = tmp_path / "sasl"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "memcached.conf").write_text("mech_list: plain\n")
    (tmp_path / "pwdb").write_text(pwdb)
    for p in (tmp_path, conf, conf / "memcached.conf", tmp_path / "pwdb"):
        os.chmod(p, 0o755)  # memcached reads them after dropping root
    env = dict(os.environ, SASL_CONF_PATH=str(conf), MEMCACHED_SASL_PWDB=str(tmp_path / "pwdb"))
    srv = start_server("-S", level, "-t", "1", binary=binary, env=env)
    closes = srv.stderr().count("connection closed")
    for seq in sessions:
        c = srv.connect()
        for op, key, value in seq:
            c.send(R(op, key, value))
            bin_read(c)
        c.close()
        closes += 1
        # every line about a request is out before its reply; the close is
        # logged from -vv only
        if level == "-vv":
            wait_for(srv, "connection closed", count=closes)
    out = []
    for line in srv.stderr().splitlines():
        line = re.sub(r"^([<>])\d+ ", r"\1N ", line)
        line = re.sub(r"^\d+: SASL_STEP", "N: SASL_STEP", line)
        if SASL_LINE.match(line) or (line == "" and out and out[-1].startswith("SASL (")):
            out.append(line)
    return out


def test_vv_sasl_lines(start_server, server_bin, tmp_path):
    lines = sasl_logged(start_server, server_bin, "-vv", tmp_path)
    assert lines[:2] == ["authenticated() in cmd 0x20 is true", "authenticated() in cmd 0x21 is true"]
    for want in ["mech:  ``NOPE'' with 3 bytes of data", "SASL (severity 2): Couldn't find mech NOPE",
                 "sasl result code:  -4", "Unknown sasl response:  -4",
                 "N: SASL_STEP called but sasl_server_start not called for this connection!",
                 "sasl result code:  -1", "sasl result code:  1",
                 "SASL (severity 2): Can only find author (no password)",
                 "SASL (severity 2): Can only find author/en (no password)",
                 "SASL (severity 2): Got more data than we were expecting in the PLAIN plugin",
                 "authenticated() in cmd 0x00 is false", ">N Writing an error: Auth failure.",
                 ">N Writing an error: Invalid arguments"]:
        assert want in lines, want
    # the continue is not an error
    i = lines.index("sasl result code:  1")
    assert not lines[i + 1].startswith("Unknown")


def test_v_sasl_lines_without_the_vv_ones(start_server, server_bin, tmp_path):
    """-v prints the exchange; the authenticated() lines are -vv's."""
    lines = sasl_logged(start_server, server_bin, "-v", tmp_path)
    assert "sasl result code:  -4" in lines and "mech:  ``NOPE'' with 3 bytes of data" in lines
    assert not any(l.startswith("authenticated()") for l in lines)


def test_vv_sasl_matches_memcached(start_server, server_bin, memcached_bin, tmp_path):
    """Line for line as memcached prints them (Debian's 1.6.18: the 1.6.45
    reference is built without SASL; proto_bin.c's SASL lines are the same in
    both)."""
    if "enable-sasl" not in subprocess_help(memcached_bin):
        pytest.skip("this memcached is built without SASL")
    ref = sasl_logged(start_server, memcached_bin, "-vv", tmp_path)
    ours = sasl_logged(start_server, server_bin, "-vv", tmp_path / "ours")
    assert ours == ref


def subprocess_help(binary):
    import subprocess
    return subprocess.run([binary, "-h"], capture_output=True, text=True, timeout=10).stdout


def test_vv_sasl_password_lines(start_server, server_bin, tmp_path):
    """With its MEMCACHED_SASL_PWDB file memcached's own callback logs a user
    it refuses, then Cyrus's failure; the right password is result 0, and
    acting as another user Cyrus's SASL_BADAUTH (-13), which Cyrus does not log."""
    if os.path.basename(server_bin).startswith("memcached"):
        pytest.skip("Debian's memcached has no SASL password database here")
    sessions = [[(0x21, b"PLAIN", b"\0alice\0secret")], [(0x21, b"PLAIN", b"\0alice\0wrong")],
                [(0x21, b"PLAIN", b"\0bob\0x")], [(0x21, b"PLAIN", b"carol\0alice\0secret")],
                [(0x21, b"PLAIN", b"\0alice\0" + b"p" * 300)]]
    lines = sasl_logged(start_server, server_bin, "-vv", tmp_path, sessions, "alice:secret\n")
    stderr_lines = [l for l in lines if not l.startswith(("authenticated()", ">N"))]
    assert stderr_lines == [
        "mech:  ``PLAIN'' with 13 bytes of data", "sasl result code:  0",
        "mech:  ``PLAIN'' with 12 bytes of data", "INFO: User <alice> failed to authenticate",
        "SASL (severity 2): Password verification failed", "sasl result code:  -20",
        "Unknown sasl response:  -20",
        "mech:  ``PLAIN'' with 6 bytes of data", "INFO: User <bob> failed to authenticate",
        "SASL (severity 2): Password verification failed", "sasl result code:  -20",
        "Unknown sasl response:  -20",
        "mech:  ``PLAIN'' with 18 bytes of data", "sasl result code:  -13",
        "Unknown sasl response:  -13",
        "mech:  ``PLAIN'' with 307 bytes of data",
        "WARNING: Failed to authenticate <alice> due to too long password (300)",
        "SASL (severity 2): Password verification failed", "sasl result code:  -20",
        "Unknown sasl response:  -20"]
