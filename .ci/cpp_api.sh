#!/usr/bin/env bash
# Checks the C++ API as a user gets it (docs/cpp_api.md): a program that knows jitkernel only through
# find_package(jitkernel) (tests/cpp_api) builds and runs against both forms of the CMake package:
#   1. `cmake --install` from this source tree to a temporary prefix (headers, static library, package);
#   2. the package in the .venv's installed jitkernel (`python -m jitkernel --cmake-dir`), which compiles the
#      core's shipped sources inside the program's own build.
# The program generates a kernel and compiles it to PTX and a cubin with the NVRTC the .venv's jitkernel finds
# (benchmarks/cpp/toolkit_env.py hands it over); with no GPU here its launch step says it was skipped. On a GPU
# machine, JITKERNEL_CPP_API_LAUNCH=1 makes a checked launch ("launch: ok") required.
# Builds without optimisation (no CMAKE_BUILD_TYPE): this checks that things build and link, and -O0 halves
# the time of the two core compiles. Needs the .venv the README's commands make, cmake and a C++ compiler.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python=.venv/bin/python
version=$("$python" -c "import jitkernel; print(jitkernel.__version__)")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=$(nproc)
toolkit_env=$("$python" benchmarks/cpp/toolkit_env.py)
arch=sm_90a
launched="^launch: (skipped|ok)"
[ "${JITKERNEL_CPP_API_LAUNCH:-0}" = 1 ] && launched="^launch: ok"

# Runs the example built in $1 and checks its lines; $2 names the route in messages.
check_example() {
  local out
  out=$(eval "$toolkit_env" && "$1/jitkernel_cpp_api_example" "$arch") || { echo "$out"; echo "$2: the example failed"; exit 1; }
  echo "$out"
  for pattern in "^jitkernel ${version//./\\.} C\\+\\+ API$" "^generated: axpy_[0-9a-f]+ \([0-9]+ bytes of CUDA\)$" \
                 "^ptx $arch: [0-9]+ bytes$" "^cubin $arch: [0-9]+ bytes$" "$launched"; do
    grep -Eq -- "$pattern" <<<"$out" || { echo "$2: no line matching '$pattern'"; exit 1; }
  done
}

echo "--- route 1: cmake --install, then find_package with CMAKE_PREFIX_PATH"
cmake -S . -B "$work/build" "${generator[@]}" -DJITKERNEL_BUILD_PYTHON=OFF >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j "$jobs" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; exit 1; }
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
# Every header of cpp/jitkernel is installed (the public ones include most of the others).
diff <(cd cpp && find jitkernel -name '*.hpp' | sort) <(cd "$work/prefix/include" && find jitkernel -type f | sort)
for f in lib/libjitkernel_core.a lib/cmake/jitkernel/jitkernelConfig.cmake \
         lib/cmake/jitkernel/jitkernelConfigVersion.cmake lib/cmake/jitkernel/jitkernelTargets.cmake; do
  [ -f "$work/prefix/$f" ] || { echo "route 1: $f was not installed"; exit 1; }
done
cmake -S tests/cpp_api -B "$work/example1" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example1" -j "$jobs" >/dev/null
check_example "$work/example1" "route 1"

echo "--- route 2: the installed Python package's CMake package (jitkernel_DIR from --cmake-dir)"
cmake_dir=$("$python" -m jitkernel --cmake-dir)
cmake -S tests/cpp_api -B "$work/example2" "${generator[@]}" -Djitkernel_DIR="$cmake_dir" >/dev/null
cmake --build "$work/example2" -j "$jobs" >"$work/build2.log" 2>&1 || { tail -50 "$work/build2.log"; exit 1; }
check_example "$work/example2" "route 2"
echo "C++ API: both routes built and ran"
