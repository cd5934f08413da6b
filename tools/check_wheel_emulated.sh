#!/usr/bin/env bash
# Checks an aarch64 wheel on an x86_64 Debian machine, with no aarch64 hardware and no GPU: Debian's arm64 CPython
# 3.11 runs under qemu-user, in a virtual environment holding the wheel, its `cuda` extra (NVIDIA's aarch64 NVRTC
# and headers) and NumPy, all aarch64 wheels from PyPI. Under emulation it asserts that
#   1. `import jitkernel` loads the installed package on an aarch64 interpreter,
#   2. `python -m jitkernel doctor` succeeds and its JSON report names that environment's NVRTC 13 and headers,
#   3. .ci/check_cuda_extra.py compiles a kernel to cubin and PTX with that NVRTC (see there what it asserts).
# What this cannot show: a kernel launch (no GPU, no aarch64 driver) or timings; docs/packaging.md says more.
#   tools/check_wheel_emulated.sh WHEEL   (root, or sudo: it installs Debian packages)
# Debian packages: qemu-user, and arm64 libraries from Debian's multiarch archive (libpython3.11-stdlib, libstdc++6,
# which NVRTC needs); the arm64 interpreter (python3.11-minimal) cannot be installed beside the amd64 one, so its
# package is unpacked into a folder whose lib/python3.11 is the (shared) standard library of the installed ones.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ $# -ne 1 ] || [ ! -f "$1" ]; then
  echo "usage: tools/check_wheel_emulated.sh WHEEL   (a jitkernel linux aarch64 wheel for CPython 3.11)" >&2
  exit 2
fi
wheel=$(realpath "$1")
case "$(basename "$wheel")" in
  jitkernel-*_aarch64.whl) ;;
  *) echo "check_wheel_emulated.sh: $(basename "$wheel") is not a jitkernel aarch64 wheel" >&2; exit 2 ;;
esac

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
packages=(qemu-user libpython3.11-stdlib:arm64 libstdc++6:arm64)
if ! command -v qemu-aarch64 >/dev/null || ! dpkg -s "${packages[@]:1}" >/dev/null 2>&1; then
  echo "== Debian packages: ${packages[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || "${as_root[@]}" dpkg --add-architecture arm64
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" \
    >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The interpreter of the same Debian version as the arm64 standard library installed above.
version=$(dpkg-query -W -f '${Version}' libpython3.11-stdlib:arm64)
(cd "$work" && apt-get download -q "python3.11-minimal:arm64=$version" 2>&1 | grep -v "unsandboxed" || true)
dpkg-deb -x "$work"/python3.11-minimal_*_arm64.deb "$work/root"
ln -s /usr/lib/python3.11 "$work/root/usr/lib/python3.11"
# Without binfmt_misc (containers), each aarch64 program is started through qemu; -L /: its libraries are the
# machine's arm64 ones (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu).
arm() { qemu-aarch64 -L / "$@"; }
arm "$work/root/usr/bin/python3.11" -m venv --without-pip "$work/venv"
python=$work/venv/bin/python

# pip runs here (x86_64) and picks aarch64 wheels for CPython 3.11 on Debian 12's glibc (2.36); the platform list
# is spelled out, as pip before 24 does not widen a manylinux_2_36 tag to the older ones.
platforms=(--platform manylinux2014_aarch64)
for minor in $(seq 17 36); do platforms+=(--platform "manylinux_2_${minor}_aarch64"); done
echo "== install $(basename "$wheel")[cuda] and its aarch64 dependencies"
python3 -m pip install -q --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
  "${platforms[@]}" --target "$work/venv/lib/python3.11/site-packages" "$wheel[cuda]"

cd "$work"  # no jitkernel source folder on the path
export JITKERNEL_CACHE_DIR=$work/cache
echo "== import jitkernel (emulated aarch64)"
arm "$python" - <<'EOF'
import platform, sys
import jitkernel
from jitkernel import _core
assert platform.machine() == "aarch64", platform.machine()
for module in (jitkernel, _core):
    assert module.__file__.startswith(sys.prefix + "/"), f"{module.__name__} comes from {module.__file__}"
print(f"jitkernel {jitkernel.__version__} on {platform.machine()}, Python {platform.python_version()}:",
      _core.__file__)
EOF

echo "== python -m jitkernel doctor (emulated aarch64)"
arm "$python" -m jitkernel doctor
arm "$python" -m jitkernel doctor --json >"$work/doctor.json"
python3 - "$work/doctor.json" "$work/venv" <<'EOF'
import json, sys
report, venv = json.load(open(sys.argv[1])), sys.argv[2] + "/"
toolkit = report["toolkit"]
assert report["ok"], report
assert report["python"]["executable"].startswith(venv), report["python"]
assert toolkit["nvrtc_version"].split(".")[0] == "13", toolkit
assert toolkit["nvrtc_library"].startswith(venv) and toolkit["include_dirs"][0].startswith(venv), toolkit
print(f"doctor: ok, NVRTC {toolkit['nvrtc_version']} and its headers from the environment")
EOF

echo "== compile with the aarch64 NVRTC (emulated aarch64): .ci/check_cuda_extra.py"
arm "$python" "$repo/.ci/check_cuda_extra.py" 13 FIRST
echo "== $(basename "$wheel"): checked under emulation"
