"""Kernels a Python program defined, launched from a C++ program by name (tests/kernel_program_cpp,
jk::KernelProgram over the records file JITKERNEL_RECORD wrote), their binaries from a cache bundle named as a
read-only tier and nothing else (a fresh writable folder): the right result, a tier hit and no miss (no NVRTC
compile in the C++ process)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from _gpu_util import INDEX, cpp_programs

import pytest

import jitkernel as jk

pytestmark = pytest.mark.gpu
N = 1000

DEFINE_AND_RUN = f"""
    import numpy as np, jitkernel as jk
    twice = jk.cuda_kernel(name="twice_plus", input_names=["x", "b"], output_names=["y"],
                           source={INDEX + "if (i < x_shape[0]) y[i] = 2.0f * x[i] + b[0];"!r})
    x = np.arange({N}, dtype=np.float32) * 0.25 - 3
    y = twice(inputs=[x, 0.5], output_shapes=[x.shape], output_dtypes=[np.float32], grid=({N}, 1, 1),
              threadgroup=(128, 1, 1))[0]
    assert np.array_equal(np.asarray(y), 2 * x + 0.5)
"""


@pytest.mark.parametrize("server", ["with the toolkit", "without NVRTC"])
def test_recorded_kernel_launches_from_cpp_with_its_binary_from_a_bundle(tmp_path, server):
    # Without NVRTC (JITKERNEL_NVRTC_PATH names nothing, no headers) the server finds each binary through the
    # serving alias the bundle carries beside it (cpp/jitkernel/cache/serving_alias.hpp).
    if not jk.cuda_available():
        pytest.skip("no CUDA device")
    programs, root = cpp_programs()
    records, python_cache = tmp_path / "calls.jsonl", tmp_path / "python_cache"
    env = dict(os.environ, JITKERNEL_RECORD=str(records), JITKERNEL_CACHE_DIR=str(python_cache))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(DEFINE_AND_RUN)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [name for name, _, _ in jk._core._kernel_program(str(records))[0]] == ["twice_plus"]
    shipped = tmp_path / "shipped"
    shipped.mkdir(mode=0o755)
    report = jk.export_cache(shipped / "kernels.jkb", directory=python_cache)
    assert report.entries >= 1 and report.aliases == report.entries
    built = programs.build(os.path.join(root, "tests", "kernel_program_cpp"), tmp_path / "build")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITKERNEL_")}
    env.update(JITKERNEL_CACHE_DIR=str(tmp_path / "server_cache"),
               JITKERNEL_CACHE_READONLY_DIRS=str(shipped / "kernels.jkb"))
    toolkit = server == "with the toolkit"
    if not toolkit:
        env.update(JITKERNEL_NVRTC_PATH=str(tmp_path / "no-nvrtc" / "libnvrtc.so.13"), CUDA_HOME=str(tmp_path / "none"))
    done = programs.run(os.path.join(built, "jitkernel_kernel_program_example"), [records, N], env, toolkit=toolkit)
    assert done.returncode == 0, done.stdout + done.stderr
    found = programs.counters(done.stdout)
    assert found["max error"] == 0
    assert found["readonly hits"] >= 1 and found["misses"] == 0, done.stdout
