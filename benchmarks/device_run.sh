#!/usr/bin/env bash
# One run on the GPU machine: build and install jitkernel, run the whole test suite with a GPU required, the
# demo, the C++ benchmarks and the Python launch benchmark, then write $OUT/summary.md. Run from the
# repository root with $OUT set (default ./.device_out):
#
#   bash benchmarks/device_run.sh                 # the default steps: info build tests demo cpp bench first
#   bash benchmarks/device_run.sh tests bench     # only these steps (after an earlier build in the same machine)
#   bash benchmarks/device_run.sh build tests memcheck racecheck soak   # the hardening run
#
# Hardening steps (not in the default run; their output goes to $OUT/hardening.log):
#   memcheck   the GPU tests under compute-sanitizer --tool memcheck (test_faults_gpu.py, whose kernels fault on
#              purpose, and test_exit_gpu.py, which runs compute-sanitizer itself, excepted); must report 0 errors.
#              JK_MEMCHECK_TESTS (default tests/gpu) names the files, to split the slow run over two calls
#   racecheck  the tests whose kernels use shared memory under --tool racecheck; 0 hazards
#   distbench  benchmarks/python/bench_distributed.py: a transformer block's training step under DDP and FSDP2 on
#              1, 2 and 4 GPUs (jitkernel kernels vs Triton ops vs torch) and the JAX shard_map step; its tables go
#              into the summary (JK_DIST_ARGS adds arguments, e.g. --quick)
#   compiled   benchmarks/bench_compiled.py: a kernel call inside torch.compile (default, dynamic, reduce-overhead,
#              with a backward) against a triton_op and Inductor's own code, in interleaved rounds (into bench.log)
#   tuned      benchmarks/host_only/bench_tuned_first_call.py --gpu: a second process's first autotuned call against an
#              untuned one (issue 30's target: within 0.1 ms), jk.Array and torch inputs (into bench.log)
#   pieces     benchmarks/python/bench_eager_pieces.py (an eager call split into its pieces) and
#              benchmarks/bench_jax.py (jax.jit against jnp.exp, with the handler's share), into bench.log
#   aoti       benchmarks/bench_aoti.py: an AOTInductor package calling a kernel, run from C++ without Python, against
#              the same model with a Triton op (into bench.log)
#   soak       benchmarks/python/soak.py: 10^6 launches per configuration (torch, CuPy, jk.Array inputs; outputs
#              allocated and given), host RSS and device memory sampled: flat
# Host backtraces are off in both sanitizer runs (--show-backtrace device): compute-sanitizer's host backtraces
# keep references to the Python frames they walk, so objects outlive the interpreter under them. Child processes
# (many tests run their scenario in one) are checked too (--target-processes all): with application-only, a child
# that uses CUDA waits for a sanitizer that never attaches, and the test hangs.
#
# Each step has a time limit and the run keeps going after a failing step; the whole run stays inside
# JK_BUDGET_S seconds (default 480) so the summary is always written. JK_COMMIT names the commit when the
# tree has no .git. Files in $OUT (the device tool returns 8 at most): summary.md build.log pytest.log junit.xml
# demo.log cpp_bench.log bench.log (both Python benchmarks' output) bench.json (both benchmarks' JSON).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-$PWD/.device_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
START=$(date +%s)
DEADLINE=$((START + ${JK_BUDGET_S:-480}))
RESERVE=25  # seconds kept for the summary

DEFAULT_STEPS=(info build tests demo cpp bench first)
ALL_STEPS=("${DEFAULT_STEPS[@]}" compiled tuned pieces aoti memcheck racecheck soak distbench)
STEPS=("$@")
[ ${#STEPS[@]} -eq 0 ] && STEPS=("${DEFAULT_STEPS[@]}")
for s in "${STEPS[@]}"; do
  case " ${ALL_STEPS[*]} " in *" $s "*) ;; *) echo "unknown step '$s'; steps: ${ALL_STEPS[*]}" >&2; exit 2 ;; esac
done
wanted() { case " ${STEPS[*]} " in *" $1 "*) return 0 ;; esac; return 1; }

