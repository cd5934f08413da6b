"""Per-call cost of a kernel inside a compiled torch function: jitkernel's op vs a Triton kernel registered the way
torch recommends (torch.library.triton_op + wrap_triton) vs inductor's own code for torch.exp, each in
torch.compile(fullgraph=True) and in mode="reduce-overhead" (CUDA graphs), plus the same jitkernel call eagerly.

One small elementwise exp per call, so the time is the host's launch path; each row is the median over rounds of
(time for N calls, synchronized) / N, all measured in one process so that ratios compare like with like.

    python3 benchmarks/bench_compiled.py [--n 2000] [--rounds 7] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

import jitkernel as jk

SIZE = 4096
EXP = jk.cuda_kernel(name="bench_exp", input_names=["x"], output_names=["y"],
                     source="auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < x_shape[0]) y[i] = exp(x[i]);")


def jk_exp(x):
    return EXP(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
               threadgroup=(256, 1, 1))[0]


def _triton_exp():
    import triton
    import triton.language as tl
    from torch.library import triton_op, wrap_triton

    @triton.jit
    def exp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    @triton_op("jkbench::triton_exp", mutates_args={})
    def triton_exp(x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = x.numel()
        wrap_triton(exp_kernel)[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y

    return triton_exp


def per_call_us(fn, x, n: int, rounds: int) -> float:
    for _ in range(20):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(x)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json")
    args = parser.parse_args()
    x = torch.randn(SIZE, device="cuda")
    variants = {"jitkernel eager": jk_exp}
    bodies = {"jitkernel op": jk_exp, "torch.exp (inductor)": torch.exp}
    try:
        bodies["triton_op"] = _triton_exp()
    except Exception as e:  # noqa: BLE001 - reported in the table
        print(f"triton: not measured ({type(e).__name__}: {e})")
    for name, body in bodies.items():
        variants[f"{name}, compiled"] = torch.compile(body, fullgraph=True)
        variants[f"{name}, reduce-overhead"] = torch.compile(body, fullgraph=True, mode="reduce-overhead")
    for fn in variants.values():  # the same results everywhere before anything is timed
        torch.testing.assert_close(fn(x).clone(), torch.exp(x))
    rows = {name: per_call_us(fn, x, args.n, args.rounds) for name, fn in variants.items()}
    base = rows.get("triton_op, compiled")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, {SIZE} float32 elements")
    print(f"| variant | us per call | vs triton_op compiled |\n|---|---:|---:|")
    for name, us in rows.items():
        print(f"| {name} | {us:.2f} | {us / base:.2f}x |" if base else f"| {name} | {us:.2f} | - |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
