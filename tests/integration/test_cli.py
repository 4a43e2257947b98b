# SPDX-License-Identifier: BSD-3-Clause
"""memcached's command line: help, version, errors, and flags that only
memcached's slab allocator uses (accepted, so init scripts keep working)."""
import os
import re
import subprocess

import pytest

from helpers import stats

# Every short flag of memcached 1.6 that -h must document (memcached-behaviour.md §4)
HELP_FLAGS = ["-p", "-U", "-s", "-a", "-A", "-l", "-d", "-r", "-u", "-m", "-M", "-c", "-k",
              "-v", "-h", "-V", "-t", "-R", "-C", "-b", "-B", "-I", "-F", "-X", "-Y", "-e",
              "-o", "-f", "-n", "-P", "-D", "-S", "-W", "-L"]


def run(server_bin, *args, timeout=10):
    argv = [server_bin, *args]
    if os.geteuid() == 0 and "-u" not in args and "--user" not in " ".join(args):
        argv += ["-u", "root"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def test_help_documents_every_flag(server_bin):
    r = run(server_bin, "-h")
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    missing = [f for f in HELP_FLAGS if not re.search(rf"(^|\s){re.escape(f)}[,\s=]", text, re.M)]
    assert not missing, f"-h does not document {missing}"
    for sub in ("idle_timeout", "hashpower"):
        assert sub in text, f"-h does not mention -o {sub}"


def test_version_flag(server_bin):
    r = run(server_bin, "-V")
    assert r.returncode == 0
    assert re.search(r"\d+\.\d+", r.stdout + r.stderr)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_licence_is_stated(server_bin):
    """-i names the licence that LICENSE and debian/copyright carry."""
    r = run(server_bin, "-i")
    assert r.returncode == 0, r.stderr
    assert "BSD 3-Clause" in r.stdout
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert f.readline().strip() == "BSD 3-Clause License"
    with open(os.path.join(ROOT, "debian", "copyright")) as f:
        assert "License: BSD-3-Clause" in f.read()


def test_every_source_file_has_an_spdx_line():
    """Each source file, script (by suffix or #! line) and installed packaging
    file names its licence in its first two lines."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout: cannot list the source files")
    wanted = re.compile(r"(\.(c|h|py|sh|mk|pl|rb|in)|Makefile)$|^packaging/")
    missing = []
    for name in files.stdout.split():
        if name.startswith(("tests/fuzz/corpus/", "bench/results/")):
            continue
        with open(os.path.join(ROOT, name), errors="replace") as f:
            head = f.readline() + f.readline()
        if not wanted.search(name) and not head.startswith("#!"):
            continue
        if "SPDX-License-Identifier: BSD-3-Clause" not in head:
            missing.append(name)
    assert not missing, f"no SPDX line: {missing}"


@pytest.mark.parametrize("args,exit_code,message", [
    (["-c", "0"], 1, "Maximum connections must be greater than 0"),
    (["-t", "0"], 1, "Number of threads must be greater than 0"),
    (["-B", "foo"], 64, "Invalid value for binding protocol"),
    (["-o", "bogus"], 1, 'Illegal suboption "bogus"'),
    (["-f", "1.0"], 1, "Factor must be greater than 1"),
    (["-I", "2000m"], 64, "Cannot set item size limit higher than 1/2 of memory max"),
    # memcached 1.6.45 sizes its item lock table by -t (10 .. 15) and refuses
    # a hash table no larger (checked against its binary: same text, exit 1)
    (["-t", "4", "-o", "hashpower=12"], 1,
     "Hash table power size (12) cannot be equal to or less than item lock table (12)\n"
     "Item lock table grows with `-t N` (worker threadcount)\n"
     "Hash table grows with `-o hashpower=N` \n"),
    (["-t", "64", "-o", "hashpower=15"], 1,
     "Hash table power size (15) cannot be equal to or less than item lock table (15)"),
    # memcached 1.6.18 and 1.6.45 refuse UDP beside either authentication: a
    # datagram has no session, and the guessing limit counts TCP peers only
    # (checked before the -Y file is read, as memcached does)
    (["-Y", "/nonexistent/auth", "-U", "11211"], 64,
     "Cannot use UDP with ascii authentication enabled (-U 0 to disable)\n"),
    (["-S", "-U", "11211"], 64,
     "ERROR: Cannot enable UDP while using binary SASL authentication.\n"),
    (["--bogus"], 1, None),
    (["-Q"], 1, None),
])
def test_bad_flags_fail_startup(server_bin, args, exit_code, message):
    r = run(server_bin, "-p", "0", *args)
    assert r.returncode == exit_code, (r.returncode, r.stderr)
    if message:
        assert message in r.stderr + r.stdout


def test_root_needs_user_flag(server_bin):
    if os.geteuid() != 0:
        pytest.skip("only meaningful as root")
    r = subprocess.run([server_bin, "-p", "0"], capture_output=True, text=True, timeout=10)
    assert r.returncode == 64
    assert "can't run as root without the -u switch" in r.stderr + r.stdout


def test_slab_allocator_flags_accepted(start_server):
    c = start_server("-f", "1.5", "-n", "64", "-o",
                     "slab_reassign,slab_automove=1,lru_crawler,lru_maintainer,hash_algorithm=murmur3,"
                     "hot_lru_pct=20,warm_lru_pct=40,no_inline_ascii_resp,modern",
                     "-o", "hashpower=16").connect()
    assert c.set("k", "v") == b"STORED\r\n"
    st = stats(c, "settings")
    assert st["growth_factor"] == "1.50"
    assert st["chunk_size"] == "64"
    assert st["hashpower_init"] == "16"


def test_flags_reported_in_stats_settings(start_server):
    c = start_server("-m", "100", "-c", "500", "-t", "3", "-R", "7", "-b", "512", "-I", "2m",
                     "-o", "idle_timeout=30", "-B", "ascii").connect()
    st = stats(c, "settings")
    assert st["maxbytes"] == str(100 * 1024 * 1024)
    assert st["maxconns"] == "500"
    assert st["num_threads"] == "3"
    assert st["reqs_per_event"] == "7"
    assert st["tcp_backlog"] == "512"
    assert st["item_size_max"] == str(2 * 1024 * 1024)
    assert st["idle_timeout"] == "30"
    assert st["binding_protocol"] == "ascii"


def test_verbose_logs_connections(start_server):
    srv = start_server("-vv")
    c = srv.connect()
    c.set("vk", "v")
    c.close()
    import time
    time.sleep(0.3)
    assert srv.stderr().strip(), "-vv logged nothing"
