"""The mock CUDA driver (benchmarks/host_only/mock_libcuda.c) for CPU tests: built once per module, and a way to run
code in a fresh process that loads it as libcuda.so.1 (its launches do nothing; device memory is host memory)."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def mock_driver(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the mock driver")
    folder = tmp_path_factory.mktemp("mock")
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"),
                    os.path.join(ROOT, "benchmarks", "host_only", "mock_libcuda.c")], check=True)
    return str(folder)


def run_with_mock(mock_driver, code, tmp_path):
    # JAX on a GPU machine would try the real CUDA driver, which the mock hides: its CPU backend, as on CI.
    env = dict(os.environ, LD_LIBRARY_PATH=mock_driver, JITKERNEL_CACHE_DIR=str(tmp_path / "cache"), JAX_PLATFORMS="cpu")
    env.pop("JITKERNEL_REQUIRE_GPU", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)
