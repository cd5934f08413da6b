"""Prints `export` lines that hand the C++ benchmark the NVRTC library and CUDA include folders that the
installed jitkernel Python package finds (its own search, jitkernel._toolkit_search), so both measure the same toolkit:

    eval "$(python3 benchmarks/cpp/toolkit_env.py)" && build/bench/benchmarks/cpp/jitkernel_bench

Prints nothing (and says why on stderr) when jitkernel is not installed: the benchmark then falls back to
CUDA_HOME / CUDA_PATH / /usr/local/cuda.
"""
import os
import shlex
import sys

try:
    from jitkernel import _toolkit_search
except ImportError as e:
    print(f"toolkit_env.py: jitkernel not importable ({e}); the benchmark will use its own defaults",
          file=sys.stderr)
    sys.exit(0)

tk = _toolkit_search.search()
if tk.nvrtc_library:
    print(f"export JITKERNEL_NVRTC_PATH={shlex.quote(tk.nvrtc_library)}")
if tk.include_dirs:
    print(f"export JITKERNEL_INCLUDE_PATH={shlex.quote(os.pathsep.join(tk.include_dirs))}")
for note in tk.notes:
    print(f"toolkit_env.py: {note}", file=sys.stderr)
