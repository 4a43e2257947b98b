# SPDX-License-Identifier: BSD-3-Clause
"""The settings table over real processes: run-time changes shown by
`stats settings` (compared with memcached 1.6.45 when ../shared/ref has it),
--config files in memcached.conf's format, and the one start-up line per
accepted-but-inert option."""
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from helpers import Server, free_port, stats

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REF_DIR = os.environ.get("NODELAY_REF_DIR") or os.path.join(ROOT, "..", "shared", "ref")
REF_BIN = os.path.join(REF_DIR, "memcached-1.6.45")
DEBIAN_CONF = "/usr/share/memcached/memcached.conf.default"

# Every run-time command that changes a setting, and what it changes
# (memcached 1.6.45 shows each of these in `stats settings` afterwards).
RUNTIME_COMMANDS = [
    ("lru_crawler disable", {"lru_crawler": "no"}),
    ("lru_crawler enable", {"lru_crawler": "yes"}),
    ("slabs automove 2", {"slab_automove": "2"}),
    ("slabs automove 0", {"slab_automove": "0"}),
    ("slabs automove ratio 0.5", {"slab_automove_ratio": "0.50"}),
    ("slabs automove window 20", {"slab_automove_window": "20"}),
    ("verbosity 1", {"verbosity": "1"}),
    ("cache_memlimit 100", {"maxbytes": str(100 << 20)}),
    ("lru tune 10 30 0.5 3.0", {"hot_lru_pct": "10", "warm_lru_pct": "30",
                                "hot_max_factor": "0.50", "warm_max_factor": "3.00"}),
    ("lru mode flat", {"lru_segmented": "no"}),
    ("lru mode segmented", {"lru_segmented": "yes"}),
    ("lru temp_ttl 30", {"temp_lru": "yes", "temporary_ttl": "30"}),
    ("lru temp_ttl -1", {"temp_lru": "no"}),
    ("stats detail on", {"detail_enabled": "yes"}),
    ("stats detail off", {"detail_enabled": "no"}),
]


def apply_runtime(conn, settle=0.0):
    """Send every command, returning each reply and stats settings after it.
    memcached's crawler thread clears lru_crawler when it has stopped, a
    moment after `lru_crawler disable` answers: with settle, wait up to that
    long for the expected values before taking the snapshot."""
    seen = []
    for cmd, want in RUNTIME_COMMANDS:
        reply = conn.call(cmd)
        deadline = time.monotonic() + settle
        st = stats(conn, "settings")
        while any(st[k] != v for k, v in want.items()) and time.monotonic() < deadline:
            time.sleep(0.02)
            st = stats(conn, "settings")
        seen.append((cmd, reply, st))
    return seen


def test_runtime_changes_shown_in_stats_settings(start_server):
    c = start_server().connect()
    before = stats(c, "settings")
    for (cmd, reply, after), (_, want) in zip(apply_runtime(c), RUNTIME_COMMANDS):
        assert reply == b"OK\r\n", (cmd, reply)
        for k, v in want.items():
            assert after[k] == v, f"after {cmd!r}: {k} = {after[k]}, want {v}"
        changed = {k for k in after if after[k] != before.get(k)}
        assert changed <= set().union(*(w for _, w in RUNTIME_COMMANDS)), (cmd, changed)


def test_runtime_changes_match_memcached_1_6_45(start_server):
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {REF_BIN} (../shared/ref)")
    ours = apply_runtime(start_server().connect())
    ref = apply_runtime(start_server(binary=REF_BIN).connect(), settle=2.0)
    keys = set().union(*(w for _, w in RUNTIME_COMMANDS))
    for (cmd, r1, s1), (_, r2, s2) in zip(ours, ref):
        assert r1 == r2, (cmd, r1, r2)
        for k in keys:
            assert s1[k] == s2[k], f"after {cmd!r}: nodelay {k}={s1[k]}, memcached {s2[k]}"


def test_stats_settings_names_and_order_match_memcached_1_6_45(start_server):
    """Same names in the same order, the ext_* lines included."""
    if not os.access(REF_BIN, os.X_OK):
        pytest.skip(f"memcached 1.6.45 reference not found at {REF_BIN} (../shared/ref)")

    def names(srv):
        c = srv.connect()
        c.send(b"stats settings\r\n")
        text = c.read_until(b"END\r\n").decode()
        return [line.split(" ")[1] for line in text.splitlines() if line.startswith("STAT ")]

    ref = names(start_server(binary=REF_BIN))
    assert names(start_server()) == ref


# ---- --config FILE ---------------------------------------------------------

