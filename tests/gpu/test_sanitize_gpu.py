"""`python -m jitkernel sanitize` with NVIDIA's compute-sanitizer on a GPU: a kernel whose body writes past its
output is reported by memcheck, and the report names the jitkernel kernel and the line of its body (not the
generated entry point and a generated file); a correct program runs clean under it, exit status 0."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from jitkernel import _sanitize

pytestmark = pytest.mark.gpu

PROGRAM = """
    import numpy as np, jitkernel as jk
    k = jk.cuda_kernel(name="oob_write", input_names=["x"], output_names=["y"],
                       source="const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\\n"
                              "if (i < x_shape[0]) y[i + {offset}] = x[i];")
    y = k(inputs=[np.ones(256, np.float32)], output_shapes=[(256,)], output_dtypes=[np.float32], grid=(256, 1, 1),
          threadgroup=(256, 1, 1))[0]
    jk.synchronize()
    print("done", float(np.asarray(y)[0]))
"""


def sanitize(tmp_path, offset):
    try:
        _sanitize.find_sanitizer()
    except _sanitize.SanitizerNotFound as e:
        pytest.skip(str(e))
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM.format(offset=offset)))
    return subprocess.run([sys.executable, "-m", "jitkernel", "sanitize", "--tool", "memcheck", "--", "prog.py"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_out_of_bounds_write_names_kernel_and_body_line(tmp_path):
    done = sanitize(tmp_path, offset=100_000_000)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "Invalid __global__ write" in out, out
    assert "jitkernel kernel 'oob_write'" in out and "in the kernel body, line 2" in out, out


def test_correct_program_runs_clean(tmp_path):
    done = sanitize(tmp_path, offset=0)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "done 1.0" in done.stdout and "ERROR SUMMARY: 0 errors" in done.stdout, done.stdout
