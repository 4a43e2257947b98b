"""Deploying like memcached (issue 10): the pid file (foreground, -d, after
-u), -k's fallback, readiness for systemd's Type=notify, and -d under
systemd. `make install`, the unit and the Debian package: further below."""
import os
import pwd
import signal
import socket
import subprocess
import shutil
import tempfile
import time

import pytest

import helpers
from helpers import Server

ROOT = helpers.ROOT


def wait_for(pred, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout * helpers.slow_factor()
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def read_pid(path):
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    return int(text) if text.endswith("\n") else None


def answers_version(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"version\r\n")
            return s.recv(100).startswith(b"VERSION ")
    except OSError:
        return False


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def root_flags():
    return ["-u", "root"] if os.geteuid() == 0 else []


def built_with_systemd(binary):
    with open(binary, "rb") as f:
        return b"sd_notify" in f.read()


def test_pidfile_foreground(start_server, tmp_path):
    """memcached 1.6.45 writes -P without -d too; nodelay removes it at exit."""
    path = tmp_path / "fg.pid"
    srv = start_server("-P", str(path))
    assert read_pid(path) == srv.proc.pid
    assert not (tmp_path / "fg.pid.tmp").exists()
    srv.stop()
    assert not path.exists(), "the pid file is left after a clean exit"


def test_pidfile_daemon(server_bin, tmp_path):
    path = tmp_path / "d.pid"
    port = helpers.free_port()
    log = tmp_path / "d.log"
    with open(log, "wb") as err:
        r = subprocess.run([server_bin, "-p", str(port), "-U", "0", "-l", "127.0.0.1",
                            *root_flags(), "-d", "-v", "-P", str(path)],
                           stdout=err, stderr=err, timeout=10 * helpers.slow_factor())
    assert r.returncode == 0, log.read_text()
    pid = wait_for(lambda: read_pid(path), what="the daemon's pid file")
    try:
        wait_for(lambda: answers_version(port), what="the daemon to answer")
        with open(f"/proc/{pid}/status") as f:
            assert "nodelay" in f.read(100) or "memcached" in f.read()
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: gone(pid), what="the daemon to exit")
    assert not path.exists(), "the daemon left its pid file"
    helpers.Server.check_stderr(type("L", (), {"stderr": lambda self: log.read_text(),
                                               "binary": server_bin})())


def nobody():
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


@pytest.fixture
def open_dir():
    """A directory any user can reach (pytest's tmp_path sits under a 0700
    directory that -u nobody cannot traverse)."""
    d = tempfile.mkdtemp(prefix="nodelay-deploy-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0 or nobody() is None,
                    reason="-u needs root and a 'nobody' user")
def test_pidfile_after_user_drop(server_bin, open_dir):
    """Written after dropping to -u: it belongs to that user, who removes it at
    exit from a directory it may write to (as with tmpfiles.d's /run/nodelay)."""
    pw = nobody()
    run = os.path.join(open_dir, "run")
    os.mkdir(run)
    os.chown(run, pw.pw_uid, pw.pw_gid)
    path = os.path.join(run, "nodelay.pid")
    srv = Server(server_bin, ["-u", "nobody", "-P", str(path)], workdir=str(run))
    srv.start()
    try:
        st = os.stat(path)
        assert (st.st_uid, read_pid(path)) == (pw.pw_uid, srv.proc.pid)
    finally:
        srv.stop()
    assert not os.path.exists(path), "the pid file is left after the user's exit"


@pytest.mark.skipif(os.geteuid() != 0 or nobody() is None,
                    reason="-u needs root and a 'nobody' user")
def test_pidfile_unwritable_dir_reported(server_bin, open_dir):
    """A directory the -u user cannot write to: said at start-up, and the
    server still serves (memcached does the same)."""
    d = os.path.join(open_dir, "rootonly")
    os.mkdir(d, 0o755)
    srv = Server(server_bin, ["-u", "nobody", "-P", os.path.join(d, "x.pid")], workdir=open_dir)
    srv.start()
    try:
        assert answers_version(srv.port)
        assert "Could not open the pid file" in srv.stderr()
        assert "Permission denied" in srv.stderr()
        assert not os.path.exists(os.path.join(d, "x.pid"))
    finally:
        srv.stop()


