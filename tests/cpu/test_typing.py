"""Type checkers see the API: a user's script that calls a kernel correctly (list form, dict form, outputs=) passes
mypy, and one with a misspelt keyword, a wrong type for grid, a positional call or a wrong factory argument is
reported on exactly those lines (the call runs in C; _cuda_kernel.py declares its signature for type checkers)."""
import re
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy")

GOOD = """
import numpy as np

import jitkernel as jk

k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
a = np.ones(4, np.float32)
outs: list = k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
named: dict = k(inputs={"a": a}, output_shapes={"b": (4,)}, output_dtypes={"b": jk.float32}, grid=(4, 1, 1),
                threadgroup=(4, 1, 1))
given = k(inputs=[a], outputs=[outs[0]], grid=(4, 1, 1), threadgroup=(4, 1, 1), stream=None, init_value=0.0)
src: str = k.source(inputs=[a], output_dtypes=[jk.float32])
fast = jk.fast.cuda_kernel(name="f", source="y[0] = x[0];")
"""
BAD = """
import numpy as np

import jitkernel as jk

k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
a = np.ones(4, np.float32)
k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], gird=(4, 1, 1), threadgroup=(4, 1, 1))  # 8
k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=4, threadgroup=(4, 1, 1))  # 9
k([a], grid=(4, 1, 1), threadgroup=(4, 1, 1))  # 10
jk.cuda_kernel(name=1, source="")  # 11
"""


def test_mypy_accepts_good_calls_and_reports_bad_ones(tmp_path):
    (tmp_path / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--python-version",
                           f"{sys.version_info.major}.{sys.version_info.minor}", "good.py", "bad.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    errors = re.findall(r"^(\w+)\.py:(\d+): error", proc.stdout, re.M)
    assert not [line for name, line in errors if name == "good"], proc.stdout
    assert {int(line) for name, line in errors if name == "bad"} == {8, 9, 10, 11}, proc.stdout
