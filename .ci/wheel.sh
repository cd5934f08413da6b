#!/usr/bin/env bash
# CI for the wheels PyPI gets, built with tools/build_wheel.sh: this machine's python3's wheel (the one Python
# certain to be here; kept in KEEP_DIR for later steps), the cp313 wheel and the cp312-abi3 wheel (the limited API,
# for CPython versions without a wheel of their own; pyproject.toml's classifiers claim 3.12 and 3.13: this is where
# CI proves them). auditwheel must tag each manylinux_2_28 or older (the script fails otherwise); abi3audit must find
# no symbol outside the stable ABI in the abi3 one. Each wheel is installed into a fresh virtual environment (with
# its `cuda` extra and the light test dependencies from PyPI) and tested there with no compiler on PATH, from a
# folder where the source tree's python/ is not importable, after checking that `jitkernel` is the installed one:
# python3's wheel, the cp313 wheel under 3.13 and the abi3 wheel under 3.12 run all CPU tests, the abi3 wheel under
# 3.13 the call-path tests. The CPU
# tests exercise the C++ core's exceptions as nanobind translates them, which is what a statically linked libc++
# could break. Python 3.12 and 3.13 are looked for as build_wheel.sh looks (pyenv's versions, then PATH).
# usage: .ci/wheel.sh [KEEP_DIR]   (KEEP_DIR: where to leave a copy of python3's wheel, for later steps)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
keep=${1:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=$(python3 -c "import sys; print(sys.executable)")  # the real interpreter behind a pyenv shim
version=$("$python" -c "import sys; print('%d.%d' % sys.version_info[:2])")

# python3's wheel, 3.13's and the abi3 one.
builds=("$python" abi3)
[ "$version" = 3.13 ] || builds+=(3.13)
tools/build_wheel.sh "$work/wheels" "${builds[@]}"
abi3=$(ls "$work"/wheels/jitkernel-*-cp312-abi3-manylinux_2_*.whl)
wheel=$(ls "$work"/wheels/jitkernel-*-cp${version/./}-cp${version/./}-manylinux_2_*.whl)
wheel313=$(ls "$work"/wheels/jitkernel-*-cp313-cp313-manylinux_2_*.whl)
echo "built $(basename "$wheel"), $(basename "$wheel313") and $(basename "$abi3")"
[ -z "$keep" ] || cp "$wheel" "$keep/"

# A Python by version, as tools/build_wheel.sh finds it.
find_python() {
  local candidate
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python"$1" "$(command -v "python$1" || true)"; do
    if [ -x "$candidate" ] && "$candidate" -c "import venv" 2>/dev/null; then echo "$candidate"; return; fi
  done
  echo ".ci/wheel.sh: no Python $1 to test the abi3 wheel with (pyenv's versions, PATH)" >&2
  exit 1
}

# test_wheel PYTHON WHEEL NAME TESTS...: a fresh venv for WHEEL, then pytest TESTS there with no compiler on PATH
# (PATH holds the venv alone; tests start their subprocesses with sys.executable).
test_wheel() {
  local py=$1 whl=$2 venv=$work/venv-$3
  shift 3
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q "$whl[cuda]" "pytest>=7" "ml-dtypes>=0.4" "hypothesis>=6.100"
  for tool in cc c++ gcc g++ clang clang++ zig; do
    if PATH="$venv/bin" command -v "$tool" >/dev/null; then echo "$tool is on the restricted PATH" >&2; exit 1; fi
  done
  (cd "$work" && PATH="$venv/bin" "$venv/bin/python" - "$venv" <<'PY'
import sys, jitkernel, jitkernel._core as core
assert jitkernel.__file__.startswith(sys.argv[1] + "/"), f"jitkernel comes from {jitkernel.__file__}, not the venv"
print("testing jitkernel", jitkernel.__version__, "from", jitkernel.__file__, "on Python", sys.version.split()[0],
      "with", core.__file__.rsplit("/", 1)[1])
PY
  )
  # nvcc (where a CUDA toolkit is installed) needs a host compiler, which is hidden here: its tests skip.
  (cd "$work" && NVCC=/nonexistent/nvcc PATH="$venv/bin" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@")
}

test_wheel "$python" "$wheel" "$version" "$repo/tests/cpu"

# The abi3 wheel: its extension is the limited API's (.abi3.so), with no symbol outside the stable ABI.
listing=$("$python" -m zipfile -l "$abi3")  # whole, then searched: grep -q would close the pipe early
grep -q "jitkernel/_core\.abi3\.so" <<<"$listing" || { echo "no _core.abi3.so in $abi3" >&2; exit 1; }
py312=$(find_python 3.12)
py313=$(find_python 3.13)
"$py312" -m venv "$work/abi3audit"
"$work/abi3audit/bin/python" -m pip install -q abi3audit
"$work/abi3audit/bin/python" -m abi3audit --strict --assume-minimum-abi3 3.12 "$abi3"
test_wheel "$py312" "$abi3" 3.12-abi3 "$repo/tests/cpu"
test_wheel "$py313" "$abi3" 3.13-abi3 "$repo"/tests/cpu/test_{kernel_call,bound_call,mock_driver_calls,api_errors}.py
[ "$version" = 3.13 ] || test_wheel "$py313" "$wheel313" 3.13 "$repo/tests/cpu"
