# SPDX-License-Identifier: BSD-3-Clause
"""The event backend: io_uring by default where the kernel allows it,
`-o io_uring=off` for epoll, and a server that cannot set up a ring says so
in one line and serves on epoll (issue 15)."""
import errno
import os
import re
import socket
import stat
import subprocess
import time

import pytest

import helpers
from helpers import ServerError, stats, target

pytestmark = pytest.mark.skipif(target() == "memcached", reason="nodelay's own backends")

NORING = os.path.join(os.path.dirname(__file__), "noring.py")
UNAVAILABLE = "io_uring unavailable"


def backend(srv):
    """(stats' libevent, stats nodelay's event_backend). The EVENT=poll
    build has only poll: there is no backend to choose, so skip."""
    c = srv.connect()
    try:
        got = stats(c)["libevent"], stats(c, "nodelay")["event_backend"]
    finally:
        c.close()
    if got == ("poll", "poll"):
        pytest.skip("the EVENT=poll build has neither io_uring nor epoll")
    return got


def built_backends(server_bin):
    """The backends -V says this build has."""
    out = subprocess.run([server_bin, "-V"], capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"^event backends: (.+)$", out, re.M)
    assert m, out
    return m.group(1).split(", ")


def serves(srv):
    c = srv.connect()
    assert c.call("set eb 0 0 5\r\nhello") == b"STORED\r\n"
    assert c.call("get eb", until=b"END\r\n") == b"VALUE eb 0 5\r\nhello\r\nEND\r\n"
    c.close()


