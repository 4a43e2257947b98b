# SPDX-License-Identifier: BSD-3-Clause
"""ASCII authentication (-Y user:pass file) and protocol selection (-B)."""
import pytest

from helpers import bin_read, bin_request


@pytest.fixture
def auth_server(start_server, tmp_path):
    pw = tmp_path / "auth"
    pw.write_text("alice:secret\nbob:hunter2\n")
    return start_server("-Y", str(pw))


def test_auth_required_first(auth_server):
    c = auth_server.connect()
    assert c.call("get k") == b"CLIENT_ERROR unauthenticated\r\n"


def test_auth_wrong_password(auth_server):
    c = auth_server.connect()
    assert c.call(b"set a 0 0 12\r\nalice wrong!") == b"CLIENT_ERROR authentication failure\r\n"


def test_auth_then_commands(auth_server):
    c = auth_server.connect()
    assert c.call(b"set x 0 0 12\r\nalice secret") == b"STORED\r\n"
    assert c.set("k", "v") == b"STORED\r\n"
    assert c.get("k") == b"v"
    c2 = auth_server.connect()
    assert c2.call(b"set x 0 0 11\r\nbob hunter2") == b"STORED\r\n"
    assert c2.get("k") == b"v"


def test_auth_bad_token_format(auth_server):
    c = auth_server.connect()
    assert c.call(b"set x 0 0 5\r\nalice") == b"CLIENT_ERROR bad authentication token format\r\n"


def test_ascii_only_rejects_binary_without_hanging(start_server):
    srv = start_server("-B", "ascii")
    c = srv.connect()
    c.send(bin_request(0x0B))
    # memcached parses the bytes as a text line: no hang, the connection stays usable or closes
    got = c.drain(0.5)
    assert not got or got.startswith(b"ERROR") or got.startswith(b"CLIENT_ERROR"), got


def test_binary_only_with_ascii_garbage_does_not_hang(start_server):
    """memcached's t/issue_50.t: -B binary fed ASCII must close, not hang."""
    srv = start_server("-B", "binary")
    c = srv.connect()
    c.send(b"GET / HTTP/1.0\r\n\r\n" + b"x" * 100)
    assert c.closed_by_peer(timeout=3)
    c2 = srv.connect()
    c2.send(bin_request(0x0B, opaque=3))
    r = bin_read(c2)
    assert r["status"] == 0 and r["opaque"] == 3


# ---- 1.6.45's answer to an over-long token (issue 12.3) ------------------------

def test_auth_token_too_long_keeps_connection(auth_server):
    """1.6.45 refuses the length, keeps the connection and swallows nothing:
    the next set is the next authentication attempt. nodelay never buffers
    the announced 2 GiB."""
    c = auth_server.connect()
    assert c.call(b"set foo 0 0 2147483646") == b"CLIENT_ERROR auth token too long\r\n"
    assert c.call(b"set foo 0 0 12\r\nalice secret") == b"STORED\r\n"
    assert c.set("k", "v") == b"STORED\r\n"


# ---- password guessing (-o auth_fail_limit) --------------------------------------

def guess(conn, n):
    """n wrong passwords on one connection; the replies until it closed."""
    replies = []
    for i in range(n):
        try:
            replies.append(conn.call(b"set a 0 0 12\r\nalice no%04d" % i))
        except (OSError, EOFError):
            break
    return replies


def test_guessing_closes_connection_after_limit(start_server, tmp_path):
    pw = tmp_path / "auth"
    pw.write_text("alice:secret\n")
    srv = start_server("-Y", str(pw), "-o", "auth_fail_limit=3")
    c = srv.connect()
    replies = guess(c, 3)
    assert replies == [b"CLIENT_ERROR authentication failure\r\n"] * 3
    assert c.closed_by_peer()
    # a client that knows the password is not affected
    ok = srv.connect()
    assert ok.call(b"set x 0 0 12\r\nalice secret") == b"STORED\r\n"


def test_guessing_address_refused_for_a_minute(start_server, tmp_path):
    """After 4 x limit failures from one address within a minute, even the
    right password is refused (unchecked) from there: guessing is capped at
    4 x limit per minute per address, however many connections it opens."""
    pw = tmp_path / "auth"
    pw.write_text("alice:secret\n")
    srv = start_server("-Y", str(pw), "-o", "auth_fail_limit=2")
    failures = 0
    for _ in range(6):  # each connection is cut off at its 2nd failure
        failures += len(guess(srv.connect(), 5))
    assert failures == 8 + 2, failures  # 8 counted, then 1 refused per connection
    c = srv.connect()
    assert c.call(b"set x 0 0 12\r\nalice secret") == b"CLIENT_ERROR authentication failure\r\n"
    assert c.closed_by_peer()


