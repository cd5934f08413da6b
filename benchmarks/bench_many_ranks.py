"""Many ranks starting at once on one node (CPU only: compiles need NVRTC, no GPU): wall time for N processes released
together on an empty compile cache, with compile claims (the default) and without (JITKERNEL_CACHE_CLAIM=0), and warm
(the same folder again); each row says how many NVRTC compiles all processes ran together. ``--readonly-dir DIR``
adds a row for processes with an empty writable folder and DIR as a read-only tier (e.g. a folder filled by
``python -m jitkernel cache import`` or by an earlier run of this script with ``--keep``).

    python benchmarks/bench_many_ranks.py --processes 16,64 --kernels 3

Prints a markdown table. Wall time runs from the release of the processes (after their imports) to the last one's
exit, so it is the compile/wait/load part of a job's start-up.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

PROCESS = r"""
import logging, os, sys, time
import numpy as np
import jitkernel as jk

class Count(logging.Handler):
    compiles = 0
    def emit(self, record):
        if getattr(record, "jitkernel_cache", None) == "compile":
            Count.compiles += 1

log = logging.getLogger("jitkernel")
log.setLevel(logging.INFO)
log.addHandler(Count())
go = sys.argv[1]
open(go + "." + str(os.getpid()), "w").close()
while not os.path.exists(go):
    time.sleep(0.002)
for factor in range(int(sys.argv[2])):
    k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                       source=f"auto i = threadIdx.x; out[i] = inp[i] * {factor + 2};")
    k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
i = jk.cache_info()
print(f"{Count.compiles} {i.hits} {i.readonly_hits} {i.claim_waits} {i.claim_timeouts}")
"""

SETTINGS = ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES", "JITKERNEL_CACHE_READONLY_DIRS", "JITKERNEL_CACHE_CLAIM",
            "JITKERNEL_CACHE_CLAIM_WAIT")


def start_together(n: int, kernels: int, folder: str, **env) -> dict:
    """Starts n processes, releases them together once all have imported jitkernel; returns the totals."""
    scratch = tempfile.mkdtemp(prefix="jk-ranks-")
    go = os.path.join(scratch, "go")
    full = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    full.update(JITKERNEL_CACHE_DIR=folder, **env)
    procs = [subprocess.Popen([sys.executable, "-c", PROCESS, go, str(kernels)], env=full, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    try:
        while len([f for f in os.listdir(scratch) if f.startswith("go.")]) < n:
            if any(p.poll() is not None for p in procs):
                raise RuntimeError("a process exited early: " + next(p for p in procs if p.poll() is not None)
                                   .communicate()[1][-2000:])
            time.sleep(0.01)
        start = time.monotonic()
        open(go, "w").close()
        totals = [0] * 5
        for p in procs:
            out, err = p.communicate(timeout=1800)
            if p.returncode != 0:
                raise RuntimeError(err[-2000:])
            totals = [a + int(b) for a, b in zip(totals, out.split()[-5:])]
        wall = time.monotonic() - start
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    return dict(wall=wall, compiles=totals[0], hits=totals[1], readonly_hits=totals[2], waits=totals[3],
                timeouts=totals[4])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", default="16,64", help="comma-separated process counts (default 16,64)")
    parser.add_argument("--kernels", type=int, default=3, help="distinct kernels each process compiles (default 3)")
    parser.add_argument("--readonly-dir", help="also measure this folder as a read-only tier (empty writable folder)")
    parser.add_argument("--keep", help="copy the last filled cache folder here (a tier for --readonly-dir)")
    args = parser.parse_args(argv)
    print(f"{args.kernels} distinct kernels per process, {os.cpu_count()} CPUs\n")
    print("| processes | cache | claims | wall s | NVRTC compiles (all processes) | hits (tier) | claim waits "
          "(timeouts) |")
    print("|---|---|---|---|---|---|---|")
    for n in [int(x) for x in args.processes.split(",")]:
        runs = [("empty", "on", {}), ("empty", "off", {"JITKERNEL_CACHE_CLAIM": "0"}), ("warm", "on", {})]
        if args.readonly_dir:
            runs.append(("read-only tier", "on", {"JITKERNEL_CACHE_READONLY_DIRS": os.path.abspath(args.readonly_dir)}))
        folder, made = None, []
        for cache, claims, env in runs:
            if cache != "warm":
                folder = tempfile.mkdtemp(prefix="jk-ranks-cache-")
                os.rmdir(folder)  # the cache creates it, private
                made.append(folder)
            r = start_together(n, args.kernels, folder, **env)
            print(f"| {n} | {cache} | {claims} | {r['wall']:.2f} | {r['compiles']} | {r['hits']} "
                  f"({r['readonly_hits']}) | {r['waits']} ({r['timeouts']}) |", flush=True)
            if args.keep and cache == "warm":
                shutil.rmtree(args.keep, ignore_errors=True)
                shutil.copytree(folder, args.keep)
        for f in made:
            shutil.rmtree(f, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
