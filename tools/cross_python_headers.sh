#!/usr/bin/env bash
# The CPython headers an aarch64 extension is compiled against when it is built on x86_64 (tools/build_wheel.sh
# --arch aarch64). On Linux only pyconfig.h differs between the two machines' header sets, so the folder it prints
# holds CPython headers of PYTHON's version with an aarch64 pyconfig.h:
#   tools/cross_python_headers.sh PYTHON OUTDIR   -> prints OUTDIR/python3.X (a folder for Python_INCLUDE_DIR)
# Where Debian's multiarch package of that version is installed (libpython3.X-dev:arm64), they are Debian's headers
# with its aarch64 pyconfig.h. Else they are PYTHON's own headers, its x86_64 pyconfig.h turned into the aarch64 one
# by changing the four lines in which Debian's two pyconfig.h of CPython 3.11 differ (x86 inline assembly, wchar_t's
# signedness, the support tier); none changes a size, an alignment or a structure (docs/packaging.md says what each
# does). The change must turn Debian's x86_64 pyconfig.h into Debian's aarch64 one byte for byte, wherever both are
# installed, before it is used.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: tools/cross_python_headers.sh PYTHON OUTDIR" >&2
  exit 2
fi
python=$1
outroot=$2
[ "$(uname -m)" = x86_64 ] || { echo "cross_python_headers.sh: builds aarch64 headers on x86_64 only" >&2; exit 2; }

# x86_64 pyconfig.h (a path) -> aarch64 pyconfig.h on stdout; fails when a line it must change is not there.
to_aarch64() {
  local line
  for line in '#define HAVE_GCC_ASM_FOR_X64 1' '#define HAVE_GCC_ASM_FOR_X87 1' '/* #undef HAVE_USABLE_WCHAR_T */'; do
    if ! grep -qxF "$line" "$1"; then
      echo "cross_python_headers.sh: $1 has no line '$line'; check what else differs on aarch64" >&2
      return 1
    fi
  done
  # PY_SUPPORT_TIER (3.11.x and newer): x86_64 Linux with glibc is tier 1, aarch64 Linux with glibc tier 2.
  sed -e 's|^#define HAVE_GCC_ASM_FOR_X64 1$|/* #undef HAVE_GCC_ASM_FOR_X64 */|' \
      -e 's|^#define HAVE_GCC_ASM_FOR_X87 1$|/* #undef HAVE_GCC_ASM_FOR_X87 */|' \
      -e 's|^/\* #undef HAVE_USABLE_WCHAR_T \*/$|#define HAVE_USABLE_WCHAR_T 1|' \
      -e 's|^#define PY_SUPPORT_TIER 1$|#define PY_SUPPORT_TIER 2|' "$1"
}

read -r version include < <("$python" -c "import sys, sysconfig
print('%d.%d' % sys.version_info[:2], sysconfig.get_paths()['include'])")
[ -f "$include/Python.h" ] || { echo "cross_python_headers.sh: $python has no headers in $include" >&2; exit 1; }

# The check of the change against Debian's pair, wherever both are installed (any version).
for debian_x86 in /usr/include/x86_64-linux-gnu/python3.*/pyconfig.h; do
  debian_arm=${debian_x86/x86_64-linux-gnu/aarch64-linux-gnu}
  [ -f "$debian_x86" ] && [ -f "$debian_arm" ] || continue
  if ! to_aarch64 "$debian_x86" | cmp -s - "$debian_arm"; then
    echo "cross_python_headers.sh: changing $debian_x86 does not give $debian_arm; the list of lines is stale" >&2
    exit 1
  fi
done

out=$outroot/python$version
rm -rf "$out"
mkdir -p "$outroot"
debian_arm=/usr/include/aarch64-linux-gnu/python$version/pyconfig.h
if [ -f "$debian_arm" ] && [ -f "/usr/include/python$version/Python.h" ]; then
  # One aarch64 CPython build's headers (/usr/include/python3.X/pyconfig.h only picks the machine's file).
  cp -a "/usr/include/python$version" "$out"
  cp "$debian_arm" "$out/pyconfig.h"
  echo "cross_python_headers.sh: Python $version: Debian's headers with $debian_arm" >&2
else
  cp -a "$include" "$out"
  to_aarch64 "$include/pyconfig.h" >"$out/pyconfig.h"
  echo "cross_python_headers.sh: Python $version: the headers of $python, pyconfig.h changed for aarch64" >&2
fi
echo "$out"
