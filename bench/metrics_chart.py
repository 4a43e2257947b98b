#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Chart of nodelay's /metrics over a benchmark run, as Prometheus saw it.

Starts nodelay with -o metrics_listen, a Prometheus server (Debian's
prometheus package) scraping it every second, and loadgen in three phases
(5,000 ops/s, 20,000 ops/s, then as fast as it goes, PHASE seconds each);
then asks Prometheus for request rates per command and the p50/p99 of
nodelay_request_duration_seconds per family, and draws them with gnuplot.

  bench/metrics_chart.py [--bin build/release-epoll/nodelay] [--phase 10] \
      [--out bench/results/tmp/metrics.png]

The chart goes to the untracked bench/results/tmp/ unless --out says
otherwise; --out bench/results/metrics-latest.png replaces the one the
README shows. Loopback only; bounded by 3 x PHASE seconds of load."""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from benchproc import ROOT, free_port, server_argv


def query_range(web, q, start, end):
    url = (f"http://127.0.0.1:{web}/api/v1/query_range?"
           + urllib.parse.urlencode({"query": q, "start": start, "end": end, "step": 1}))
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/release-epoll/nodelay"))
    ap.add_argument("--loadgen", default=os.path.join(ROOT, "build/bench/loadgen"))
    ap.add_argument("--phase", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/tmp/metrics.png"))
    a = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    prom, gnuplot = shutil.which("prometheus"), shutil.which("gnuplot")
    if not prom or not gnuplot:
        raise SystemExit("needs prometheus and gnuplot (scripts/install-deps.sh)")
    tmp = tempfile.mkdtemp(prefix="nodelay-chart-")
    port, mport, web = free_port(), free_port(), free_port()
    argv = server_argv(a.bin, port, "-t", "2", "-o", f"metrics_listen={mport}")
    srv = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: nodelay\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n")
    pr = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/data",
                           f"--web.listen-address=127.0.0.1:{web}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3)
        subprocess.run([a.loadgen, "-s", f"127.0.0.1:{port}", "--prefill", "-k", "100000", "-q"],
                       stdout=subprocess.DEVNULL, check=False, timeout=120)
        start = time.time()
        for rate in ("5000", "20000", None):
            cmd = [a.loadgen, "-s", f"127.0.0.1:{port}", "-c", "20", "-D", str(a.phase),
                   "-k", "100000", "-g", "0.9", "-q"]
            if rate:
                cmd += ["-r", rate]
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=a.phase + 60)
        time.sleep(3)
        end = time.time()
        series = {}
        for r in query_range(web, "sum by (command) (rate(memcached_commands_total[3s]))",
                             start, end):
            series["ops " + r["metric"]["command"]] = r["values"]
        for fam in ("get", "set"):
            for qt in ("0.5", "0.99"):
                q = (f"1e6 * histogram_quantile({qt}, sum by (le) (rate("
                     f"nodelay_request_duration_seconds_bucket{{family=\"{fam}\"}}[3s])))")
                for r in query_range(web, q, start, end):
                    series[f"p{float(qt) * 100:g} {fam}"] = r["values"]
    finally:
        pr.terminate()
        srv.terminate()
        pr.wait()
        srv.wait()
    files = {}
    for name, values in series.items():
        path = os.path.join(tmp, name.replace(" ", "_") + ".dat")
        with open(path, "w") as f:
            for t, v in values:
                if v not in ("NaN", "+Inf"):
                    f.write(f"{float(t) - start:.0f} {v}\n")
        files[name] = path
    ops = [n for n in files if n.startswith("ops") and n.split()[1] in ("get", "set")]
    lat = [n for n in files if n.startswith("p")]
    plot = [
        f"set terminal pngcairo noenhanced size 1000,700; set output '{a.out}'",
        "set multiplot layout 2,1 title 'nodelay /metrics scraped by Prometheus (1 s) during "
        f"a loadgen run: 5k, 20k, then unbounded ops/s, {a.phase} s each'",
        "set ylabel 'requests/s'; set xlabel 's'; set key left top",
        "plot " + ", ".join(f"'{files[n]}' with lines title '{n} (memcached_commands_total)'"
                            for n in ops),
        "set ylabel 'microseconds'; set logscale y",
        "plot " + ", ".join(f"'{files[n]}' with lines title '{n} (nodelay_request_duration_seconds)'"
                            for n in lat),
        "unset multiplot",
    ]
    subprocess.run([gnuplot], input="\n".join(plot).encode(), check=True)
    shutil.rmtree(tmp, ignore_errors=True)
    print(a.out)


if __name__ == "__main__":
    main()
