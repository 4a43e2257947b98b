# SPDX-License-Identifier: BSD-3-Clause
"""A memory cgroup that bounds one process's RSS and the page cache it
brings in, so two servers can be given the same RAM (bench/flash.py).

cgroup v1 (the memory controller at /sys/fs/cgroup/memory:
memory.limit_in_bytes counts page cache) or v2 (memory.max, at
/sys/fs/cgroup/unified or /sys/fs/cgroup where the memory controller is
there). MemCgroup.make returns None with the reason where neither can be
written (not root, no controller): the caller then runs unbounded and
says so. The child joins the group before it execs (Popen preexec_fn =
group.enter), so every page it touches is counted."""
import os
import time

V1 = "/sys/fs/cgroup/memory"
V2_ROOTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")


def _read(path):
    with open(path) as f:
        return f.read()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def _v2_root():
    for root in V2_ROOTS:
        try:
            if "memory" in _read(os.path.join(root, "cgroup.controllers")).split():
                return root
        except OSError:
            continue
    return None


class MemCgroup:
    def __init__(self, path, version):
        self.path = path
        self.version = version

    @classmethod
    def _at(cls, path, version, limit_file, limit_bytes):
        os.mkdir(path)
        g = cls(path, version)
        try:
            _write(os.path.join(path, limit_file), str(limit_bytes))
        except OSError:
            g.remove()
            raise
        return g

    @classmethod
    def make(cls, name, limit_bytes):
        """(group, None), or (None, why) where no memory cgroup can be made."""
        why = []
        if os.path.isfile(os.path.join(V1, "memory.limit_in_bytes")):
            try:
                return cls._at(os.path.join(V1, name), 1, "memory.limit_in_bytes", limit_bytes), None
            except OSError as e:
                why.append(f"v1 {V1}: {e.strerror}")
        root = _v2_root()
        if root:
            try:
                ctl = os.path.join(root, "cgroup.subtree_control")
                if "memory" not in _read(ctl).split():
                    _write(ctl, "+memory")
                return cls._at(os.path.join(root, name), 2, "memory.max", limit_bytes), None
            except OSError as e:
                why.append(f"v2 {root}: {e.strerror}")
        return None, "; ".join(why) or "no memory cgroup controller"

    def describe(self):
        return (f"cgroup v1 {self.path}/memory.limit_in_bytes" if self.version == 1
                else f"cgroup v2 {self.path}/memory.max")

    def enter(self):
        """In the child, before exec: move this process into the group."""
        _write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def _keyed(self, name):
        """A "key value" per line file of the group (memory.stat,
        memory.events) as a dict; empty where it cannot be read."""
        out = {}
        try:
            for line in _read(os.path.join(self.path, name)).splitlines():
                k, _, v = line.partition(" ")
                out[k] = int(v)
        except (OSError, ValueError):
            pass
        return out

    def _num(self, name):
        try:
            return int(_read(os.path.join(self.path, name)).strip())
        except (OSError, ValueError):
            return None

    def usage(self):
        """Bytes charged now, of them page cache, and the peak (None where
        the kernel keeps no peak: v2 before 5.19)."""
        st = self._keyed("memory.stat")
        if self.version == 1:
            return {"usage": self._num("memory.usage_in_bytes"), "cache": st.get("cache"),
                    "rss": st.get("rss"), "peak": self._num("memory.max_usage_in_bytes"),
                    "limit_hits": self._num("memory.failcnt")}
        return {"usage": self._num("memory.current"), "cache": st.get("file"),
                "rss": st.get("anon"), "peak": self._num("memory.peak"),
                "limit_hits": self._keyed("memory.events").get("max")}

    def oom_kills(self):
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        return self._keyed(name).get("oom_kill")

    def remove(self, timeout=10.0):
        """rmdir once the group's processes are gone (bounded); its page
        cache goes to the parent. True when removed."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)
