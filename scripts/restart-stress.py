#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""kill -9 stress for -e: test_restart.py's loaders (set, append, set+incr,
delete, get, flush_all; each key one writer) on few keys, so every key is
overwritten many times a second, killed at random moments and restarted,
every key checked against what its client had acknowledged. Bounded by
--seconds. Before each restart it keeps a copy of the memory file as the
kill left it, so a key served stale or lost is reported with every copy of
it in that file (state bits, CAS, walked or not) and the journal.

  NODELAY_BIN=build/nodelay scripts/restart-stress.py --seconds 300
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--keys", type=int, default=40, help="keys per client")
    ap.add_argument("--mem", default="256")
    ap.add_argument("--max0", type=int, default=1000 * 1000, help="client 0's largest value")
    ap.add_argument("--maxn", type=int, default=20000, help="other clients' largest value")
    ap.add_argument("--kill-min", type=float, default=0.05)
    ap.add_argument("--kill-max", type=float, default=0.8)
    ap.add_argument("--extra", default="", help="more server flags, e.g. '-o io_uring=off'")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", default="/tmp/restart-stress", help="where evidence goes")
    ap.add_argument("--no-copy", action="store_true", help="do not copy the file before restarts")
    a = ap.parse_args()
    binary = os.environ.get("NODELAY_BIN")
    if not binary:
        sys.exit("set NODELAY_BIN")
    import helpers
    import memfile
    import test_restart as tr

    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    os.makedirs(a.keep, exist_ok=True)
    work = tempfile.mkdtemp(prefix="k9-")
    mem_file = f"/dev/shm/nodelay-stress-{os.getpid()}"
    prev = mem_file + ".prev"
    flags = ["-m", a.mem, "-I", "1m", "-t", "2", *a.extra.split(), "-e", mem_file]
    models, keysets = {}, []
    for t in range(a.clients):
        ks = [f"t{t}:k{i}" for i in range(a.keys)]
        keysets.append(ks)
        for k in ks:
            models[k] = tr.KeyModel()
    counts = dict(restarts=0, items_checked=0, acked_lost=0, stale_resurrected=0,
                  corrupt_served=0, ops=0, flushes=0, evictions=0, refused=0)
    print(f"seed {seed} flags {' '.join(flags)} keys {a.clients}x{a.keys}", flush=True)
    srv = helpers.Server(binary, flags, workdir=work).start(timeout=20)
    deadline = time.monotonic() + a.seconds
    found = 0
    try:
        while time.monotonic() < deadline:
            locks = [threading.Lock() for _ in range(a.clients)]
            loaders = [tr.Loader(srv, t, keysets[t], models, a.max0 if t == 0 else a.maxn,
                                 random.Random(rng.random()), locks, False, counts["restarts"])
                       for t in range(a.clients)]
            for ld in loaders:
                ld.start()
            time.sleep(rng.uniform(a.kill_min, a.kill_max))
            for ld in loaders:
                ld.killing = True
            srv.proc.kill()
            srv.proc.wait()
            for ld in loaders:
                ld.stop = True
            for ld in loaders:
                ld.join(timeout=30)
                if ld.error:
                    raise ld.error
                counts["ops"] += ld.ops
                counts["flushes"] += ld.flushes
                if ld.lost:
                    print(ld.lost, flush=True)
            before = [ld.lost for ld in loaders if ld.lost] + memfile.run_state(mem_file)
            if not a.no_copy:
                subprocess.run(["cp", "--sparse=always", mem_file, prev], check=True)
            old_log = srv.stderr()
            srv = helpers.Server(binary, flags, workdir=work).start(timeout=30)
            counts["restarts"] += 1
            bad = []
            st = tr.check_restored(srv, models, counts, counts["restarts"], bad)
            counts["evictions"] += int(st.get("evictions", "0"))
            if bad:
                found += 1
                text = tr.report_bad(bad, mem_file, before)
                if not a.no_copy:
                    text += "\ncopies in the file as the kill left it:\n"
                    for b in bad[:10]:
                        copies = memfile.key_copies(prev, b["key"])
                        text += f" {b['key']}:\n" + "\n".join(copies) + "\n"
                out = os.path.join(a.keep, f"found-{seed}-{counts['restarts']}")
                with open(out + ".txt", "w") as f:
                    f.write(f"{counts}\n{text}\nserver log before the kill:\n{old_log}\n"
                            f"restore log:\n{srv.stderr()}\n")
                if not a.no_copy and found <= 2:
                    shutil.copy(prev, out + ".mem")
                print(f"FOUND after restart {counts['restarts']}: {out}.txt\n{text}", flush=True)
            if counts["restarts"] % 25 == 0:
                print(counts, flush=True)
    finally:
        srv.proc.kill()
        srv.proc.wait()
        for p in (mem_file, prev):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        shutil.rmtree(work, ignore_errors=True)
    print("done", counts, flush=True)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
