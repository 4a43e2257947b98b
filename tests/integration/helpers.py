# SPDX-License-Identifier: BSD-3-Clause
"""Starting servers and speaking to them over real sockets."""
import fcntl
import os
from pathlib import Path
import re
import signal
import socket
import struct
import subprocess
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

SANITIZER_MARKS = (
    "AddressSanitizer",
    "LeakSanitizer",
    "UndefinedBehaviorSanitizer",
    "ThreadSanitizer",
    "runtime error:",
)


# Extra flags for every nodelay the suite starts (not memcached): the epoll
# stages of `make test` (scripts/test-stage.sh) pass NODELAY_ARGS="-o io_uring=off".
EXTRA_ARGS = os.environ.get("NODELAY_ARGS", "").split()


def build_loadgen():
    """build/bench/loadgen, made first. make test runs files in two pytest
    processes at once (release and asan): one make at a time, or both would
    write the same binary."""
    os.makedirs(os.path.join(ROOT, "build"), exist_ok=True)
    with open(os.path.join(ROOT, "build", ".loadgen.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["make", "-s", "-C", ROOT, "loadgen"], capture_output=True,
                           text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return os.path.join(ROOT, "build", "bench", "loadgen")

def server_bin():
    path = os.environ.get("NODELAY_BIN", os.path.join(ROOT, "build", "release-epoll", "nodelay"))
    # servers run in a temporary directory: a relative path must not break
    return os.path.abspath(path) if os.sep in path else path


# Debian's memcached (1.6.18; scripts/install-deps.sh installs it): it stands
# in for 1.6.45 in the comparisons whose behaviour the two releases share,
# when ../shared/ref is absent (a user's clone).
DEBIAN_MEMCACHED = "/usr/bin/memcached"


def ref_or_debian(ref_1645):
    """The memcached to compare with where 1.6.18 behaves as 1.6.45 does:
    ref_1645 when it is there, else Debian's, else ref_1645 (the caller's
    check then skips, naming it)."""
    for path in (ref_1645, DEBIAN_MEMCACHED):
        if os.access(path, os.X_OK):
            return path
    return ref_1645


def is_memcached(binary):
    return os.path.basename(binary).startswith("memcached")


def target():
    """'memcached' when the suite runs against Debian's memcached (to validate
    the tests), else 'nodelay'."""
    return "memcached" if is_memcached(server_bin()) else "nodelay"


def expect(v145, v118=None):
    """The reply nodelay must give (memcached 1.6.45's); when the suite is
    validated against Debian's 1.6.18, the reply that version gives instead."""
    if target() == "memcached" and v118 is not None:
        return v118
    return v145


def slow_factor():
    """Sanitizer builds run slower; timeouts scale, the 40 ms trap does not."""
    b = server_bin()
    return 10 if ("tsan" in b or "asan" in b) else 1


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A port free for TCP and for UDP alike: tests pass it to -U as well, and
    a UDP socket bound with SO_REUSEADDR (memcached's and nodelay's) shares its
    port with another such socket, so a second server started by a parallel
    run would take the first one's datagrams. Binding UDP here without
    SO_REUSEADDR fails while any other socket holds the port."""
    for _ in range(100):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.bind((host, 0))
        port = s.getsockname()[1]
        u = socket.socket(family, socket.SOCK_DGRAM)
        try:
            u.bind((host, port))
        except OSError:
            continue
        finally:
            u.close()
            s.close()
        return port
    raise RuntimeError("no port free for both TCP and UDP")


def listens_on(pid, port):
    """Whether process pid holds a listening TCP socket on port: the socket
    inodes of /proc/net/tcp{,6} LISTEN rows for the port, against the
    process's open files."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.readlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{cols[9]}]")
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            pass
    return False


def ipv6_loopback_available():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


# A listener with its own port in -l: an optional `notls:`/`mtls:` kind,
# an IPv4 address or a bracketed IPv6 one, the port.
LISTENER = re.compile(r"^(?:[a-z]+:)?(\[[0-9a-fA-F:]+\]|\d+\.\d+\.\d+\.\d+):(\d+)$")


class ServerError(Exception):
    pass


class Server:
    """One server process. flags are passed after our own -p/-l/-U/-u; with
    listen=False nothing is added (the test gives -s or -l itself)."""

    def __init__(self, binary, flags, workdir="/tmp", listen=True, host="127.0.0.1",
                 env=None, port=None):
        self.binary = os.path.abspath(binary) if os.sep in binary else binary
        self.flags = list(flags)
        self.workdir = workdir
        self.listen = listen
        self.host = host
        self.port = port
        self.unix_path = None
        self.proc = None
        self.env = env
        self.stderr_path = None
        self.stopped = False

    @property
    def is_memcached(self):
        return is_memcached(self.binary)

    def argv(self, port):
        argv = [self.binary]
        if self.listen:
            argv += ["-p", str(port), "-U", "0", "-l", self.host]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        if not self.is_memcached:
            argv += EXTRA_ARGS
        argv += self.flags
        return argv

    def start(self, timeout=10.0):
        if "-s" in self.flags:
            self.unix_path = self.flags[self.flags.index("-s") + 1]
            self.listen = False
        last = ""
        for attempt in range(3):
            fam = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            if self.listen:
                self.port = free_port(fam, self.host)
            self.stderr_path = os.path.join(
                self.workdir, f"server-{os.getpid()}-{id(self)}-{attempt}.log")
            with open(self.stderr_path, "wb") as err:
                self.proc = subprocess.Popen(self.argv(self.port), stdin=subprocess.DEVNULL,
                                             stdout=err, stderr=err, env=self.env,
                                             cwd=self.workdir)
            deadline = time.monotonic() + timeout * slow_factor()
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    c = self.connect(timeout=1.0)
                    c.close()
                    for addr in self.extra_listeners():
                        socket.create_connection(addr, timeout=1.0).close()
                except OSError:
                    time.sleep(0.01)
                    continue
                # A parallel run's server may have taken the port between
                # free_port and our bind: the connect then reached it, and
                # ours is about to exit with "Address already in use".
                if not self.listen or listens_on(self.proc.pid, self.port):
                    return self
                time.sleep(0.01)
            last = self.stderr()
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
                raise ServerError(f"{self.argv(self.port)} did not accept within {timeout}s:\n{last}")
            if "in use" not in last:
                break
        raise ServerError(f"{self.argv(self.port)} exited with {self.proc.returncode}:\n{last}")

    def extra_listeners(self):
        """(host, port) of every TCP listener a test names in -l with its own
        port (`notls:127.0.0.1:P`, `[::1]:P`): the server listens on them one
        after another, so the first accepting is not proof that the others
        do (under ASan on a loaded machine a test's connect to a later one
        was refused)."""
        out = []
        for i, flag in enumerate(self.flags[:-1]):
            if flag != "-l":
                continue
            for item in self.flags[i + 1].split(","):
                m = LISTENER.match(item)
                if m:
                    out.append((m.group(1).strip("[]"), int(m.group(2))))
        return out

    def stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def connect(self, timeout=5.0, nodelay=True):
        if self.unix_path:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(self.unix_path)
        else:
            fam = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            s = socket.socket(fam, socket.SOCK_STREAM)
            if nodelay:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.settimeout(timeout)
            s.connect((self.host, self.port))
        return Conn(s, timeout * slow_factor())

    def check_stderr(self):
        text = self.stderr()
        for mark in SANITIZER_MARKS:
            assert mark not in text, f"sanitizer report from {self.binary}:\n{text[-6000:]}"

    def wait_exit(self, timeout=10.0):
        try:
            return self.proc.wait(timeout * slow_factor())
        except subprocess.TimeoutExpired:
            return None

    def stop(self, sig=signal.SIGTERM):
        """Stop with SIGTERM; it must exit 0 promptly and without a sanitizer report."""
        if self.stopped or self.proc is None:
            return
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        rc = self.wait_exit()
        if rc is None:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.binary} did not exit within 10 s of SIGTERM\n{self.stderr()[-3000:]}")
        self.check_stderr()
        assert rc == 0, f"{self.binary} exited with {rc} on SIGTERM\n{self.stderr()[-3000:]}"


class Conn:
    """A client socket with a read buffer and exact-byte helpers."""

    def __init__(self, sock, timeout=5.0):
        self.sock = sock
        self.buf = b""
        self.timeout = timeout
        sock.settimeout(timeout)

    def close(self):
        self.sock.close()

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError(f"connection closed; unread: {self.buf[:200]!r}")
        self.buf += chunk

    def read_until(self, marker):
        while True:
            i = self.buf.find(marker)
            if i >= 0:
                out, self.buf = self.buf[: i + len(marker)], self.buf[i + len(marker):]
                return out
            self._fill()

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def readline(self):
        return self.read_until(b"\r\n")

    def call(self, line, until=b"\r\n"):
        """Send one command line (\\r\\n added) and read the reply up to `until`."""
        if isinstance(line, str):
            line = line.encode()
        self.send(line + b"\r\n")
        return self.read_until(until)

    def store(self, cmd, key, value, flags=0, exptime=0, extra=""):
        if isinstance(value, str):
            value = value.encode()
        if isinstance(key, str):
            key = key.encode()
        line = b"%s %s %d %d %d" % (cmd.encode(), key, flags, exptime, len(value))
        if extra:
            line += b" " + extra.encode()
        self.send(line + b"\r\n" + value + b"\r\n")
        if "noreply" in extra:
            return None
        return self.readline()

    def set(self, key, value, flags=0, exptime=0):
        return self.store("set", key, value, flags, exptime)

    def get_multi(self, keys, cmd="get"):
        """Parse a get/gets reply exactly: {key: (flags, value[, cas])}."""
        if isinstance(keys, (str, bytes)):
            keys = [keys]
        keys = [k.encode() if isinstance(k, str) else k for k in keys]
        self.send(cmd.encode() + b" " + b" ".join(keys) + b"\r\n")
        return self.read_values()

    def read_values(self):
        out = {}
        while True:
            line = self.readline()
            if line == b"END\r\n":
                return out
            parts = line[:-2].split(b" ")
            assert parts and parts[0] == b"VALUE", f"unexpected line {line!r}"
            n = int(parts[3])
            data = self.read_exact(n + 2)
            assert data[-2:] == b"\r\n", f"value not followed by CRLF: {data[-10:]!r}"
            entry = (int(parts[2]), data[:-2]) + tuple(int(p) for p in parts[4:])
            out[parts[1].decode("latin-1")] = entry
        return out

    def get(self, key, cmd="get"):
        r = self.get_multi([key], cmd)
        k = key.decode("latin-1") if isinstance(key, bytes) else key
        return r[k][1] if k in r else None

    def gets(self, key):
        r = self.get_multi([key], "gets")
        k = key.decode("latin-1") if isinstance(key, bytes) else key
        return r.get(k)

    def arrived(self):
        """What the server has sent and was not read yet, without waiting
        (b"": nothing); it stays unread."""
        self.sock.setblocking(False)
        try:
            self.buf += self.sock.recv(1 << 20)
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(self.timeout)
        return self.buf

    def closed_by_peer(self, timeout=2.0):
        """True when the server closes this connection within `timeout`."""
        self.sock.settimeout(timeout * slow_factor())
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
        finally:
            self.sock.settimeout(self.timeout)

    def drain(self, quiet=0.2):
        """Everything the server sends until it has been quiet for `quiet` s."""
        self.sock.settimeout(quiet)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                self.buf += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        finally:
            self.sock.settimeout(self.timeout)
        out, self.buf = self.buf, b""
        return out


_debug_cache = {}


def answers_debugtime(binary):
    if binary in _debug_cache:
        return _debug_cache[binary]
    ok = False
    if not is_memcached(binary) and os.access(binary, os.X_OK):
        srv = Server(binary, [])
        try:
            srv.start()
            c = srv.connect()
            ok = c.call("debugtime r") == b"OK\r\n"
            c.close()
        except (ServerError, OSError, EOFError):
            ok = False
        finally:
            try:
                srv.stop()
            except AssertionError:
                pass
    _debug_cache[binary] = ok
    return ok


def debug_bin(main_bin):
    if os.environ.get("NODELAY_DEBUG_BIN"):
        return os.path.abspath(os.environ["NODELAY_DEBUG_BIN"])
    if is_memcached(main_bin):
        return None
    if answers_debugtime(main_bin):
        return main_bin
    # the debug build of the same event backend, else the epoll one: the
    # clock logic under test does not depend on the backend
    events = ["poll", "epoll"] if "-poll" in main_bin else ["epoll"]
    for event in events:
        cand = os.path.join(ROOT, "build", f"debug-{event}", "nodelay")
        if answers_debugtime(cand):
            return cand
    return None


# ---- binary protocol -------------------------------------------------------

BIN_HDR = struct.Struct(">BBHBBHIIQ")


def fill_until_refused(conn, nbytes, most=1000):
    """Set fill0, fill1, ... of nbytes each until a set is refused for
    memory (a full -M cache); fails the test if none is by the `most`th."""
    value = b"f" * nbytes
    for i in range(most):
        r = conn.set(f"fill{i}", value)
        if r != b"STORED\r\n":
            assert r == b"SERVER_ERROR out of memory storing object\r\n", r
            return i
    raise AssertionError(f"-M never refused a set of {nbytes} bytes")


def bin_request(opcode, key=b"", value=b"", extras=b"", opaque=0, cas=0):
    body = extras + key + value
    return BIN_HDR.pack(0x80, opcode, len(key), len(extras), 0, 0, len(body), opaque, cas) + body


def bin_read(conn):
    """Read one binary response: dict(opcode, status, key, extras, value, opaque, cas)."""
    hdr = conn.read_exact(24)
    magic, op, klen, elen, _dt, status, blen, opaque, cas = BIN_HDR.unpack(hdr)
    assert magic == 0x81, f"bad response magic {hdr!r}"
    body = conn.read_exact(blen)
    return dict(opcode=op, status=status, extras=body[:elen], key=body[elen:elen + klen],
                value=body[elen + klen:], opaque=opaque, cas=cas)


def speaks_binary(srv):
    """True when the server answers a binary VERSION request."""
    c = srv.connect(timeout=2)
    try:
        c.send(bin_request(0x0B, opaque=7))
        r = bin_read(c)
        return r["status"] == 0 and r["opaque"] == 7
    except (OSError, EOFError, AssertionError):
        return False
    finally:
        c.close()


def speaks_meta(srv):
    """True when the server answers the meta no-op `mn`."""
    c = srv.connect(timeout=2)
    try:
        return c.call("mn") == b"MN\r\n"
    except (OSError, EOFError):
        return False
    finally:
        c.close()


STAT_LINE = re.compile(rb"^STAT (\S+) (.*)\r$")


def stats(conn, sub=""):
    raw = conn.call(("stats " + sub).strip(), until=b"END\r\n")
    out = {}
    for line in raw.split(b"\n"):
        m = STAT_LINE.match(line)
        if m:
            out[m.group(1).decode()] = m.group(2).decode()
    return out


def drop_big_files(d, limit=16 << 20):
    """Flash files (reserved whole at start) and -e memory files: pytest
    keeps every test's directory until the session ends, and two stages run
    at once in CI, so they are removed once their servers have stopped.
    The logs stay."""
    for p in Path(d).rglob("*"):
        try:
            if p.is_file() and p.stat().st_size > limit:
                p.unlink()
        except OSError:
            pass


def start_flash(binary, workdir, ram_mb, flash_mb, threads, env=None, ext=""):
    """A started server with a flash tier: -m ram_mb, -t threads, a flash
    file of flash_mb MB in workdir and the ext_* options in ext (",a=b,..."),
    env added to its environment. Skips when the build has none (it checks
    -o ext_path, then does not use it)."""
    import pytest  # here: diff_fuzz.py runs these helpers without pytest

    srv = Server(binary, ["-m", str(ram_mb), "-t", str(threads), "-o",
                          f"ext_path={workdir}/flash:{flash_mb}m{ext}"], workdir=str(workdir),
                 env=env)
    srv.start()
    if "no flash tier" in srv.stderr():
        srv.stop()
        pytest.skip("this build has no flash tier: -o ext_path is checked, then not used")
    return srv


FLASH_QUEUE_MAX = 2  # segments queued for the device: with the open one, under the 5 buffers


def send_paced(conn, requests, every, wait_flash=True):
    """Quiet requests (noreply sets), `every` to a write, each write fenced
    by `mn` and its MN awaited: the server's writers (to RAM, to flash)
    keep up, as with a client that waits for its writes. With a flash tier
    the fence also waits (bounded) while more than FLASH_QUEUE_MAX
    segments wait for the device: MN says RAM took the sets, not that the
    flash writer did, and a disk slowed by other work would otherwise
    leave the fill to evict for want of a free write buffer (wait_flash
    False leaves the writer a backlog, for a test that wants one)."""
    flash = wait_flash
    for i in range(0, len(requests), every):
        conn.send(b"".join(requests[i:i + every]) + b"mn\r\n")
        assert conn.read_until(b"MN\r\n") == b"MN\r\n"
        deadline = time.monotonic() + 30
        while flash:
            queued = stats(conn).get("extstore_io_queue")
            flash = queued is not None
            if not flash or int(queued) <= FLASH_QUEUE_MAX or time.monotonic() > deadline:
                break
            time.sleep(0.005)


def get_value(c, key):
    """One key's value by a text get, or None on a miss."""
    line = c.call(b"get " + key)
    if line == b"END\r\n":
        return None
    n = int(line.split()[3])
    v = c.read_exact(n + 2)[:-2]
    assert c.readline() == b"END\r\n"
    return v
