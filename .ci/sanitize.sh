#!/usr/bin/env bash
# The extension built with AddressSanitizer and UndefinedBehaviorSanitizer (-DJITKERNEL_SANITIZE=ON; any undefined
# behaviour is fatal) under the CPU tests that drive the C++ parsers and the compile cache with hostile input: the
# cache key and its #include scan, damaged cache folders and tiers, the binary parser (NVRTC output corpus and
# mutations, precompiled kernels), bundles, call records, FIFOs, hostile protocol objects and XLA call text, and a
# fuzz batch of the XLA handler. The claims' multi-process waits (test_cache_claims.py) are left out: they are
# timing, not parsing, and the longest of the cache tests. A few minutes on two cores.
#
# The tests run from a copy of python/jitkernel holding the sanitized module, first on PYTHONPATH, with the ASan
# runtime and libstdc++ preloaded (a Python extension cannot bring them in itself) and leak detection off (Python never frees its
# own allocations at exit); subprocesses inherit both. The wheel (installed with its `cuda` extra) only brings the
# dependencies: NVRTC, the CUDA headers, cuda-pathfinder.
# usage: .ci/sanitize.sh WHEEL
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
wheel=$(realpath "$1")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
py=$work/venv/bin/python
"$py" -m pip install -q "$wheel[cuda]" "pytest>=7" "hypothesis>=6.100" nanobind cmake ninja

"$work/venv/bin/cmake" -S . -B "$work/build" -G Ninja -DCMAKE_MAKE_PROGRAM="$work/venv/bin/ninja" -DJITKERNEL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DJITKERNEL_INSTALL_CPP=OFF -DPython_EXECUTABLE="$py" \
  -Dnanobind_DIR="$("$py" -m nanobind --cmake_dir)" >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
"$work/venv/bin/cmake" --build "$work/build" -j "$(nproc)"

mkdir "$work/pkg"
cp -r python/jitkernel "$work/pkg/"
rm -f "$work/pkg/jitkernel/"_core*.so
cp "$work/build/cpp/"_core*.so "$work/pkg/jitkernel/"  # cpp/CMakeLists.txt defines the extension

cxx=$(grep -m1 '^CMAKE_CXX_COMPILER:' "$work/build/CMakeCache.txt" | cut -d= -f2)
asan=$("$cxx" -print-file-name=libasan.so)
cxxlib=$("$cxx" -print-file-name=libstdc++.so)
[ -f "$asan" ] && [ -f "$cxxlib" ] || { echo "no ASan runtime or libstdc++ next to $cxx ($asan, $cxxlib)"; exit 1; }
# libstdc++ too: ASan's __cxa_throw interceptor finds the real one when it starts, so it must be loaded by then (a
# Python interpreter does not link it; without it the first C++ exception aborts).
export LD_PRELOAD="$asan $cxxlib"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PYTHONPATH=$work/pkg
export JITKERNEL_CACHE_DIR=$work/cache

cd "$work"  # outside the checkout: the sanitized copy is the one imported
"$py" -c "import jitkernel, sys; assert jitkernel.__file__.startswith(sys.argv[1]), jitkernel.__file__; \
print('sanitized jitkernel from', jitkernel.__file__)" "$work/pkg"
tests=(test_cache_key test_cache_includes test_cache_hostile test_cache test_cache_tiers test_binary_corpus
       test_precompiled test_bundles test_precompile test_fifos test_hostile_inputs test_compile_log)
paths=()
for t in "${tests[@]}"; do paths+=("$repo/tests/cpu/$t.py"); done
# Left out, as they measure what ASan changes: address-space limits (ASan reserves terabytes of shadow memory), RSS
# growth (its quarantine keeps freed memory), and nvcc run as a subprocess (it inherits the preload and crashes).
skip="test_entry_claiming_a_huge_payload_is_a_miss or test_toolkit_record_claiming_a_huge_payload_is_a_miss"
skip+=" or test_many_short_lived_types_do_not_accumulate or test_nvcc_fatbin or test_nvcc_cubin_and_ptx"
"$py" -m pytest -q -p no:cacheprovider "${paths[@]}" -k "not ($skip)"
# The XLA handler's fuzz target (tests/cpu/test_fuzz.py runs it among all the others), one batch.
mkdir "$work/fuzz-cache"
JITKERNEL_CACHE_DIR=$work/fuzz-cache CUDA_VISIBLE_DEVICES= "$py" "$repo/tests/cpu/_fuzz_child.py" xla \
  --examples 1500 --seed 1 --log "$work/fuzz.log"
if grep -q '"failure"' "$work/fuzz.log" || ! grep -q '"done": 1500' "$work/fuzz.log"; then
  echo "the XLA fuzz batch failed:"; grep '"failure"' "$work/fuzz.log" | head -5; exit 1
fi
echo "XLA fuzz: 1500 edited call texts, every stage answered"
