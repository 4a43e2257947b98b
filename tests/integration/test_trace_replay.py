# SPDX-License-Identifier: BSD-3-Clause
"""The bench's trace replay (`loadgen trace`, run by bench/traces.sh): its
footprint, which sizes -m per trace, and its look-aside replay against a
real server: misses set, hits checked, the second half's miss ratio."""
import json
import subprocess

import pytest

import helpers


@pytest.fixture(scope="module")
def loadgen():
    return helpers.build_loadgen()


def run(loadgen, args, trace):
    return subprocess.run([loadgen, "trace", *args], input=trace, capture_output=True, text=True,
                          timeout=60)


def test_footprint_counts_each_key_once_with_its_last_size(loadgen):
    # blocks 0-3 and 2-3 again: four keys of one digit, each 1 + 100 + 56 bytes
    r = run(loadgen, ["--footprint", "--value", "100"], "0 4 0 0\n2 2 0 0\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "footprint: 4 keys, 628 bytes\n"
    # "key size" lines: a's last size counts, not its first
    r = run(loadgen, ["--footprint", "--format", "kv"], "a 10\nbb 20\na 30\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"footprint: 2 keys, {(1 + 30 + 56) + (2 + 20 + 56)} bytes\n"
    # a multiget takes at most 16 keys of a line
    r = run(loadgen, ["--footprint", "--value", "10"], "100 40 0 0\n")
    assert r.stdout == f"footprint: 16 keys, {16 * (3 + 10 + 56)} bytes\n"


def test_footprint_refuses_a_malformed_line(loadgen):
    r = run(loadgen, ["--footprint"], "0 4 0 0\nnot a line\n")
    assert r.returncode != 0
    assert "line 2" in r.stderr
    # blocks past 2^64 (a start that saturates, or a negative one) would
    # make a request of no key at all: refused, as fuzz_tracefile found
    for line in ("99999999999999999999 3 0 0", "18446744073709551615 1 0 0"):
        r = run(loadgen, ["--footprint"], "0 4 0 0\n" + line + "\n")
        assert r.returncode != 0 and "line 2: blocks past 2^64" in r.stderr, r.stderr
    r = run(loadgen, ["--footprint", "--format", "kv"], "a 1\nb 99999999999\n")
    assert r.returncode != 0 and "line 2" in r.stderr, r.stderr


def test_replay_sets_misses_and_counts_the_second_half(loadgen, start_server, tmp_path):
    srv = start_server("-m", "16")
    out = tmp_path / "r.json"
    # first half: 8 keys missed and set; second half: 4 hits and 4 first accesses
    trace = "0 8 0 0\n4 8 0 0\n"
    r = run(loadgen, ["-s", f"127.0.0.1:{srv.port}", "--value", "300", "--json", str(out)], trace)
    assert r.returncode == 0, r.stdout + r.stderr
    j = json.loads(out.read_text())
    assert (j["accesses"], j["keys"], j["lines_replayed"]) == (16, 12, 2)
    assert (j["misses_2nd_half"], j["accesses_2nd_half"]) == (4, 8)
    assert j["miss_ratio"] == pytest.approx(0.5)
    assert (j["items"], j["errors"], j["wrong"]) == (12, 0, 0)
    # what it set is what the server holds: a block's value repeats its key
    c = srv.connect()
    assert c.get("11") == b"11" * 150
    c.close()


def test_replay_of_kv_lines_sets_each_keys_size(loadgen, start_server, tmp_path):
    srv = start_server()
    out = tmp_path / "r.json"
    r = run(loadgen, ["-s", f"127.0.0.1:{srv.port}", "--format", "kv", "--json", str(out)],
            "k1 5\nk2 7\nk1 5\nk2 7\n")
    assert r.returncode == 0, r.stdout + r.stderr
    j = json.loads(out.read_text())
    assert (j["misses_2nd_half"], j["accesses_2nd_half"], j["wrong"]) == (0, 2, 0)
    c = srv.connect()
    assert c.get("k2") == b"k2k2k2k"
    c.close()
