"""Per-call cost of a jitkernel kernel inside ``jax.jit`` (XLA FFI custom call) against the same jitted function
with ``jnp.exp``, in interleaved rounds in one process: calls queued back to back (async) and one call waited for
(``f(x).block_until_ready()``), medians and paired ratios (the median of per-round ratios), per size. Then the
handler's own share of a call: the execute stage's wall time and its launch's, from jitkernel's profiling hook.

    python benchmarks/bench_jax.py [--rounds 11] [--calls 2000] [--sizes 4096,1048576]

Run on a GPU machine with jax[cuda]; results go in benchmarks/results/ by hand (the table is printed).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jitkernel as jk  # noqa: E402

EXP = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"],
                     source="const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
                            "if (i < N) out[i] = exp(inp[i]);")


def jk_exp(x):
    return EXP(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
               threadgroup=(256, 1, 1), template=[("N", x.size)])[0]


def block_us(f, x, calls: int, wait_each: bool) -> float:
    """Microseconds per call over `calls` calls: queued back to back, or each waited for."""
    for _ in range(20):
        f(x)
    f(x).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(calls):
        r = f(x)
        if wait_each:
            r.block_until_ready()
    r.block_until_ready()
    return (time.perf_counter() - t0) / calls * 1e6


def paired(fs, x, rounds: int, calls: int, wait_each: bool):
    """Per-round times of each function, the order alternating between rounds."""
    res = {name: [] for name in fs}
    for r in range(rounds):
        for name, f in (list(fs.items()) if r % 2 == 0 else list(fs.items())[::-1]):
            res[name].append(block_us(f, x, calls if not wait_each else max(calls // 5, 50), wait_each))
    return res


def handler_share(f, x, calls: int):
    """(execute stage ns, of which launch ns) per call, from the profiling hook."""
    from jitkernel import _core

    before = _core._xla_execute_times()
    _core._xla_time_executes(True)
    try:
        for _ in range(calls):
            f(x)
        f(x).block_until_ready()
    finally:
        _core._xla_time_executes(False)
    after = _core._xla_execute_times()
    n = max(after[0] - before[0], 1)
    return (after[1] - before[1]) / n, (after[2] - before[2]) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sizes", default="4096,1048576")
    args = parser.parse_args()
    med = statistics.median
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, {args.rounds} interleaved rounds, µs per call")
    print("| elements | calls | jnp.exp | jitkernel | paired ratio | jitkernel's execute stage (launch) |")
    print("|---:|---|---:|---:|---:|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        x = jnp.asarray(np.random.default_rng(0).normal(size=n).astype(np.float32))
        fs = {"jnp.exp": jax.jit(jnp.exp), "jitkernel": jax.jit(jk_exp)}
        np.testing.assert_allclose(np.asarray(fs["jitkernel"](x)), np.asarray(fs["jnp.exp"](x)), rtol=1e-5)
        stage, launch = handler_share(fs["jitkernel"], x, args.calls)
        for wait_each in (False, True):
            res = paired(fs, x, args.rounds, args.calls, wait_each)
            ref, ours = res["jnp.exp"], res["jitkernel"]
            print(f"| {n} | {'each waited for' if wait_each else 'queued'} | {med(ref):.2f} | {med(ours):.2f} | "
                  f"{med(a / b for a, b in zip(ours, ref)):.3f} | {stage / 1e3:.2f} ({launch / 1e3:.2f}) |")


if __name__ == "__main__":
    main()
