# SPDX-License-Identifier: BSD-3-Clause
"""`watch` clients on every stream for the whole run (--watchers)."""
import socket
import threading
import time

class Watchers:
    """`watch` on every stream for the whole run: `reading` watchers that
    read every byte, and `stalled` ones that never read. What they cost must
    be taken from them (skipped lines), not from the load beside them: the
    honest load's verdicts and the RSS bound (which allows each watcher its
    stated buffers) hold with them attached."""

    CMD = b"watch fetchers mutations evictions connevents deletions\r\n"

    def __init__(self, port, reading, stalled, stop):
        self.port, self.reading, self.stalled, self.stop = port, reading, stalled, stop
        self.errors = []
        self.lines = 0
        self.skipped = 0
        self.bytes = 0
        self.socks = []
        self.thread = None
        self.stalled_since = None

    # The server cuts off a client that has taken no byte for this long
    # (CONN_WRITE_STALL_SECS in src/net/conn.h): a never-reading watcher of
    # a run that long is rightly closed.
    STALL_CUT_S = 60

    def attach(self, s):
        s.sendall(self.CMD)
        buf = b""
        while not buf.endswith(b"\n"):
            d = s.recv(1 if len(buf) < 4 else 64)  # OK\r\n, then its stream
            if not d:
                raise OSError("closed before OK")
            buf += d
        if not buf.startswith(b"OK\r\n"):
            raise OSError(f"watch refused: {buf[:60]!r}")
        return buf[4:]

    def start(self):
        try:
            for i in range(self.reading + self.stalled):
                s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                if i >= self.reading:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                self.attach(s)
                self.socks.append(s)
            self.stalled_since = time.monotonic()
        except OSError as e:
            self.errors.append(f"watcher: {e}")
            return
        if self.reading:
            self.thread = threading.Thread(target=self.run, daemon=True)
            self.thread.start()

    def check(self, lines):
        for ln in lines:
            if ln.startswith(b"skipped="):
                self.skipped += int(ln[8:].split()[0])
            elif not ln.startswith(b"ts="):
                self.errors.append(f"watcher: a line not in the stream's format: {ln[:80]!r}")
                return False
            else:
                self.lines += 1
        return True

    def run(self):
        import selectors
        sel = selectors.DefaultSelector()
        rest = {}
        for s in self.socks[:self.reading]:
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ)
            rest[s] = b""
        while not self.stop.is_set():
            for key, _ in sel.select(timeout=0.2):
                s = key.fileobj
                try:
                    d = s.recv(1 << 18)
                except BlockingIOError:
                    continue
                except OSError as e:
                    d = b""
                    self.errors.append(f"reading watcher: {e}")
                if not d:
                    if not self.stop.is_set():
                        self.errors.append("the server closed a reading watcher")
                    sel.unregister(s)
                    continue
                self.bytes += len(d)
                *lines, rest[s] = (rest[s] + d).split(b"\n")
                if not self.check(lines):
                    return

    def close(self):
        if self.thread:
            self.thread.join(timeout=5)
        for s in self.socks:
            s.close()
        if self.reading and self.lines == 0 and not self.errors:
            self.errors.append("the reading watchers got no line in the whole run")
