"""Eager launch cost of two builds of jitkernel on the same Python, paired: the cp312-abi3 extension (limited API)
against a full-API one (issue 31: the abi3 wheel must not make calls slower). Two builds cannot load in one process,
so each round runs one fresh process per build, alternating A B A B ..., and each process times the eager calls of
bench_launch.py's exp kernel (4096 float32, jk.Array in and out; torch too where it sees a GPU): the median µs per
call over --reps blocks of --calls calls, one synchronize per block. Printed: each round's numbers and the paired
ratio B/A per variant, then the median of the per-round ratios (and their min-max).

    python3 benchmarks/python/bench_abi3_pair.py A_DIR B_DIR [--rounds 7] [--calls 2000] [--reps 15]

A_DIR / B_DIR: folders `pip install --target` filled (put first on PYTHONPATH), or "-" for the jitkernel the
interpreter already imports. Build both on the same Python >= 3.12 (benchmarks/python/bench_abi3_pair.sh does).
On a machine without a GPU, the mock driver (benchmarks/host_only/mock_libcuda.c, LD_LIBRARY_PATH) stands in:
then only the host work is timed.
"""
from __future__ import annotations

import argparse
import json
import os
import site
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import jitkernel as jk
from _launch_peers import JK_EXP

calls, reps, n = int(sys.argv[1]), int(sys.argv[2]), 4096
geo = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1))
k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
copy = jk.cuda_kernel(name="bench_upload", input_names=["inp"], output_names=["out"],
                      source=JK_EXP.replace("expf(inp[i])", "inp[i]"))
up = lambda h: copy(inputs=[h], output_shapes=[(n,)], output_dtypes=[jk.float32], **geo)[0]
xa, za = up(np.linspace(-1, 1, n, dtype=np.float32)), up(np.zeros(n, np.float32))
bound, zs = k.bind(inputs=[xa], outputs=[za], **geo), [za]
variants = {
    "jk.Array, output allocated": (lambda: k(inputs=[xa], output_shapes=[(n,)], output_dtypes=[jk.float32],
                                             grid=(n, 1, 1), threadgroup=(256, 1, 1)), jk.synchronize),
    "jk.Array, outputs given": (lambda: k(inputs=[xa], outputs=[za], grid=(n, 1, 1), threadgroup=(256, 1, 1)),
                                jk.synchronize),
    "jk.Array, outputs given, **kwargs": (lambda: k(inputs=[xa], outputs=[za], **geo), jk.synchronize),
    "jk.Array, bound, outputs given": (lambda: bound(xa, outputs=zs), jk.synchronize),
}
try:
    import torch
    if torch.cuda.is_available():
        x = torch.linspace(-1, 1, n, device="cuda")
        z = torch.empty_like(x)
        variants["torch, outputs given"] = (
            lambda: k(inputs=[x], outputs=[z], grid=(n, 1, 1), threadgroup=(256, 1, 1)), torch.cuda.synchronize)
except ImportError:
    pass
out = {"module": jk._core.__file__, "limited_api": jk._core._limited_api}
for name, (fn, sync) in variants.items():
    for _ in range(200):
        fn()
    sync()
    blocks = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        blocks.append((time.perf_counter() - t0) / calls * 1e6)
    out[name] = statistics.median(blocks)
print(json.dumps(out))
"""


def run_child(folder: str, calls: int, reps: int) -> dict:
    env = dict(os.environ)
    path = [HERE, env.get("PYTHONPATH", "")]
    cmd = [sys.executable]
    if folder != "-":
        # -S: no site module, so no .pth file runs (an editable jitkernel's import hook would win over PYTHONPATH);
        # the site-packages folders come after the build instead, for NumPy (and torch).
        path = [os.path.abspath(folder), HERE, *site.getsitepackages()]
        cmd.append("-S")
    env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    # From a folder of its own: the checkout's python/ must not shadow the build under test.
    proc = subprocess.run([*cmd, "-c", CHILD, str(calls), str(reps)], env=env, cwd="/",
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"child for {folder} failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if folder != "-" and not out["module"].startswith(os.path.abspath(folder) + os.sep):
        sys.exit(f"the child for {folder} imported {out['module']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="build A (the baseline: the full-API one)")
    ap.add_argument("b", help="build B (the cp312-abi3 one)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {}
    medians: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    for r in range(args.rounds):
        a = run_child(args.a, args.calls, args.reps)
        b = run_child(args.b, args.calls, args.reps)
        head = {key: (a.pop(key), b.pop(key)) for key in ("module", "limited_api")}
        if r == 0:
            for label, i in (("A", 0), ("B", 1)):
                print(f"{label}: {head['module'][i]} (limited API: {head['limited_api'][i]})")
            print(f"\n| round | variant | A µs | B µs | B/A |\n|---|---|---|---|---|")
        for name in a:
            ratios.setdefault(name, []).append(b[name] / a[name])
            medians["A"].setdefault(name, []).append(a[name])
            medians["B"].setdefault(name, []).append(b[name])
            print(f"| {r + 1} | {name} | {a[name]:.3f} | {b[name]:.3f} | {b[name] / a[name]:.3f} |")
    print(f"\nmedians over {args.rounds} rounds (B/A: median of the per-round ratios, [min, max])\n")
    print("| variant | A µs | B µs | B/A | range |\n|---|---|---|---|---|")
    for name, rs in ratios.items():
        print(f"| {name} | {statistics.median(medians['A'][name]):.3f} | "
              f"{statistics.median(medians['B'][name]):.3f} | {statistics.median(rs):.3f} | "
              f"[{min(rs):.3f}, {max(rs):.3f}] |")


if __name__ == "__main__":
    main()
