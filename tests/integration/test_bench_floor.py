# SPDX-License-Identifier: BSD-3-Clause
"""bench/floor: the canned-reply server `make bench` measures as the I/O
floor. It must answer what the load generator sends, in order, on both of
its loops, or the floor rows of the report measure nothing."""
import os
import shutil
import socket
import subprocess
import time

import pytest

from helpers import ROOT, free_port

SRC = os.path.join(ROOT, "bench", "floor", "floor.c")
VLEN = 5


@pytest.fixture(scope="module")
def floor_bin(tmp_path_factory):
    if not os.path.exists("/usr/include/liburing.h"):
        pytest.skip("liburing-dev is not installed (scripts/install-deps.sh)")
    cc = shutil.which("cc") or shutil.which("gcc")
    out = str(tmp_path_factory.mktemp("floor") / "floor")
    subprocess.run([cc, "-O2", "-pthread", "-Wall", "-Wextra", "-Werror", "-o", out, SRC,
                    "-luring"], check=True)
    return out


# (loop, -n: distinct value buffers, as the 100 KiB floors run with 200)
@pytest.fixture(params=[("epoll", 1), ("uring", 1), ("epoll", 200), ("uring", 200)],
                ids=["epoll", "uring", "epoll-n200", "uring-n200"])
def floor(request, floor_bin):
    port = free_port()
    backend, nvalues = request.param
    p = subprocess.Popen([floor_bin, "-b", backend, "-p", str(port), "-v", str(VLEN),
                          "-n", str(nvalues)], stderr=subprocess.PIPE)
    deadline = time.time() + 5
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            if p.poll() is not None:
                err = p.stderr.read().decode()
                if backend == "uring":
                    pytest.skip(f"no io_uring here: {err.strip()}")
                pytest.fail(f"floor exited: {err}")
            if time.time() > deadline:
                p.kill()
                pytest.fail("floor did not listen")
            time.sleep(0.05)
    yield s
    s.close()
    p.kill()
    p.wait()


def read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, f"closed after {len(buf)} of {n} bytes"
        buf += chunk
    return buf


def hit(key):
    return b"VALUE %s 0 %d\r\n%s\r\n" % (key, VLEN, b"x" * VLEN)


def test_floor_answers_a_pipeline_in_order(floor):
    floor.sendall(b"get a bb\r\nset k 0 0 3\r\nabc\r\nbogus\r\nget c\r\n"
                  b"set q 0 0 1 noreply\r\nz\r\ngets d\r\n")
    want = (hit(b"a") + hit(b"bb") + b"END\r\n" + b"STORED\r\n" + b"ERROR\r\n"
            + hit(b"c") + b"END\r\n" + hit(b"d") + b"END\r\n")
    assert read_exact(floor, len(want)) == want


def test_floor_answers_more_than_one_turn_holds(floor):
    # 3,000 gets in one send: more than one turn's reply (its iovec and
    # header limits), so the rest is answered after the first reply leaves.
    n = 3000
    floor.sendall(b"".join(b"get k%d\r\n" % i for i in range(n)))
    want = b"".join(hit(b"k%d" % i) + b"END\r\n" for i in range(n))
    assert read_exact(floor, len(want)) == want


def test_floor_skips_a_large_value_sent_in_pieces(floor):
    value = b"v" * 300000
    data = b"set big 0 0 %d\r\n" % len(value) + value + b"\r\nget big\r\n"
    for i in range(0, len(data), 65536):
        floor.sendall(data[i:i + 65536])
    want = b"STORED\r\n" + hit(b"big") + b"END\r\n"
    assert read_exact(floor, len(want)) == want
