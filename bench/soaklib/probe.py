# SPDX-License-Identifier: BSD-3-Clause
"""The soak's probes of the server: its RSS and descriptors from /proc, its
`stats` over a connection, and whether those counters can be."""
import os
import socket

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def server_stats(port):
    try:
        return read_stats(port)
    except OSError as e:
        return {"error": str(e)}


def server_stats_sub(port, sub):
    try:
        return read_stats(port, sub)
    except OSError as e:
        return {"error": str(e)}


def stats_problem(st):
    """Counters dashboards read must stay plausible under churn."""
    try:
        cur, tot = int(st["curr_items"]), int(st["total_items"])
        used, limit = int(st["bytes"]), int(st["limit_maxbytes"])
    except (KeyError, ValueError):
        return None
    if cur > tot or cur >= 2 ** 31:
        return f"stats: curr_items {cur} is impossible (total_items {tot})"
    if used > limit:
        return f"stats: bytes {used} above limit_maxbytes {limit}"
    return None


def read_stats(port, sub=""):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(("stats " + sub).strip().encode() + b"\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    out = {}
    for line in buf.decode(errors="replace").split("\r\n"):
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def sample(port):
    """What the RSS bound is taken from, each second: (stats, the index in
    KiB, connections, bytes owed to clients)."""
    st = server_stats(port)
    nd = server_stats_sub(port, "nodelay")
    index_kib = int(nd.get("index_bytes", 0)) // 1024
    conns = int(st.get("curr_connections", 0))
    owed = int(st.get("response_obj_bytes", 0)) + int(st.get("read_buf_bytes", 0))
    return st, index_kib, conns, owed
