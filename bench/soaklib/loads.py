# SPDX-License-Identifier: BSD-3-Clause
"""The two strict load generators the soak runs side by side."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOADGEN = os.path.join(ROOT, "build", "bench", "loadgen")

# the large values' keys: (first, count); the slow clients read them too
BIG_KEYS = (1000000, 600)


def load_commands(a, port, work):
    """(name, argv) of the main load (text, meta and binary; 20 B - 8 KB) and
    the large-value one (50-300 KB with a TTL, dropping connections often)."""
    dur = str(a.duration)
    common = [LOADGEN, "-s", f"127.0.0.1:{port}", "--strict", "-p", "mixed", "-q", "-D", dur,
              "--trace-slow"]
    main_cmd = common + ["-t", "2", "-c", str(a.conns), "-d", "4", "-k", "30000",
                         "-v", "20-8000", "-g", "0.7", "--del-ratio", "0.05", "-m", "8",
                         "--multi-random", "--disconnect", "0.001", "-r", str(a.rate),
                         "--json", os.path.join(work, "main.json")]
    big_cmd = common + ["-c", "12", "-d", "2", "-k", str(BIG_KEYS[1]),
                        "--key-base", str(BIG_KEYS[0]), "-v", "50000-300000", "-g", "0.7",
                        "-m", "4", "--multi-random", "--ttl", "5", "--disconnect", "0.01",
                        "-r", "200", "--json", os.path.join(work, "big.json")]
    return (("main", main_cmd), ("big", big_cmd))


def start_loads(a, port, work, procs, started):
    """Starts both, each writing to work/NAME.err; appends (name, process,
    its log) to procs as each starts, so the caller can stop what started,
    and tells started(name, pid)."""
    for name, c in load_commands(a, port, work):
        err = open(os.path.join(work, name + ".err"), "w")
        p = subprocess.Popen(c, stdout=err, stderr=subprocess.STDOUT)
        procs.append((name, p, err))
        started(name, p.pid)


def reap_loads(procs, work, violations):
    """Waits for both (killing one still running) and judges its exit status."""
    for name, p, err in procs:
        if p.poll() is None:
            p.kill()
        rc = p.wait()
        err.close()
        if rc == 3:
            violations.append(f"{name}: the load generator saw wrong values (see {work}/{name}.err)")
        elif rc != 0:
            violations.append(f"{name}: load generator exit status {rc}")
