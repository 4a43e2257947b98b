# SPDX-License-Identifier: BSD-3-Clause
"""TLS (-Z): memcached's interface, real clients, mutual TLS, refresh_certs,
notls: listeners, hostile clients, the delayed-ACK trap and one write per
read over TLS. Certificates are made at test time with the openssl CLI (no
keys in the repository)."""
import os
import random
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest

import helpers
from helpers import Conn, bin_read, bin_request, free_port, target

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REF_DIR = os.environ.get("NODELAY_REF_DIR") or os.path.join(ROOT, "..", "shared", "ref")
REF_BIN = os.path.join(REF_DIR, "memcached-1.6.45")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory)


def make_pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1, a client certificate the CA
    signed, one it did not, an expired server certificate, and a second
    server key and certificate (test_delayed_ack.py's TLS server too)."""
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=nodelay test CA", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def signed(name, cn, days="2", ext=True):
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}",
                cwd=d)
        extra = ["-extfile", "san.cnf"] if ext else []
        if days == "expired":
            _expired(d, name, extra)
        else:
            openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                    "-CAcreateserial", "-out", f"{name}.pem", "-days", days, *extra, cwd=d)

    signed("server", "localhost")
    signed("server2", "localhost")
    signed("client", "client")
    signed("expired", "localhost", days="expired")
    openssl("req", "-x509", *ec, "-keyout", "rogue.key", "-out", "rogue.pem", "-days", "2",
            "-subj", "/CN=rogue", cwd=d)
    return d


def _expired(d, name, extra):
    """OpenSSL 3.0's x509 has no -not_after: sign with a CA config whose
    validity ended yesterday (`openssl ca` takes explicit dates)."""
    (d / "ca.db").write_text("")
    (d / "ca.cnf").write_text(
        "[ca]\ndefault_ca=c\n[c]\ndatabase=ca.db\nnew_certs_dir=.\nserial=ca.srl\n"
        "default_md=sha256\npolicy=p\ncopy_extensions=copy\nunique_subject=no\n"
        "[p]\ncommonName=supplied\n")
    if not (d / "ca.srl").exists():
        (d / "ca.srl").write_text("1000\n")
    openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key",
            "-in", f"{name}.csr", "-out", f"{name}.pem", "-startdate", "20200101000000Z",
            "-enddate", "20200102000000Z", "-notext", *extra, cwd=d)


def tls_flags(pki, cert="server", *more):
    return ["-Z", "-o", f"ssl_chain_cert={pki / (cert + '.pem')},ssl_key={pki / (cert + '.key')}",
            *more]


def client_ctx(pki=None, cert=None, verify=True):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if verify:
        ctx.load_verify_locations(str(pki / "ca.pem"))
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(str(pki / f"{cert}.pem"), str(pki / f"{cert}.key"))
    return ctx


def tls_connect(srv, ctx, port=None, nodelay=True, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port or srv.port), timeout=timeout)
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Conn(ctx.wrap_socket(s, server_hostname="127.0.0.1"), timeout)


def stats(c, arg=""):
    c.send(f"stats {arg}".strip().encode() + b"\r\n")
    text = c.read_until(b"END\r\n").decode()
    return dict(line.split(" ", 2)[1:] for line in text.splitlines() if line.startswith("STAT "))


@pytest.fixture
def tls_server(start_server, pki):
    return start_server(*tls_flags(pki))


# ---- memcached's interface --------------------------------------------------

def test_text_meta_binary_over_tls(tls_server, pki):
    c = tls_connect(tls_server, client_ctx(pki))
    assert c.call("set k 5 0 3\r\nabc") == b"STORED\r\n"
    assert c.call("get k", until=b"END\r\n") == b"VALUE k 5 3\r\nabc\r\nEND\r\n"
    assert c.call("mg k v f") == b"VA 3 f5\r\n"
    assert c.readline() == b"abc\r\n"
    b = tls_connect(tls_server, client_ctx(pki))  # the first byte picks the protocol
    b.send(bin_request(0x00, key=b"k"))  # binary GET
    r = bin_read(b)
    assert r["status"] == 0 and r["value"][-3:] == b"abc"
    big = os.urandom(300 * 1024)
    c.send(b"set big 0 0 %d\r\n%s\r\n" % (len(big), big))
    assert c.readline() == b"STORED\r\n"
    c.send(b"get big\r\n")
    assert c.read_until(b"\r\n") == b"VALUE big 0 %d\r\n" % len(big)
    assert c.read_exact(len(big) + 7) == big + b"\r\nEND\r\n"


