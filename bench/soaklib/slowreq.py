# SPDX-License-Identifier: BSD-3-Clause
"""Slow requests (the load generators' --trace-slow lines) grouped into
episodes, and the episodes told apart: delayed ACKs, the host's stalls,
the server's."""
import re

SLOW_RE = re.compile(r"slow: ([\d.]+) ms conn (\d+) .* \| port \d+ wall (\d+\.\d+)")


def slow_episodes(paths, gap_ms=5.0):
    """Slow requests from the load generators' --trace-slow lines, grouped
    into episodes: requests that completed within gap_ms of the previous one.
    A delayed ACK holds one connection and ends on that connection's timer,
    so delayed ACKs are spread in time, one connection each; a stall (the
    server's, or the host taking its CPUs) ends for every connection it held
    at once: an episode of many connections is one stall, not N delays."""
    reqs = []
    for name, path in paths:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    m = SLOW_RE.match(line)
                    if m:
                        reqs.append((float(m.group(3)), float(m.group(1)), (name, int(m.group(2)))))
        except OSError:
            pass
    reqs.sort()
    episodes = []
    for done, lat, conn in reqs:
        if episodes and (done - episodes[-1]["end"]) * 1e3 <= gap_ms:
            e = episodes[-1]
        else:
            e = {"start": done - lat / 1e3, "end": done, "lats": [], "conns": set()}
            episodes.append(e)
        e["start"] = min(e["start"], done - lat / 1e3)
        e["end"] = done
        e["lats"].append(lat)
        e["conns"].add(conn)
    return len(reqs), episodes


def split_slow(episodes, runq):
    """Episodes told apart: (latencies of the isolated ones, how many
    isolated requests the host explains, the host's stalls, the server's
    stalls). An episode is the host's when a thread of the server or of a
    load generator waited for a CPU for at least half of it, or the
    server's page faults took that long at what one costs here (a VM
    whose host backs memory lazily makes each first touch its own). A delayed ACK
    takes no CPU from anyone, so an isolated episode the host explains is
    not one; the rest of one or two connections are what a delayed ACK
    makes, and one of 3 or more is one stall."""
    def host_held(e):
        return runq.held_ms(e["start"], e["end"]) >= 0.5 * (e["end"] - e["start"]) * 1e3

    isolated, isolated_host, host_stalls, server_stalls = [], 0, [], []
    for e in episodes:
        held = host_held(e)
        if len(e["conns"]) <= 2:
            if held:
                isolated_host += len(e["lats"])
            else:
                isolated.extend(e["lats"])
        else:
            (host_stalls if held else server_stalls).append(e)
    return isolated, isolated_host, host_stalls, server_stalls
