# SPDX-License-Identifier: BSD-3-Clause
"""The soak's slow-request verdict (bench/soak, docs/testing.md "Reading the
soak's slow-request verdict"): slow requests are grouped by when they ended,
so a stall that held many connections at once counts once and is told apart
from delayed ACKs, which hold one connection each, on its own timer. Pure
logic over trace lines in the load generator's format; no server."""
import importlib.machinery
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_soak():
    path = os.path.join(ROOT, "bench", "soak")
    loader = importlib.machinery.SourceFileLoader("soak_under_test", path)
    spec = importlib.util.spec_from_loader("soak_under_test", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def trace_line(lat_ms, conn, done_wall):
    # the shape bench/loadgen/worker.c (trace_slow) prints
    return (f"slow: {lat_ms:.1f} ms conn {conn} proto 0 op 1 keys 1 key {conn} bytes in 8"
            f" | due 1.000 done {1 + lat_ms:.3f} issued +0.010 sent +0.020 req 6000 B in 1 sends"
            f" (0 full) unsent after 0, behind it 0, newest sent +-1.000 | tcp rtt 10 us"
            f" retrans 0 unacked 0 last_ack_recv 0 ms cwnd 10 rcv_space 65483"
            f" | port {40000 + conn} wall {done_wall:.6f}\n")


def write(tmp_path, name, lines):
    p = tmp_path / name
    p.write_text("".join(lines) + "loadgen: some other line\n")
    return str(p)


def test_a_stall_of_many_connections_is_one_episode(tmp_path):
    soak = load_soak()
    # 40 connections held by one 45 ms stall: all end within 2 ms
    reqs = [(40 + i * 0.1, i, 1000.045 + i * 0.00005) for i in range(40)]
    lines = [trace_line(*r) for r in reqs]
    n, eps = soak.slow_episodes([("main", write(tmp_path, "main.err", lines))])
    assert n == 40
    assert len(eps) == 1
    assert len(eps[0]["conns"]) == 40
    # it began when the longest-waiting of them was due
    assert abs(eps[0]["start"] - min(done - lat / 1e3 for lat, _, done in reqs)) < 1e-6
    assert abs(eps[0]["end"] - reqs[-1][2]) < 1e-6


def test_delayed_acks_stay_isolated(tmp_path):
    soak = load_soak()
    # one connection at a time, 200 ms apart: each its own episode
    lines = [trace_line(44.0, i, 1000 + i * 0.2) for i in range(30)]
    n, eps = soak.slow_episodes([("main", write(tmp_path, "main.err", lines))])
    assert n == 30
    assert len(eps) == 30
    assert all(len(e["conns"]) == 1 for e in eps)


def test_episodes_span_both_generators(tmp_path):
    soak = load_soak()
    # the same instant seen by two generators (the wall clock is shared);
    # connection numbers are per generator, so conn 1 twice is 2 connections
    main = write(tmp_path, "main.err", [trace_line(41.0, 1, 2000.0100)])
    big = write(tmp_path, "big.err", [trace_line(42.0, 1, 2000.0120), trace_line(43.0, 2, 2000.0130)])
    n, eps = soak.slow_episodes([("main", main), ("big", big)])
    assert n == 3
    assert len(eps) == 1
    assert eps[0]["conns"] == {("main", 1), ("big", 1), ("big", 2)}


def test_run_queue_wait_is_summed_over_a_stall():
    soak = load_soak()
    rq = soak.RunQueue({}, None)
    # 50 ms steps: the server waited 20 + 25 ms in the two steps overlapping
    # [10.00, 10.05]; a load generator 5 ms; a step outside adds nothing
    rq.samples = [(10.00, {"server": 20.0, "main": 5.0}), (10.05, {"server": 25.0}),
                  (10.50, {"server": 90.0})]
    assert rq.waited_ms(10.00, 10.05) == 45.0
    assert rq.waited_ms(10.00, 10.05, "main") == 5.0
    assert rq.total_ms("server") == 135.0


def test_isolated_ones_the_host_explains_are_not_delayed_acks(tmp_path):
    soak = load_soak()
    # two isolated 45 ms requests and one stall of 3 connections; the server
    # waited 30 ms for a CPU during the first isolated one only
    lines = [trace_line(45.0, 1, 10.045), trace_line(45.0, 2, 20.045)] + \
        [trace_line(45.0, c, 30.045) for c in (3, 4, 5)]
    _, eps = soak.slow_episodes([("main", write(tmp_path, "main.err", lines))])
    rq = soak.RunQueue({}, None)
    rq.samples = [(10.05, {"server": 30.0})]
    isolated, isolated_host, host_stalls, server_stalls = soak.split_slow(eps, rq)
    assert isolated == [45.0]
    assert isolated_host == 1
    assert host_stalls == []
    assert len(server_stalls) == 1 and len(server_stalls[0]["conns"]) == 3


def test_threads_born_in_a_step_count_their_whole_wait():
    soak = load_soak()
    # the load generator's worker thread started during the step: its 30 ms
    # of waiting all fell within it, and is not dropped for lack of a
    # previous reading; an old thread counts only what it added
    prev = {("server", "1"): 5_000_000, ("main", "10"): 1_000_000}
    cur = {("server", "1"): 7_000_000, ("main", "10"): 2_000_000, ("main", "11"): 30_000_000}
    assert soak.RunQueue.worst_waits(prev, cur) == {"server": 2.0, "main": 30.0}


def test_a_stall_says_what_the_server_did(capsys):
    soak = load_soak()
    rq = soak.RunQueue({}, None)
    rq.samples = [(10.00, {"server": 2.0, "main": 1.0}), (10.05, {"server": 3.0})]
    rq.server = [(10.00, 4.0, 10), (10.05, 40.0, 900), (10.50, 50.0, 5)]
    assert rq.server_did(10.00, 10.05) == (44.0, 910)
    stall = {"start": 10.00, "end": 10.045, "conns": {("main", 1), ("main", 2), ("main", 3)}}
    soak.print_stalls([stall], rq)
    out = capsys.readouterr().out
    assert "3 connections" in out and "server 5" in out and "main 1" in out
    assert "server on a CPU 44 ms, page faults 910" in out


def test_page_faults_the_host_makes_slow_are_the_hosts(tmp_path):
    soak = load_soak()
    # one stall of 3 connections, 45 ms: nobody waited for a CPU, but the
    # server took 6,000 page faults at 5 us each (30 ms) in it; the same
    # faults at bare metal's 0.3 us (1.8 ms) explain nothing
    lines = [trace_line(45.0, c, 30.045) for c in (3, 4, 5)]
    _, eps = soak.slow_episodes([("main", write(tmp_path, "main.err", lines))])
    rq = soak.RunQueue({}, None)
    rq.samples = [(30.05, {"server": 1.0, "main": 2.0})]
    rq.server = [(30.05, 10.0, 6000)]
    rq.fault_us = 5.0
    _, _, host_stalls, server_stalls = soak.split_slow(eps, rq)
    assert len(host_stalls) == 1 and server_stalls == []
    rq.fault_us = 0.3
    _, _, host_stalls, server_stalls = soak.split_slow(eps, rq)
    assert host_stalls == [] and len(server_stalls) == 1


def test_fault_cost_is_measured():
    soak = load_soak()
    cost = soak.fault_cost_us(4)
    assert 0.01 < cost < 1000.0