def test_long_reply_is_sent_once_when_input_arrives_meanwhile(start_server, tmp_path):
    """A reply longer than one call's records (256 KiB) is still leaving
    when the client's next request comes in: the read sends the queued
    records too, and the write that follows must report them sent rather
    than encrypt the same bytes again (the client saw the reply's first
    256 KiB twice). An RSA key, whose slower records leave the socket full
    when the request comes; with the EC keys above they rarely did."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "rsa.key", "-out",
            "rsa.pem", "-days", "2", "-subj", "/CN=localhost", cwd=tmp_path)
    srv = start_server("-Z", "-o", f"ssl_chain_cert={tmp_path / 'rsa.pem'},"
                       f"ssl_key={tmp_path / 'rsa.key'}")
    ctx = client_ctx(verify=False)
    c = tls_connect(srv, ctx, timeout=30)
    n, size = 300, 1000
    c.send(b"".join(b"set bm%d 0 0 %d noreply\r\n%s\r\n" % (i, size, b"%c" % (65 + i % 26) * size)
                    for i in range(n)) + b"mn\r\n")
    assert c.read_until(b"MN\r\n") == b"MN\r\n"
    c = tls_connect(srv, ctx, timeout=30)  # its socket buffers not yet grown
    want = b"".join(b"VALUE bm%d 0 %d\r\n%s\r\n" % (i, size, b"%c" % (65 + i % 26) * size)
                    for i in range(n)) + b"END\r\n"
    one = b"VALUE bm1 0 %d\r\n%s\r\nEND\r\n" % (size, b"B" * size)
    line = b"get " + b" ".join(b"bm%d" % i for i in range(n)) + b"\r\n"
    for _ in range(3):
        c.send(line)
        time.sleep(0.05)  # the reply fills the socket; the next request arrives
        c.send(b"get bm1\r\n")
        assert c.read_exact(len(want)) == want
        assert c.read_exact(len(one)) == one
    c.send(b"mn\r\n")
    assert c.readline() == b"MN\r\n"  # and nothing more came before it


def test_pymemcache_over_tls(tls_server, pki):
    pymemcache = pytest.importorskip("pymemcache.client.base")
    cl = pymemcache.Client(("127.0.0.1", tls_server.port), tls_context=client_ctx(pki),
                           connect_timeout=5, timeout=5)
    cl.set("a", b"1")
    assert cl.get("a") == b"1"
    assert cl.get_many(["a", "nope"]) == {"a": b"1"}
    assert cl.incr("a", 4) == 5
    cl.close()


def dalli(srv, pki, *cert):
    """Dalli (Ruby, binary protocol), a second real client: its script
    prints TAP lines; returns (exit code, output)."""
    if shutil.which("ruby") is None or subprocess.run(
            ["ruby", "-e", "require 'dalli'"], capture_output=True).returncode != 0:
        pytest.skip("ruby-dalli not installed (scripts/install-deps.sh)")
    script = os.path.join(os.path.dirname(__file__), "clients", "dalli_tls.rb")
    r = subprocess.run(["ruby", script, f"127.0.0.1:{srv.port}", str(pki / "ca.pem"),
                        *[str(pki / f) for f in cert]], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.clients
def test_dalli_over_tls(tls_server, pki):
    rc, out = dalli(tls_server, pki)
    assert rc == 0 and "not ok" not in out, out
    assert "ok 20 - version" in out, out  # all of it ran


@pytest.mark.clients
def test_dalli_mutual_tls(start_server, pki):
    srv = start_server(*tls_flags(pki), "-o", f"ssl_verify_mode=2,ssl_ca_cert={pki / 'ca.pem'}")
    rc, out = dalli(srv, pki, "client.pem", "client.key")
    assert rc == 0 and "not ok" not in out, out
    rc, out = dalli(srv, pki)  # no client certificate: refused
    assert rc != 0 and "certificate required" in out, out


def test_stats_and_settings_names(tls_server, pki):
    c = tls_connect(tls_server, client_ctx(pki))
    st = stats(c, "settings")
    assert st["ssl_enabled"] == "yes"
    assert st["ssl_chain_cert"] == str(pki / "server.pem")
    assert st["ssl_verify_mode"] == "0" and st["ssl_keyformat"] == "1"
    assert st["ssl_ciphers"] == "NULL" and st["ssl_ca_cert"] == "NULL"
    assert st["ssl_wbuf_size"] == "16384" and st["ssl_min_version"] == "tlsv1.2"
    st = stats(c)
    assert int(st["ssl_handshake_errors"]) == 0
    assert "ssl_proto_errors" in st and "time_since_server_cert_refresh" in st
    assert "ssl_new_sessions" not in st
    names = list(st)
    assert names.index("log_watchers") < names.index("ssl_handshake_errors") < names.index(
        "unexpected_napi_ids")


def test_stats_match_memcached_1_6_45(start_server, pki):
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {REF_BIN} (../shared/ref)")
    got = []
    for binary in (None, REF_BIN):
        srv = start_server(*tls_flags(pki), binary=binary)
        c = tls_connect(srv, client_ctx(pki))
        sset = stats(c, "settings")
        st = stats(c)
        got.append(([k for k in sset if k.startswith("ssl_")], [k for k in st if "ssl" in k or "cert" in k],
                    {k: v for k, v in sset.items() if k.startswith("ssl_") and "cert" not in k and k != "ssl_key"}))
        assert c.call("refresh_certs") == b"OK\r\n"
    assert got[0] == got[1]


def test_no_tls_answers_as_memcached(start_server):
    srv = start_server()
    c = srv.connect()
    assert c.call("refresh_certs") == b"Error TLS not enabled\r\n"
    st = stats(c, "settings")
    assert st["ssl_enabled"] == "no" and st["ssl_chain_cert"] == "(null)"
    assert "ssl_handshake_errors" not in stats(c)


@pytest.mark.parametrize("opts,msg", [
    ("", "Error loading the key: (null) : "),
    (",ssl_key=/nonexistent.key", "Error loading the key: /nonexistent.key : "),
    (",ssl_ciphers=BOGUS", "Error setting the provided cipher(s): BOGUS"),
    (",ssl_ca_cert=/nonexistent.pem", "Error loading the CA certificate: /nonexistent.pem : "),
])
def test_bad_certificate_settings_refused(server_bin, pki, opts, msg):
    key = f",ssl_key={pki / 'server.key'}" if opts.startswith(",ssl_c") else ""
    r = subprocess.run([server_bin, "-u", "root", "-p", "0", "-Z", "-o",
                        f"ssl_chain_cert={pki / 'server.pem'}{key}{opts}"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 64
    assert msg in r.stderr


def test_mismatched_key_refused(server_bin, pki):
    r = subprocess.run([server_bin, "-u", "root", "-p", "0", "-Z", "-o",
                        f"ssl_chain_cert={pki / 'server.pem'},ssl_key={pki / 'server2.key'}"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 64
    assert "key values mismatch" in r.stderr


@pytest.mark.parametrize("opt,msg", [
    ("ssl_verify_mode=4", "Invalid ssl_verify_mode. Use help to see valid options."),
    ("ssl_min_version=tlsv1.3", "could not parse argument to ssl_min_version"),
    ("ssl_chain_cert", "Missing ssl_chain_cert argument"),
])
def test_bad_ssl_options_as_memcached(server_bin, opt, msg):
    r = subprocess.run([server_bin, "-u", "root", "-p", "0", "-o", opt], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 1 and msg in r.stderr


def test_min_version_tls13(start_server, pki):
    srv = start_server(*tls_flags(pki), "-o", "ssl_min_version=3")
    ctx = client_ctx(pki)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    with pytest.raises((ssl.SSLError, ConnectionError)):
        tls_connect(srv, ctx).call("version")
    c = tls_connect(srv, client_ctx(pki))
    assert c.call("version").startswith(b"VERSION")
    assert c.sock.version() == "TLSv1.3"


def test_expired_server_certificate_rejected_by_client(start_server, pki):
    srv = start_server(*tls_flags(pki, "expired"))
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_connect(srv, client_ctx(pki))
    # the server itself goes on serving clients that do not check
    assert tls_connect(srv, client_ctx(verify=False)).call("version").startswith(b"VERSION")


def test_hostname_mismatch_rejected_by_client(start_server, pki):
    srv = start_server(*tls_flags(pki))
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    with pytest.raises(ssl.SSLCertVerificationError):
        client_ctx(pki).wrap_socket(s, server_hostname="not-this-host.example")


# ---- mutual TLS -------------------------------------------------------------

def test_mtls_verify_mode_2(start_server, pki):
    srv = start_server(*tls_flags(pki), "-o", f"ssl_verify_mode=2,ssl_ca_cert={pki / 'ca.pem'}")
    c = tls_connect(srv, client_ctx(pki, cert="client"))
    assert c.call("version").startswith(b"VERSION")
    for cert in (None, "rogue"):
        with pytest.raises((ssl.SSLError, ConnectionError, EOFError)):
            # TLS 1.3: the refusal arrives after the client's handshake ends
            tls_connect(srv, client_ctx(pki, cert=cert)).call("version")
    assert int(stats(c)["ssl_handshake_errors"]) >= 2


def test_mtls_listener_prefix(start_server, pki):
    port = free_port()
    srv = start_server(*tls_flags(pki), "-o", f"ssl_ca_cert={pki / 'ca.pem'}",
                       "-l", f"mtls:127.0.0.1:{port}")
    assert tls_connect(srv, client_ctx(pki)).call("version").startswith(b"VERSION")
    with pytest.raises((ssl.SSLError, ConnectionError, EOFError)):
        tls_connect(srv, client_ctx(pki), port=port).call("version")
    c = tls_connect(srv, client_ctx(pki, cert="client"), port=port)
    assert c.call("version").startswith(b"VERSION")


# ---- refresh_certs, notls: --------------------------------------------------

def test_refresh_certs_keeps_open_connections(start_server, pki, tmp_path):
    cert, key = tmp_path / "live.pem", tmp_path / "live.key"
    shutil.copy(pki / "server.pem", cert)
    shutil.copy(pki / "server.key", key)
    srv = start_server("-Z", "-o", f"ssl_chain_cert={cert},ssl_key={key}")
    old = tls_connect(srv, client_ctx(pki))
    serial1 = old.sock.getpeercert()["serialNumber"]
    shutil.copy(pki / "server2.pem", cert)
    shutil.copy(pki / "server2.key", key)
    assert old.call("refresh_certs") == b"OK\r\n"
    assert old.call("version").startswith(b"VERSION")  # still the same session
    new = tls_connect(srv, client_ctx(pki))
    assert new.sock.getpeercert()["serialNumber"] != serial1
    assert int(stats(new)["time_since_server_cert_refresh"]) <= 2
    # a failed reload answers memcached's message and keeps the loaded pair
    os.unlink(key)
    assert old.call("refresh_certs") == (
        f"Error loading the key: {key} : error:80000002:system library::"
        "No such file or directory\r\n").encode()
    again = tls_connect(srv, client_ctx(pki))
    assert again.sock.getpeercert()["serialNumber"] == new.sock.getpeercert()["serialNumber"]


def test_notls_listener(start_server, pki):
    port = free_port()
    srv = start_server(*tls_flags(pki), "-l", f"notls:127.0.0.1:{port}")
    plain = Conn(socket.create_connection(("127.0.0.1", port), timeout=5))
    assert plain.call("set k 0 0 1\r\nv") == b"STORED\r\n"
    assert stats(plain, "settings")["inter"].startswith("127.0.0.1,notls:")
    c = tls_connect(srv, client_ctx(pki))
    assert c.call("get k", until=b"END\r\n") == b"VALUE k 0 1\r\nv\r\nEND\r\n"


def test_unix_socket_stays_plaintext_under_tls(start_server, pki, tmp_path):
    """-Z with -s: the unix socket speaks plaintext and refuses a TLS
    handshake, as memcached 1.6.45 (checked beside it when ../shared/ref
    is there)."""
    binaries = [None] + ([REF_BIN] if os.access(REF_BIN, os.X_OK) else [])
    for i, binary in enumerate(binaries):
        path = str(tmp_path / f"tls{i}.sock")
        srv = start_server(*tls_flags(pki), "-s", path, binary=binary)
        assert srv.connect().call("version").startswith(b"VERSION"), binary
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)  # memcached waits for the rest of a "line": a timeout
        s.connect(path)
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            client_ctx(verify=False).wrap_socket(s).sendall(b"version\r\n")


def test_session_resumption(start_server, pki):
    srv = start_server(*tls_flags(pki), "-o", "ssl_session_cache")
    ctx = client_ctx(pki)
    # TLS 1.2 without tickets: the server-side cache, found by session id.
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.options |= ssl.OP_NO_TICKET
    c = tls_connect(srv, ctx)
    assert c.call("version").startswith(b"VERSION")
    sess = c.sock.session
    c.close()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    c2 = Conn(ctx.wrap_socket(s, server_hostname="127.0.0.1", session=sess))
    assert c2.call("version").startswith(b"VERSION")
    assert c2.sock.session_reused
    assert int(stats(c2)["ssl_new_sessions"]) >= 1


def resumption_outcome(srv, pki, version, cache):
    """(ticket sent, second connection resumed, ssl_new_sessions after both)."""
    ctx = client_ctx(pki)
    ctx.minimum_version = ctx.maximum_version = version
    c = tls_connect(srv, ctx)
    assert c.call("version").startswith(b"VERSION")  # TLS 1.3 tickets come after the handshake
    sess = c.sock.session
    c.close()
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    c2 = Conn(ctx.wrap_socket(s, server_hostname="127.0.0.1", session=sess))
    assert c2.call("version").startswith(b"VERSION")
    return sess.has_ticket, c2.sock.session_reused, stats(c2).get("ssl_new_sessions")


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_session_tickets_without_session_cache(start_server, pki, version):
    """memcached leaves OpenSSL's ticket defaults alone: without
    ssl_session_cache a client still gets a ticket and resumes with it."""
    srv = start_server(*tls_flags(pki))
    ticket, reused, new_sessions = resumption_outcome(srv, pki, version, cache=False)
    assert ticket and reused
    assert new_sessions is None  # only shown with the cache, as in memcached


@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_session_tickets_match_memcached_1_6_45(start_server, pki, version, cache):
    # 1.6.18 resumes sessions as 1.6.45 does: Debian's stands in without ../shared/ref
    ref = helpers.ref_or_debian(REF_BIN)
    if not os.access(ref, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {REF_BIN} (../shared/ref)")
    more = ["-o", "ssl_session_cache"] if cache else []
    got = [resumption_outcome(start_server(*tls_flags(pki), *more, binary=b), pki, version, cache)
           for b in (None, ref)]
    assert got[0] == got[1]


# ---- hostile clients --------------------------------------------------------

def closed_soon(sock, timeout=3.0):
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def random_junk(n, seed=3000):
    """n random bytes that do not open a TLS record: a header whose version
    byte is 3 (1 in 256 of random ones), or an SSLv2 hello's, makes OpenSSL
    wait for the length it names, until the handshake timeout
    (test_handshake_timeout), not refuse it at once."""
    b = bytearray(random.Random(seed).randbytes(n))
    b[0] &= 0x7F
    if b[1] == 3:
        b[1] = 4
    return bytes(b)


@pytest.mark.parametrize("junk", [b"version\r\n", random_junk(3000) + b"\r\n",
                                  b"\x16\x03\x01\x00\x05hello", b"\x16\x03\x01\xff\xff" + b"A" * 200],
                         ids=["text", "random", "short-record", "cut-record"])
def test_garbage_costs_only_its_connection(tls_server, pki, junk):
    good = tls_connect(tls_server, client_ctx(pki))
    bad = socket.create_connection(("127.0.0.1", tls_server.port), timeout=5)
    bad.sendall(junk)
    if junk.startswith(b"\x16\x03\x01\x00\x05") or junk.endswith(b"A" * 200):
        bad.shutdown(socket.SHUT_WR)  # closing mid-record
    assert closed_soon(bad)
    assert good.call("version").startswith(b"VERSION")
    assert int(stats(good)["ssl_handshake_errors"]) >= 1


def test_mid_record_close_after_handshake(tls_server, pki):
    c = tls_connect(tls_server, client_ctx(pki))
    c.sock.sendall(b"version\r\n")
    assert c.readline().startswith(b"VERSION")
    fd = socket.socket(fileno=os.dup(c.sock.fileno()))
    # a record header promising 16 KiB, 100 bytes of it, then the close
    fd.sendall(b"\x17\x03\x03\x40\x00" + b"x" * 100)
    fd.shutdown(socket.SHUT_WR)
    assert closed_soon(fd)
    fd.close()
    good = tls_connect(tls_server, client_ctx(pki))
    assert good.call("version").startswith(b"VERSION")


def test_handshake_timeout(start_server, pki):
    srv = start_server(*tls_flags(pki), "-o", "ssl_handshake_timeout=1")
    idle = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    half = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    half.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello's start
    t = time.monotonic()
    assert closed_soon(idle, timeout=5) and closed_soon(half, timeout=5)
    assert time.monotonic() - t < 4.5
    c = tls_connect(srv, client_ctx(pki))
    time.sleep(2.2)  # done handshakes are not cut off
    assert c.call("version").startswith(b"VERSION")
    assert int(stats(c)["ssl_handshake_errors"]) >= 2


def test_renegotiation_refused(tls_server, pki):
    """TLS 1.2 renegotiation (a client can make a server redo handshakes at
    will) is refused: the server answers a second ClientHello with an alert
    or closes, and other clients are unaffected."""
    ctx = client_ctx(pki)
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    c = tls_connect(tls_server, ctx)
    assert c.call("version").startswith(b"VERSION")
    # Python cannot start a renegotiation; the openssl CLI can (an "R" line,
    # read alone: each line is sent once the previous one has had its effect,
    # since s_client takes a read of several lines as data).
    p = subprocess.Popen(["openssl", "s_client", "-connect", f"127.0.0.1:{tls_server.port}",
                          "-tls1_2", "-no_ign_eof"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    got = bytearray()

    def read_all():
        for chunk in iter(lambda: p.stdout.read1(4096), b""):
            got.extend(chunk)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()

    def send_after(line, seen):
        deadline = time.monotonic() + 10
        while seen not in got and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.02)
        try:
            p.stdin.write(line)
            p.stdin.flush()
        except BrokenPipeError:
            pass

    send_after(b"version\n", b"---\n")            # the handshake's summary is printed
    send_after(b"R\n", b"VERSION ")
    send_after(b"version\n", b"RENEGOTIATING")
    time.sleep(0.5)
    try:
        p.stdin.close()
    except BrokenPipeError:
        pass
    p.wait(10)
    reader.join(5)
    out = bytes(got)
    assert b"RENEGOTIATING" in out
    assert out.count(b"VERSION ") == 1, out[-600:]  # nothing answered after the attempt
    assert c.call("version").startswith(b"VERSION")


# ---- no-delay rules over TLS ------------------------------------------------

LIMIT = 0.040


def timed(label, fn):
    """The trap costs >= 40 ms every time; a loaded machine only now and
    then: three tries tell them apart without hiding the trap."""
    for _ in range(3):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        if dt < LIMIT:
            return dt
    pytest.fail(f"{label}: {dt * 1000:.1f} ms, three times (limit {LIMIT * 1000:.0f} ms)")


@pytest.mark.trap
@pytest.mark.parametrize("nodelay", [True, False])
@pytest.mark.parametrize("size", [1, 1400, 16 * 1024, 65537, 200 * 1024])
def test_delayed_ack_trap_over_tls(start_server, pki, nodelay, size):
    srv = start_server(*tls_flags(pki), "-I", "2m", "-m", "128")
    c = tls_connect(srv, client_ctx(pki), nodelay=nodelay)
    for _ in range(20):
        assert c.call("version").startswith(b"VERSION")
    value = os.urandom(size)

    def split_set():
        c.send(b"set k 0 0 %d\r\n" % size)  # header and data: two records, two writes
        c.send(value + b"\r\n")
        assert c.readline() == b"STORED\r\n"

    def get():
        c.send(b"get k\r\n")
        assert c.read_until(b"\r\n") == b"VALUE k 0 %d\r\n" % size
        assert c.read_exact(size + 7) == value + b"\r\nEND\r\n"

    b = tls_connect(srv, client_ctx(pki), nodelay=nodelay)  # binary from its first byte
    for _ in range(20):
        b.send(bin_request(0x0A))
        assert bin_read(b)["status"] == 0

    def mg_binary():
        c.send(b"mg k v\r\n")
        c.read_until(b"\r\n")
        c.read_exact(size + 2)
        b.send(bin_request(0x00, key=b"k"))
        assert bin_read(b)["status"] == 0

    def multiget():
        keys = b" ".join(b"m%d" % i for i in range(100))
        c.send(b"get " + keys + b"\r\n")
        assert c.read_until(b"END\r\n").endswith(b"END\r\n")

    for i in range(100):
        c.send(b"set m%d 0 0 10 noreply\r\n0123456789\r\n" % i)
    for _ in range(3):
        timed(f"split set {size} nodelay={nodelay}", split_set)
        timed(f"get {size}", get)
        timed(f"meta+binary get {size}", mg_binary)
        timed("multiget 100", multiget)


@pytest.mark.parametrize("ktls", [False, True], ids=["user-space-records", "ssl_kernel_tls"])
def test_pipeline_replies_leave_in_one_write(start_server, pki, tmp_path, ktls):
    """With ssl_kernel_tls the write is a writev of plaintext where the
    kernel has TLS, one send of records where it has not: one either way."""
    if shutil.which("strace") is None:
        pytest.skip("strace not installed")
    from test_syscalls import Tracer, WRITES
    srv = start_server(*tls_flags(pki), "-t", "1", *(["-o", "ssl_kernel_tls"] if ktls else []))
    c = tls_connect(srv, client_ctx(pki))
    for i in range(20):
        assert c.call(f"set p{i} 0 0 5\r\nv{i:04d}") == b"STORED\r\n"
    tr = Tracer(srv.proc.pid, str(tmp_path / "trace"))
    try:
        pipeline = b"".join(b"get p%d\r\n" % i for i in range(20))
        for _ in range(5):
            c.send(pipeline)  # one TLS record, one read on the server
            for i in range(20):
                c.read_until(b"END\r\n")
    finally:
        trace = tr.stop()
    writes = [ln for ln in trace.splitlines()
              if any(f" {w}(" in ln or ln.split(None, 1)[-1].startswith(w + "(") for w in WRITES)
              and "= -1 EAGAIN" not in ln]
    reads = [ln for ln in trace.splitlines()
             if any(ln.split(None, 1)[-1].startswith(r + "(") for r in ("read", "recvfrom"))
             and "EAGAIN" not in ln]
    # five pipelines: five writes of records (20 replies each), never one per reply
    assert len(writes) == 5, "\n".join(writes)
    assert len(reads) >= 5


def kernel_has_tls():
    """The probe nodelay makes: attach the "tls" ULP to a connected socket."""
    with socket.create_server(("127.0.0.1", 0)) as ls, \
            socket.create_connection(ls.getsockname()) as c:
        a, _ = ls.accept()
        with a:
            try:
                a.setsockopt(socket.IPPROTO_TCP, 31, b"tls")  # TCP_ULP
                return True
            except OSError:
                return False


def test_kernel_tls_used_where_the_kernel_has_it(start_server, pki):
    """-o ssl_kernel_tls: where the kernel has the tls ULP, sends go through
    it (said per connection at -vv); where it has not (this project's CI
    machine), one line at start-up says so and records are built in user
    space. Either way values of every size come back intact."""
    srv = start_server(*tls_flags(pki), "-vv", "-o", "ssl_kernel_tls")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = client_ctx(pki)
        ctx.minimum_version = ctx.maximum_version = version
        c = tls_connect(srv, ctx)
        for size in (5, 20000, 900_000):
            v = os.urandom(size).hex().encode()[:size]
            assert c.call(b"set kt%d 0 0 %d\r\n%s" % (size, size, v)) == b"STORED\r\n"
            c.send(b"get kt%d\r\n" % size)
            assert c.read_until(b"\r\n") == b"VALUE kt%d 0 %d\r\n" % (size, size)
            assert c.read_exact(size + 7) == v + b"\r\nEND\r\n"
        c.send(b"".join(b"get kt5\r\n" for _ in range(50)))
        for _ in range(50):
            assert c.read_until(b"END\r\n").startswith(b"VALUE kt5 0 5\r\n")
        c.close()
    assert stats(tls_connect(srv, client_ctx(pki)), "settings")["ssl_kernel_tls"] == "yes"
    err = srv.stderr()
    said = [ln for ln in err.splitlines() if ln.startswith("ssl_kernel_tls: ")]
    assert len(said) == 1, err
    if kernel_has_tls():
        assert "the kernel builds the records sent" in said[0], err
        assert "kernel TLS: the kernel builds the records sent" in err, err
    else:
        assert "no kernel TLS here" in said[0], err
        assert "kernel TLS: the kernel builds" not in err, err


# A kernel that says it has TLS but takes no keys: the ULP attaches (so
# nodelay's probe succeeds and OpenSSL gets SSL_OP_ENABLE_KTLS), TLS_TX and
# TLS_RX fail as a kernel without the cipher would.
KTLS_REFUSING_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
int setsockopt(int fd, int level, int name, const void *v, socklen_t len)
{
    static int (*real)(int, int, int, const void *, socklen_t);
    if (!real)
        real = (int (*)(int, int, int, const void *, socklen_t))dlsym(RTLD_NEXT, "setsockopt");
    if (level == IPPROTO_TCP && name == TCP_ULP)
        return 0;
    if (level == SOL_TLS) {
        errno = ENOPROTOOPT;
        return -1;
    }
    return real(fd, level, name, v, len);
}
"""


