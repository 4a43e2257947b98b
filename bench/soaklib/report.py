# SPDX-License-Identifier: BSD-3-Clause
"""The soak's verdicts on what the load generators saw (their --json
results and --trace-slow lines), and its summary lines."""
import collections
import json
import os
import types

from soaklib.probe import server_stats_sub
from soaklib.slowreq import slow_episodes, split_slow

LOADS = ("main", "big")


def tally(work, violations):
    """Both load generators' results summed: (totals, latencies by load,
    the worst self-stall, the latest abandoned write read back)."""
    total = {"requests": 0, "slow40": 0, "slow40_50": 0, "miss_after_ack": 0,
             "errors": 0, "conn_errors": 0, "verify_failures": 0, "stale": 0, "future": 0,
             "disconnects": 0, "partial_sends": 0, "hits": 0, "misses": 0, "server_errors": 0,
             "self_stalls": 0, "late_sends": 0, "abandoned_seen": 0,
             "abandoned_late": 0}
    stall_max = 0.0
    abandoned_max = 0.0
    lat = {}
    for name in LOADS:
        try:
            with open(os.path.join(work, name + ".json")) as f:
                j = json.load(f)
        except (OSError, ValueError):
            violations.append(f"{name}: no results")
            continue
        for k in total:
            total[k] += j.get(k, 0)
        lat[name] = j["lat_us"]
        stall_max = max(stall_max, j.get("self_stall_max_ms", 0))
        abandoned_max = max(abandoned_max, j.get("abandoned_late_max_ms", 0))
    return total, lat, stall_max, abandoned_max


def judge_values(total, st, violations):
    """Wrong values, errors, dropped connections, unexplained misses.
    Returns (evictions, expired) from the server's stats."""
    evictions = int(st.get("evictions", 0))
    expired = int(st.get("expired_unfetched", 0)) + int(st.get("reclaimed", 0))
    if total["verify_failures"] or total["stale"] or total["future"]:
        violations.append(f"wrong values: {total['verify_failures']} corrupt or foreign, "
                          f"{total['stale']} stale, {total['future']} never written")
    if total["errors"]:
        violations.append(f"{total['errors']} error replies or unanswered requests")
    if total["conn_errors"]:
        violations.append(f"the server dropped {total['conn_errors']} well-behaved connections")
    if total["miss_after_ack"] and evictions == 0 and expired == 0:
        violations.append(f"{total['miss_after_ack']} misses of acknowledged values with no "
                          "eviction or expiry to explain them")
    return evictions, expired


def judge_slow(total, stall_max, work, runq, violations, warnings):
    """Slow requests, told apart (split_slow): the share the host does not
    explain, the delayed-ACK signature, the server's stalls. Returns what the
    summary prints of them."""
    req = max(total["requests"], 1)
    busy = total["self_stalls"] > 20
    traced, episodes = slow_episodes([(n, os.path.join(work, n + ".err")) for n in LOADS])
    isolated, isolated_host, host_stalls, server_stalls = split_slow(episodes, runq)
    # The share of slow requests is judged on those the host does not
    # explain: a request held by a stall while the server's or a load
    # generator's threads waited for a CPU is the host's (2 cores run the
    # server, both load generators and the slow clients here); untraced
    # slow requests count as unexplained.
    host_held = sum(len(e["lats"]) for e in host_stalls) + isolated_host
    unexplained = total["slow40"] - host_held
    if unexplained > req * 0.001:
        msg = (f"{unexplained} of {req} requests took >= 40 ms (> 0.1 %) outside the stalls "
               f"the host explains ({host_held} more were held by those)")
        if busy:
            warnings.append(msg + f", but the machine was busy: the load generator itself was held "
                            f"up {total['self_stalls']} times (max {stall_max:.0f} ms); "
                            f"load average {os.getloadavg()[0]:.1f}")
        else:
            violations.append(msg)
    iso40_50 = sum(1 for l in isolated if l < 50)
    if len(isolated) >= 20 and iso40_50 * 2 > len(isolated):
        violations.append(f"{iso40_50} of {len(isolated)} isolated slow requests in 40-50 ms: "
                          f"the delayed-ACK signature (see the traces in {work}/*.err)")
    if len(server_stalls) >= 3 and not busy:
        violations.append(f"{len(server_stalls)} stalls of 3 or more connections at once while "
                          "neither the server nor the load generators waited for a CPU: the "
                          f"server stalled everyone (see the traces in {work}/*.err)")
    return types.SimpleNamespace(traced=traced, isolated=isolated, isolated_host=isolated_host,
                                 host_stalls=host_stalls, server_stalls=server_stalls,
                                 iso40_50=iso40_50)


def print_server_errors(procs, work):
    """Which errors: the load generators print the first few of each worker."""
    seen = collections.Counter()
    for name, _, _ in procs:
        with open(os.path.join(work, name + ".err"), errors="replace") as f:
            for line in f:
                if line.startswith("server error: "):
                    seen[f"{name} {line[len('server error: '):].strip()}"] += 1
    for what, n in seen.most_common(5):
        print(f"soak: server error x{n} (of the first ten per load thread): {what}")