def test_guessing_limit_off(start_server, tmp_path):
    pw = tmp_path / "auth"
    pw.write_text("alice:secret\n")
    srv = start_server("-Y", str(pw), "-o", "auth_fail_limit=0")
    c = srv.connect()
    assert len(guess(c, 200)) == 200
    assert c.call(b"set x 0 0 12\r\nalice secret") == b"STORED\r\n"


def test_sasl_guessing_closes_connection(start_server, tmp_path, server_bin):
    import os
    if os.path.basename(server_bin).startswith("memcached"):
        pytest.skip("Debian's memcached has no SASL password database here")
    pw = tmp_path / "pwdb"
    pw.write_text("alice:secret\n")
    srv = start_server("-S", "-o", "auth_fail_limit=3",
                       env=dict(os.environ, MEMCACHED_SASL_PWDB=str(pw)))
    c = srv.connect()
    for i in range(3):
        c.send(bin_request(0x21, key=b"PLAIN", value=b"\0alice\0no%d" % i))
        assert bin_read(c)["status"] == 0x20
    assert c.closed_by_peer()
    ok = srv.connect()
    ok.send(bin_request(0x21, key=b"PLAIN", value=b"\0alice\0secret"))
    assert bin_read(ok)["status"] == 0


def _until(check, seconds):
    """check() until it is true or seconds pass (memcached acts on SIGHUP in
    its once-a-second clock tick; nodelay at once)."""
    import time
    from helpers import slow_factor
    deadline = time.monotonic() + seconds * slow_factor()
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _ascii_login(srv, user, password):
    c = srv.connect()
    token = f"{user} {password}".encode()
    try:
        return c.call(b"set x 0 0 %d\r\n" % len(token) + token) == b"STORED\r\n"
    finally:
        c.close()


def test_sighup_rereads_the_auth_file(start_server, tmp_path):
    """SIGHUP re-reads the -Y file, as memcached: new users in, removed ones
    out; a file that cannot be read then keeps the list it had."""
    import signal
    pw = tmp_path / "auth"
    pw.write_text("alice:secret\n")
    srv = start_server("-Y", str(pw))
    assert _ascii_login(srv, "alice", "secret")
    assert not _ascii_login(srv, "carol", "pw")
    pw.write_text("carol:pw\n")
    srv.proc.send_signal(signal.SIGHUP)
    assert _until(lambda: _ascii_login(srv, "carol", "pw"), 5)
    assert not _ascii_login(srv, "alice", "secret")
    pw.unlink()
    srv.proc.send_signal(signal.SIGHUP)
    import time
    time.sleep(1.5)  # past memcached's clock tick too
    assert srv.proc.poll() is None
    assert _ascii_login(srv, "carol", "pw")


def test_sighup_rereads_the_sasl_file(start_server, tmp_path, server_bin):
    """-S: SIGHUP re-reads $MEMCACHED_SASL_PWDB too (memcached reads it at
    every authentication, so there an edit needs no signal)."""
    import os
    import signal
    if os.path.basename(server_bin).startswith("memcached"):
        pytest.skip("Debian's memcached has no SASL password database here")
    pw = tmp_path / "pwdb"
    pw.write_text("alice:secret\n")
    srv = start_server("-S", env=dict(os.environ, MEMCACHED_SASL_PWDB=str(pw)))

    def login(user, password):
        c = srv.connect()
        try:
            c.send(bin_request(0x21, key=b"PLAIN", value=b"\0%s\0%s" % (user, password)))
            return bin_read(c)["status"] == 0
        finally:
            c.close()

    assert login(b"alice", b"secret") and not login(b"carol", b"pw")
    pw.write_text("carol:pw\n")
    srv.proc.send_signal(signal.SIGHUP)
    assert _until(lambda: login(b"carol", b"pw"), 5)
    assert not login(b"alice", b"secret")
    pw.unlink()
    srv.proc.send_signal(signal.SIGHUP)
    assert _until(lambda: "could not" in srv.stderr() or "failed to read" in srv.stderr(), 5)
    assert login(b"carol", b"pw")