def test_kernel_tls_offered_keys_and_refused_falls_back(start_server, pki, tmp_path):
    """The kernel-TLS handover short of the kernel: with SSL_OP_ENABLE_KTLS
    on, OpenSSL offers its send keys to nodelay's write BIO at the end of
    every handshake (said at -vv), the kernel refuses them, and the
    connection goes on with user-space records: TLS 1.2 and 1.3, resumed
    sessions included, a large value and a pipeline intact."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler for the setsockopt shim")
    so = tmp_path / "ktls_refusing.so"
    src = tmp_path / "ktls_refusing.c"
    src.write_text(KTLS_REFUSING_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src), "-ldl"], check=True)
    env = dict(os.environ, LD_PRELOAD=str(so),
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0")
    srv = start_server(*tls_flags(pki), "-vv", "-o", "ssl_kernel_tls", env=env)
    conns = 0
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        ctx = client_ctx(pki)
        ctx.minimum_version = ctx.maximum_version = version
        sess = None
        for _ in range(2):  # a full handshake, then a resumed one
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            c = Conn(ctx.wrap_socket(s, server_hostname="127.0.0.1", session=sess), 5)
            conns += 1
            v = os.urandom(300_000).hex().encode()[:300_000]
            assert c.call(b"set kr 0 0 %d\r\n%s" % (len(v), v)) == b"STORED\r\n"
            c.send(b"get kr\r\n" + b"get nope\r\n" * 20)
            assert c.read_until(b"\r\n") == b"VALUE kr 0 300000\r\n"
            assert c.read_exact(len(v) + 7) == v + b"\r\nEND\r\n"
            assert c.read_exact(5 * 20) == b"END\r\n" * 20
            sess = c.sock.session
            c.close()
    err = srv.stderr()
    assert "ssl_kernel_tls: the kernel builds the records sent" in err, err
    refused = [ln for ln in err.splitlines() if "kernel TLS refused (" in ln]
    assert len(refused) >= conns, err  # every connection's keys were offered
    assert "kernel TLS: the kernel builds" not in err, err


# ---- authentication, -c, partial writes over TLS ------------------------------

def test_ascii_auth_and_sasl_over_tls(start_server, pki, tmp_path):
    pw = tmp_path / "auth"
    pw.write_text("alice:secret\n")
    srv = start_server(*tls_flags(pki), "-Y", str(pw))
    c = tls_connect(srv, client_ctx(pki))
    assert c.call("get k") == b"CLIENT_ERROR unauthenticated\r\n"
    assert c.call(b"set x 0 0 12\r\nalice secret") == b"STORED\r\n"
    assert c.call("set k 0 0 1\r\nv") == b"STORED\r\n"
    srv2 = start_server(*tls_flags(pki), "-S", env=dict(os.environ, MEMCACHED_SASL_PWDB=str(pw)))
    b = tls_connect(srv2, client_ctx(pki))
    b.send(bin_request(0x21, key=b"PLAIN", value=b"\0alice\0secret"))
    assert bin_read(b)["status"] == 0
    b.send(bin_request(0x01, key=b"sk", value=b"v", extras=struct.pack(">II", 0, 0)))
    assert bin_read(b)["status"] == 0


def test_handshaking_connections_count_against_maxconns(start_server, pki):
    srv = start_server(*tls_flags(pki), "-c", "3", "-o", "ssl_handshake_timeout=30")
    # the start-up probe has gone; three clients that never handshake fill -c
    time.sleep(0.2)
    idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(3)]
    time.sleep(0.2)
    extra = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    # refused as memcached refuses: its plaintext line, then the close
    assert closed_soon(extra)
    for s in idle:
        s.close()
    time.sleep(0.3)
    assert tls_connect(srv, client_ctx(pki)).call("version").startswith(b"VERSION")


def test_partial_writes_resume(start_server, pki):
    """A client that does not read while megabytes of replies are owed: the
    records that did not fit stay queued and leave as the socket drains, in
    order, nothing lost or repeated."""
    srv = start_server(*tls_flags(pki), "-I", "2m", "-m", "128")
    c = tls_connect(srv, client_ctx(pki), timeout=20)
    values = [os.urandom(1000 * 1000 + i) for i in range(16)]
    for i, v in enumerate(values):
        c.send(b"set big%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
        assert c.readline() == b"STORED\r\n"
    c.send(b"".join(b"get big%d\r\n" % i for i in range(16)) + b"version\r\n")
    time.sleep(0.5)  # 16 MB owed: the server fills the socket and waits for it to drain
    for i, v in enumerate(values):
        assert c.readline() == b"VALUE big%d 0 %d\r\n" % (i, len(v))
        assert c.read_exact(len(v) + 7) == v + b"\r\nEND\r\n"
    assert c.readline().startswith(b"VERSION")
