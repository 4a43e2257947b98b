# SPDX-License-Identifier: BSD-3-Clause
"""Deploying like memcached (issue 10): the pid file (foreground, -d, after
-u), -k's fallback, readiness for systemd's Type=notify, and -d under
systemd. `make install`, the unit and the Debian package: further below."""
import os
import pathlib
import pwd
import re
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


@pytest.mark.parametrize("failure", ["port taken", "no -Y file"])
def test_pidfile_removed_when_startup_fails(start_server, server_bin, tmp_path, failure):
    """A start-up that fails leaves no pid file behind."""
    first = start_server()
    path = tmp_path / "second.pid"
    if failure == "port taken":
        flags = ["-p", str(first.port)]
    else:
        flags = ["-p", "0", "-Y", str(tmp_path / "missing")]
    r = subprocess.run([server_bin, *flags, "-U", "0", "-l", "127.0.0.1",
                        *root_flags(), "-P", str(path)], capture_output=True, text=True,
                       timeout=10 * helpers.slow_factor())
    assert r.returncode != 0, r.stderr
    assert not path.exists(), "a failed start-up left its pid file"


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
    for mark in helpers.SANITIZER_MARKS:
        assert mark not in log.read_text(), log.read_text()[-3000:]


def run_daemon(server_bin, port, *flags):
    """`nodelay -d` as an init script runs it: returns when the command does."""
    return subprocess.run([server_bin, "-p", str(port), "-U", "0", "-l", "127.0.0.1",
                           *root_flags(), "-d", *flags], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30 * helpers.slow_factor())


@pytest.mark.parametrize("how", ["--logfile", "config logfile"])
def test_daemon_logfile_unopenable(server_bin, tmp_path, how):
    """-d with a logfile it cannot open (a config's `logfile` line, or
    --logfile): the command names the file and fails, rather than exiting 0
    with no server."""
    port = helpers.free_port()
    logfile = tmp_path / "no-such-dir" / "nodelay.log"
    if how == "--logfile":
        flags = ["--logfile", str(logfile)]
    else:
        conf = tmp_path / "nodelay.conf"
        conf.write_text(f"-m 64\nlogfile {logfile}\n")
        flags = ["--config", str(conf)]
    r = run_daemon(server_bin, port, *flags)
    assert r.returncode != 0, f"exit 0 with no server: {r.stderr}"
    assert f"cannot open the logfile {logfile}: No such file or directory" in r.stderr, r.stderr
    assert not answers_version(port)


@pytest.mark.parametrize("verbose", [False, True])
def test_daemon_failure_after_fork_reported(start_server, server_bin, tmp_path, verbose):
    """A failure after the fork (the port is taken): the command waits for
    the server's readiness, so it returns the server's status, not 0, and
    says where the server's messages went."""
    taken = start_server().port
    r = run_daemon(server_bin, taken, *(["-v"] if verbose else []))
    assert r.returncode == 71, (r.returncode, r.stderr)
    assert "the server exited with status 71 before it was ready" in r.stderr, r.stderr
    if verbose:  # -v keeps stderr: the server's own line is there too
        assert "failed to listen on TCP port" in r.stderr, r.stderr
    else:
        assert "run it with -v, or without -d, to see why" in r.stderr, r.stderr
    logfile = tmp_path / "d.log"
    r = run_daemon(server_bin, taken, "--logfile", str(logfile))
    assert r.returncode == 71 and f"its messages are in {logfile}" in r.stderr, r.stderr
    assert "failed to listen on TCP port" in logfile.read_text()


def test_daemon_returns_once_ready(server_bin, tmp_path):
    """-d that succeeds: exit 0, and the server answers at once (the
    command waited for it), its output appended to the logfile."""
    port = helpers.free_port()
    pidfile, logfile = tmp_path / "d.pid", tmp_path / "d.log"
    logfile.write_text("earlier\n")
    r = run_daemon(server_bin, port, "-v", "-P", str(pidfile), "--logfile", str(logfile))
    assert r.returncode == 0, r.stderr
    pid = read_pid(pidfile)
    assert pid, "no pid file when -d returned"
    try:
        assert answers_version(port), "-d returned before the server answered"
        assert logfile.read_text().startswith("earlier\n")
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_for(lambda: gone(pid), what="the daemon to exit")


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