declare -A STATUS SECONDS_TAKEN
ORDER=()
# run_step NAME LIMIT_S LOGFILE COMMAND: runs COMMAND in bash with a timeout; output to LOGFILE and stdout.
run_step() {
  local name=$1 limit=$2 log=$3 cmd=$4
  ORDER+=("$name")
  local left=$((DEADLINE - $(date +%s) - RESERVE))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 10 ]; then
    STATUS[$name]="not run (time budget spent)"; SECONDS_TAKEN[$name]=0
    echo "=== $name: not run, time budget spent"
    return
  fi
  echo "=== $name (limit ${limit}s): $cmd"
  local t0=$(date +%s) rc
  timeout -k 10 "$limit" bash -o pipefail -c "$cmd" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  SECONDS_TAKEN[$name]=$(($(date +%s) - t0))
  case $rc in
    0) STATUS[$name]="pass" ;;
    124 | 137) STATUS[$name]="TIMEOUT after ${limit}s" ;;
    *) STATUS[$name]="FAIL (exit $rc)" ;;
  esac
  echo "=== $name: ${STATUS[$name]} in ${SECONDS_TAKEN[$name]}s"
}

COMMIT=${JK_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${JK_COMMIT:-}" ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  COMMIT="$COMMIT+dirty"
fi
export JK_COMMIT=$COMMIT
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
GPU=${GPU:-no GPU (nvidia-smi failed)}

if wanted info || wanted demo; then
  rm -f "$OUT/demo.log"  # shared by both steps
fi
if wanted info; then
  run_step info 30 "$OUT/demo.log" \
    "nvidia-smi; echo commit $COMMIT; $PY --version; $PY -m pip list 2>/dev/null | grep -i -E \
'^(torch|cupy|triton|jax|numba|cuda-|nvidia-cuda|nanobind|scikit-build|numpy|pytest|ml.dtypes|mlx)' ; \
cmake --version | head -1; ls /usr/local/cuda/lib64/libnvrtc* 2>/dev/null"
fi
if wanted build; then
  rm -f "$OUT/build.log"
  run_step build 300 /dev/null \
    "$PY -m pip install --no-build-isolation --no-deps -v . >'$OUT/build.log' 2>&1; rc=\$?; tail -n 5 '$OUT/build.log'; exit \$rc"
fi
if wanted tests; then
  rm -f "$OUT/pytest.log" "$OUT/junit.xml"
  run_step tests 420 "$OUT/pytest.log" \
    "JITKERNEL_REQUIRE_GPU=1 $PY -m pytest -v -rs -p no:cacheprovider -o faulthandler_timeout=120 \
--junitxml='$OUT/junit.xml' tests"
fi
if wanted demo; then
  run_step demo 90 "$OUT/demo.log" "$PY -m jitkernel doctor; $PY -m jitkernel demo"
fi
if wanted cpp; then
  rm -f "$OUT/cpp_bench.log"
  run_step cpp 240 "$OUT/cpp_bench.log" \
    "d=\${TMPDIR:-/tmp}/jitkernel_cpp_bench; gen=; command -v ninja >/dev/null && gen='-G Ninja'; \
cmake -S . -B \$d \$gen -DCMAKE_BUILD_TYPE=Release -DJITKERNEL_BUILD_PYTHON=OFF -DJITKERNEL_BUILD_BENCHMARKS=ON \
>\$d.configure.log 2>&1 || { cat \$d.configure.log; exit 1; }; grep 'jitkernel benchmarks' \$d.configure.log; \
cmake --build \$d --target jitkernel_bench -j \$(nproc) >\$d.build.log 2>&1 || { tail -n 60 \$d.build.log; exit 1; }; \
eval \"\$($PY benchmarks/cpp/toolkit_env.py)\"; \$d/benchmarks/cpp/jitkernel_bench"
fi
SANITIZER="compute-sanitizer --show-backtrace device --target-processes all --error-exitcode 3"
if wanted memcheck || wanted racecheck || wanted soak; then
  rm -f "$OUT/hardening.log"
fi
if wanted memcheck; then
  run_step memcheck 420 "$OUT/hardening.log" \
    "PATH=/usr/local/cuda/bin:\$PATH JITKERNEL_REQUIRE_GPU=1 $SANITIZER --tool memcheck $PY -m pytest -q -p no:cacheprovider \
--durations=12 \${JK_MEMCHECK_TESTS:-tests/gpu} --ignore=tests/gpu/test_faults_gpu.py --ignore=tests/gpu/test_exit_gpu.py \
2>&1 | grep -v '^=========     '"
fi
if wanted racecheck; then
  run_step racecheck 300 "$OUT/hardening.log" \
    "PATH=/usr/local/cuda/bin:\$PATH JITKERNEL_REQUIRE_GPU=1 $SANITIZER --tool racecheck $PY -m pytest -q -p no:cacheprovider \
tests/gpu/test_softmax_gpu.py tests/gpu/test_cooperative_groups_gpu.py tests/gpu/test_launch_gpu.py \
tests/gpu/test_precompiled_gpu.py 2>&1 | grep -v '^=========     '"
fi
SOAK_DIR=$(mktemp -d)
if wanted soak; then
  run_step soak 300 "$OUT/hardening.log" "$PY benchmarks/python/soak.py --out '$SOAK_DIR' --calls \${JK_SOAK_CALLS:-1000000} \
\${JK_SOAK_CONFIGS:+--configs \$JK_SOAK_CONFIGS}"
fi
DIST_DIR=$(mktemp -d)
if wanted distbench; then
  rm -f "$OUT/bench_distributed.log"
  run_step distbench 330 "$OUT/bench_distributed.log" "$PY benchmarks/python/bench_distributed.py --out '$DIST_DIR' \
\${JK_DIST_ARGS:-}"
fi
BENCH_DIR=$(mktemp -d)
if wanted bench || wanted first || wanted compiled || wanted tuned || wanted pieces || wanted aoti; then
  rm -f "$OUT/bench.log" "$OUT/bench.json"
fi
if wanted bench; then
  run_step bench 240 "$OUT/bench.log" "$PY benchmarks/python/bench_launch.py --out '$BENCH_DIR'"
fi
if wanted first; then
  run_step first 240 "$OUT/bench.log" "$PY benchmarks/python/bench_first_call.py --out '$BENCH_DIR'"
fi
if wanted compiled; then
  run_step compiled 240 "$OUT/bench.log" "$PY benchmarks/bench_compiled.py --json '$BENCH_DIR/bench_compiled.json'"
fi
if wanted tuned; then
  run_step tuned 150 "$OUT/bench.log" "$PY benchmarks/host_only/bench_tuned_first_call.py --gpu --runs 15"
  run_step tuned_torch 240 "$OUT/bench.log" "$PY benchmarks/host_only/bench_tuned_first_call.py --gpu --arrays torch --runs 9"
fi
if wanted pieces; then
  run_step pieces 150 "$OUT/bench.log" "$PY benchmarks/python/bench_eager_pieces.py"
  run_step jax 120 "$OUT/bench.log" "$PY benchmarks/bench_jax.py"
fi
if wanted aoti; then
  run_step aoti 400 "$OUT/bench.log" "$PY benchmarks/bench_aoti.py"
fi
# One JSON file back for the benchmarks: {"bench_launch": {...}, "bench_first_call": {...}}.
$PY - "$BENCH_DIR" "$OUT/bench.json" <<'EOF'
import json, pathlib, sys
found = {p.stem: json.loads(p.read_text()) for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json"))}
if found:
    pathlib.Path(sys.argv[2]).write_text(json.dumps(found, indent=1))
EOF

# --- summary -------------------------------------------------------------------------------------------------
slug=$(echo "${GPU%%,*}" | sed -e 's/^NVIDIA //' -e 's/[^A-Za-z0-9]\+/-/g' -e 's/-$//' | tr 'A-Z' 'a-z')
{
  echo "# jitkernel device run: ${GPU%%,*}, commit $COMMIT"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); suggested results file: benchmarks/results/$(date -u +%Y-%m-%d)_${slug}_${COMMIT%%+*}.md"
  echo "- GPU: $GPU"
  echo "- python: $($PY --version 2>&1) ($(command -v $PY)); total $(($(date +%s) - START)) s"
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---:|"
  for s in "${ORDER[@]}"; do echo "| $s | ${STATUS[$s]} | ${SECONDS_TAKEN[$s]} |"; done
  echo
  if [ -f "$OUT/junit.xml" ]; then
    echo "## Tests (JITKERNEL_REQUIRE_GPU=1)"
    echo
    $PY - "$OUT/junit.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
n = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
passed = n["tests"] - n["failures"] - n["errors"] - n["skipped"]
print(f"{passed} passed, {n['failures']} failed, {n['errors']} errors, {n['skipped']} skipped ({n['tests']} collected)")
print()
for tag, cap in (("failure", 40), ("error", 20), ("skipped", 20)):
    hits = [(c, c.find(tag)) for c in root.iter("testcase") if c.find(tag) is not None]
    for case, el in hits[:cap]:
        msg = ((el.get("message") or "").strip().splitlines() or [""])[0][:200]
        print(f"- {tag.upper()} {case.get('classname')}::{case.get('name')}: {msg}")
    if len(hits) > cap:
        print(f"- ... {len(hits) - cap} more {tag} entries in junit.xml")
EOF
    echo
  fi
  if [ ! -f "$OUT/junit.xml" ] && [ -f "$OUT/pytest.log" ]; then
    # pytest died (a crash writes no JUnit file): -v names each test before it runs, so the last one is the culprit.
    echo "## Tests (JITKERNEL_REQUIRE_GPU=1): pytest did not finish (${STATUS[tests]:-?})"
    echo
    echo "$(grep -c ' PASSED' "$OUT/pytest.log") passed, $(grep -c ' FAILED' "$OUT/pytest.log") failed, \
$(grep -c ' ERROR' "$OUT/pytest.log") errors, $(grep -c ' SKIPPED' "$OUT/pytest.log") skipped before it stopped"
    echo
    echo '```'
    grep -E '^tests/.*::' "$OUT/pytest.log" | tail -n 1
    grep -E 'Fatal Python error|Timeout|Segmentation|Aborted' "$OUT/pytest.log" | grep -v '::' | head -n 3
    echo '```'
    echo
  fi
  if [ -f "$OUT/demo.log" ]; then
    echo "## Demo"
    echo
    echo '```'
    grep -E "PASS|FAIL|max abs error|No CUDA GPU|output:|compiled in" "$OUT/demo.log" | tail -n 8 \
      || tail -n 8 "$OUT/demo.log"
    echo '```'
    echo
  fi
  if [ -f "$OUT/cpp_bench.log" ]; then
    echo "## C++ benchmarks"
    echo
    echo '```'
    grep -v -E "^\*\*\*WARNING|^-+$" "$OUT/cpp_bench.log" | tail -n 30
    echo '```'
    echo
  fi
  if [ -f "$OUT/hardening.log" ]; then
    echo "## Hardening (compute-sanitizer, soak)"
    echo
    echo '```'
    grep -E "^=== (memcheck|racecheck|soak)|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY| passed| failed|calls in" \
      "$OUT/hardening.log" | tail -n 30
    echo '```'
    echo
    [ -f "$SOAK_DIR/soak.md" ] && sed -e 's/^# /### /' "$SOAK_DIR/soak.md" && echo
  fi
  if [ -f "$DIST_DIR/bench_distributed.md" ]; then
    sed -e 's/^## /### /' -e 's/^# /## /' "$DIST_DIR/bench_distributed.md"
    echo
  fi
  for table in bench_launch bench_first_call; do
    if [ -f "$BENCH_DIR/$table.md" ]; then
      sed -e 's/^## /### /' -e 's/^# /## /' -e 's/^## n = /### n = /' -e 's/^## First call/### First call/' "$BENCH_DIR/$table.md"
      echo
    fi
  done
  if [ -f "$OUT/bench.log" ] && ! ls "$BENCH_DIR"/*.md >/dev/null 2>&1; then
    echo "## Benchmarks (no table: last lines of their log)"
    echo
    echo '```'
    tail -n 20 "$OUT/bench.log"
    echo '```'
  fi
} >"$OUT/summary.md" 2>&1
echo
cat "$OUT/summary.md"
fail=0
for s in "${ORDER[@]}"; do [ "${STATUS[$s]}" = pass ] || fail=1; done
exit $fail