def refused_wrapper(tmp_path, server_bin, err):
    """A launcher that runs the server with io_uring_setup refused (-err)."""
    path = tmp_path / f"noring-{err}.sh"
    path.write_text(f'#!/bin/sh\nexec /usr/bin/python3 {NORING} {err} {server_bin} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_default_backend(start_server, server_bin):
    """io_uring unless the run asked for epoll, the build has no io_uring
    (-V says so) or the kernel refuses rings (then the one line says why)."""
    srv = start_server()
    libevent, nodelay_stat = backend(srv)
    assert libevent == nodelay_stat
    assert libevent in built_backends(server_bin)
    if "io_uring=off" in " ".join(helpers.EXTRA_ARGS):
        assert libevent == "epoll"
    elif "io_uring" not in built_backends(server_bin):
        assert libevent == "epoll"
        assert UNAVAILABLE not in srv.stderr()
    elif UNAVAILABLE in srv.stderr():
        assert libevent == "epoll"
    else:
        assert libevent == "io_uring"
    serves(srv)


def test_io_uring_off_is_epoll(start_server):
    srv = start_server("-o", "io_uring=off")
    assert backend(srv) == ("epoll", "epoll")
    assert UNAVAILABLE not in srv.stderr()
    serves(srv)


@pytest.mark.parametrize("err", [errno.ENOSYS, errno.EPERM])
def test_ring_refused_falls_back_to_epoll(start_server, server_bin, tmp_path, err):
    """Ring creation fails for real (a seccomp filter, as container
    runtimes' default policies, refuses io_uring_setup): one line, then
    the server runs on epoll."""
    srv = start_server("-o", "io_uring=on", binary=refused_wrapper(tmp_path, server_bin, err))
    assert backend(srv) == ("epoll", "epoll")
    serves(srv)
    lines = [l for l in srv.stderr().splitlines() if UNAVAILABLE in l]
    assert len(lines) == 1, srv.stderr()
    assert lines[0].startswith("nodelay: io_uring unavailable (")
    assert lines[0].endswith("), using epoll")
    if "not built with liburing" not in lines[0]:
        assert os.strerror(err) in lines[0]


def test_version_lists_the_backends(server_bin):
    """-V names the backends built: io_uring beside epoll with liburing,
    epoll alone without it, poll alone in the EVENT=poll build."""
    assert built_backends(server_bin) in (["io_uring", "epoll"], ["epoll"], ["poll"])


def stderr_once_it_says(srv, text):
    """The server's stderr once it holds text (start_server returns when the
    port takes connections, from listen(): the start-up lines come a moment
    later), or as it is after 10 s."""
    deadline = time.monotonic() + 10 * helpers.slow_factor()
    while text not in srv.stderr() and time.monotonic() < deadline:
        time.sleep(0.02)
    return srv.stderr()


def test_build_without_io_uring_says_so_once(start_server, server_bin):
    """A build without liburing (EVENT=poll, make URING=no) cannot have
    io_uring: -V says so and the -v start-up line says so; no "unavailable"
    line comes before it, which stays for a run that names -o io_uring=on
    and for a liburing build falling back at run time."""
    if "io_uring" in built_backends(server_bin):
        pytest.skip("this build has io_uring (the EVENT=poll run checks a build without it)")
    # the -v line is printed after the workers start, so after any
    # "unavailable" line core_start would print
    err = stderr_once_it_says(start_server("-v"), "worker threads")
    assert "(this build has no io_uring: no liburing)" in err, err
    assert UNAVAILABLE not in err
    err = stderr_once_it_says(start_server("-o", "io_uring=on"), UNAVAILABLE)
    lines = [l for l in err.splitlines() if UNAVAILABLE in l]
    assert lines == ["nodelay: io_uring unavailable (not built with liburing), using "
                     + built_backends(server_bin)[0]], err


def test_bad_value_refused(start_server):
    with pytest.raises(ServerError):
        start_server("-o", "io_uring=maybe")



def memlock_wrapper(tmp_path, server_bin, limit):
    """A launcher that runs the server with RLIMIT_MEMLOCK at `limit` bytes."""
    path = tmp_path / "memlock.sh"
    path.write_text(f'#!/bin/sh\nexec prlimit --memlock={limit}:{limit} {server_bin} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_worker_ring_refused_after_the_probe_falls_back(start_server, server_bin, tmp_path):
    """io_uring's rings are charged to the locked-memory limit, which every
    process of the user shares: the probe's small ring may pass and a
    worker's ring then fail (at 64 KiB here, worker 0; at Debian's default 8 MiB, about
    the 33rd ring). The server must run every worker on epoll, saying so
    once, rather than exit."""
    # as nobody: root's CAP_IPC_LOCK is exempt from the charge
    srv = start_server("-u", "nobody", "-t", "4", "-o", "io_uring=on",
                       binary=memlock_wrapper(tmp_path, server_bin, 64 << 10))
    assert backend(srv) == ("epoll", "epoll")
    lines = [l for l in srv.stderr().splitlines() if UNAVAILABLE in l]
    assert len(lines) == 1, srv.stderr()
    assert lines[0].endswith("), using epoll")
    c = srv.connect()
    assert stats(c)["threads"] == "4"
    c.close()
    serves(srv)


def test_closed_sockets_leave_the_ring_file_table(start_server):
    """On io_uring a connection's socket sits in the ring's file table from
    its first receive; closing must take it out (else the table's reference
    keeps the socket open: no EOF for the client), and the next connection
    given the same descriptor number must be served through its own socket,
    not the old one's slot. Quit, then reconnect, many times over, beside a
    connection that stays open; on epoll the same holds trivially."""
    srv = start_server("-t", "1")
    backend(srv)
    keep = srv.connect()
    assert keep.call("set keep 0 0 1\r\nk") == b"STORED\r\n"
    for i in range(40):
        c = srv.connect()
        value = f"v{i}"
        assert c.call(f"set fd{i} 0 0 {len(value)}\r\n{value}") == b"STORED\r\n"
        assert c.call(f"get fd{i}", until=b"END\r\n") == \
            f"VALUE fd{i} 0 {len(value)}\r\n{value}\r\nEND\r\n".encode()
        c.send("quit\r\n")
        assert c.closed_by_peer(), f"round {i}: no EOF after quit"
        c.close()
        assert keep.call("get keep", until=b"END\r\n") == b"VALUE keep 0 1\r\nk\r\nEND\r\n"
    st = stats(keep)
    assert int(st["curr_connections"]) <= 3, st["curr_connections"]
    keep.close()


def ring_files(pid):
    """The sockets in the server's rings' file tables, from each ring's
    /proc fdinfo (its `UserFiles:` list: one `slot: socket:[inode]` line
    per registered file); None when no ring shows one."""
    found = None
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if "io_uring" not in os.readlink(f"/proc/{pid}/fd/{fd}"):
                continue
            info = open(f"/proc/{pid}/fdinfo/{fd}").read()
        except OSError:
            continue
        if "UserFiles:" not in info:
            continue
        block = info.split("UserFiles:", 1)[1].split("UserBufs:", 1)[0]
        files = [line.split(":", 1)[1].strip() for line in block.splitlines()[1:]
                 if line.strip()[:1].isdigit()]
        found = (found or []) + files
    return found


def test_ring_file_table_holds_exactly_the_open_connections(start_server):
    """Registered files, seen from the kernel's side: once each client has
    made a request its socket is in the worker's file table, and once they
    have gone the table is empty again (a slot left behind would keep that
    socket open)."""
    srv = start_server("-t", "1")
    if backend(srv)[0] != "io_uring":
        pytest.skip("not on io_uring")
    conns = [srv.connect() for _ in range(3)]
    for c in conns:
        assert c.call("version").startswith(b"VERSION ")
    files = ring_files(srv.proc.pid)
    if files is None:
        pytest.skip("this kernel's io_uring fdinfo lists no registered files")
    assert len(files) == 3 and all(f.startswith("socket:") for f in files), files
    for c in conns[1:]:
        c.close()
    deadline = time.monotonic() + 5 * helpers.slow_factor()
    while len(ring_files(srv.proc.pid)) != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(ring_files(srv.proc.pid)) == 1, ring_files(srv.proc.pid)
    conns[0].close()
    while ring_files(srv.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ring_files(srv.proc.pid) == []


@pytest.mark.parametrize("size", [5000, 100_000, 900_000])
def test_value_in_one_write_with_requests_behind_it(start_server, size):
    """An idle connection's receive on io_uring is multishot into 2 KiB
    buffers: a set, its value and the requests after it sent in one write
    reach the server as a burst of small receives, of which all but the
    first come after the connection stopped being idle (a value to fill).
    Those are kept and handed over in order: every reply must come, right."""
    srv = start_server("-t", "1")
    c = srv.connect()
    value = bytes(i % 251 for i in range(size))
    c.send(b"set big 0 0 %d\r\n%s\r\nget big\r\nset small 0 0 2\r\nok\r\nget small\r\n"
           % (size, value))
    assert c.readline() == b"STORED\r\n"
    assert c.readline() == b"VALUE big 0 %d\r\n" % size
    assert c.read_exact(size + 2) == value + b"\r\n"
    assert c.readline() == b"END\r\n"
    assert c.readline() == b"STORED\r\n"
    assert c.read_until(b"END\r\n") == b"VALUE small 0 2\r\nok\r\nEND\r\n"
    c.close()


def test_eof_behind_a_burst_answers_what_came_first(start_server):
    """The client's EOF right behind a value and requests sent in one write
    (the multishot receive's last event may carry it while earlier bytes are
    still kept): every complete request is answered, then the close."""
    srv = start_server("-t", "1")
    c = srv.connect()
    value = b"e" * 300_000
    c.send(b"set eofv 0 0 %d\r\n%s\r\nget eofv\r\n" % (len(value), value))
    c.sock.shutdown(socket.SHUT_WR)
    assert c.readline() == b"STORED\r\n"
    assert c.readline() == b"VALUE eofv 0 %d\r\n" % len(value)
    assert c.read_exact(len(value) + 2) == value + b"\r\n"
    assert c.readline() == b"END\r\n"
    assert c.closed_by_peer()
    c.close()


def test_set_in_one_write_takes_at_most_two_receives(start_server):
    """Each receive on io_uring waits for a whole turn of the worker's other
    connections (10 ms and more on a loaded host). An idle connection's
    receive takes 2 KiB; the rest of a 4-16 KB value sent in one write was
    read in two more (2 KiB a turn, or straight into the value and then its
    "\\r\\n" alone): three turns, the soak's isolated 40 ms sets. The rest is
    queued already, so it comes in one receive with its "\\r\\n": read_calls
    counts at most two per set (epoll: one)."""
    srv = start_server("-t", "1")
    if srv.is_memcached:
        pytest.skip("read_calls is nodelay's")
    c = srv.connect()

    def reads():
        return int(stats(c, "nodelay")["read_calls"])

    for size in (4100, 5000, 6500, 7900, 15000):
        a = reads()
        b = reads()  # a stats request's own receives: b - a
        c.send(b"set w%d 0 0 %d\r\n%s\r\n" % (size, size, b"w" * size))
        assert c.readline() == b"STORED\r\n"
        took = reads() - b - (b - a)
        assert took <= 2, f"a {size}-byte set sent in one write took {took} receives"
        assert c.call(f"get w{size}", until=b"END\r\n") == \
            b"VALUE w%d 0 %d\r\n%s\r\nEND\r\n" % (size, size, b"w" * size)
    c.close()


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def multishot_counts(c):
    s = stats(c, "nodelay")
    return int(s["multishot_receives"]), int(s["read_calls"])


def multishot_server(start_server, *args):
    """A one-worker server on io_uring whose kernel can bound a multishot
    receive (Linux 6.17+); skip where either is not so."""
    srv = start_server("-t", "1", *args)
    if backend(srv)[1] != "io_uring":
        pytest.skip("multishot receives are io_uring's")
    c = srv.connect()
    assert c.call("version").startswith(b"VERSION")
    if multishot_counts(c)[0] == 0 and "io_uring_multishot=off" not in " ".join(args):
        pytest.skip("this kernel cannot bound a multishot receive: one-shot receives only")
    c.close()
    return srv


@pytest.mark.parametrize("multishot", ["on", "off"])
def test_one_multishot_receive_serves_many_requests(start_server, multishot):
    """An idle connection's receive stays started across its requests: 100
    gets of 7 bytes, sent one at a time, are 100 reads served by at most
    two multishot starts (one ends by itself after 2 KiB); with
    -o io_uring_multishot=off every receive is one-shot."""
    srv = multishot_server(start_server, "-o", f"io_uring_multishot={multishot}")
    c = srv.connect()
    assert c.call("set k 0 0 1\r\nx") == b"STORED\r\n"
    starts0, reads0 = multishot_counts(c)
    for _ in range(100):
        assert c.call("get k", until=b"END\r\n") == b"VALUE k 0 1\r\nx\r\nEND\r\n"
    starts, reads = multishot_counts(c)
    assert reads - reads0 >= 101
    if multishot == "on":
        assert starts >= 1 and starts - starts0 <= 2, \
            f"{starts - starts0} multishot starts for 100 requests"
    else:
        assert starts == 0
    c.close()


def test_non_readers_on_multishot_stay_within_the_bound(start_server):
    """200 connections whose receives are multishot (asserted) send bursts
    of gets, each burst under one provided buffer and its replies far over
    their allowance, and never read. A receive that stays started must not
    hand them bytes outside the bound: what it delivers is run or kept in
    the connection's read buffer (multishot_kept_bytes, when a burst comes
    before a stop lands), so `stats` owed bytes stay within -o
    client_mem_limit plus the README's 48 KiB per connection, RSS within
    the formula, and all of it goes when they leave."""
    bound = 8
    srv = multishot_server(start_server, "-m", "64", "-o", f"client_mem_limit={bound}")
    c = srv.connect()
    assert c.call("set s 0 0 500\r\n" + "s" * 500) == b"STORED\r\n"
    starts0, _ = multishot_counts(c)
    base = rss_mib(srv.proc.pid)
    n = 200
    socks = []
    burst = b"get s s s s s s s s s s\r\n" * 80  # 1,920 bytes: under one buffer
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        socks.append(s)
    peak, peak_rss = 0, 0.0
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        for s in socks:
            s.setblocking(False)
            try:
                s.send(burst)
            except BlockingIOError:
                pass
        st = stats(c)
        peak = max(peak, int(st["response_obj_bytes"]) + int(st["read_buf_bytes"]))
        peak_rss = max(peak_rss, rss_mib(srv.proc.pid))
        time.sleep(0.01)
    starts, _ = multishot_counts(c)
    kept = int(stats(c, "nodelay")["multishot_kept_bytes"])
    print(f"owed peak {peak / 2**20:.1f} MiB, multishot starts {starts - starts0}, kept {kept} B")
    assert starts - starts0 >= n, "the non-readers' receives were not multishot"
    assert peak <= bound * 2**20 + (n + 1) * 48 * 1024, f"owed {peak / 2**20:.1f} MiB"
    assert peak > bound * 2**20 / 2, "the attack did not reach the bound"
    if helpers.slow_factor() == 1:  # ASan's shadow memory is not ours
        # -m is not touched (one item): RSS <= bound + 48 KiB x connections + fixed
        assert peak_rss - base <= bound + (n + 1) * 48 / 1024 + 24, \
            f"RSS {base:.0f} -> {peak_rss:.0f} MiB"
    for s in socks:
        s.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        st = stats(c)
        if int(st["response_obj_bytes"]) + int(st["read_buf_bytes"]) < 2**20:
            break
        time.sleep(0.1)
    st = stats(c)
    assert int(st["response_obj_bytes"]) + int(st["read_buf_bytes"]) < 2**20
    c.close()