def start_limited(server_bin, tmp_path, memlock, *flags):
    """A server under a memlock limit of `memlock` bytes (prlimit(1)), or
    under this process's limit when memlock is None."""
    port = helpers.free_port()
    log = tmp_path / f"k-{port}.log"
    err = open(log, "wb")
    limit = ["prlimit", f"--memlock={memlock}:{memlock}"] if memlock else []
    proc = subprocess.Popen([*limit, server_bin,
                             "-p", str(port), "-U", "0", "-l", "127.0.0.1", *flags],
                            stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    err.close()
    return proc, port, log


def stop_proc(proc, log):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    rc = proc.wait(10 * helpers.slow_factor())
    assert rc == 0, f"exit {rc}: {log.read_text()[-2000:]}"


def test_lock_memory_falls_back(server_bin, tmp_path):
    """-k under an 8 MB memlock limit (a non-root user's default): memcached's
    warning, and the server keeps running."""
    if "asan" in server_bin or "tsan" in server_bin:
        pytest.skip("the sanitizers intercept mlockall() and make it do nothing")
    user = ["-u", "nobody"] if os.geteuid() == 0 and nobody() else []
    proc, port, log = start_limited(server_bin, tmp_path, 8 << 20, *user, "-k")
    try:
        warning = "warning: -k invalid, mlockall() failed: "
        wait_for(lambda: warning in log.read_text() or proc.poll() is not None, what="-k")
        assert proc.poll() is None, f"exited {proc.returncode}: {log.read_text()}"
        assert warning in log.read_text()
        assert answers_version(port)
    finally:
        stop_proc(proc, log)


@pytest.mark.skipif(os.geteuid() != 0, reason="locking past the memlock limit needs root (CAP_IPC_LOCK)")
def test_lock_memory_locks(server_bin, tmp_path):
    if "asan" in server_bin or "tsan" in server_bin:
        pytest.skip("the sanitizers intercept mlockall() and make it do nothing")
    proc, port, log = start_limited(server_bin, tmp_path, None, "-u", "root", "-k",
                                    "-m", "8", "-t", "1")
    try:
        wait_for(lambda: answers_version(port), what="start")

        def locked_kb():
            with open(f"/proc/{proc.pid}/status") as f:
                return [int(l.split()[1]) for l in f if l.startswith("VmLck:")][0]

        # workers answer while main is still in mlockall(): wait for it
        wait_for(lambda: locked_kb() > 0, what="memory locked")
        assert "mlockall() failed" not in log.read_text()
    finally:
        stop_proc(proc, log)


@pytest.fixture
def notify_socket(tmp_path):
    path = str(tmp_path / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(10 * helpers.slow_factor())
    yield s, path
    s.close()


def test_notify_ready_after_listeners(server_bin, tmp_path, notify_socket):
    """Type=notify: READY=1 arrives once the port accepts; STOPPING=1 at stop."""
    if not built_with_systemd(server_bin):
        pytest.skip("built without libsystemd (no pkg-config libsystemd): sends no readiness")
    s, path = notify_socket
    port = helpers.free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path)
    log = tmp_path / "n.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([server_bin, "-p", str(port), "-U", "0", "-l", "127.0.0.1",
                                 *root_flags()], env=env, stdout=err, stderr=err)
    try:
        msg = s.recv(4096)
        assert b"READY=1" in msg.split(b"\n")
        # no retry: ready means the port already accepts
        assert answers_version(port)
    finally:
        stop_proc(proc, log)
    assert b"STOPPING=1" in s.recv(4096).split(b"\n")


def test_daemon_ignored_under_systemd(server_bin, tmp_path, notify_socket):
    """Debian's memcached.conf carries -d; under Type=notify the server must
    stay the process systemd started."""
    s, path = notify_socket
    port = helpers.free_port()
    env = dict(os.environ, NOTIFY_SOCKET=path)
    log = tmp_path / "d.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([server_bin, "-p", str(port), "-U", "0", "-l", "127.0.0.1",
                                 *root_flags(), "-d", "-v"], env=env, stdout=err, stderr=err)
    try:
        wait_for(lambda: answers_version(port) or proc.poll() is not None, what="start")
        assert proc.poll() is None, "forked away from systemd"
        assert "-d ignored: started by systemd" in log.read_text()
    finally:
        stop_proc(proc, log)
