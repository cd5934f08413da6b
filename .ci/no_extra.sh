#!/usr/bin/env bash
# jitkernel installed without a CUDA extra (`pip install WHEEL`: the README's route for a system CUDA toolkit) in a
# fresh virtual environment that has no `cuda` package at all:
#  1. no toolkit anywhere (CUDA_HOME names an empty folder): a compile raises jk.CudaNotAvailableError saying what to
#     install, and `doctor` and `demo` report that (exit status 1) instead of crashing;
#  2. a system toolkit at CUDA_HOME (lib64/ with NVRTC, include/ with the CUDA and CCCL headers, laid out here from
#     NVIDIA's CUDA 13 wheels, unpacked outside the environment): a kernel that needs cuda_fp16.h and
#     cooperative_groups compiles, with NVRTC found through CUDA_HOME, and `doctor` says so.
# usage: .ci/no_extra.sh WHEEL
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

wheel=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
py=$work/venv/bin/python
"$py" -m pip install -q "$wheel"
"$py" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('cuda') is not None)" \
  || { echo "a 'cuda' package is installed: this is not an install without an extra"; exit 1; }
cd "$work"  # outside the checkout: the installed package is the one imported

# What the checks below need to say; `demo`'s and `doctor`'s exit status is 1 when NVRTC is missing.
hint='pip install "jitkernel[cuda]"'
expect_report() {  # expect_report NAME FILE: no traceback, the hint given
  if grep -q "Traceback" "$2" || ! grep -qF "$hint" "$2" || ! grep -q "cuda-pathfinder: not installed" "$2"; then
    echo "$1 without a toolkit did not report what to install:"; cat "$2"; exit 1
  fi
}

mkdir "$work/empty"
clean=(env -u CUDA_PATH -u JITKERNEL_NVRTC_PATH -u JITKERNEL_INCLUDE_PATH -u JITKERNEL_NO_PATHFINDER
       JITKERNEL_CACHE_DIR="$work/cache" CUDA_VISIBLE_DEVICES=)
echo "--- no toolkit anywhere"
"${clean[@]}" CUDA_HOME="$work/empty" "$py" - "$hint" <<'PY'
import sys
import jitkernel as jk
try:
    jk.compile_cuda('extern "C" __global__ void k(float* x) { x[0] = 1.f; }')
except jk.CudaNotAvailableError as e:
    assert sys.argv[1] in str(e) and "CUDA_HOME" in str(e), str(e)
    print("compile_cuda: CudaNotAvailableError, saying what to install")
else:
    sys.exit("compiled without a toolkit")
PY
for command in doctor demo; do
  status=0
  "${clean[@]}" CUDA_HOME="$work/empty" "$py" -m jitkernel "$command" >"$work/$command.txt" 2>&1 || status=$?
  [ "$status" -eq 1 ] || { echo "$command exited with $status (expected 1):"; cat "$work/$command.txt"; exit 1; }
  expect_report "$command" "$work/$command.txt"
  echo "$command: reports the missing NVRTC and what to install (exit status 1)"
done

echo "--- a system toolkit at CUDA_HOME"
"$py" -m pip install -q --target "$work/wheels" "nvidia-cuda-nvrtc>=13,<14" "nvidia-cuda-runtime>=13,<14" \
  "nvidia-cuda-cccl>=13,<14"
mkdir "$work/toolkit"
ln -s "$work/wheels/nvidia/cu13/lib" "$work/toolkit/lib64"
ln -s "$work/wheels/nvidia/cu13/include" "$work/toolkit/include"  # CCCL in include/cccl, as a toolkit has it
"${clean[@]}" CUDA_HOME="$work/toolkit" "$py" - "$work/toolkit" <<'PY'
import sys
import jitkernel as jk
source = ("#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n"
          'extern "C" __global__ void k(__half* x) { cooperative_groups::this_thread_block().sync(); '
          "x[0] = __float2half(1.f); }")
cubin = jk.compile_cuda(source, arch="sm_90a")
info = jk.toolkit_info()
assert cubin[:4] == b"\x7fELF", cubin[:16]
assert info["nvrtc_library"].startswith(sys.argv[1] + "/lib64/") and info["nvrtc_found_via"] == "CUDA_HOME", info
print(f"compile_cuda: {len(cubin)}-byte cubin with NVRTC {info['nvrtc_version']} from {info['nvrtc_library']}")
PY
"${clean[@]}" CUDA_HOME="$work/toolkit" "$py" -m jitkernel doctor >"$work/doctor.txt" 2>&1 \
  || { echo "doctor failed with the toolkit at CUDA_HOME:"; cat "$work/doctor.txt"; exit 1; }
grep -q "$work/toolkit/lib64/libnvrtc" "$work/doctor.txt" || { cat "$work/doctor.txt"; exit 1; }
echo "doctor: NVRTC from CUDA_HOME"
