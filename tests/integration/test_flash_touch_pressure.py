# SPDX-License-Identifier: BSD-3-Clause
"""A touch or gat under eviction pressure with a flash tier finds the item
it touches. Giving an item stored with no expiry one writes a copy with a
field for it; with -m 16 and values of about 1 MB, that copy's reservation
can evict the item itself to flash after the request's probe found it in
RAM. The touch then read the key as missing (NOT_FOUND, END) while a get
right after found the value; memcached 1.6.45, which changes only the
header it keeps in RAM, never does. The store now reads the item back
from the flash writer's buffer it has just gone to and touches it there.
One already written to the device would need a wait: that race remains,
and on a loaded machine about one touch in 200 still misses so (CI saw
1 of 164 and 1 of 231); the old binary missed 4-13 of 250. The bound is
one in a hundred."""
import random
import socket
import threading
import time

import helpers

VLEN = 1048164  # just under the 1 MB item limit: one item fills a segment
RUN_S = 8


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(1 << 21)
            assert d, "server closed"
            self.buf += d
        i = self.buf.index(b"\r\n")
        out, self.buf = self.buf[:i], self.buf[i + 2:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(1 << 21)
            assert d, "server closed"
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def set(self, key, value):
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        return self.line()

    def get(self, cmd):
        """A get-like request's value, or None on END; a single line else."""
        self.s.sendall(cmd + b"\r\n")
        value = None
        while True:
            l = self.line()
            if l.startswith(b"VALUE "):
                value = self.exact(int(l.split()[3]) + 2)[:-2]
            elif l == b"END":
                return value
            else:
                return l


def noise(port, seed, stop):
    c, r = Conn(port), random.Random(seed)
    while not stop.is_set():
        v = b"n" * r.randint(20000, 1000000)
        c.set(b"noise%d_%d" % (seed, r.randint(0, 50)), v)


def test_touch_under_pressure_finds_the_item(server_bin, tmp_path):
    srv = helpers.start_flash(server_bin, tmp_path, 16, 256, 4,
                              ext=",ext_item_age=0,ext_wbuf_size=16")
    stop = threading.Event()
    noisy = [threading.Thread(target=noise, args=(srv.port, i, stop), daemon=True)
             for i in range(3)]
    tries = touched = wrong = 0
    try:
        for t in noisy:
            t.start()
        c, r = Conn(srv.port), random.Random(7)
        end = time.monotonic() + RUN_S
        while time.monotonic() < end:
            tries += 1
            key = b"probe%d" % (tries % 20)
            value = ((b"%d-" % tries) * (VLEN // 3))[:VLEN]
            assert c.set(key, value) == b"STORED"
            time.sleep(r.random() * 0.05)
            if tries % 2:
                got = c.get(b"touch %s 3600" % key)
                hit = got == b"TOUCHED"
            else:
                got = c.get(b"gat 3600 %s" % key)
                hit = got == value
            assert got in (b"TOUCHED", b"NOT_FOUND", None) or got == value, got[:80]
            if hit:
                touched += 1
                # the expiry was given (unless the item went since)
                ttl = c.get(b"mg %s t" % key)
                assert ttl == b"EN" or ttl.startswith(b"HD t3"), ttl
            elif c.get(b"get " + key) == value:
                wrong += 1
    finally:
        stop.set()
        for t in noisy:
            t.join(timeout=30)
        srv.stop()
    assert tries > 60, tries
    assert wrong * 100 <= tries, f"{wrong} of {tries} touches missed an item a get then found"
    assert touched > tries // 2, (touched, tries)
