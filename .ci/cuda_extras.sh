#!/usr/bin/env bash
# Checks both CUDA extras without a GPU: for `cuda12` and `cuda13` (which `cuda` names), a fresh virtual environment
# gets a jitkernel wheel with that extra from PyPI, finds that extra's NVRTC and headers, compiles a kernel that needs
# both to cubin and PTX for the architectures that NVRTC supports, and keeps its compiles apart from the other
# NVRTC's in one shared cache folder (.ci/check_cuda_extra.py says what is asserted).
# usage: .ci/cuda_extras.sh [WHEEL]   (without WHEEL, one is built here with `pip wheel`)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheel=${1:-}
if [ -z "$wheel" ]; then
  .venv/bin/python -m pip wheel -q --no-deps -w "$work/dist" .
  wheel=$(ls "$work"/dist/jitkernel-*.whl)
fi
wheel=$(realpath "$wheel")

export JITKERNEL_CACHE_DIR=$work/cache  # shared by both environments
for extra in cuda12 cuda13; do
  major=${extra#cuda}
  python3 -m venv "$work/$extra"
  "$work/$extra/bin/python" -m pip install -q "$wheel[$extra]"
  # Outside the checkout, so that the installed package is the one imported.
  (cd "$work" && "$work/$extra/bin/python" "$OLDPWD/.ci/check_cuda_extra.py" "$major" FIRST)
done
# `cuda` is the current CUDA: it must pick the same wheels as `cuda13`.
"$work/cuda13/bin/python" -m pip install -q --dry-run --report "$work/cuda.json" "$wheel[cuda]"
"$work/cuda13/bin/python" - "$work/cuda.json" <<'PY'
import json, sys
names = {item["metadata"]["name"] for item in json.load(open(sys.argv[1]))["install"]}
assert not any(name.endswith("-cu12") for name in names), names
PY
(cd "$work" && "$work/cuda12/bin/python" "$OLDPWD/.ci/check_cuda_extra.py" 12 AGAIN)