def spawn(server_bin, tmp_path, *flags, wrapper=(), env=None):
    """A server on a free loopback port, started as given (after `wrapper`,
    e.g. prlimit) rather than through Server; its output goes to a log.
    Returns (process, port, log path)."""
    port = helpers.free_port()
    log = tmp_path / f"server-{port}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([*wrapper, server_bin, "-p", str(port), "-U", "0",
                                 "-l", "127.0.0.1", *flags], env=env, stdout=err, stderr=err,
                                stdin=subprocess.DEVNULL)
    return proc, port, log


def start_limited(server_bin, tmp_path, memlock, *flags):
    """A server under a memlock limit of `memlock` bytes (prlimit(1)), or
    under this process's limit when memlock is None."""
    limit = ["prlimit", f"--memlock={memlock}:{memlock}"] if memlock else []
    return spawn(server_bin, tmp_path, *flags, wrapper=limit)


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
def notify_socket():
    """systemd's notification socket, in the abstract namespace (sd_notify
    takes "@name"), so a server that dropped to another user reaches it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"nodelay-test-notify-{os.getpid()}-{id(s)}"
    s.bind("\0" + name)
    s.settimeout(10 * helpers.slow_factor())
    yield s, "@" + name
    s.close()


def test_notify_ready_after_listeners(server_bin, tmp_path, notify_socket):
    """Type=notify: READY=1 arrives once the port accepts; STOPPING=1 at stop."""
    if not built_with_systemd(server_bin):
        pytest.skip("built without libsystemd (no pkg-config libsystemd): sends no readiness")
    s, path = notify_socket
    proc, port, log = spawn(server_bin, tmp_path, *root_flags(),
                            env=dict(os.environ, NOTIFY_SOCKET=path))
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
    proc, port, log = spawn(server_bin, tmp_path, *root_flags(), "-d", "-v",
                            env=dict(os.environ, NOTIFY_SOCKET=path))
    try:
        wait_for(lambda: answers_version(port) or proc.poll() is not None, what="start")
        assert proc.poll() is None, "forked away from systemd"
        assert "-d ignored: started by systemd" in log.read_text()
    finally:
        stop_proc(proc, log)


# ---- make install, the systemd unit ------------------------------------------

def build_vars(server_bin):
    """CONFIG= and EVENT= of the build that made server_bin, so `make install`
    installs that binary without building another."""
    parts = os.path.relpath(server_bin, os.path.join(ROOT, "build")).split(os.sep)
    if len(parts) != 2 or "-" not in parts[0] or parts[1] != "nodelay":
        pytest.skip(f"{server_bin} is not a build/<config>-<event>/nodelay of this tree")
    config, event = parts[0].split("-", 1)
    return [f"CONFIG={config}", f"EVENT={event}"]


def make_install(server_bin, *assignments):
    r = subprocess.run(["make", "-s", "-C", ROOT, "install", *build_vars(server_bin),
                        *assignments], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_make_install_destdir(server_bin, tmp_path):
    dest = tmp_path / "dest"
    make_install(server_bin, f"DESTDIR={dest}", "PREFIX=/usr")
    files = {str(p.relative_to(dest)): p for p in dest.rglob("*") if p.is_file()}
    assert sorted(files) == ["etc/nodelay.conf", "usr/bin/nodelay",
                             "usr/lib/systemd/system/nodelay.service",
                             "usr/lib/systemd/system/nodelay@.service",
                             "usr/lib/sysusers.d/nodelay.conf",
                             "usr/lib/tmpfiles.d/nodelay.conf",
                             "usr/share/doc/nodelay/LICENSE",
                             "usr/share/man/man1/nodelay.1"]
    binary = files["usr/bin/nodelay"]
    assert os.stat(binary).st_mode & 0o777 == 0o755
    with open(binary, "rb") as a, open(server_bin, "rb") as b:
        assert a.read() == b.read(), "installed binary is not the build's"
    unit = files["usr/lib/systemd/system/nodelay.service"].read_text()
    assert "ExecStart=/usr/bin/nodelay --config /etc/nodelay.conf\n" in unit
    assert not re.search(r"@[A-Z]+@", unit), "a placeholder is left in the unit"
    assert "Type=notify" in unit and "User=nodelay" in unit
    template = files["usr/lib/systemd/system/nodelay@.service"].read_text()
    assert "ExecStart=/usr/bin/nodelay --config /etc/nodelay_%i.conf\n" in template
    assert not re.search(r"@[A-Z]+@", template), "a placeholder is left in the template"
    assert files["usr/share/man/man1/nodelay.1"].read_text().startswith(".TH NODELAY 1")
    assert "d /run/nodelay 0755 nodelay nodelay" in files["usr/lib/tmpfiles.d/nodelay.conf"].read_text()
    assert files["usr/lib/sysusers.d/nodelay.conf"].read_text().count("\nu nodelay ") == 1
    # memcached.conf's format: comments, blank lines, and one flag per line
    conf = files["etc/nodelay.conf"].read_text().splitlines()
    flags = [l for l in conf if l.strip() and not l.lstrip().startswith("#")]
    assert flags and all(l.startswith("-") for l in flags), flags
    assert "-l 127.0.0.1" in flags
    r = subprocess.run([str(binary), "-V"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 0 and "nodelay" in r.stdout + r.stderr

    # a second install keeps the operator's config
    files["etc/nodelay.conf"].write_text("-m 128\n")
    out = make_install(server_bin, f"DESTDIR={dest}", "PREFIX=/usr").stdout
    assert files["etc/nodelay.conf"].read_text() == "-m 128\n"
    assert "keeping" in out


def test_make_install_prefix(server_bin, tmp_path):
    """PREFIX=/usr/local (the default) puts the config under PREFIX/etc, and
    the unit names both."""
    dest = tmp_path / "dest"
    make_install(server_bin, f"DESTDIR={dest}")
    unit = (dest / "usr/local/lib/systemd/system/nodelay.service").read_text()
    assert "ExecStart=/usr/local/bin/nodelay --config /usr/local/etc/nodelay.conf\n" in unit
    template = (dest / "usr/local/lib/systemd/system/nodelay@.service").read_text()
    assert "ExecStart=/usr/local/bin/nodelay --config /usr/local/etc/nodelay_%i.conf\n" in template
    assert (dest / "usr/local/etc/nodelay.conf").is_file()
    assert (dest / "usr/local/share/man/man1/nodelay.1").is_file()


@pytest.fixture
def installed(server_bin, open_dir):
    """An installation whose paths are real (PREFIX=dir, no DESTDIR), so the
    unit's ExecStart can be verified and run as it stands, by any user."""
    prefix = pathlib.Path(open_dir) / "prefix"
    make_install(server_bin, f"PREFIX={prefix}")
    return prefix