def run(server_bin, *args, timeout=10):
    argv = [server_bin, *args]
    if os.geteuid() == 0 and "-u" not in args:
        argv[1:1] = ["-u", "root"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def config_server(server_bin, tmp_path, text, *after):
    conf = tmp_path / "nodelay.conf"
    conf.write_text(text)
    port = free_port()
    flags = ["--config", str(conf), "-p", str(port), "-U", "0", *after]
    return Server(server_bin, flags, workdir=str(tmp_path), listen=False, port=port), conf


def test_config_file_good(server_bin, tmp_path):
    srv, _ = config_server(server_bin, tmp_path,
                           "# a comment\n\n-m 32\n  --conn-limit=77   # trailing comment\n"
                           "-l 127.0.0.1\n-o idle_timeout=30,hashpower=16\n-t 3\n-R 9\n"
                           "-c 55\n",
                           "-t", "2")
    srv.start()
    try:
        st = stats(srv.connect(), "settings")
        assert st["maxbytes"] == str(32 << 20)
        assert st["maxconns"] == "55"          # the later line wins
        assert st["idle_timeout"] == "30"
        assert st["hashpower_init"] == "16"
        assert st["reqs_per_event"] == "9"
        assert st["num_threads"] == "2"        # the command line after --config wins
        assert st["tcpport"] == str(srv.port)  # as does -p
    finally:
        srv.stop()


def test_config_file_bad_line_names_file_and_line(server_bin, tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("-m 64\n# fine\n-c 0\n")
    r = run(server_bin, "--config", str(conf), "-p", "0")
    assert r.returncode == 1, r.stderr
    assert r.stderr == f"nodelay: {conf}:3: Maximum connections must be greater than 0\n"


def test_config_file_unknown_flag_names_file_and_line(server_bin, tmp_path):
    conf = tmp_path / "unknown.conf"
    conf.write_text("-m 64\n--bogus-flag\n")
    r = run(server_bin, "--config", str(conf), "-p", "0")
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(f"nodelay: {conf}:2: unrecognized option '--bogus-flag'\n"), r.stderr
    conf.write_text("\n\n-o nosuch=1\n")
    r = run(server_bin, "--config", str(conf), "-p", "0")
    assert r.returncode == 1
    assert r.stderr == f"nodelay: {conf}:3: Illegal suboption \"nosuch=1\"\n"
    conf.write_text("-m 64\nfrobnicate yes\n")
    r = run(server_bin, "--config", str(conf), "-p", "0")
    assert r.returncode == 64
    assert f"nodelay: {conf}:2: unknown directive \"frobnicate\"" in r.stderr


def test_config_file_missing(server_bin, tmp_path):
    r = run(server_bin, "--config", str(tmp_path / "nope.conf"), "-p", "0")
    assert r.returncode == 64
    assert f"{tmp_path / 'nope.conf'}: No such file or directory" in r.stderr


def test_debian_memcached_conf_unchanged(server_bin, tmp_path):
    """Debian's own /etc/memcached.conf: -d, logfile, -m, -p, -u memcache, -l,
    -P. Started with it as is (command-line -p/-P/--logfile after it keep the
    test off the real port and paths), the server daemonises, writes its pid,
    logs to the logfile and serves."""
    if not os.path.exists(DEBIAN_CONF):
        pytest.skip(f"{DEBIAN_CONF} not installed (Debian's memcached package)")
    if os.geteuid() != 0:
        pytest.skip("the file says -u memcache: needs root")
    user = "memcache"
    try:
        import pwd
        pwd.getpwnam(user)
    except KeyError:
        pytest.skip("no memcache user")
    conf = tmp_path / "memcached.conf"
    shutil.copy(DEBIAN_CONF, conf)
    text = conf.read_text()
    for line in ("-d", "logfile /var/log/memcached.log", "-m 64", "-p 11211", "-u memcache",
                 "-l 127.0.0.1", "-P /var/run/memcached/memcached.pid"):
        assert line in text.splitlines(), f"Debian's file changed: no {line!r}"
    # -P is written after dropping to -u memcache, which cannot enter
    # pytest's private tmp_path
    rundir = Path(tempfile.mkdtemp(prefix="nodelay-conf-", dir="/tmp"))
    os.chmod(rundir, 0o777)
    pidfile, logfile = rundir / "nodelay.pid", rundir / "nodelay.log"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
    r = subprocess.run([server_bin, "--config", str(conf), "-p", str(port), "-U", "0",
                        "-P", str(pidfile), "--logfile", str(logfile), "-v"],
                       capture_output=True, text=True, timeout=10, env=env)
    assert r.returncode == 0, r.stderr  # the parent of the daemon
    pid = None
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (pidfile.exists() and pidfile.read_text()):
            time.sleep(0.02)
        pid = int(pidfile.read_text())
        srv = Server(server_bin, [], listen=False, port=port)
        c = None
        while c is None:  # the pid file is written before the listeners open
            try:
                c = srv.connect()
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        assert c.set("k", "v") == b"STORED\r\n"
        st = stats(c, "settings")
        assert st["maxbytes"] == str(64 << 20)
        assert st["inter"] == "127.0.0.1"
        assert st["tcpport"] == str(port)
        with open(f"/proc/{pid}/status") as f:
            uid = [l for l in f if l.startswith("Uid:")][0].split()[1]
        assert int(uid) == pwd.getpwnam(user).pw_uid
    finally:
        if pid:
            os.kill(pid, 15)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
                time.sleep(0.02)
    try:
        assert "nodelay" in logfile.read_text()  # -v's start-up line went to the logfile
    finally:
        shutil.rmtree(rundir, ignore_errors=True)


# ---- accepted-but-inert options --------------------------------------------

def notes(text):
    return [l for l in text.splitlines() if l.startswith("nodelay: -")]


def test_inert_options_named_once_at_startup(start_server, tmp_path):
    # a file of its own: a server locks its ext_path file, so a fixed name
    # would make two runs at once fail each other
    srv = start_server("-o", f"ext_path={tmp_path}/ext-note:64m,ext_max_sleep=8,"
                       "ext_recache_rate=8", "-f", "1.5", "-L", "-o", "slab_reassign",
                       "-o", "no_slab_reassign")
    srv.connect().close()
    got = notes(srv.stderr())
    assert not any(l.startswith("nodelay: -o ext_path") for l in got)  # the flash tier is on
    # the flash tier acts on them (docs/store-flash.md): no note
    assert not any(l.startswith("nodelay: -o ext_max_sleep") for l in got)
    assert not any(l.startswith("nodelay: -o ext_recache_rate") for l in got)
    assert any(l.startswith("nodelay: -f: ") for l in got)
    assert any(l.startswith("nodelay: -L: ") for l in got)
    assert any(l.startswith("nodelay: -o slab_reassign: ") for l in got)
    assert len(got) == len(set(got)) == 3, got  # one line each, however often given


def test_no_startup_notes_without_inert_options(start_server):
    srv = start_server("-m", "32", "-o", "idle_timeout=5,hashpower=16", "-t", "2")
    srv.connect().close()
    assert notes(srv.stderr()) == []


def test_tls_without_certificate_refused_as_memcached(server_bin):
    r = run(server_bin, "-Z", "-p", "0")
    assert r.returncode == 64
    assert "Error loading the certificate chain: (null) : " in r.stderr


def test_man_page(server_bin):
    r = run(server_bin, "--man")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(".TH NODELAY 1")
    for section in ("OPTIONS", "CONFIGURATION FILE", "STATISTICS", "DIFFERENCES FROM MEMCACHED"):
        assert f'.SH "{section}"' in r.stdout or f".SH {section}" in r.stdout, section
    if shutil.which("groff"):
        out = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=r.stdout,
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 0 and not out.stderr.strip(), out.stderr


def test_man_page_reference_sections(server_bin):
    """The sections a reader looks for in a server's manual, and the two
    option texts that once contradicted the code: segments do use huge
    pages, and reply_queue_limit cuts off only a client whose socket is
    full (a stalled one goes after 60 s whatever it owes)."""
    r = run(server_bin, "--man")
    assert r.returncode == 0, r.stderr
    page = r.stdout
    for section in ("ENVIRONMENT", "FILES", "SIGNALS", "EXIT STATUS", "EXAMPLES", "SEE ALSO",
                    "COPYRIGHT"):
        assert f'.SH "{section}"' in page or f".SH {section}\n" in page, section
    for needle in ("/etc/nodelay.conf", "nodelay@.service", "/run/nodelay", "/dev/shm/nodelay.mem",
                   "SIGTERM", "SIGINT", "SIGUSR1", "SIGHUP", "\\fB64\\fR", "\\fB71\\fR",
                   "\\-e /dev/shm/nodelay.mem", "\\-Z", "metrics_listen=",
                   ".BR memcached (1)", "BSD 3\\-Clause"):
        assert needle in page, needle
    assert "ordinary pages" not in page
    assert "transparent huge pages" in page
    rql = page[page.index("\\fBreply_queue_limit\\fR"):][:400]
    assert "60 s" in rql and "socket" in rql, rql
    if shutil.which("man"):
        # man(1) renders through groff with its own checks; --warnings
        # reports every one of them
        out = subprocess.run(["man", "--warnings", "-l", "-"], input=page, capture_output=True,
                             text=True, timeout=30, env=dict(os.environ, MANWIDTH="80",
                                                             MAN_DISABLE_SECCOMP="1"))
        assert out.returncode == 0 and not out.stderr.strip(), out.stderr
