"""Prints `export` lines that hand the C++ benchmark the NVRTC library and CUDA include folders that the
installed jitkernel Python package finds (its own search, jitkernel._toolkit_search), so both measure the same toolkit:

    eval "$(python3 benchmarks/cpp/toolkit_env.py)" && build/bench/benchmarks/cpp/jitkernel_bench

Prints nothing (and says why on stderr) when jitkernel is not installed: the benchmark then falls back to
CUDA_HOME / CUDA_PATH / /usr/local/cuda. ``toolkit_env()`` gives the same variables as a dict (for programs that
start C++ processes: tests/gpu/test_aoti_gpu.py, benchmarks/bench_aoti.py), so that their compile cache keys match
the Python side's.
"""
import os
import shlex
import sys


def toolkit_env(notes=None) -> dict:
    """JITKERNEL_NVRTC_PATH / JITKERNEL_INCLUDE_PATH for the toolkit the Python package uses ({} without it)."""
    from jitkernel import _toolkit_search

    tk = _toolkit_search.search()
    env = {}
    if tk.nvrtc_library:
        env["JITKERNEL_NVRTC_PATH"] = tk.nvrtc_library
    if tk.include_dirs:
        env["JITKERNEL_INCLUDE_PATH"] = os.pathsep.join(tk.include_dirs)
    if notes is not None:
        notes.extend(tk.notes)
    return env


def main() -> None:
    notes = []
    try:
        env = toolkit_env(notes)
    except ImportError as e:
        print(f"toolkit_env.py: jitkernel not importable ({e}); the benchmark will use its own defaults",
              file=sys.stderr)
        return
    for name, value in env.items():
        print(f"export {name}={shlex.quote(value)}")
    for note in notes:
        print(f"toolkit_env.py: {note}", file=sys.stderr)


if __name__ == "__main__":
    main()