def unit_exec_start(unit_path):
    with open(unit_path) as f:
        lines = [l.strip() for l in f if l.startswith("ExecStart=")]
    assert len(lines) == 1, lines
    return lines[0][len("ExecStart="):].split()


UNITS = ["nodelay.service", "nodelay@.service"]


def unit_directives(text):
    """(section, key, value) of each setting of a unit file, in order."""
    out, section = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key.strip(), value.strip()))
    return out


def unit_setting(directives, key):
    values = [v for _, k, v in directives if k == key]
    return values[-1] if values else None


def under(path, top):
    return os.path.commonpath([path, top]) == top


@pytest.mark.parametrize("unit_name", UNITS)
def test_unit_keeps_the_e_file(installed, unit_name):
    """The -e path the config names survives the unit's stop and start
    (else `systemctl restart` restores nothing): checked against what a
    systemd unit removes or hides at each run, and what it lets the
    service write."""
    unit = unit_directives((installed / "lib/systemd/system" / unit_name).read_text())
    conf = (installed / "etc/nodelay.conf").read_text()
    m = re.search(r"^#?\s*-e\s+(/\S+)\s*$", conf, re.M)
    assert m, "nodelay.conf names no -e path"
    path = m.group(1)
    yes = ("yes", "true", "1", "on")
    # RemoveIPC= deletes every file the service user owns under /dev/shm
    # (and /dev/mqueue), in every subdirectory, at each stop
    if (unit_setting(unit, "RemoveIPC") or "no") in yes:
        for top in ("/dev/shm", "/dev/mqueue"):
            assert not under(path, top), f"RemoveIPC=yes deletes -e {path} at every stop"
    # PrivateTmp= gives each run a new /tmp and /var/tmp
    if (unit_setting(unit, "PrivateTmp") or "no") in yes:
        for top in ("/tmp", "/var/tmp"):
            assert not under(path, top), f"PrivateTmp=yes loses -e {path} at every stop"
    # PrivateDevices= gives each run a new /dev, binding only /dev/shm (and
    # /dev/pts, /dev/mqueue) from the host
    if (unit_setting(unit, "PrivateDevices") or "no") in yes and under(path, "/dev"):
        assert under(path, "/dev/shm"), f"PrivateDevices=yes loses -e {path}"
    # RuntimeDirectory= is removed at stop unless preserved
    preserve = unit_setting(unit, "RuntimeDirectoryPreserve") or "no"
    for d in (unit_setting(unit, "RuntimeDirectory") or "").split():
        assert preserve in yes or not under(path, "/run/" + d), \
            f"RuntimeDirectory={d} is removed at every stop, with -e {path}"
    # ProtectSystem=strict leaves writable only the API file systems and
    # what the unit names
    if unit_setting(unit, "ProtectSystem") == "strict":
        writable = ["/dev", "/proc", "/sys"]
        writable += [p.lstrip("-") for _, k, v in unit if k == "ReadWritePaths" for p in v.split()]
        for key, top in (("RuntimeDirectory", "/run"), ("StateDirectory", "/var/lib"),
                         ("CacheDirectory", "/var/cache")):
            writable += [f"{top}/{d}" for d in (unit_setting(unit, key) or "").split()]
        assert any(under(path, w) for w in writable), \
            f"-e {path} is read-only under ProtectSystem=strict"
    # and on tmpfs, as the server asks (elsewhere it warns)
    assert under(path, "/dev/shm") or under(path, "/run"), path


