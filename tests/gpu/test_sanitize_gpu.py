"""`python -m jitkernel sanitize` with NVIDIA's compute-sanitizer on a GPU: a kernel whose body writes past its
output is reported by memcheck, and a shared-memory race (a missing __syncthreads) by racecheck, checked and
unchecked; each report names the jitkernel kernel and the lines of its body (not the generated entry point and a
generated file); correct programs run clean under them, exit status 0."""
from __future__ import annotations

import re
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


# Body line 2 writes the block's tile, line 4 reads a neighbour's element (another warp's): without the
# __syncthreads of line 3 that read races with the write.
RACE_PROGRAM = """
    import numpy as np, jitkernel as jk
    k = jk.cuda_kernel(name="race_k", input_names=["x"], output_names=["y"],
                       source="__shared__ float tile[256];\\n"
                              "tile[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];\\n"
                              "{sync}\\n"
                              "y[blockIdx.x * 256 + threadIdx.x] = tile[(threadIdx.x + 32) % 256];\\n",
                       compile_options={{"checked": {checked}}})
    x = np.arange(1024, dtype=np.float32)
    y = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(1024, 1, 1),
          threadgroup=(256, 1, 1))[0]
    jk.synchronize()
    print("done", float(np.asarray(y)[0]))
"""


def sanitize(tmp_path, offset=0, tool="memcheck", program=PROGRAM, **fields):
    try:
        _sanitize.find_sanitizer()
    except _sanitize.SanitizerNotFound as e:
        pytest.skip(str(e))
    (tmp_path / "prog.py").write_text(textwrap.dedent(program.format(offset=offset, **fields)))
    return subprocess.run([sys.executable, "-m", "jitkernel", "sanitize", "--tool", tool, "--", "prog.py"],
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


@pytest.mark.parametrize("checked", [False, True])
def test_shared_memory_race_names_kernel_and_body_lines(tmp_path, checked):
    done = sanitize(tmp_path, tool="racecheck", program=RACE_PROGRAM, sync="(void)0;", checked=checked)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    report = "".join(line for line in out.splitlines(keepends=True) if line.startswith("========="))
    assert "jitkernel kernel 'race_k'" in report, out
    # the write (line 2) and the read (line 4) of the race, as body lines; no generated entry point left
    assert "in the kernel body, line 2" in report and "in the kernel body, line 4" in report, out
    assert not re.search(r"race_k_[0-9a-f]{16}", report), out
    assert "done" in done.stdout, out  # the program itself ran to its end (y[0] is whatever the race left)


@pytest.mark.parametrize("checked", [False, True])
def test_synchronised_shared_memory_runs_clean(tmp_path, checked):
    done = sanitize(tmp_path, tool="racecheck", program=RACE_PROGRAM, sync="__syncthreads();", checked=checked)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "done 32.0" in done.stdout and "Race reported" not in out and "hazard detected" not in out, out
