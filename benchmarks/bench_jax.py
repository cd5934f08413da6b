"""Per-call cost of a jitkernel kernel inside ``jax.jit`` (XLA FFI custom call) against the same jitted function
with ``jnp.exp``: median wall time per call of ``f(x).block_until_ready()`` over many runs, per size, as a table.

    python benchmarks/bench_jax.py [--runs 2000] [--sizes 1024,1048576,16777216]

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


def per_call_us(f, x, runs: int) -> float:
    for _ in range(20):
        f(x).block_until_ready()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f(x).block_until_ready()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--sizes", default="1024,1048576,16777216")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].device_kind}, median of {args.runs} calls "
          "(f(x).block_until_ready(), microseconds)")
    print(f"{'elements':>10} | {'jnp.exp':>9} | {'jitkernel':>9} | {'ratio':>6}")
    print("-" * 44)
    for n in (int(s) for s in args.sizes.split(",")):
        x = jnp.asarray(np.random.default_rng(0).normal(size=n).astype(np.float32))
        ref, ours = jax.jit(jnp.exp), jax.jit(jk_exp)
        np.testing.assert_allclose(np.asarray(ours(x)), np.asarray(ref(x)), rtol=1e-5)
        t_ref, t_ours = per_call_us(ref, x, args.runs), per_call_us(ours, x, args.runs)
        print(f"{n:>10} | {t_ref:>9.2f} | {t_ours:>9.2f} | {t_ours / t_ref:>6.2f}")


if __name__ == "__main__":
    main()
