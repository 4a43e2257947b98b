# SPDX-License-Identifier: BSD-3-Clause
"""What must hold once the load has stopped: the watchers still attached,
the server's descriptors and memory back, its counters plausible."""
import os
import time

from soaklib.probe import (fd_count, rss_kib, sample, server_stats, server_stats_sub,
                           stats_problem)


def check_watchers(srv, port, watch, bound, is_nodelay, violations):
    """log_watchers against the watchers attached; returns the server's
    watch counters for the report ({} when there are none)."""
    n_read, n_stalled = bound.n_read, bound.n_stalled
    if not (is_nodelay and srv.poll() is None and n_read + n_stalled):
        return {}
    nd = server_stats(port)
    # never-reading watchers the server may have cut off by now (its
    # close stays queued behind their unread lines, so the socket
    # cannot tell): each counted in slow_reader_kills
    attached = n_read + n_stalled
    got = int(nd.get("log_watchers", 0))
    stalled_for = (time.monotonic() - watch.stalled_since
                   if watch.stalled_since is not None else 0)
    may_cut = n_stalled if stalled_for >= watch.STALL_CUT_S - 1 else 0
    kills = int(server_stats_sub(port, "nodelay").get("slow_reader_kills", 0))
    if not (attached - min(may_cut, kills) <= got <= attached):
        violations.append(f"log_watchers {got} at the end, not the {attached} attached"
                          f" (of which {n_stalled} never reading, attached {stalled_for:.0f} s,"
                          f" {kills} slow readers cut off)")
    return {k: nd.get(k) for k in ("log_watcher_sent", "log_watcher_skipped",
                                    "log_worker_written", "log_worker_dropped")}


def check_recovery(a, srv, port, bound, fig, violations):
    """Every client is gone: descriptors and memory must come back (fig.fd_end,
    fig.rss_end). Returns the server's `stats` after the run ({} if dead)."""
    # every client is gone: the server's descriptors must come back
    fig.fd_end = fd_count(srv.pid) if srv.poll() is None else -1
    for _ in range(100):
        if srv.poll() is not None or fig.fd_end <= fig.fd_base:
            break
        time.sleep(0.1)
        fig.fd_end = fd_count(srv.pid)
    if srv.poll() is None and fig.fd_end > fig.fd_base:
        violations.append(f"open fds {fig.fd_end} did not return to the baseline {fig.fd_base}")
    # ... and the memory their buffers took must go back to the OS
    fig.rss_end = rss_kib(srv.pid) if srv.poll() is None else 0
    if srv.poll() is None and "memcached" not in os.path.basename(a.server):
        _, index_kib, _, _ = sample(port)
        idle_bound = bound.m_kib + index_kib + 32 * 1024
        for _ in range(100):
            fig.rss_end = rss_kib(srv.pid)
            if fig.rss_end <= idle_bound:
                break
            time.sleep(0.1)
        if fig.rss_end > idle_bound and not bound.sanitized:
            violations.append(f"RSS {fig.rss_end // 1024} MiB after the clients left, above "
                              f"-m + index + 32 MiB = {idle_bound // 1024} MiB")
    st = server_stats(port) if srv.poll() is None else {}
    bad = stats_problem(st)
    if bad and bad not in violations:
        violations.append(bad)
    if "error" in st:
        violations.append(f"the server did not answer `stats` after the run: {st['error']}")
    if srv.poll() is not None and not any("server exited" in v for v in violations):
        violations.append(f"server exited with status {srv.returncode}")
    return st
