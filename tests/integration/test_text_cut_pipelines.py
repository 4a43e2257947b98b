# SPDX-License-Identifier: BSD-3-Clause
"""Pipelined text requests from many connections at once, each cut into
small writes, on one worker: every reply is the model's, byte for byte, on
every backend. A worker splits a read's first line ahead of its run (the
read hint) and the run reuses what it found; on io_uring a connection's
cut writes arrive as several receives in one turn, and a hint over the
second would describe bytes that follow the first's, not yet buffered.
With large values ("big"), a value of 4 KiB or more goes straight into
item memory (a direct read, no hint) across cut writes, and the request
after it starts a read that is hinted again.
The cuts and pauses come from a fixed seed; nothing here is timed."""
import random
import threading
import time

import pytest

from helpers import target

BACKENDS = {"default": (), "epoll": ("-o", "io_uring=off")}
CONNS = 24
ROUNDS = 30


def requests(rnd, cid, model, big):
    """One round's pipeline: its bytes and the replies they must get."""
    req, want = [], []
    for _ in range(rnd.randint(1, 16)):
        key = f"cut{cid}:{rnd.randint(0, 20)}" + "x" * rnd.choice([0, 0, 7, 120, 230])
        op = rnd.random()
        if op < 0.3:
            v = b"v" * rnd.randint(0, 40)
            if big and rnd.random() < 0.4:
                v = bytes([rnd.randint(97, 122)]) * rnd.randint(4000, 40000)
            req.append(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(v), v))
            want.append(b"STORED\r\n")
            model[key] = v
        elif op < 0.8:
            keys = [key] + [f"cut{cid}:{rnd.randint(0, 20)}"
                            for _ in range(rnd.choice([0, 0, 0, 2, 12]))]
            req.append(("get " + " ".join(keys) + rnd.choice(["\r\n", "\n", " \r\n"])).encode())
            want.append(b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k.encode(), len(model[k]), model[k])
                                 for k in keys if k in model) + b"END\r\n")
        elif op < 0.9:
            req.append(b"mg %s v\r\n" % key.encode())
            want.append(b"VA %d\r\n%s\r\n" % (len(model[key]), model[key]) if key in model
                        else b"EN\r\n")
        else:
            req.append(b"delete %s\r\n" % key.encode())
            want.append(b"DELETED\r\n" if model.pop(key, None) is not None else b"NOT_FOUND\r\n")
    return b"".join(req), b"".join(want)


def client(srv, cid, failures, big):
    rnd = random.Random(cid)
    c = srv.connect()
    model = {}
    try:
        for r in range(ROUNDS):
            data, want = requests(rnd, cid, model, big)
            i = 0
            while i < len(data):
                n = rnd.choice([1, 2, 3, 5, 8, 13, 40, 200, 2000])
                c.send(data[i:i + n])
                i += n
                if rnd.random() < 0.3:
                    time.sleep(0.0002)
            got = c.read_exact(len(want))
            if got != want:
                failures.append(f"conn {cid} round {r}: sent {data[:200]!r}\n"
                                f"  want {want[:200]!r}\n  got  {got[:200]!r}")
                return
    except (OSError, EOFError) as e:
        failures.append(f"conn {cid}: {e!r}")
    finally:
        c.close()


@pytest.mark.skipif(target() == "memcached", reason="nodelay's own backends")
@pytest.mark.parametrize("load", ["small", "big"])
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_cut_pipelines_answered_exactly(start_server, backend, load):
    srv = start_server("-t", "1", *BACKENDS[backend])
    failures = []
    threads = [threading.Thread(target=client, args=(srv, cid, failures, load == "big"))
               for cid in range(CONNS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, "\n".join(failures[:3])
