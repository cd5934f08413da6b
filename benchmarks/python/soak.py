"""Soak run: many launches in one process, with host RSS and device memory sampled along the way, to show that
neither grows with the number of calls (no per-call leak of host objects, DLPack capsules, streams or device
buffers).

Each configuration runs --calls launches of out = inp * 2 over 4096 float32 (inputs from torch, CuPy or jk.Array;
outputs allocated by the call, or given with outputs=). The first 5% of calls warm up (compile, pools, framework
caches); then RSS (/proc/self/statm) and the device's used memory (cuMemGetInfo through CuPy, or torch when CuPy
is missing) are sampled 10 times. A configuration passes when RSS grows by less than --rss-limit-mb and device
memory by less than --device-limit-mb over the second half of the calls (sample at 50% to the end): a leak grows
with the number of calls, so it shows there, while one-time growth early in a process does not (the first
configuration of a process was seen to step up by ~166 MB of RSS once, between 5% and 15% of its calls, and stay
flat after; the same configuration run again later in the process is flat throughout). The table also shows the
first sample. Writes soak.md / soak.json to --out;
exits 1 when a configuration fails.

    python3 benchmarks/python/soak.py --out DIR [--calls 1000000] [--configs torch-alloc,cupy-given,...]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import numpy as np

from _bench_common import environment

N = 4096
BODY = "const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < inp_shape[0]) out[i] = inp[i] * 2;"
CONFIGS = ("jkarray-alloc", "jkarray-given", "torch-alloc", "torch-given", "cupy-alloc", "cupy-given")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def device_used_mb() -> float:
    try:
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
    except ImportError:
        import torch

        free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


def to_host(x) -> np.ndarray:
    if hasattr(x, "get"):  # CuPy
        return x.get()
    if hasattr(x, "cpu"):  # torch
        return x.cpu().numpy()
    return np.asarray(x)


def make_input(framework: str, jk, kernel):
    x = np.arange(N, dtype=np.float32)
    if framework == "torch":
        import torch

        return torch.from_numpy(x).cuda()
    if framework == "cupy":
        import cupy

        return cupy.asarray(x)
    (y,) = kernel(inputs=[x], output_shapes=[(N,)], output_dtypes=[jk.float32], grid=(N, 1, 1),
                  threadgroup=(256, 1, 1))
    return y


def soak(config: str, calls: int, jk) -> dict:
    framework, mode = config.split("-")
    kernel = jk.cuda_kernel("soak_" + framework, ["inp"], ["out"], BODY)
    inp = make_input(framework, jk, kernel)
    given = [make_input(framework, jk, kernel)] if mode == "given" else None
    kw = dict(inputs=[inp], output_shapes=[(N,)], output_dtypes=[jk.float32], grid=(N, 1, 1), threadgroup=(256, 1, 1))
    if given is not None:
        kw["outputs"] = given
    warm = max(calls // 20, 1)
    step = max((calls - warm) // 10, 1)
    samples = []
    t0 = time.perf_counter()
    for i in range(calls):
        out = kernel(**kw)
        if i >= warm and (i - warm) % step == 0:
            jk.synchronize()
            gc.collect()
            samples.append((i, rss_mb(), device_used_mb()))
        del out
    jk.synchronize()
    gc.collect()
    samples.append((calls, rss_mb(), device_used_mb()))
    seconds = time.perf_counter() - t0
    expected = np.arange(N, dtype=np.float32) * (4 if framework == "jkarray" else 2)
    ok_values = bool(np.array_equal(to_host(given[0] if given else kernel(**kw)[0]), expected))
    return {"config": config, "calls": calls, "seconds": seconds, "samples": samples, "values_ok": ok_values}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--rss-limit-mb", type=float, default=8.0)
    parser.add_argument("--device-limit-mb", type=float, default=64.0)
    args = parser.parse_args()
    import jitkernel as jk

    os.makedirs(args.out, exist_ok=True)
    rows, failed = [], False
    for config in args.configs.split(","):
        try:
            r = soak(config, args.calls, jk)
        except ImportError as e:
            rows.append({"config": config, "skipped": str(e)})
            continue
        first, mid, last = r["samples"][0], r["samples"][len(r["samples"]) // 2], r["samples"][-1]
        r["rss_growth_mb"] = last[1] - mid[1]
        r["device_growth_mb"] = last[2] - mid[2]
        r["pass"] = (r["values_ok"] and r["rss_growth_mb"] < args.rss_limit_mb
                     and r["device_growth_mb"] < args.device_limit_mb)
        failed |= not r["pass"]
        rows.append(r)
        print(f"{config}: {r['calls']} calls in {r['seconds']:.1f} s; RSS {first[1]:.1f} -> {mid[1]:.1f} -> "
              f"{last[1]:.1f} MB, device used {first[2]:.0f} -> {mid[2]:.0f} -> {last[2]:.0f} MB, values {'ok' if r['values_ok'] else 'WRONG'}: "
              f"{'pass' if r['pass'] else 'FAIL'}; RSS samples " + " ".join(f"{x[1]:.0f}" for x in r["samples"]),
              flush=True)
    lines = ["# Soak: host RSS and device memory over many launches", "",
             f"Limits: RSS growth < {args.rss_limit_mb} MB, device growth < {args.device_limit_mb} MB over the "
             "second half of the calls (50% -> end); start is the first sample, after 5% warm-up calls.", "",
             "| config | calls | s | RSS start / 50% / end MB | device start / 50% / end MB | result |",
             "|---|---:|---:|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['config']} | skipped: {r['skipped']} | | | | |")
            continue
        s = [r["samples"][0], r["samples"][len(r["samples"]) // 2], r["samples"][-1]]
        lines.append(f"| {r['config']} | {r['calls']} | {r['seconds']:.1f} | "
                     f"{' / '.join(f'{x[1]:.1f}' for x in s)} | {' / '.join(f'{x[2]:.0f}' for x in s)} | "
                     f"{'pass' if r['pass'] else 'FAIL'} |")
    with open(os.path.join(args.out, "soak.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "soak.json"), "w") as f:
        json.dump({"environment": environment(), "rows": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
