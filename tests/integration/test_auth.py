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
