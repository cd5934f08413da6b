"""A FIFO (or another file that is not a regular file) where jitkernel expects a file never hangs a process: each
path a setting or an argument names is opened without blocking, or looked at before it is opened, and refused with
a typed error (or, for the call record, which never stops a launch, a CacheWarning) naming the setting, argument or
header. ``JITKERNEL_RECORD``, ``JITKERNEL_NVRTC_PATH``, ``precompile --record`` and an ``#include`` that finds a FIFO
each hung before. Every case runs in a child process with a timeout, so a hang is one failure, not the end of pytest.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _mock_driver import mock_driver  # noqa: E402,F401 - the fixture is used by name

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")

TIMEOUT = 300  # seconds: a compile takes a few (ten times that on a loaded 2-core machine); a hang takes for ever


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def run(code, tmp_path, args=(), **env):
    environment = {k: v for k, v in os.environ.items() if k not in ("JITKERNEL_RECORD", "JITKERNEL_REQUIRE_GPU")}
    environment.update(JITKERNEL_CACHE_DIR=str(tmp_path / "cache"), **env)
    cmd = [sys.executable, *(["-c", textwrap.dedent(code)] if code else []), *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: no answer within {TIMEOUT} s from {cmd[1:]} with {env}")


LAUNCH = """
    import warnings, numpy as np, jitkernel as jk
    k = jk.cuda_kernel(name="fifo_record", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[np.float32], grid=(1, 1, 1),
          threadgroup=(1, 1, 1))
    print("LAUNCHED", [(w.category.__name__, str(w.message)) for w in caught])
"""


@pytest.mark.parametrize("reader", [False, True], ids=["no-reader", "with-reader"])
def test_call_record_naming_a_fifo_warns_and_launches(mock_driver, fifo, tmp_path, reader):  # noqa: F811
    # Without a reader the open used to wait for one for ever; with one, lines went into the pipe.
    held = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) if reader else None
    try:
        proc = run(LAUNCH, tmp_path, LD_LIBRARY_PATH=mock_driver, JITKERNEL_RECORD=str(fifo))
    finally:
        if held is not None:
            os.close(held)
    assert proc.returncode == 0, proc.stderr
    assert "LAUNCHED" in proc.stdout and "CacheWarning" in proc.stdout, proc.stdout
    assert f"JITKERNEL_RECORD='{fifo}': cannot append a call record (not a regular file" in proc.stdout


def test_nvrtc_path_naming_a_fifo_is_cuda_not_available(fifo, tmp_path):
    proc = run("""
        import jitkernel as jk
        try:
            jk.compile_cuda('extern "C" __global__ void k() {}')
        except jk.CudaNotAvailableError as e:
            print("REFUSED", e)
    """, tmp_path, JITKERNEL_NVRTC_PATH=str(fifo))
    assert proc.returncode == 0, proc.stderr
    assert f"REFUSED NVRTC could not be loaded: JITKERNEL_NVRTC_PATH='{fifo}' is a FIFO, not a regular file" \
        in proc.stdout, proc.stdout


def test_precompile_record_naming_a_fifo_is_a_record_error(fifo, tmp_path):
    proc = run(None, tmp_path, ["-m", "jitkernel", "precompile", "--arch", "sm_80", "--record", str(fifo)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "RecordError" in proc.stderr and f"{fifo} line 0: is a FIFO, not a regular file" in proc.stderr


@pytest.mark.parametrize("how", ["include_dirs", "quoted", "absolute", "cache off"])
def test_include_finding_a_fifo_is_a_compile_error_naming_it(fifo, tmp_path, how):
    folder = tmp_path / "inc"
    folder.mkdir()
    os.rename(fifo, folder / "pipe.h")
    header = {"include_dirs": "#include <pipe.h>", "quoted": '#include "inc/pipe.h"',
              "absolute": f'#include "{folder / "pipe.h"}"', "cache off": "#include <pipe.h>"}[how]
    options = {"include_dirs": [str(folder)]} if how in ("include_dirs", "cache off") else None
    proc = run(f"""
        import numpy as np, jitkernel as jk
        k = jk.cuda_kernel(name="fifo_include", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                           header={header!r}, compile_options={options!r})
        try:
            k.compile(inputs=[np.ones(4, np.float32)], output_dtypes=[np.float32], arch="sm_80")
        except jk.CompileError as e:
            print("REFUSED", e)
        try:
            jk.compile_cuda({header!r} + '\\nextern "C" __global__ void k() {{}}', name="prog.cu",
                            compile_options={options!r})
        except jk.CompileError as e:
            print("REFUSED", e)
    """, tmp_path, **({"JITKERNEL_CACHE": "0"} if how == "cache off" else {}))
    assert proc.returncode == 0, proc.stderr
    refusals = [line for line in proc.stdout.splitlines() if line.startswith("REFUSED")]
    assert len(refusals) == 2, proc.stdout
    for line in refusals:
        assert f"finds '{folder / 'pipe.h'}', which is a FIFO, not a regular file: the compile is refused" in line
        assert header in line, line
