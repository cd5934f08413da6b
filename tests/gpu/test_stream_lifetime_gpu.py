"""Outputs allocated on a stream keep that stream alive: the stream object can be dropped before the outputs
without the stream-ordered free touching a destroyed stream (regression: a CuPy stream destroyed first made the
output's free crash). Each scenario runs in a child process, so a crash is a failure rather than a dead session."""
import subprocess
import sys
import textwrap

import pytest

from _gpu_util import need

pytestmark = pytest.mark.gpu

PRELUDE = """
import gc, sys
import numpy as np
import jitkernel as jk
k = jk.cuda_kernel("plus_one_lifetime", ["inp"], ["out"],
                   "auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < inp_shape[0]) out[i] = inp[i] + 1.0f;")
N = 1 << 16
def call(x, **kw):
    return k(inputs=[x], output_shapes=[(N,)], output_dtypes=[jk.float32], grid=(N, 1, 1),
             threadgroup=(256, 1, 1), **kw)[0]
"""

SCENARIOS = {
    "cupy_explicit": ("cupy", """
import cupy as cp
x = cp.zeros(N, cp.float32)
s = cp.cuda.Stream(non_blocking=True)
out = call(x, stream=s)
del s; gc.collect()
y = out * 2
cp.cuda.Device().synchronize()
assert float(y.sum()) == 2 * N
del out, y; gc.collect()
cp.cuda.Device().synchronize()
"""),
    "cupy_current": ("cupy", """
import cupy as cp
x = cp.zeros(N, cp.float32)
s = cp.cuda.Stream(non_blocking=True)
with s:
    out = call(x)
del s; gc.collect()
cp.cuda.Device().synchronize()
assert float(out.sum()) == N
del out; gc.collect()
z = call(x)
cp.cuda.Device().synchronize()
assert float(z.sum()) == N
"""),
    "torch_side_stream": ("torch", """
import torch
x = torch.zeros(N, device="cuda")
s = torch.cuda.Stream()
out = call(x, stream=s)
del s; gc.collect()
torch.cuda.synchronize()
assert float(out.sum()) == N
del out; gc.collect()
torch.cuda.synchronize()
"""),
    "jk_array_on_stream_object": ("cupy", """
import cupy as cp
s = cp.cuda.Stream(non_blocking=True)
out = call(np.zeros(N, np.float32), stream=s)   # NumPy in: a jk.Array out, produced on s
del s; gc.collect()
assert float(out.numpy().sum()) == N            # reads after the stream object was dropped
del out; gc.collect()
"""),
    "stream_reference_held_while_outputs_live": ("cupy", """
import cupy as cp
x = call(np.zeros(N, np.float32))              # a jk.Array: outputs from jitkernel's pool (CuPy's come from CuPy's)
s = cp.cuda.Stream(non_blocking=True)
before = sys.getrefcount(s)
a = call(x, stream=s)                           # one reference per call, however many outputs
assert sys.getrefcount(s) == before + 1, (before, sys.getrefcount(s))
b = call(x, stream=s)
assert sys.getrefcount(s) == before + 2, (before, sys.getrefcount(s))
del a; gc.collect()
assert sys.getrefcount(s) == before + 1, (before, sys.getrefcount(s))
del b; gc.collect()
assert sys.getrefcount(s) == before, (before, sys.getrefcount(s))
c = call(x, stream=int(s.ptr))                  # raw handles: the caller keeps the stream alive
assert sys.getrefcount(s) == before
del c; s.synchronize()
"""),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_output_outlives_its_stream_object(name):
    framework, body = SCENARIOS[name]
    need(framework)
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(body) + "\nprint('OK')\n"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert child.returncode == 0 and child.stdout.strip().endswith("OK"), (
        f"child exited {child.returncode}\nstdout:\n{child.stdout}\nstderr:\n{child.stderr[-3000:]}")
