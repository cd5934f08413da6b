"""jk::KernelProgram (engine/kernel_program.hpp), the C++ side's view of a records file, without a GPU (through the
_core._kernel_program hook): record lines of a Python program's kernels come back as kernels by name with their
calls, blank lines skipped; a damaged line, a second kernel of one name,
a file that is not a regular file or too large are errors naming the file, the line and what was wrong. The GPU test
(tests/gpu/test_kernel_program_gpu.py) launches such kernels from a C++ program."""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

SCALED = jk.cuda_kernel(name="scaled", input_names=["a", "s"], output_names=["b"],
                        source="auto i = threadIdx.x; b[i] = a[i] * s[0];")
SHIFTED = jk.cuda_kernel(name="shifted", input_names=["a"], output_names=["b"],
                         source="auto i = threadIdx.x; b[i] = a[i] + 1;")


def line(kernel, inputs, dtypes=(jk.float32,)) -> str:
    return _core._call_record_line(kernel._impl, inputs, list(dtypes), None)


def write(tmp_path, *lines) -> str:
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(x + "\n" for x in lines))
    return str(path)


def test_kernels_by_name_with_their_calls(tmp_path):
    path = write(tmp_path, line(SCALED, [np.zeros(4, np.float32), np.float32(2)]), "",
                 line(SCALED, [np.zeros((2, 2), np.float16), np.float32(2)], [jk.float16]),
                 line(SHIFTED, [np.zeros(4, np.int32)], [jk.int32]))
    kernels, precompiled = _core._kernel_program(path)
    assert kernels == [("scaled", 2, 2), ("shifted", 1, 1)] and precompiled == 0


def test_damaged_line_names_the_file_and_line(tmp_path):
    good = line(SCALED, [np.zeros(4, np.float32), np.float32(2)])
    path = write(tmp_path, good, good.replace('"jitkernel_record":2', '"jitkernel_record":7'))
    with pytest.raises(jk.ArgumentError, match=r"calls.jsonl line 2: .*format 7 is not the one this jitkernel reads"):
        _core._kernel_program(path)
    with pytest.raises(jk.ArgumentError, match="line 1"):
        _core._kernel_program(write(tmp_path, good[: len(good) // 2]))


def test_two_kernels_of_one_name_are_refused(tmp_path):
    other = jk.cuda_kernel(name="scaled", input_names=["a", "s"], output_names=["b"],
                           source="auto i = threadIdx.x; b[i] = a[i] * s[0] * 2;")
    path = write(tmp_path, line(SCALED, [np.zeros(4, np.float32), np.float32(2)]),
                 line(other, [np.zeros(4, np.float32), np.float32(2)]))
    with pytest.raises(jk.ArgumentError, match="line 2: a second kernel named 'scaled'"):
        _core._kernel_program(path)


def test_what_is_not_a_records_file(tmp_path):
    with pytest.raises(jk.JitKernelError, match="not a regular file"):
        _core._kernel_program(str(tmp_path))
    with pytest.raises(jk.JitKernelError, match="cannot be read"):
        _core._kernel_program(str(tmp_path / "missing.jsonl"))
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        f.truncate((64 << 20) + 1)  # sparse: no disk used
    with pytest.raises(jk.JitKernelError, match="more than the 67108864 a records file may hold"):
        _core._kernel_program(str(big))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(jk.JitKernelError, match="not a regular file"):  # opened without blocking, never read
        _core._kernel_program(str(fifo))
