#!/usr/bin/env bash
# Issue 31's pair on the GPU machine: builds the extension twice with its python3 (>= 3.12), as the cp312-abi3
# wheel has it (limited API: -Cwheel.py-api=cp312) and with the full API (the default), each into a folder
# of its own, checks which is which, then runs bench_abi3_pair.py (fresh processes, A B A B ...; A = full API).
# Output also goes to $OUT/abi3_pair.log when OUT is set (the device tool).
#   bash benchmarks/python/bench_abi3_pair.sh [bench_abi3_pair.py options, e.g. --rounds 9]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
log=${OUT:-/tmp}/abi3_pair.log
exec > >(tee -a "$log") 2>&1
python3 -c "import sys; assert sys.version_info >= (3, 12), 'the abi3 build needs Python 3.12+: ' + sys.version"
work=${JK_PAIR_DIR:-/tmp/jk_abi3_pair}
mkdir -p "$work"
for kind in full abi3; do
  echo "=== $(date -u +%T) build $kind"
  extra=(); [ $kind = abi3 ] && extra=(-Cwheel.py-api=cp312)
  rm -rf "$work/$kind"
  python3 -m pip install -q --no-build-isolation --no-deps --target "$work/$kind" . "-Cbuild-dir=$work/build-$kind" \
    "${extra[@]}" >"$work/$kind.log" 2>&1 || { tail -40 "$work/$kind.log"; exit 1; }
  so=$(ls "$work/$kind"/jitkernel/_core.*.so)
  echo "  $so"
  case "$kind:$so" in
    abi3:*.abi3.so|full:*cpython-3*.so) ;;
    *) echo "the $kind build made $so" >&2; exit 1 ;;
  esac
done
python3 benchmarks/python/bench_abi3_pair.py "$work/full" "$work/abi3" "$@"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi (mock driver?)"
