"""jitkernel installed without a CUDA extra (``pip install .``): no ``cuda`` package at all, so neither cuda-pathfinder
nor NVIDIA's wheels. The README promises the CUDA_HOME / CUDA_PATH / /usr/local/cuda fallback, and without a toolkit
a ``jk.CudaNotAvailableError`` saying what to install; ``doctor`` and ``demo`` report instead of crashing. Each case
runs in a child process that hides the ``cuda`` package (``sys.modules["cuda"] = None``: importing it, or
``importlib.util.find_spec("cuda.pathfinder")``, raises ModuleNotFoundError as where it is not installed). Before the
fix every one of them ended in ``ModuleNotFoundError: No module named 'cuda'``. .ci/no_extra.sh checks the same with
the wheel really installed without an extra.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import jitkernel as jk

HIDE_CUDA = "import sys; sys.modules['cuda'] = None\n"
KERNEL = ("#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n"
          'extern "C" __global__ void k(__half* x) { cooperative_groups::this_thread_block().sync(); '
          "x[0] = __float2half(1.f); }")
INSTALL_HINT = 'pip install "jitkernel[cuda]"'


def run(code, tmp_path, cuda_home):
    env = {k: v for k, v in os.environ.items()
           if k not in ("JITKERNEL_NVRTC_PATH", "JITKERNEL_INCLUDE_PATH", "CUDA_PATH", "JITKERNEL_NO_PATHFINDER")}
    env.update(CUDA_HOME=str(cuda_home), JITKERNEL_CACHE_DIR=str(tmp_path / "cache"), CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-c", HIDE_CUDA + textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)


def nvrtc_found_without_pathfinder(tmp_path, cuda_home) -> str:
    """Where a child with the ``cuda`` package hidden finds NVRTC ('' when nowhere). Where NVIDIA's wheels are
    installed beside another framework (torch brings its own) the search finds them without cuda-pathfinder, and a
    machine whose NVRTC the search reaches in any other way cannot show the no-toolkit path: those tests skip there
    (.ci/no_extra.sh checks it in a venv with nothing but the wheel)."""
    proc = run("""
        import jitkernel as jk
        info = jk.toolkit_info()
        if info.get("nvrtc_version") is not None:  # it loaded
            print("NVRTC", info.get("nvrtc_library"), info.get("nvrtc_found_via"))
    """, tmp_path, cuda_home)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("NVRTC")), "NVRTC")
    return line[len("NVRTC"):].strip()


@pytest.fixture
def empty_home(tmp_path):
    (tmp_path / "no-toolkit").mkdir()
    found = nvrtc_found_without_pathfinder(tmp_path, tmp_path / "no-toolkit")
    if found:
        pytest.skip(f"NVRTC is reachable here without cuda-pathfinder ({found}): no no-toolkit path to check")
    return tmp_path / "no-toolkit"


def test_compile_without_any_toolkit_says_what_to_install(tmp_path, empty_home):
    proc = run(f"""
        import jitkernel as jk
        try:
            jk.compile_cuda({KERNEL!r})
        except jk.CudaNotAvailableError as e:
            print("REFUSED", e)
    """, tmp_path, empty_home)
    assert proc.returncode == 0, proc.stderr
    assert "REFUSED NVRTC (the CUDA runtime compiler) not found" in proc.stdout, proc.stdout
    assert INSTALL_HINT in proc.stdout and "cuda-pathfinder: not installed" in proc.stdout, proc.stdout


@pytest.mark.parametrize("command", ["doctor", "demo"])
def test_doctor_and_demo_without_any_toolkit_report(tmp_path, empty_home, command):
    proc = run(f"from jitkernel.__main__ import main; sys.exit(main([{command!r}]))", tmp_path, empty_home)
    assert "ModuleNotFoundError" not in proc.stderr + proc.stdout, proc.stderr
    assert "cuda-pathfinder: not installed" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert INSTALL_HINT in proc.stdout + proc.stderr
    if command == "doctor":
        assert "cuda_available: False" in proc.stdout, proc.stdout


def _wheel_toolkit() -> str | None:
    """The folder of the NVIDIA CUDA 13 wheels this environment has (the test builds a CUDA_HOME from them)."""
    info = jk.toolkit_info()
    lib = info.get("nvrtc_library") or ""
    root = os.path.dirname(os.path.dirname(os.path.realpath(lib))) if lib else ""
    ok = os.path.isfile(os.path.join(root, "include", "cuda_fp16.h")) and os.path.isdir(os.path.join(root, "lib"))
    # A toolkit has CCCL (cooperative_groups needs <nv/target>); the wheels have it only with nvidia-cuda-cccl
    # installed (the GPU machine's torch venv has the runtime's headers without it).
    cccl = any(os.path.isfile(os.path.join(root, "include", sub, "nv", "target")) for sub in ("", "cccl"))
    return root if ok and cccl else None


def test_system_toolkit_at_cuda_home_compiles(tmp_path):
    root = _wheel_toolkit()
    if root is None:
        pytest.skip("no NVIDIA CUDA 13 wheels to lay out a CUDA_HOME from")
    home = tmp_path / "cuda"
    home.mkdir()
    os.symlink(os.path.join(root, "lib"), home / "lib64")
    os.symlink(os.path.join(root, "include"), home / "include")
    found = nvrtc_found_without_pathfinder(tmp_path, home)
    if str(home / "lib64") not in found:
        pytest.skip(f"the search finds NVRTC before CUDA_HOME here ({found}): CUDA_HOME is not what it would use")
    proc = run(f"""
        import jitkernel as jk
        cubin = jk.compile_cuda({KERNEL!r}, arch="sm_80")
        info = jk.toolkit_info()
        print("COMPILED", len(cubin), info["nvrtc_library"], info.get("nvrtc_found_via"))
    """, tmp_path, home)
    assert proc.returncode == 0, proc.stderr
    assert "COMPILED" in proc.stdout and str(home / "lib64") in proc.stdout, proc.stdout
