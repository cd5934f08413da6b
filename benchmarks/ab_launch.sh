#!/usr/bin/env bash
# Launch cost of two trees on the GPU machine, A/B in one run: "base" (a `git archive` of an older commit, unpacked
# into an untracked folder of the checkout so it travels with it) against "head" (this tree). Builds both (Python
# package: head installed, base onto PYTHONPATH; C++ benchmark: one build each), then runs
# bench_launch.py --peers jitkernel --no-bandwidth in fresh processes, alternating, and the C++ launch cases.
# Everything goes to $OUT/ab.log.
#
#   git archive <base commit> | (mkdir -p ab_base && tar -x -C ab_base)     # on the development machine
#   JK_BASE=ab_base bash benchmarks/ab_launch.sh                            # on the GPU machine (device tool)
# Env: JK_ORDER (default "base head head base base head"), JK_PIN (e.g. "taskset -c 3"), JK_CPP_ORDER.
set -uo pipefail
BASE=${JK_BASE:?set JK_BASE to the unpacked base tree}
LOG=${OUT:?}/ab.log
exec > >(tee -a "$LOG") 2>&1
echo "=== $(date -u +%T) build head"
python3 -m pip install -q --no-build-isolation --no-deps . >/tmp/head_build.log 2>&1 || { tail -40 /tmp/head_build.log; exit 1; }
echo "=== $(date -u +%T) build base"
python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/ab_base "$BASE" >/tmp/base_build.log 2>&1 \
  || { tail -40 /tmp/base_build.log; exit 1; }
for v in base head; do
  src=.; [ $v = base ] && src=$BASE
  (cmake -S "$src" -B /tmp/cb_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DJITKERNEL_BUILD_PYTHON=OFF \
     -DJITKERNEL_BUILD_BENCHMARKS=ON >/tmp/cb_$v.log 2>&1 \
   && cmake --build /tmp/cb_$v --target jitkernel_bench -j "$(nproc)" >>/tmp/cb_$v.log 2>&1) \
    || { echo "C++ benchmark build of $v failed"; tail -30 /tmp/cb_$v.log; }
done
eval "$(python3 benchmarks/cpp/toolkit_env.py)"
filter="--filter=launch"
/tmp/cb_head/benchmarks/cpp/jitkernel_bench --help 2>&1 | grep -q benchmark_filter && filter="--benchmark_filter=launch"
i=0
for v in ${JK_ORDER:-base head head base base head}; do
  i=$((i + 1))
  echo "=== $(date -u +%T) py $i $v"
  pp=; [ $v = base ] && pp=/tmp/ab_base
  PYTHONPATH=$pp timeout 120 ${JK_PIN:-} python3 benchmarks/python/bench_launch.py --peers jitkernel --no-bandwidth \
    --out /tmp/bl_${v}_$i >/tmp/bl_${v}_$i.log 2>&1 || tail -20 /tmp/bl_${v}_$i.log
  PYTHONPATH=$pp python3 -c "import jitkernel; print('  module:', jitkernel.__file__)"
  grep -E "jitkernel|variant" /tmp/bl_${v}_$i/bench_launch.md | head -24
done
for v in ${JK_CPP_ORDER:-base head head base}; do
  echo "=== $(date -u +%T) cpp $v"
  timeout 90 /tmp/cb_$v/benchmarks/cpp/jitkernel_bench $filter 2>&1 | tail -12
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "=== $(date -u +%T) done"