def print_stalls(stalls, runq):
    """What each stall of 3+ connections was made of: who waited for a
    CPU in it, and what the server did meanwhile (busy, faulting pages in,
    or neither: blocked), so a stall the host does not explain can be
    followed up from the log alone."""
    t0 = runq.samples[0][0] - runq.STEP if runq.samples else 0.0
    for e in stalls[:10]:
        per = runq.waited_by(e["start"], e["end"])
        cpu, faults = runq.server_did(e["start"], e["end"])
        waits = ", ".join(f"{k} {v:.0f}" for k, v in sorted(per.items()))
        print(f"soak:   stall at {e['start'] - t0:.3f} s, {(e['end'] - e['start']) * 1e3:.0f} ms, "
              f"{len(e['conns'])} connections: waited for a CPU (ms) {waits or 'nothing sampled'}; "
              f"server on a CPU {cpu:.0f} ms, page faults {faults} "
              f"({faults * runq.fault_us / 1e3:.0f} ms at {runq.fault_us:.1f} us each)")


def report(run, st, violations):
    """Judges the load's results and prints the summary. run carries the
    run's parts: a, srv, port, work, procs, runq, slow, watch, watch_stats,
    bound, fig."""
    a, work, fig, bound = run.a, run.work, run.fig, run.bound
    slow, watch, runq = run.slow, run.watch, run.runq
    total, lat, stall_max, abandoned_max = tally(work, violations)
    evictions, expired = judge_values(total, st, violations)
    warnings = []
    s = judge_slow(total, stall_max, work, runq, violations, warnings)
    stalls = sorted(s.host_stalls + s.server_stalls, key=lambda e: e["start"])

    print(f"soak: {total['requests']} requests, hits {total['hits']}, misses {total['misses']} "
          f"({total['miss_after_ack']} of acknowledged values; server evictions {evictions}, "
          f"expired/reclaimed {expired})")
    print(f"soak: sent more than 1 ms after their scheduled time: {total['late_sends']}; "
          f"load generator held up >= 10 ms: {total['self_stalls']} times (max {stall_max:.0f} ms)")
    print(f"soak: writes abandoned by drops read back after a newer acknowledged one: "
          f"{total['abandoned_seen']} ({total['abandoned_late']} of them 2 s or more after "
          f"the drop, latest {abandoned_max:.0f} ms)")
    print(f"soak: disconnects {total['disconnects']} (mid-set {total['partial_sends']}), "
          f"slow-client rounds {slow.rounds} (pipelined rounds of 100 gets {slow.pipelined}), "
          f"server_errors {total['server_errors']}")
    print_server_errors(run.procs, work)
    if run.srv.poll() is None and "memcached" not in os.path.basename(a.server):
        # where a refused set may come from: the bound on values still
        # arriving (docs/store.md "Uploads")
        nd = server_stats_sub(run.port, "nodelay")
        print(f"soak: uploads refused {nd.get('uploads_refused')}, cut {nd.get('uploads_cut')} "
              f"(upload_limit {int(nd.get('upload_limit', 0)) >> 20} MiB)")
    for name, l in lat.items():
        print(f"soak: {name} latency us p50 {l['p50']:.0f} p99 {l['p99']:.0f} "
              f"p99.9 {l['p999']:.0f} max {l['max']:.0f}")
    print(f"soak: slow requests traced {s.traced} of {total['slow40']}: {len(s.isolated)} isolated "
          f"({s.iso40_50} in 40-50 ms; {s.isolated_host} more while a thread waited for a CPU), "
          f"{len(stalls)} stalls of 3+ connections at once "
          f"({sum(len(e['lats']) for e in stalls)} requests; {len(s.host_stalls)} while a thread "
          f"waited for a CPU or the server's page faults took >= half the stall, "
          f"{len(s.server_stalls)} not); waited for a CPU in "
          f"all: server {runq.total_ms('server'):.0f} ms, load generators "
          f"{runq.total_ms('main') + runq.total_ms('big'):.0f} ms; a page fault costs "
          f"{runq.fault_us:.1f} us here")
    print_stalls(stalls, runq)
    print(f"soak: >= 40 ms: {total['slow40']} ({total['slow40_50']} in 40-50 ms); "
          f"RSS max {fig.rss_max // 1024} MiB (bound {fig.rss_bound // 1024}), after the load "
          f"{fig.rss_end // 1024} MiB; owed to clients max {fig.owed_max >> 20} MiB; "
          f"fds baseline {fig.fd_base}, max {fig.fd_max}, end {fig.fd_end}")
    if bound.n_read + bound.n_stalled:
        print(f"soak: watchers {bound.n_read} reading, {bound.n_stalled} never reading: the readers "
              f"got {watch.lines} lines ({watch.bytes >> 10} KiB), skipped {watch.skipped}; "
              + " ".join(f"{k} {v}" for k, v in run.watch_stats.items()))
    for e in (watch.errors[:5] + slow.errors[:5]):
        violations.append(e)
    for w in warnings:
        print("soak: WARNING: " + w)
