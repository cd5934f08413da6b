"""Building and running C++ programs as a user's project does: a CMake project that finds jitkernel through the
installed wheel's CMake package (and torch through TorchConfig where it needs it), run with the NVRTC and headers the
Python package uses (toolkit_env.py), so that both sides make the same compile cache keys. Used by
benchmarks/bench_aoti.py and by the GPU tests that run kernels from C++ without Python."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

from toolkit_env import toolkit_env


def build(source_dir: str, build_dir, prefix_paths=()) -> str:
    """Configures (Release, Ninja when there is one) and builds `source_dir` in `build_dir`; returns the build
    folder. RuntimeError with the tool's output when a step fails."""
    cmake_dir = subprocess.run([sys.executable, "-m", "jitkernel", "--cmake-dir"], capture_output=True, text=True,
                               check=True).stdout.strip()
    configure = ["cmake", "-S", str(source_dir), "-B", str(build_dir), f"-Djitkernel_DIR={cmake_dir}",
                 "-DCMAKE_BUILD_TYPE=Release"]
    if prefix_paths:
        configure.append("-DCMAKE_PREFIX_PATH=" + ";".join(map(str, prefix_paths)))
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    for cmd in (configure, ["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 2)]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])} failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return str(build_dir)


def run(program: str, args, env: dict, toolkit: bool = True) -> subprocess.CompletedProcess:
    """Runs a built program with `env` less Python's variables, plus the Python side's toolkit (`toolkit`)."""
    run_env = {k: v for k, v in env.items() if not k.startswith("PYTHON")}
    if toolkit:
        run_env.update(toolkit_env())
    return subprocess.run([program, *map(str, args)], env=run_env, capture_output=True, text=True, timeout=600)


def counters(stdout: str) -> dict:
    """The "name value" pairs of a program's last line ("max error 0, cache hits 1, misses 0") as floats."""
    out = {}
    for part in stdout.strip().splitlines()[-1].split(","):
        name, value = part.strip().rsplit(" ", 1)
        out[name] = float(value)
    return out
