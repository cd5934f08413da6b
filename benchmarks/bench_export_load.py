"""Load cost of an exported JAX program that calls N jitkernel kernels, on a serving process whose kernels come
from a bundle (a read-only tier, a fresh writable folder): deserialise + first call, against the same program with
jnp ops in place of the kernels, in fresh processes (medians), with the serving process's compile cache counters
(misses must be 0: no NVRTC compile). The difference per kernel is what the kernels add to loading (their module
loads and the handler's stages).

    python3 benchmarks/bench_export_load.py [--kernels 8] [--reps 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

EXPORT = """
import sys, jax, jax.numpy as jnp, numpy as np, jitkernel as jk
n_kernels, use_jk, path = int(sys.argv[1]), sys.argv[2] == "jk", sys.argv[3]
body = "const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\\nif (i < x_shape[0]) y[i] = x[i] * {c}.0f + 1.0f;"
kernels = [jk.cuda_kernel(name=f"step{k}", input_names=["x"], output_names=["y"], source=body.format(c=k + 2))
           for k in range(n_kernels)]
def program(x):
    for k, kernel in enumerate(kernels):
        if use_jk:
            x = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.shape[0], 1, 1),
                       threadgroup=(256, 1, 1))[0]
        else:
            x = x * (k + 2) + 1.0
        x = jnp.tanh(x)
    return x
x = jnp.linspace(-1, 1, 4096, dtype=jnp.float32)
jax.jit(program)(x).block_until_ready()  # fills the compile cache
exported = jax.export.export(jax.jit(program), disabled_checks=jk.jax_export_disabled_checks())(x)
open(path, "wb").write(exported.serialize())
"""

SERVE = """
import json, sys, time
t0 = time.perf_counter()
import jax, jax.numpy as jnp, jitkernel as jk
x = jnp.linspace(-1, 1, 4096, dtype=jnp.float32)
x.block_until_ready()
t1 = time.perf_counter()
program = jax.export.deserialize(bytearray(open(sys.argv[1], "rb").read()))
t2 = time.perf_counter()
program.call(x).block_until_ready()
t3 = time.perf_counter()
i = jk.cache_info()
print(json.dumps(dict(deserialize_ms=(t2 - t1) * 1e3, first_call_ms=(t3 - t2) * 1e3, misses=i.misses,
                      readonly_hits=i.readonly_hits)))
"""


def python(code: str, args, env: dict) -> str:
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)
    return done.stdout


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=8)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args(argv)
    import jitkernel as jk

    with tempfile.TemporaryDirectory() as folder:
        base = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
        build_env = dict(base, JITKERNEL_CACHE_DIR=os.path.join(folder, "build_cache"))
        paths = {}
        for kind in ("jk", "jnp"):
            paths[kind] = os.path.join(folder, f"{kind}.jax")
            python(EXPORT, [a.kernels, kind, paths[kind]], build_env)
        shipped = os.path.join(folder, "shipped")
        os.mkdir(shipped, 0o755)
        bundle = os.path.join(shipped, "kernels.jkb")
        jk.export_cache(bundle, directory=build_env["JITKERNEL_CACHE_DIR"])
        rows = {kind: [] for kind in paths}
        for r in range(a.reps):
            for kind in (paths if r % 2 == 0 else list(paths)[::-1]):
                serve_env = dict(base, JITKERNEL_CACHE_DIR=os.path.join(folder, f"serve_{kind}_{r}"),
                                 JITKERNEL_CACHE_READONLY_DIRS=bundle)
                rows[kind].append(json.loads(python(SERVE, [paths[kind]], serve_env).strip().splitlines()[-1]))
    med = lambda kind, key: statistics.median(row[key] for row in rows[kind])
    print(f"{a.kernels} kernels, {a.reps} fresh serving processes each, medians (ms); kernels from a bundle tier")
    print("| program | deserialize ms | first call ms | misses | tier hits |")
    print("|---|---:|---:|---:|---:|")
    for kind, label in (("jk", f"{a.kernels} jitkernel kernels + tanh"), ("jnp", f"{a.kernels} jnp ops + tanh")):
        print(f"| {label} | {med(kind, 'deserialize_ms'):.1f} | {med(kind, 'first_call_ms'):.1f} | "
              f"{max(row['misses'] for row in rows[kind])} | {med(kind, 'readonly_hits'):.0f} |")
    extra = med("jk", "first_call_ms") - med("jnp", "first_call_ms")
    print(f"first call: {extra:+.1f} ms for the kernels, {extra / a.kernels:+.2f} ms per kernel")


if __name__ == "__main__":
    main()
