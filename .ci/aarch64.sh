#!/usr/bin/env bash
# CI for the Linux aarch64 wheels, on an x86_64 machine: cross-builds the CPython 3.11 aarch64 wheel from this
# checkout's sdist with tools/build_wheel.sh --arch aarch64 (auditwheel must tag it manylinux_2_28_aarch64 or older
# and vendor nothing), then tools/check_wheel_emulated.sh imports it, runs `jitkernel doctor` and compiles a kernel
# with NVIDIA's aarch64 NVRTC wheel, under qemu with Debian's arm64 CPython 3.11 (the one arm64 CPython Debian 12
# has, so the one wheel checked; the other versions' wheels are built the same way: docs/packaging.md).
# usage: .ci/aarch64.sh   (root or sudo: the check installs Debian's qemu-user and arm64 libraries)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tools/build_wheel.sh --arch aarch64 "$work/wheels" 3.11
wheel=$(ls "$work"/wheels/jitkernel-*-manylinux_*_aarch64.whl)
echo "built $(basename "$wheel")"
tools/check_wheel_emulated.sh "$wheel"
