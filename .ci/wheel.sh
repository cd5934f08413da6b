#!/usr/bin/env bash
# CI for the wheel PyPI gets: builds ONE manylinux wheel with tools/build_wheel.sh (for this machine's python3, the
# one Python certain to be here), checks that auditwheel tags it manylinux_2_28 or older (the script fails
# otherwise), installs it into a fresh virtual environment (with its `cuda` extra and the light test dependencies
# from PyPI) and runs the CPU tests against it with no compiler on PATH, from a folder where the source tree's
# python/ is not importable, after checking that `jitkernel` is the installed one. The CPU tests exercise the
# C++ core's exceptions as nanobind translates them, which is what a statically linked libc++ could break.
# usage: .ci/wheel.sh [KEEP_DIR]   (KEEP_DIR: where to leave a copy of the wheel, for later steps)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
keep=${1:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=$(python3 -c "import sys; print(sys.executable)")  # the real interpreter behind a pyenv shim

tools/build_wheel.sh "$work/wheels" "$python"
wheel=$(ls "$work"/wheels/jitkernel-*.whl)
case "$(basename "$wheel")" in
  *-manylinux_2_*) echo "built $(basename "$wheel")" ;;
  *) echo "not a manylinux wheel: $wheel" >&2; exit 1 ;;
esac
[ -z "$keep" ] || cp "$wheel" "$keep/"

"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel[cuda]" "pytest>=7" "ml-dtypes>=0.4" "hypothesis>=6.100"

# No compiler: PATH holds the venv alone (tests start their subprocesses with sys.executable).
for tool in cc c++ gcc g++ clang clang++ zig; do
  if PATH="$work/venv/bin" command -v "$tool" >/dev/null; then echo "$tool is on the restricted PATH" >&2; exit 1; fi
done
cd "$work"
PATH="$work/venv/bin" "$work/venv/bin/python" - "$work/venv" <<'EOF'
import sys, jitkernel
assert jitkernel.__file__.startswith(sys.argv[1] + "/"), f"jitkernel comes from {jitkernel.__file__}, not the venv"
print("testing jitkernel", jitkernel.__version__, "from", jitkernel.__file__)
EOF
# nvcc (where a CUDA toolkit is installed) needs a host compiler, which is hidden here: its tests skip.
NVCC=/nonexistent/nvcc PATH="$work/venv/bin" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$repo/tests/cpu"
