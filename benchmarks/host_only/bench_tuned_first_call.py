"""The warm path of an autotuned call (issue 30's target: a second process's first tuned call within 0.1 ms of an
untuned one). By default without a GPU: the mock driver (mock_libcuda.c, built here with cc) stands in for libcuda,
so launches do nothing and what is timed is the host work: Python, the disk cache and the module load. With
``--gpu`` the real driver runs the same processes on a GPU, and ``--arrays torch`` passes CUDA torch tensors
instead of ``jk.Array`` (the path a torch program takes: device and stream found through torch).

One process tunes a kernel into a fresh cache folder; then, alternating, fresh processes time the first call of
the tuned kernel and of the same kernel called directly with the chosen configuration (both after an unrelated
warm-up kernel, so neither pays for the driver or the context), and a third kind of process times the tuned call's
two parts separately: the decision (the core's warm path: cpp/bindings/services/tune_table.cpp) and the kernel call
(each the first time it runs in that process). Medians over --runs.

    python3 benchmarks/host_only/bench_tuned_first_call.py [--runs 11] [--gpu] [--arrays jk|torch]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import json, sys, time
import numpy as np
import jitkernel as jk
T = time.perf_counter_ns
SRC = "size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x; if (i < inp_shape[0]) out[i] = inp[i] * 2;"
k = jk.cuda_kernel(name="warm_path", input_names=["inp"], output_names=["out"], source=SRC)
space = [jk.Config(template={"BLOCK": b}, threadgroup=(b, 1, 1)) for b in (64, 128, 256, 512)]
tuned = jk.autotune(k, configs=space, grid=lambda shapes, cfg: (shapes[0][0], 1, 1), reps=3)
make = jk.cuda_kernel(name="warm_up", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
(x,) = make(inputs=[np.ones(1, np.float32)], output_shapes=[(4096,)], output_dtypes=[jk.float32], grid=(1, 1, 1),
            threadgroup=(1, 1, 1))
if sys.argv[3] == "torch":
    import torch
    x = torch.ones(4096, device="cuda")
    make(inputs=[x], output_shapes=[(1,)], output_dtypes=[jk.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))
CALL = dict(output_shapes=[(4096,)], output_dtypes=[jk.float32])
mode = sys.argv[1]
jk.synchronize()
out = {}
if mode == "steps":  # the tuned call's two parts, each the first time it runs in the process
    s = T(); warm = tuned._table.warm((), [x], CALL["output_dtypes"], None)
    out["decide (one core call)"] = (T() - s) / 1e3
    inputs, index, launch = warm
    s = T(); k(inputs=inputs, **CALL, **launch); jk.synchronize(); out["kernel_call"] = (T() - s) / 1e3
    s = T(); tuned.decisions; out["decode (listings only)"] = (T() - s) / 1e3
elif mode == "split":  # the tuned call in two parts: the decision (tune: no kernel run), then the call
    s = T(); tuned.tune(inputs=[x], **CALL); out["decide"] = (T() - s) / 1e3
    s = T(); tuned(inputs=[x], **CALL); jk.synchronize(); out["call after deciding"] = (T() - s) / 1e3
elif mode in ("tuned", "setup"):
    s = T(); tuned(inputs=[x], **CALL); jk.synchronize(); out["us"] = (T() - s) / 1e3
    out["timed"] = tuned.stats["candidates_timed"]
    out["chosen"] = tuned._chosen and next(iter(tuned._chosen.values()))
else:
    c = space[int(sys.argv[2])]
    s = T()
    k(inputs=[x], grid=(4096, 1, 1), threadgroup=c.threadgroup, template=list(c.template), **CALL)
    jk.synchronize()
    out["us"] = (T() - s) / 1e3
print(json.dumps(out))
"""


def run(env, arrays, mode, chosen=0) -> dict:
    args = (mode, str(chosen), arrays)
    p = subprocess.run([sys.executable, "-c", CHILD, *args], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--gpu", action="store_true", help="the real CUDA driver, not the mock")
    parser.add_argument("--arrays", choices=("jk", "torch"), default="jk")
    a = parser.parse_args()
    if a.arrays == "torch" and not a.gpu:
        parser.error("--arrays torch needs --gpu")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None and not a.gpu:
        raise SystemExit("needs a C compiler (cc) to build the mock driver")
    folder = tempfile.mkdtemp(prefix="bench-tuned-")
    env = dict(os.environ, JITKERNEL_CACHE_DIR=os.path.join(folder, "cache"))
    if not a.gpu:
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", os.path.join(folder, "libcuda.so.1"),
                        os.path.join(HERE, "mock_libcuda.c")], check=True)
        env["LD_LIBRARY_PATH"] = folder
    env.pop("JITKERNEL_REQUIRE_GPU", None)
    chosen = run(env, a.arrays, "setup")["chosen"]
    samples: dict = {"tuned": [], "untuned": []}
    steps: dict = {}
    for _ in range(a.runs):
        for mode in samples:
            result = run(env, a.arrays, mode, chosen)
            if mode == "tuned" and result["timed"]:
                raise SystemExit("the second process timed candidates")
            samples[mode].append(result["us"])
        for mode in ("steps", "split"):
            for name, us in run(env, a.arrays, mode).items():
                steps.setdefault(name, []).append(us)
    shutil.rmtree(folder, ignore_errors=True)
    t, u = (statistics.median(samples[m]) for m in ("tuned", "untuned"))
    paired = statistics.median(a - b for a, b in zip(samples["tuned"], samples["untuned"]))
    driver = "real driver" if a.gpu else "mock driver"
    print(f"first call, warm cache, {driver}, {a.arrays} arrays (medians of {a.runs} processes): tuned {t:.1f} us, "
          f"untuned {u:.1f} us, difference {t - u:+.1f} us, median paired difference {paired:+.1f} us")
    print("the tuned call's parts (each the first time it runs in its process), then the tuned call split in two by "
          "tune() (its own processes), median us:")
    for name, values in steps.items():
        print(f"  {name:24s} {statistics.median(values):8.1f}")


if __name__ == "__main__":
    main()
