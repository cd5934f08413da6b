"""Per-call cost of a kernel inside a compiled torch function: jitkernel's op vs a Triton kernel registered the way
torch recommends (torch.library.triton_op + wrap_triton) vs Inductor's own code for torch.exp, in
torch.compile(fullgraph=True), with dynamic=True, and in mode="reduce-overhead" (CUDA graphs); a kernel with a
backward (kernel.vjp) vs a triton_op with register_autograd, forward + backward compiled; and the eager call.

One small elementwise exp over 4096 float32 per call, so the time is the host's path. Every variant runs in each
round, in one process, in an order that rotates by round (the host drifts 10-20% between runs); a row is the median
over rounds of (time for --n calls, synchronized) / n, and its ratio is the median of the per-round ratios to its
reference (the triton_op in the same mode).

    python3 benchmarks/bench_compiled.py [--n 1000] [--rounds 9] [--json out.json]
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
EXP_VJP = jk.cuda_kernel(name="bench_exp_vjp", input_names=["x"], output_names=["y"],
                         source="auto i = blockIdx.x * blockDim.x + threadIdx.x; "
                                "if (i < x_shape[0]) y[i] = exp(x[i]);")
MUL = jk.cuda_kernel(name="bench_mul", input_names=["a", "b"], output_names=["y"],
                     source="auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < a_shape[0]) y[i] = a[i] * b[i];")


def _jk(kernel, inputs, like):
    return kernel(inputs=inputs, output_shapes=[like.shape], output_dtypes=[like.dtype], grid=(like.numel(), 1, 1),
                  threadgroup=(256, 1, 1))[0]


@EXP_VJP.vjp
def _exp_vjp(primals, outputs, cotangents):
    return [_jk(MUL, [outputs[0], cotangents[0]], primals[0])]


def jk_exp(x):
    return _jk(EXP, [x], x)


def jk_exp_grad(x):
    return _jk(EXP_VJP, [x], x)


def _triton_ops():
    """exp as a triton_op, and the same with register_autograd (its backward a second triton_op)."""
    import triton
    import triton.language as tl
    from torch.library import triton_op, wrap_triton

    @triton.jit
    def exp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    @triton.jit
    def mul_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(a_ptr + offs, mask=mask) * tl.load(b_ptr + offs, mask=mask), mask=mask)

    def launch(kernel, *args):
        y = torch.empty_like(args[0])
        n = y.numel()
        wrap_triton(kernel)[(triton.cdiv(n, 256),)](*args, y, n, BLOCK=256)
        return y

    @triton_op("jkbench::triton_exp", mutates_args={})
    def triton_exp(x: torch.Tensor) -> torch.Tensor:
        return launch(exp_kernel, x)

    @triton_op("jkbench::triton_exp_grad", mutates_args={})
    def triton_exp_grad(x: torch.Tensor) -> torch.Tensor:
        return launch(exp_kernel, x)

    @triton_op("jkbench::triton_mul", mutates_args={})
    def triton_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return launch(mul_kernel, a, b)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return triton_mul(y, grad)

    triton_exp_grad.register_autograd(backward, setup_context=setup_context)
    return triton_exp, triton_exp_grad


def variants():
    """name -> (callable taking x, reference name, needs grad)."""
    triton_exp, triton_exp_grad = _triton_ops()
    out = {"jitkernel eager": (jk_exp, "torch.exp eager", False), "torch.exp eager": (torch.exp, None, False)}
    for mode, kw in (("compiled", {}), ("dynamic", {"dynamic": True}), ("reduce-overhead", {"mode": "reduce-overhead"})):
        ref = f"triton_op, {mode}"
        out[ref] = (torch.compile(triton_exp, fullgraph=True, **kw), None, False)
        out[f"jitkernel, {mode}"] = (torch.compile(jk_exp, fullgraph=True, **kw), ref, False)
        out[f"inductor exp, {mode}"] = (torch.compile(torch.exp, fullgraph=True, **kw), ref, False)
    ref = "triton_op + register_autograd, fwd+bwd compiled"
    out[ref] = (_fwd_bwd(torch.compile(triton_exp_grad, fullgraph=True)), None, True)
    out["jitkernel + vjp, fwd+bwd compiled"] = (_fwd_bwd(torch.compile(jk_exp_grad, fullgraph=True)), ref, True)
    return out


def _fwd_bwd(f):
    def step(x):
        y = f(x)
        y.backward(torch.ones_like(y))
        return y
    return step


def measure(table, n: int, rounds: int) -> dict:
    x = torch.randn(SIZE, device="cuda")
    xg = x.clone().requires_grad_()
    for name, (fn, _, grad) in table.items():  # the same results everywhere before anything is timed
        got = fn(xg if grad else x)
        torch.testing.assert_close(got.detach().clone(), torch.exp(x), msg=name)
    names = list(table)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            fn, _, grad = table[name]
            arg = xg if grad else x
            for _ in range(20):
                fn(arg)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn(arg)
            torch.cuda.synchronize()
            times[name].append((time.perf_counter() - t0) / n * 1e6)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json")
    args = parser.parse_args()
    table = variants()
    times = measure(table, args.n, args.rounds)
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, {SIZE} float32 elements, "
          f"{args.rounds} rounds of {args.n} calls")
    print("| variant | us per call (median) | paired ratio | vs |\n|---|---:|---:|---|")
    rows = {}
    for name, (_, ref, _) in table.items():
        us = statistics.median(times[name])
        ratio = statistics.median(a / b for a, b in zip(times[name], times[ref])) if ref else None
        rows[name] = {"us": us, "ratio": ratio, "vs": ref}
        print(f"| {name} | {us:.2f} | {f'{ratio:.2f}x' if ratio else '-'} | {ref or ''} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
