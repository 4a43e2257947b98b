# SPDX-License-Identifier: BSD-3-Clause
"""The soak's watch over the server while the load runs: each second its RSS
against the bound, its descriptors and what it owes clients; every 30 s a
progress line and its counters' plausibility."""
import time

from soaklib.probe import fd_count, rss_kib, sample, server_stats, stats_problem


def monitor(a, srv, port, procs, bound, is_nodelay, fig, violations):
    """Runs until both load generators end (or a violation, or time runs
    out); keeps the maxima in fig (rss_max, fd_max, owed_max, rss_bound)."""
    t0 = time.time()
    recent_conns = []  # (time, curr_connections) of the last 3 s
    next_report = t0 + 30
    while any(p.poll() is None for _, p, _ in procs):
        time.sleep(1)
        if srv.poll() is not None:
            violations.append(f"server exited with status {srv.returncode}")
            break
        rss = rss_kib(srv.pid)
        fig.rss_max = max(fig.rss_max, rss)
        fig.fd_max = max(fig.fd_max, fd_count(srv.pid))
        if is_nodelay:
            _, index_kib, conns, owed = sample(port)
            # Connections that just left still count: their buffers go
            # back to the OS within a second or two (README, "Memory is
            # bounded"), so the RSS read as the load ends may hold them.
            recent_conns.append((time.time(), conns))
            while recent_conns[0][0] < time.time() - 3:
                recent_conns.pop(0)
            fig.rss_bound = bound.kib(index_kib, max(c for _, c in recent_conns))
            fig.owed_max = max(fig.owed_max, owed)
            if owed > (bound.client_kib + 48 * conns + bound.watch_kib) * 1024:
                violations.append(f"clients are owed {owed >> 20} MiB, above client_mem_limit "
                                  f"{bound.client_kib >> 10} MiB + 48 KiB x {conns} connections"
                                  f" + the watchers' {bound.watch_kib >> 10} MiB")
                break
        if is_nodelay and rss > fig.rss_bound:
            violations.append(f"RSS {rss // 1024} MiB above the bound {fig.rss_bound // 1024} MiB "
                              f"at {time.time() - t0:.0f} s")
            break
        if time.time() >= next_report:
            next_report += 30
            st = server_stats(port)
            bad = stats_problem(st)
            if bad and bad not in violations:
                violations.append(bad)
            print(f"soak: {time.time() - t0:4.0f} s  RSS {rss // 1024} MiB  fds {fd_count(srv.pid)}  "
                  f"items {st.get('curr_items')}  evictions {st.get('evictions')}  "
                  f"conns {st.get('curr_connections')}", flush=True)
        if time.time() - t0 > a.duration + 60:
            violations.append("load generators did not finish in time")
            break
