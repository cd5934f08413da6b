"""bench_launch.py's head-to-head section: the variants the issue-14 targets compare, timed in interleaved rounds
(one block of calls of each variant per round, the order rotated every round) so that the machine's drift, which
on the lent GPU machines moves a whole variant's numbers by 10-20% between consecutive measurements, moves every
variant alike. Each target is then the median over rounds of the ratio of the two variants' blocks in that round
(a paired ratio), reported with its interquartile range.
"""
from __future__ import annotations

import statistics
import time

# The variants the head-to-head rounds time (those present in a run).
HEAD_TO_HEAD = ("raw driver (ctypes cuLaunchKernelEx), outputs given", "cuda.core launch, outputs given",
                "jitkernel, jk.Array, outputs given", "jitkernel, torch, outputs given",
                "jitkernel, jk.Array, output allocated", "jitkernel, torch, output allocated",
                "torch.exp, out= given", "torch.exp, output allocated", "cupy RawKernel, outputs given",
                "jitkernel, jk.Array, bound, outputs given", "jitkernel, torch, bound, outputs given",
                "jitkernel, jk.Array, bound, output allocated", "jitkernel, torch, bound, output allocated")

# (target, numerator, denominator, limit): issue 14's targets as paired ratios.
PAIRED_TARGETS = (
    ("jk.Array: outputs given ≤ cuda.core launch()", "jitkernel, jk.Array, outputs given",
     "cuda.core launch, outputs given", 1.0),
    ("torch: outputs given ≤ cuda.core launch()", "jitkernel, torch, outputs given",
     "cuda.core launch, outputs given", 1.0),
    ("jk.Array: output allocated ≤ torch.exp(x)", "jitkernel, jk.Array, output allocated",
     "torch.exp, output allocated", 1.0),
    ("torch: output allocated ≤ torch.exp(x)", "jitkernel, torch, output allocated",
     "torch.exp, output allocated", 1.0),
    ("torch: outputs given ≤ torch.exp(x, out=)", "jitkernel, torch, outputs given", "torch.exp, out= given", 1.0),
    ("jk.Array: bound call, outputs given ≤ 0.9 × cuda.core launch()", "jitkernel, jk.Array, bound, outputs given",
     "cuda.core launch, outputs given", 0.9),
    ("torch: bound call, outputs given ≤ 0.9 × cuda.core launch()", "jitkernel, torch, bound, outputs given",
     "cuda.core launch, outputs given", 0.9),
    ("torch: bound call, output allocated ≤ torch.exp(x)", "jitkernel, torch, bound, output allocated",
     "torch.exp, output allocated", 1.0),
    ("jk.Array: outputs given ≤ 1.1 × same-process ctypes cuLaunchKernelEx", "jitkernel, jk.Array, outputs given",
     "raw driver (ctypes cuLaunchKernelEx), outputs given", 1.1),
)


def interleaved(variants, iters, rounds):
    """{name: [µs per call of each round's block]} for the variants (dicts of _launch_peers.variant)."""
    for v in variants:  # warm-up
        for _ in range(min(iters, 200)):
            v["fn"]()
        v["sync"]()
    samples = {v["name"]: [] for v in variants}
    for r in range(rounds):
        shift = r % len(variants)
        for v in variants[shift:] + variants[:shift]:
            fn = v["fn"]
            t = time.perf_counter()
            for _ in range(iters):
                fn()
            v["sync"]()
            samples[v["name"]].append((time.perf_counter() - t) / iters * 1e6)
    return samples


def paired_targets(samples):
    """Target rows (as bench_launch.targets makes them) from interleaved samples."""
    rows = []
    for target, num, den, limit in PAIRED_TARGETS:
        if num not in samples or den not in samples:
            rows.append({"target": target + " (paired)", "value": None, "limit": limit, "met": None,
                         "note": "not measured"})
            continue
        ratios = sorted(a / b for a, b in zip(samples[num], samples[den]))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        value = statistics.median(ratios)
        rows.append({"target": target + " (paired)", "value": value, "limit": limit, "met": value <= limit,
                     "note": f"median of {len(ratios)} rounds' ratios, IQR {q[0]:.2f}-{q[2]:.2f}; "
                             f"{statistics.median(samples[num]):.2f} / {statistics.median(samples[den]):.2f} µs"})
    return rows
