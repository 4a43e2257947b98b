# SPDX-License-Identifier: BSD-3-Clause
"""Bad clients: garbage, truncated requests, abrupt disconnects mid-request
and mid-reply, from many connections at once. The server must keep serving
everyone else and still exit cleanly (checked at teardown, with the
sanitizer builds' reports)."""
import random
import socket
import struct
import threading

import pytest

from helpers import bin_request

FRAGMENTS = [
    b"set k 0 0 10\r\nabc", b"get " + b"k " * 500, b"\x80\x01\x00\x05\x08\x00\x00\x00\xff\xff\xff\xff",
    b"ms k 100\r\nab", b"mg k v c f t s k O" + b"x" * 40, b"incr k 99999999999999999999999\r\n",
    b"set k 0 0 4294967295\r\n", b"\r\n\r\n\r\n", b"gat -1 " + b"k" * 300 + b"\r\n",
    b"cas k 0 0 1 18446744073709551616\r\nx\r\n", b"stats detail dump\r\n", b"lru_crawler metadump all\r\n",
    b"\x80\x00\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00", bin_request(0x21, key=b"PLAIN", value=b"\0a\0b"),
    b"verbosity 99999999999999999999\r\n", b"flush_all 99999999999999\r\n", b"watch\r\n",
]


def abuse(port, seed, errors):
    rnd = random.Random(seed)
    try:
        for _ in range(15):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            for _ in range(rnd.randint(1, 6)):
                if rnd.random() < 0.5:
                    data = rnd.choice(FRAGMENTS)
                else:
                    data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
                try:
                    s.sendall(data)
                except OSError:
                    break
            if rnd.random() < 0.5:
                try:
                    s.recv(rnd.randint(1, 100))  # read a little of the reply, then vanish
                except OSError:
                    pass
            s.close()  # SO_LINGER 0: a reset, mid-request or mid-reply
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(repr(e))


@pytest.mark.concurrency
def test_garbage_and_resets_do_not_hurt_others(start_server):
    srv = start_server("-m", "32")
    good = srv.connect()
    good.set("precious", b"p" * 5000)
    big = srv.connect()
    big.set("big", b"b" * 300000)
    errors = []
    threads = [threading.Thread(target=abuse, args=(srv.port, seed, errors)) for seed in range(12)]
    for t in threads:
        t.start()
    for _ in range(50):
        assert good.get("precious") == b"p" * 5000
    # a reader that vanishes mid-reply of a big value
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(b"get big big big\r\n")
        s.recv(1000)
        s.close()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert good.get("precious") == b"p" * 5000
    assert srv.connect().call("version").startswith(b"VERSION")
    assert srv.proc.poll() is None
