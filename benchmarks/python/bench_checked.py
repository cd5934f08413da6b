"""Checked mode's cost (docs/checked.md): checked against unchecked kernels for an elementwise, a reduction and a
shared-memory kernel, on one GPU, in interleaved rounds in one process.

Two measurements per kernel:
- **device**: GPU time per launch, the kernel's own cost plus checked mode's 64-byte report reset. The launches are
  captured into a CUDA graph (torch.cuda.graph) of CALLS calls, so that no host work or synchronisation sits
  between them (a captured checked launch does not wait: its check is pending and jk.synchronize() clears it),
  and each round replays the graph between two CUDA events.
- **call**: host wall time of one eager call that waits for its result (checked calls synchronise themselves;
  unchecked ones are followed by torch.cuda.synchronize()), outputs passed with ``outputs=`` (no allocation, no
  poison), median over a block of calls.

Each round measures both variants (their order alternating), so the per-round ratio checked / unchecked pairs
measurements taken moments apart; the table gives the medians of each variant and the median of the paired ratios.

    python benchmarks/python/bench_checked.py [--rounds 15] [--calls 200] [--json out.json]

Needs torch with CUDA (events and graphs).
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import jitkernel as jk

N = 1 << 24  # elements
TG = 256
INDEX = "const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"

KERNELS = {
    # y = a * x + b
    "elementwise": dict(inputs=["x", "b", "a"], source=INDEX + "if (i < N) y[i] = a[0] * x[i] + b[i];\n",
                        grid=N, out=N),
    # each block sums a grid-stride slice (warp shuffles), one atomicAdd per warp
    "reduction": dict(inputs=["x"], source=(
        INDEX + "float v = 0.f;\n"
        "for (int k = i; k < N; k += gridDim.x * blockDim.x) v += x[k];\n"
        "for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);\n"
        "if ((threadIdx.x & 31) == 0) atomicAdd(&y[0], v);\n"), grid=132 * 8 * TG, out=1),
    # a 5-point 1-D stencil through a shared-memory tile with halo
    "shared memory": dict(inputs=["x"], source=(
        INDEX + "__shared__ float tile[256 + 4];\n"
        "const int t = threadIdx.x + 2;\n"
        "tile[t] = i < N ? x[i] : 0.f;\n"
        "if (threadIdx.x < 2) {\n"
        "  tile[threadIdx.x] = i >= 2 ? x[i - 2] : 0.f;\n"
        "  tile[t + 256] = i + 256 < N ? x[i + 256] : 0.f;\n"
        "}\n"
        "__syncthreads();\n"
        "if (i < N) y[i] = 0.1f * tile[t - 2] + 0.2f * tile[t - 1] + 0.4f * tile[t] + 0.2f * tile[t + 1]"
        " + 0.1f * tile[t + 2];\n"), grid=N, out=N),
}


def make(torch, name, spec, checked, eager=False):
    # The eager variant is another binary (a define): a checked kernel once captured into a graph waits for the
    # device before each later eager launch, which the eager measurement must not include.
    options = {"checked": checked, "defines": {"JK_BENCH_EAGER": None} if eager else {}}
    k = jk.cuda_kernel(name="bench_" + name.replace(" ", "_"), input_names=spec["inputs"], output_names=["y"],
                       source=spec["source"], compile_options=options)
    x = torch.randn(N, device="cuda")
    inputs = {"x": x, "b": torch.randn(N, device="cuda"), "a": 1.5}
    args = [inputs[n] for n in spec["inputs"]]
    y = torch.zeros(spec["out"], device="cuda")

    def call():
        k(inputs=args, outputs=[y], grid=(spec["grid"], 1, 1), threadgroup=(TG, 1, 1), template=[("N", N)])
    return call


def graph_of(torch, call, calls):
    call()  # compiled, loaded and checked before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        for _ in range(calls):
            call()
    torch.cuda.current_stream().wait_stream(stream)
    jk.synchronize()  # clears the pending checks of the capture
    return graph


def device_us(torch, graph, calls):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    jk.synchronize()  # the replayed checked launches' pending checks (none fire: the kernels are correct)
    return start.elapsed_time(end) * 1000 / calls


def call_us(torch, call, calls):
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def measure(torch, rounds, calls):
    rows = {}
    for name, spec in KERNELS.items():
        # The calls (their arrays) stay alive while their graphs replay: a captured graph holds raw addresses, and
        # replaying it after torch freed and reused them faulted with an illegal address.
        captured = {c: make(torch, name, spec, c) for c in (False, True)}
        graphs = {c: graph_of(torch, captured[c], calls) for c in (False, True)}
        calls_of = {c: make(torch, name, spec, c, eager=True) for c in (False, True)}
        dev = {False: [], True: []}
        host = {False: [], True: []}
        for r in range(rounds):
            for c in ((False, True) if r % 2 == 0 else (True, False)):
                dev[c].append(device_us(torch, graphs[c], calls))
                host[c].append(call_us(torch, calls_of[c], max(calls // 4, 10)))
        rows[name] = {
            "device_us": {"unchecked": statistics.median(dev[False]), "checked": statistics.median(dev[True])},
            "device_ratio": statistics.median(b / a for a, b in zip(dev[False], dev[True])),
            "call_us": {"unchecked": statistics.median(host[False]), "checked": statistics.median(host[True])},
            "call_ratio": statistics.median(b / a for a, b in zip(host[False], host[True])),
        }
    return rows


def table(rows, rounds, calls, device):
    lines = [f"Checked mode cost on {device}: {rounds} interleaved rounds, {calls} launches per graph replay, "
             f"N = {N} float32 elements",
             "",
             "| kernel | device µs unchecked | device µs checked | device ratio | call µs unchecked | "
             "call µs checked | call ratio |",
             "|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['device_us']['unchecked']:.1f} | {r['device_us']['checked']:.1f} | "
                     f"{r['device_ratio']:.3f} | {r['call_us']['unchecked']:.1f} | {r['call_us']['checked']:.1f} | "
                     f"{r['call_ratio']:.3f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", help="also write the numbers to this file")
    a = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench_checked.py needs torch with a CUDA device")
    rows = measure(torch, a.rounds, a.calls)
    print(table(rows, a.rounds, a.calls, torch.cuda.get_device_name()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rounds": a.rounds, "calls": a.calls, "n": N,
                       "kernels": rows}, f, indent=2)


if __name__ == "__main__":
    main()
