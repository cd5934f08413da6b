"""MLX drop-in details: ``jitkernel.fast`` holds the factories under MLX's names, and the queries that take a call's
signature (source, entry_name, compile; Metal's source, kernel_name, buffers) accept the launch-only keywords of a
call and ignore them, so one keyword dict serves both -- while a misspelt keyword is still an error naming it."""
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk

A = np.arange(8, dtype=np.float32)
CALL = dict(inputs=[A], output_dtypes=[np.float32], output_shapes=[(8,)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
            init_value=0, verbose=False, stream=None)


def test_fast_namespace_has_mlx_names():
    import jitkernel.fast as fast

    assert jk.fast is fast
    assert (fast.cuda_kernel, fast.metal_kernel, fast.precompiled_cuda_kernel) == (
        jk.cuda_kernel, jk.metal_kernel, jk.precompiled_cuda_kernel)
    k = jk.fast.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    assert isinstance(k, jk.CudaKernel)


def test_cuda_queries_take_a_calls_keywords():
    k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    plain = dict(inputs=[A], output_dtypes=[np.float32])
    assert k.source(**CALL) == k.source(**plain)
    assert k.entry_name(**CALL) == k.entry_name(**plain)
    assert k.compile(**CALL, arch="sm_90a") == k.compile(**plain, arch="sm_90a")
    with pytest.raises(jk.ArgumentTypeError, match="gird"):
        k.source(**CALL, gird=(1, 1, 1))
    with pytest.raises(jk.ArgumentTypeError, match="output_dtypes"):
        k.source(inputs=[A], grid=(8, 1, 1))  # what the signature needs is still required


def test_metal_queries_take_a_calls_keywords():
    k = jk.metal_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    plain = dict(inputs=[A], output_dtypes=[np.float32])
    assert k.source(**CALL) == k.source(**plain)
    with pytest.raises(jk.ArgumentTypeError, match="gird"):
        k.source(**CALL, gird=(1, 1, 1))


def test_version_flag():
    proc = subprocess.run([sys.executable, "-m", "jitkernel", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"jitkernel {jk.__version__}"
