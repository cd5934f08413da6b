"""Where an eager call's cost goes: the pieces of a jitkernel call with torch tensors and with jk.Array, timed in
interleaved rounds in one process next to cuda.core's launch() and torch's own exp, so that a gap to a target is
split into what makes it (argument conversion without the launch, torch's is_neg check, the current-stream query,
each extra input, output allocation) rather than guessed. exp over 4096 float32 (the kernel of bench_launch.py).

    python3 benchmarks/python/bench_eager_pieces.py [--rounds 9] [--calls 3000]

Prints a markdown table: median µs per call, the paired ratio to cuda.core's launch() and the paired difference to
the jk.Array call with outputs given (the medians of per-round ratios and differences).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import _launch_peers as lp
import jitkernel as jk

N = 4096
GEO = dict(grid=(N, 1, 1), threadgroup=(256, 1, 1))


def convert_only(kernel, inputs, outputs):
    """The argument conversion of a call with outputs given, without the launch."""
    kernel._convert(inputs, None, None, GEO["grid"], GEO["threadgroup"], None, None, None, outputs)


def call_variants(k, x, z, xa, za):
    """Whole calls and their conversion alone, torch tensors and jk.Array, outputs given."""
    stream = torch.cuda.current_stream().cuda_stream
    ba = k.bind(inputs=[xa], outputs=[za], **GEO)
    bt = k.bind(inputs=[x], outputs=[z], **GEO)
    za_list, z_list = [za], [z]
    return {
        "jk.Array, outputs given": lambda: k(inputs=[xa], outputs=[za], grid=(N, 1, 1), threadgroup=(256, 1, 1)),
        "torch, outputs given": lambda: k(inputs=[x], outputs=[z], grid=(N, 1, 1), threadgroup=(256, 1, 1)),
        "torch, outputs given, stream=int": lambda: k(inputs=[x], outputs=[z], grid=(N, 1, 1),
                                                      threadgroup=(256, 1, 1), stream=stream),
        "jk.Array, bound": lambda: ba(xa, outputs=za_list),
        "torch, bound": lambda: bt(x, outputs=z_list),
        "conversion only, jk.Array": lambda: convert_only(k, [xa], [za]),
        "conversion only, torch": lambda: convert_only(k, [x], [z]),
    }


def torch_pieces(x, z):
    """What a torch call does besides jitkernel's own work, each timed alone."""
    is_neg = torch.Tensor.is_neg
    raw_stream = torch._C._cuda_getCurrentRawStream
    return {
        "torch.Tensor.is_neg, 2 tensors": lambda: (is_neg(x), is_neg(z)),
        "torch current raw stream": lambda: raw_stream(0),
        "an empty Python call": lambda: None,
    }


def input_count_variants(x, z, xa, za):
    """1, 4 and 16 array inputs, outputs given: the cost of each extra input."""
    out = {}
    for count in (1, 4, 16):
        kk = lp.sum_kernel(jk, count)
        for label, ins, o in (("torch", [x] * count, [z]), ("jk.Array", [xa] * count, [za])):
            out[f"{label}, {count} inputs"] = (
                lambda kk=kk, ins=ins, o=o: kk(inputs=ins, outputs=o, grid=(N, 1, 1), threadgroup=(256, 1, 1)))
        out[f"conversion only, torch, {count} inputs"] = lambda kk=kk, ins=[x] * count: convert_only(kk, ins, [z])
    return out


def allocation_variants(k, x, z, xa):
    """Outputs allocated per call, next to torch.exp and torch.empty_like."""
    shapes, dtypes = [(N,)], [jk.float32]
    bound = k.bind(inputs=[x], output_shapes=shapes, output_dtypes=dtypes, **GEO)
    return {
        "torch, output allocated": lambda: k(inputs=[x], output_shapes=[(N,)], output_dtypes=[jk.float32],
                                             grid=(N, 1, 1), threadgroup=(256, 1, 1)),
        "torch, bound, output allocated": lambda: bound(x),
        "jk.Array, output allocated": lambda: k(inputs=[xa], output_shapes=[(N,)], output_dtypes=[jk.float32],
                                                grid=(N, 1, 1), threadgroup=(256, 1, 1)),
        "torch.exp(x)": lambda: torch.exp(x),
        "torch.exp(x, out=z)": lambda: torch.exp(x, out=z),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
    }


def variants():
    k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=lp.JK_EXP)
    copy = jk.cuda_kernel(name="bench_upload", input_names=["inp"], output_names=["out"],
                          source=lp.JK_EXP.replace("expf(inp[i])", "inp[i]"))
    x = torch.randn(N, device="cuda")
    z = torch.empty_like(x)
    upload = lambda h: copy(inputs=[h], output_shapes=[(N,)], output_dtypes=[jk.float32], **GEO)[0]
    xa, za = upload(x.cpu().numpy()), upload(np.zeros(N, np.float32))
    v = {"cuda.core launch()": lp.peer_cudacore(N)[0]["fn"]}
    v.update(call_variants(k, x, z, xa, za))
    v.update(torch_pieces(x, z))
    v.update(input_count_variants(x, z, xa, za))
    v.update(allocation_variants(k, x, z, xa))
    return v


def run(v, rounds, calls):
    for f in v.values():
        f()
    torch.cuda.synchronize()
    res = {name: [] for name in v}
    for r in range(rounds):
        order = list(v.items()) if r % 2 == 0 else list(v.items())[::-1]
        for name, f in order:
            for _ in range(100):
                f()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            torch.cuda.synchronize()
            res[name].append((time.perf_counter() - t0) / calls * 1e6)
    return res


def report(res):
    base, ja = res["cuda.core launch()"], res["jk.Array, outputs given"]
    med = statistics.median
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, jitkernel {jk.__version__}")
    print("| variant | median µs | paired ratio vs cuda.core launch() | paired difference vs jk.Array call (µs) |")
    print("|---|---:|---:|---:|")
    for name, ts in res.items():
        print(f"| {name} | {med(ts):.3f} | {med(a / b for a, b in zip(ts, base)):.3f} | "
              f"{med(a - b for a, b in zip(ts, ja)):+.3f} |")
    for label in ("torch", "jk.Array", "conversion only, torch"):
        one, sixteen = res[f"{label}, 1 inputs"], res[f"{label}, 16 inputs"]
        print(f"each extra input, {label}: {med((p - q) / 15 for p, q in zip(sixteen, one)):.3f} µs")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=3000)
    a = p.parse_args(argv)
    report(run(variants(), a.rounds, a.calls))


if __name__ == "__main__":
    main()
