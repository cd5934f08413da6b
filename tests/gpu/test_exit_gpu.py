"""A process that used jitkernel exits clean: every output it still held when it ended (dropped by the
interpreter's own shutdown) and every output it dropped itself has its device memory returned, and nanobind prints
no leak report. Checked in child processes under compute-sanitizer's leak check, which counts every allocation still
live when the process ends (skipped where compute-sanitizer is not installed).

compute-sanitizer runs with ``--show-backtrace device``: its host backtraces walk the Python stack and keep a
reference to every Python frame they saw, so with them the script's module (and every object it holds) outlives the
interpreter and everything looks leaked (measured: the module frame's reference count grows to 64 with no Python
referrer). The frameworks' own caching pools (torch, CuPy's device and pinned host pools) keep freed blocks until the process ends by design; the
script empties them after dropping its inputs, so that what the sanitizer still sees live is ours alone. Outputs of
torch and CuPy calls come from those pools too (docs/allocation.md), so the script drops them in both variants:
what stays live then is what jitkernel itself still holds.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from _gpu_util import need

pytestmark = pytest.mark.gpu


def _sanitizer():
    found = shutil.which("compute-sanitizer")
    if found is None and os.path.exists("/usr/local/cuda/bin/compute-sanitizer"):
        found = "/usr/local/cuda/bin/compute-sanitizer"
    if found is None:
        pytest.skip("compute-sanitizer is not installed")
    return found


SCRIPT = """
import gc, sys
import numpy as np
import jitkernel as jk
fw, drop = sys.argv[1], sys.argv[2] == "drop"
k = jk.cuda_kernel("exit_probe", ["a"], ["o"],
                   "auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < a_shape[0]) o[i] = a[i] * 2;")
N = 1 << 16

def call(x):
    return k(inputs=[x], output_shapes=[(N,)], output_dtypes=[np.float32], grid=(N, 1, 1),
             threadgroup=(256, 1, 1))[0]

def make(x):
    if fw == "cupy":
        import cupy
        return cupy.asarray(x)
    if fw == "torch":
        import torch
        return torch.from_numpy(x).cuda()
    if fw == "jkarray":
        return call(x)
    return x

kept = []
for i in range(20):
    a = make(np.arange(N, dtype=np.float32))
    o = call(a)
    if i % 5 == 0:
        kept.append(o)          # alive until the interpreter's shutdown drops it
jk.synchronize()
last = kept[-1].cpu() if fw == "torch" else (kept[-1].get() if fw == "cupy" else kept[-1])
assert float(np.asarray(last)[3]) == (12 if fw == "jkarray" else 6)   # jk.Array inputs are themselves doubled
del a
if drop or fw in ("torch", "cupy"):  # the program drops its outputs itself; the kernel object stays.
    del kept, o                 # torch / CuPy outputs come from their own pools, which keep live blocks at exit
gc.collect()
if fw == "cupy":
    import cupy
    cupy.get_default_memory_pool().free_all_blocks()
    cupy.get_default_pinned_memory_pool().free_all_blocks()
if fw == "torch":
    import torch
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
print("done")
"""


@pytest.mark.parametrize("drop", ["keep", "drop"])
@pytest.mark.parametrize("framework", ["numpy", "jkarray", "torch", "cupy"])
def test_outputs_alive_at_exit_are_freed(framework, drop):
    if framework in ("torch", "cupy"):
        need(framework)
    proc = subprocess.run([_sanitizer(), "--tool", "memcheck", "--leak-check", "full", "--show-backtrace", "device",
                           "--error-exitcode", "3", sys.executable, "-c", textwrap.dedent(SCRIPT), framework, drop],
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "done" in out, out[-4000:]
    assert "nanobind: leaked" not in out, out[-4000:]
    assert "LEAK SUMMARY: 0 bytes leaked in 0 allocations" in out, out[-4000:]