def test_template_unit_is_the_service_per_instance(installed):
    """nodelay@NAME is nodelay.service reading /etc/nodelay_NAME.conf (as
    Debian's memcached@.service reads /etc/memcached_NAME.conf): the same
    settings otherwise, so the hardening cannot drift apart."""
    units = installed / "lib/systemd/system"
    single = unit_directives((units / "nodelay.service").read_text())
    template = unit_directives((units / "nodelay@.service").read_text())
    conf = installed / "etc"
    assert unit_setting(template, "ExecStart") == \
        f"{installed}/bin/nodelay --config {conf}/nodelay_%i.conf"
    assert "%i" in unit_setting(template, "Description")
    differ = {"ExecStart", "Description"}
    assert [d for d in single if d[1] not in differ] == \
        [d for d in template if d[1] not in differ]


def instance_unit(installed, tmp_path, name):
    """The template as systemd reads it for instance NAME: a file named
    nodelay@NAME.service (systemd-analyze verifies instances, not templates)."""
    unit = tmp_path / f"nodelay@{name}.service"
    shutil.copy(installed / "lib/systemd/system/nodelay@.service", unit)
    return unit


@pytest.mark.parametrize("unit_name", UNITS)
def test_unit_verifies(installed, tmp_path, unit_name):
    analyze = shutil.which("systemd-analyze")
    if not analyze:
        pytest.skip("systemd-analyze is absent (Debian package systemd; scripts/install-deps.sh)")
    if unit_name == "nodelay.service":
        unit = installed / "lib/systemd/system/nodelay.service"
    else:
        unit = instance_unit(installed, tmp_path, "b")
    # Documentation=man:nodelay(1) is checked with man(1): show it the page
    env = dict(os.environ, MANPATH=str(installed / "share/man"))
    r = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0 and not r.stderr.strip(), r.stdout + r.stderr
    # the hardening is in place (and still serves: test_unit_exec_start_serves):
    # systemd's exposure score at most 2.0 of 10 ("OK"; the threshold is in tenths)
    r = subprocess.run([analyze, "security", "--offline=yes", "--threshold=20", str(unit)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def supports_config(binary):
    r = subprocess.run([binary, "-h"], capture_output=True, text=True, timeout=10)
    return "--config" in r.stdout + r.stderr


DEBIAN_MEMCACHED_CONF = "/usr/share/memcached/memcached.conf.default"


@pytest.mark.parametrize("config", ["nodelay.conf", "Debian's memcached.conf", "instance"])
def test_unit_exec_start_serves(installed, tmp_path, notify_socket, config):
    """The unit's ExecStart, as systemd runs it: as an unprivileged user (the
    unit's User=nodelay; here nobody, when root), with NOTIFY_SOCKET
    (Type=notify); then ExecReload's SIGHUP, then systemctl stop's SIGTERM.
    With the packaged config, with Debian's /etc/memcached.conf copied
    over it unchanged (its -d, logfile, -u memcache and -P lines included)
    but for the port, so the test does not take 11211, and as the
    template's instance b, whose config is a copy as the operator makes."""
    if config == "instance":
        argv = [a.replace("%i", "b") for a in
                unit_exec_start(installed / "lib/systemd/system/nodelay@.service")]
        conf = installed / "etc/nodelay_b.conf"
        shutil.copy(installed / "etc/nodelay.conf", conf)
        assert argv[-1] == str(conf), argv
    else:
        argv = unit_exec_start(installed / "lib/systemd/system/nodelay.service")
        conf = installed / "etc/nodelay.conf"
    if not supports_config(argv[0]):
        pytest.skip("this server has no --config yet (issue 8.1's config reader)")
    if config == "Debian's memcached.conf":
        if not os.path.exists(DEBIAN_MEMCACHED_CONF):
            pytest.skip(f"{DEBIAN_MEMCACHED_CONF} is absent (Debian package memcached)")
        shutil.copy(DEBIAN_MEMCACHED_CONF, conf)
    port = helpers.free_port()
    text = conf.read_text().replace("\n-p 11211\n", f"\n-p {port}\n-U 0\n")
    assert f"-p {port}" in text
    conf.write_text(text)
    s, path = notify_socket
    user = []
    if os.geteuid() == 0 and nobody() and shutil.which("setpriv"):
        user = ["setpriv", f"--reuid={nobody().pw_uid}", f"--regid={nobody().pw_gid}",
                "--clear-groups"]
    log = tmp_path / "unit.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([*user, *argv], env=dict(os.environ, NOTIFY_SOCKET=path),
                                stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    try:
        if built_with_systemd(argv[0]):
            assert b"READY=1" in s.recv(4096).split(b"\n"), log.read_text()
        wait_for(lambda: answers_version(port) or proc.poll() is not None, what="start")
        assert proc.poll() is None, log.read_text()
        assert answers_version(port)
        proc.send_signal(signal.SIGHUP)  # ExecReload
        time.sleep(0.2)
        assert proc.poll() is None and answers_version(port), log.read_text()
    finally:
        stop_proc(proc, log)


# ---- optional libraries: auto for a user's make, required for the package ----

# Each optional library of the Makefile: its variable, pkg-config module and
# the flag its build adds.
FEATURES = [("URING", "liburing", "-luring"), ("MHD", "libmicrohttpd", "-lmicrohttpd"),
            ("SYSTEMD", "libsystemd", "-lsystemd")]


def make_dry_run(*assignments, env=None):
    """`make -n` of the default goal: the Makefile's feature checks run at
    parse time, so nothing is built."""
    return subprocess.run(["make", "-n", "-C", ROOT, *assignments], capture_output=True,
                          text=True, timeout=60, env=env)


@pytest.fixture
def pkg_config_without(tmp_path):
    """A PATH whose pkg-config finds nothing of the module asked for (as
    on a machine without its -dev package), and everything else as usual."""
    real = shutil.which("pkg-config")
    if not real:
        pytest.skip("pkg-config is absent")

    def env_for(module):
        d = tmp_path / f"without-{module}"
        d.mkdir()
        fake = d / "pkg-config"
        fake.write_text(f"#!/bin/sh\nfor a; do [ \"$a\" = {module} ] && exit 1; done\n"
                        f"exec {real} \"$@\"\n")
        fake.chmod(0o755)
        return dict(os.environ, PATH=f"{d}:{os.environ['PATH']}")
    return env_for


@pytest.mark.parametrize("var,module,flag", FEATURES)
def test_make_required_feature_fails_when_absent(pkg_config_without, var, module, flag):
    """VAR=yes means required: without the library the build stops and says
    which and how to get it, where auto (the default) builds without it."""
    env = pkg_config_without(module)
    r = make_dry_run(f"{var}=yes", env=env)
    assert r.returncode != 0, f"{var}=yes built without {module}:\n{r.stdout[-2000:]}"
    assert f"{var}=yes: pkg-config cannot find {module}" in r.stderr, r.stderr
    assert re.search(rf"apt-get install {module}\S*-dev", r.stderr), r.stderr
    r = make_dry_run(env=env)
    assert r.returncode == 0, r.stderr
    assert flag not in r.stdout, "auto linked a library pkg-config did not find"


@pytest.mark.parametrize("var,module,flag", FEATURES)
def test_make_required_feature_builds_when_present(var, module, flag):
    if subprocess.run(["pkg-config", "--exists", module]).returncode != 0:
        pytest.skip(f"pkg-config cannot find {module} here")
    r = make_dry_run(f"{var}=yes")
    assert r.returncode == 0, r.stderr
    assert flag in r.stdout


def test_make_feature_value_checked():
    r = make_dry_run("URING=maybe")
    assert r.returncode != 0 and "URING must be yes, auto or no" in r.stderr, r.stderr


def control_field(text, name):
    """One field of a deb822 paragraph, its continuation lines joined."""
    m = re.search(rf"^{name}:(.*(?:\n[ \t].*)*)", text, re.M)
    assert m, f"no {name} in debian/control"
    return " ".join(m.group(1).split())


def test_package_requires_every_feature_and_build_depends_on_it():
    """debian/rules passes VAR=yes for every optional library the Makefile
    has (so a package build can never quietly lose one), and debian/control
    build-depends on the -dev package of each, and of the libraries every
    build links."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        makefile = f.read()
    optional = set(re.findall(r"^(\w+) \?= auto$", makefile, re.M))
    assert optional >= {v for v, _, _ in FEATURES}, optional
    debs = dict(re.findall(r"^(\w+)_DEB := (\S+)$", makefile, re.M))
    with open(os.path.join(ROOT, "debian", "rules")) as f:
        rules = f.read()
    required = set(re.findall(r"\b(\w+)=yes\b", rules))
    assert optional <= required, f"debian/rules leaves {optional - required} to auto"
    with open(os.path.join(ROOT, "debian", "control")) as f:
        depends = {d.strip().split()[0]
                   for d in control_field(f.read(), "Build-Depends").split(",") if d.strip()}
    wanted = {debs[v] for v in optional} | {"pkg-config", "libxxhash-dev", "libssl-dev"}
    assert wanted <= depends, f"Build-Depends lacks {sorted(wanted - depends)}"


# ---- the Debian package -------------------------------------------------------

@pytest.fixture(scope="module")
def deb(server_bin, tmp_path_factory):
    """One `dpkg-buildpackage -us -uc -b` of a copy of this tree (it writes
    next to the source directory and into debian/), shared by the tests
    below. The package builds its own release binary, so it is built once,
    in the release run."""
    if "release" not in os.path.basename(os.path.dirname(server_bin)):
        pytest.skip("the package builds its own release binary: checked in the release run")
    for tool in ("dpkg-buildpackage", "dh", "dpkg-deb"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is absent (scripts/install-deps.sh installs dpkg-dev, debhelper)")
    top = tmp_path_factory.mktemp("deb")
    src = top / "nodelay-src"
    shutil.copytree(ROOT, src, symlinks=True,
                    ignore=shutil.ignore_patterns("build", ".git", "__pycache__", "*.pyc"))
    r = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "warning:" not in r.stdout + r.stderr, "the package's build has warnings"
    debs = sorted(top.glob("nodelay_*.deb"))
    assert len(debs) == 1, list(top.iterdir())
    return debs[0]


def deb_field(deb, field):
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


@pytest.mark.slow
def test_deb_contents(deb, tmp_path):
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                             check=True, timeout=30).stdout
    files = {l.split()[-1].lstrip(".") for l in listing.splitlines() if not l.startswith("d")}
    for want in ("/usr/bin/nodelay", "/lib/systemd/system/nodelay.service",
                 "/lib/systemd/system/nodelay@.service", "/etc/nodelay.conf",
                 "/usr/share/man/man1/nodelay.1.gz", "/usr/lib/tmpfiles.d/nodelay.conf",
                 "/usr/share/doc/nodelay/copyright"):
        assert want in files, f"{want} is not in the package:\n{listing}"
    assert "adduser" in deb_field(deb, "Depends")
    ctl = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(ctl)], check=True, timeout=30)
    assert (ctl / "conffiles").read_text().split() == ["/etc/nodelay.conf"]
    postinst = (ctl / "postinst").read_text()
    assert "adduser --system" in postinst and "nodelay" in postinst
    assert "deb-systemd-helper enable 'nodelay.service'" in postinst  # enabled on install
    tree = tmp_path / "tree"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True, timeout=30)
    unit = (tree / "lib/systemd/system/nodelay.service").read_text()
    assert "ExecStart=/usr/bin/nodelay --config /etc/nodelay.conf\n" in unit
    template = (tree / "lib/systemd/system/nodelay@.service").read_text()
    assert "ExecStart=/usr/bin/nodelay --config /etc/nodelay_%i.conf\n" in template
    r = subprocess.run([str(tree / "usr/bin/nodelay"), "-V"], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 0 and "nodelay" in r.stdout + r.stderr
    # built with every optional library (debian/rules requires them)
    assert "io_uring" in r.stdout + r.stderr, r.stdout + r.stderr
    depends = deb_field(deb, "Depends")
    for lib in ("liburing", "libmicrohttpd", "libsystemd"):
        assert lib in depends, f"the package does not link {lib}: {depends}"


@pytest.mark.slow
def test_deb_lintian(deb):
    lintian = shutil.which("lintian")
    if not lintian:
        pytest.skip("lintian is absent (scripts/install-deps.sh installs it)")
    r = subprocess.run([lintian, "--fail-on", "error", str(deb)], capture_output=True, text=True,
                       timeout=300)
    errors = [l for l in r.stdout.splitlines() if l.startswith("E:")]
    assert r.returncode == 0 and not errors, r.stdout + r.stderr
