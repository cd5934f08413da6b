"""Helpers shared by the GPU tests: putting NumPy data on the GPU in each framework and
reading any result back, the expected output type per framework, and ways to keep a
stream busy so that work launched on the wrong stream reads stale data and is caught."""
import os
import sys

# JAX would otherwise take most of the GPU memory that torch and CuPy share with it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np
import pytest

import jitkernel as jk

FRAMEWORKS = ("numpy", "torch", "cupy", "jax")

# Flat thread index of a launch over a 1-D grid, as the first line of a kernel body.
INDEX = "const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"

# GPU clock cycles a stream is kept busy before the data a test kernel reads is written
# (about 0.1 s on an H100/H200), far longer than a cached launch takes on the host.
SPIN_CYCLES = 200_000_000


def need(name):
    """The framework module with a usable CUDA device, or skip the test."""
    if name == "numpy":
        return np
    mod = pytest.importorskip(name)
    if name == "torch" and not mod.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    if name == "cupy":
        try:
            ok = mod.cuda.runtime.getDeviceCount() > 0
        except Exception:  # CUDA runtime missing or broken for CuPy
            ok = False
        if not ok:
            pytest.skip("CuPy has no CUDA device")
    if name == "jax" and mod.default_backend() != "gpu":
        pytest.skip("JAX has no GPU backend")
    return mod


def to_device(name, array, bfloat16=False):
    """`array` (NumPy) on GPU 0 as framework `name`'s array; bfloat16=True converts to bfloat16."""
    mod = need(name)
    array = np.asarray(array)
    if name in ("numpy", "cupy") and bfloat16:
        pytest.skip(f"{name} has no bfloat16")
    if name == "numpy":
        return array
    if name == "cupy":
        return mod.asarray(array)
    if name == "torch":
        tensor = mod.from_numpy(np.ascontiguousarray(array)).to("cuda")
        return tensor.to(mod.bfloat16) if bfloat16 else tensor
    import jax.numpy as jnp

    out = jnp.asarray(array, dtype=jnp.bfloat16 if bfloat16 else None)
    if not bfloat16 and out.dtype != array.dtype:
        pytest.skip(f"JAX keeps no {array.dtype} arrays (x64 disabled)")
    return out


def to_numpy(x):
    """Host copy of any array a test handles (bfloat16 comes back as float32)."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, jk.Array):
        return x.numpy()
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach()
        return (x.float() if x.dtype == torch.bfloat16 else x).cpu().numpy()
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return x.get()
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(x, jax.Array):
        import jax.numpy as jnp

        return np.asarray(x.astype(jnp.float32) if x.dtype == jnp.bfloat16 else x)
    raise TypeError(f"unexpected result type {type(x)!r}")


def output_type(name):
    """The type kernel outputs must have when all array inputs come from framework `name`."""
    if name == "numpy":
        return jk.Array
    return getattr(need(name), {"torch": "Tensor", "cupy": "ndarray", "jax": "Array"}[name])


def torch_busy_then(stream, action):
    """On torch `stream`: spin the GPU for SPIN_CYCLES, then run `action()` (e.g. write inputs)."""
    import torch

    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        action()


_CUPY_SPIN = r"""
extern "C" __global__ void jk_test_spin(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) { }
}"""


def cupy_spin():
    """Keeps CuPy's current stream busy for SPIN_CYCLES GPU cycles."""
    cp = need("cupy")
    kernel = cp.RawKernel(_CUPY_SPIN, "jk_test_spin")
    kernel((1,), (1,), (np.int64(SPIN_CYCLES),))


class StreamHandle:
    """A foreign stream object that only speaks the `__cuda_stream__` protocol."""

    def __init__(self, handle):
        self._handle = int(handle)

    def __cuda_stream__(self):
        return (0, self._handle)


def cpp_programs():
    """benchmarks/cpp/user_programs.py (build and run a user's C++ program), or skip without cmake or a compiler."""
    import shutil

    if shutil.which("cmake") is None or shutil.which("c++") is None:
        pytest.skip("needs cmake and a C++ compiler")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "benchmarks", "cpp"))
    import user_programs

    return user_programs, root

