# SPDX-License-Identifier: BSD-3-Clause
"""A batch of pipelined requests sent in one write is answered in one send:
one TCP segment on loopback, on every backend. io_uring's first receive of
an idle connection takes 2 KiB (the loop's buffer) where a read on epoll
takes 16: the replies of a larger batch must wait for the receive that takes
its queued rest, not leave in two sends. Two segments for one batch leave
the second waiting on the first's send, and a client still owed a reply
sends no ACK, so the server probes for it (a tail-loss probe, 10-20 ms
later). Counted by the client's TCP_INFO (data segments received), not
timed. A batch of exactly 2 KiB, whose rest receive finds nothing, is
answered at once (the replies never wait on the client); one of 160 gets
runs over several -R turns and is still answered in one send."""
import socket
import struct

import pytest

from helpers import stats, target

pytestmark = pytest.mark.skipif(target() == "memcached", reason="nodelay's own backends")

BACKENDS = {"default": (), "epoll": ("-o", "io_uring=off")}
ROUNDS = 20
# struct tcp_info (linux/tcp.h): tcpi_data_segs_in, a __u32 at byte 152
DATA_SEGS_IN = 152


def data_segs_in(sock):
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(info) < DATA_SEGS_IN + 4:
        pytest.skip("TCP_INFO without tcpi_data_segs_in")
    return struct.unpack_from("I", info, DATA_SEGS_IN)[0]


def sets(first, n, vlen):
    return b"".join(b"set seg:%04d 0 0 %d\r\n%s\r\n" % (first + i, vlen, b"v" * vlen)
                    for i in range(n))


def exact_batch(size):
    """Whole sets of 100-byte values and a last one of another size, size
    bytes in all; and how many."""
    n = size // len(sets(0, 1, 100)) - 1
    out = sets(0, n, 100)
    for v in range(1, 1000):
        last = sets(99, 1, v)
        if len(out) + len(last) == size:
            return out + last, n + 1
    raise AssertionError("no exact batch")


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_batch_replies_leave_in_one_segment(start_server, backend):
    srv = start_server("-t", "1", *BACKENDS[backend])
    c = srv.connect()
    assert stats(c, "nodelay")["event_backend"] in ("io_uring", "epoll", "poll")
    over = sets(0, 17, 100)  # 2108 bytes: over the ring's 2 KiB receive
    exact, n_exact = exact_batch(2048)
    assert len(over) > 2048 and len(exact) == 2048
    # 160 gets over 8 -R turns, mostly misses: 2 KiB of replies
    gets = b"".join(b"get %s:%04d\r\n" % (b"seg" if i % 16 == 0 else b"nil", i % 17)
                    for i in range(160))
    want_get = b"".join(b"VALUE seg:%04d 0 100\r\n%s\r\nEND\r\n" % (i % 17, b"v" * 100)
                        if i % 16 == 0 else b"END\r\n" for i in range(160))
    batches = [(over, b"STORED\r\n" * 17), (exact, b"STORED\r\n" * n_exact), (gets, want_get)]
    # a fresh connection's first segments are ACKed at once by the kernel;
    # the batches below meet it once it delays ACKs
    for _ in range(20):
        assert c.call("version").startswith(b"VERSION")
    segs = 0
    for r in range(ROUNDS):
        for batch, want in batches:
            before = data_segs_in(c.sock)
            c.send(batch)
            assert c.read_exact(len(want)) == want
            segs += data_segs_in(c.sock) - before
    n = ROUNDS * len(batches)
    assert segs <= n + n // 10, (f"{segs} segments for the replies of {n} batches sent in one "
                                 f"write each ({backend}): replies of one batch split in sends")
    c.close()
