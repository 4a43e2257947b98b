#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turns memtier_benchmark's --json-out-file into the fields of loadgen's
--json that bench/report.py reads, so the mt_* rows are summarised exactly
as loadgen's are.

  bench/memtier_json.py MEMTIER.json OUT.json

memtier counts one request per command (a 16-key get is one), reports its
latencies in milliseconds (turned into µs here) and its hits per second.
Exit 1 when the input is missing or has no totals."""
import json
import sys


def convert(mt):
    stats = mt["ALL STATS"]
    tot = stats["Totals"]
    secs = stats.get("Runtime", {}).get("Total duration", 0) / 1000 or 1
    pct = tot.get("Percentile Latencies", {})
    ms = lambda k: None if pct.get(k) is None else pct[k] * 1000  # noqa: E731
    gets = stats.get("Gets", {})
    return {
        "generator": "memtier_benchmark",
        "requests": tot["Count"],
        "ops_per_s": tot["Ops/sec"],
        "lat_us": {"p50": ms("p50.00"), "p99": ms("p99.00"), "p999": ms("p99.90"),
                   "max": tot["Max Latency"] * 1000},
        "hits": round(gets.get("Hits/sec", 0) * secs),
        "misses": round(gets.get("Misses/sec", 0) * secs),
        "errors": tot.get("Connection Errors", 0),
        "verify_failures": 0,
        "percentiles": [],
    }


def main():
    try:
        with open(sys.argv[1]) as f:
            out = convert(json.load(f))
    except (OSError, ValueError, KeyError) as e:
        print(f"memtier_json.py: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
