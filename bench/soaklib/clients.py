# SPDX-License-Identifier: BSD-3-Clause
"""The slow and bad clients (--slow-kinds), and kind 7, the honest
pipeliner."""
import random
import socket
import threading
import time

class SlowClients:
    """Misbehaving readers; they only read, so they never disturb what the
    strict load generators expect to find."""

    def __init__(self, port, n, kinds, big_keys, stop):
        self.port, self.n, self.kinds, self.big_keys, self.stop = port, n, kinds, big_keys, stop
        self.threads = []
        self.errors = []
        self.rounds = 0
        self.pipelined = 0  # kind 7's rounds of 100 gets

    def start(self):
        for i in range(self.n):
            t = threading.Thread(target=self.run, args=(i,), daemon=True)
            t.start()
            self.threads.append(t)

    def join(self):
        for t in self.threads:
            t.join(timeout=10)

    def keys(self, rng, n):
        base, count = self.big_keys
        return " ".join("key:%010d" % (base + rng.randrange(count)) for _ in range(n))

    def pipeliner(self, s, i):
        """Kind 7, an honest client: a reply larger than a 16 KiB reply
        block (a `stats detail dump` of 600 prefixes, ~27 KB), then 100
        pipelined gets of a 500-byte value a round, every reply read, on the
        same connection until the run ends. A reply queue that kept any
        written block (every block but the last was kept after such a reply:
        ~47 MiB per 1,000 rounds) breaks the RSS bound within seconds."""
        s.settimeout(30)
        key, val = b"soakpipe%d" % i, b"p" * 500

        def call(req, end):
            s.sendall(req)
            buf = b""
            while not buf.endswith(end):
                d = s.recv(1 << 20)
                if not d:
                    raise OSError("closed by the server")
                buf += d
            return buf

        try:
            # detail is on only while this client's 600 prefixes are made
            if call(b"stats detail on\r\n", b"\r\n") != b"OK\r\n":
                self.errors.append(f"pipeliner {i}: `stats detail on` refused")
                return
            s.sendall(b"".join(b"set soakpfx%d.%d:k 0 0 1 noreply\r\nx\r\n" % (i, n)
                               for n in range(600)))
            call(b"stats detail off\r\n", b"OK\r\n")
            hit = b"VALUE " + key + b" 0 500\r\n" + val + b"\r\nEND\r\n"
            line = (b"get " + key + b"\r\n") * 100
            stored = False
            n = 0
            while not self.stop.is_set():
                # the large reply again now and then: a connection quiet for
                # a second (this thread waits for the GIL) gives its queue
                # back, which would hide a queue that keeps blocks
                if n % 20 == 0:
                    call(b"stats detail dump\r\n", b"END\r\n")
                n += 1
                if not stored:  # first, and after an eviction
                    if call(b"set " + key + b" 0 0 500\r\n" + val + b"\r\n", b"\r\n") != b"STORED\r\n":
                        self.errors.append(f"pipeliner {i}: its set was refused")
                        return
                    stored = True
                s.sendall(line)
                buf = b""
                while buf.count(b"END\r\n") < 100:
                    d = s.recv(1 << 20)
                    if not d:
                        raise OSError("closed by the server")
                    buf += d
                rest = buf.replace(hit, b"")
                if rest.replace(b"END\r\n", b""):
                    self.errors.append(f"pipeliner {i}: a wrong reply: {rest[:80]!r}")
                    return
                stored = not rest  # a miss: evicted, set it again
                self.pipelined += 1
        except OSError as e:
            if not self.stop.is_set():
                self.errors.append(f"pipeliner {i}: {e} after {self.pipelined} rounds")

    def run(self, i):
        rng = random.Random(i)
        kind = self.kinds[i % len(self.kinds)]
        while not self.stop.is_set():
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            except OSError as e:
                self.errors.append(f"slow client {i}: connect: {e}")
                return
            try:
                if kind == 0:
                    # trickle reader: big multigets, 512 bytes every 10 ms
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                    s.sendall(("get " + self.keys(rng, 20) + "\r\n").encode())
                    deadline = time.time() + rng.uniform(2, 6)
                    while time.time() < deadline and not self.stop.is_set():
                        if not s.recv(512):
                            break
                        time.sleep(0.01)
                elif kind == 1:
                    # never reads: pipelines gets until the server stops taking them
                    s.setblocking(False)
                    req = ("get " + self.keys(rng, 10) + "\r\n").encode()
                    deadline = time.time() + rng.uniform(2, 6)
                    while time.time() < deadline and not self.stop.is_set():
                        try:
                            s.send(req)
                        except BlockingIOError:
                            time.sleep(0.05)
                        except OSError:
                            break  # the server cut us off: allowed
                elif kind == 3:
                    # half-sent set: the line and part of a 1 MB value, then
                    # nothing (issue 9.1: it must not pin the cache)
                    s.sendall(b"set soakhold%d 0 0 1000000\r\n" % i + b"h" * 1000)
                    time.sleep(rng.uniform(2, 6))
                elif kind == 4:
                    # reads a huge reply to its end: the whole cache as an
                    # mgdump, or a 100-key multigets of large values (9.2)
                    s.settimeout(60)
                    if rng.random() < 0.5:
                        s.sendall(b"lru_crawler mgdump all\r\n")
                        end = b"EN\r\n"
                    else:
                        s.sendall(("get " + self.keys(rng, 100) + "\r\n").encode())
                        end = b"END\r\n"
                    got, tail = 0, b""
                    while not (tail.endswith(b"\n" + end) or tail == end) and not self.stop.is_set():
                        d = s.recv(1 << 20)
                        if not d:
                            self.errors.append(f"huge-reply reader {i}: cut off after {got} bytes")
                            break
                        got += len(d)
                        tail = (tail + d)[-16:]
                elif kind == 5:
                    # 40 connections pipelining multigets, never reading (9.3)
                    extra = []
                    for _ in range(40):
                        e = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                        e.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                        e.setblocking(False)
                        extra.append(e)
                    req = ("get " + self.keys(rng, 10) + "\r\n").encode() * 100
                    deadline = time.time() + rng.uniform(2, 6)
                    while time.time() < deadline and not self.stop.is_set():
                        for e in extra:
                            try:
                                e.send(req)
                            except (BlockingIOError, OSError):
                                pass
                        time.sleep(0.02)
                    for e in extra:
                        e.close()
                elif kind == 6:
                    # a 2 MiB get line of one key (9.4), read to the end or not
                    s.sendall(b"set soakline%d 0 0 512\r\n" % i + b"l" * 512 + b"\r\n")
                    s.settimeout(5)
                    if s.recv(64) != b"STORED\r\n":
                        self.errors.append(f"long-line client {i}: its set was refused")
                    s.sendall(b"get" + (b" soakline%d" % i) * (180000) + b"\r\n")
                    if rng.random() < 0.5:
                        s.settimeout(60)
                        got, tail = 0, b""
                        # all misses (the key was evicted) is "END\r\n" alone
                        while not (tail.endswith(b"\r\nEND\r\n") or tail == b"END\r\n") \
                                and not self.stop.is_set():
                            d = s.recv(1 << 20)
                            if not d:
                                self.errors.append(f"long-line reader {i}: cut off after {got} bytes")
                                break
                            got += len(d)
                            tail = (tail + d)[-16:]
                    else:
                        time.sleep(rng.uniform(1, 3))
                elif kind == 7:
                    # an honest pipeliner after one large reply, for the run
                    self.pipeliner(s, i)
                else:
                    # vanishes mid-reply (RST when unread data is discarded)
                    s.sendall(("get " + self.keys(rng, 5) + "\r\n").encode())
                    time.sleep(rng.uniform(0, 0.05))
                    s.recv(rng.randrange(1, 4096))
                self.rounds += 1
            except OSError:
                pass  # being cut off is what may happen to a bad client
            finally:
                s.close()
