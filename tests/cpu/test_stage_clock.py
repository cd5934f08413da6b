"""The stage clock (``_core._stage_times()``): the cold stages of a first call (toolkit search, NVRTC, compile key,
disk cache) are counted with their self times, so a benchmark can say where a first call spends its time; a process
on a warm disk cache records a disk hit and no NVRTC compile. Also: a process that never imported ``logging`` does
not import it to make compile records nobody could see. Each case runs in a fresh process (the clock is
process-wide)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import jitkernel as jk

CHILD = r"""
import json, sys
import numpy as np
import jitkernel as jk
from jitkernel import _core
before = _core._stage_times(reset=True)
k = jk.cuda_kernel("stage_clock_probe", ["a"], ["out"], "out[0] = a[0] * 3;")
cubin = k.compile(inputs=[np.zeros(4, np.float32)], output_dtypes=[np.float32], arch="sm_90a")
times = _core._stage_times()
after_reset = _core._stage_times(reset=True)
print(json.dumps({"times": times, "zeroed": _core._stage_times(), "elf": cubin[:4] == b"\x7fELF",
                  "hits": jk.cache_info().hits, "logging": "logging" in sys.modules}))
"""


def run_child(cache_dir):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(cache_dir))
    env.pop("JITKERNEL_CACHE", None)
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_stage_times_names_every_stage_as_seconds_and_count():
    times = jk._core._stage_times()
    assert {"toolkit_search", "nvrtc_load", "compile_key", "disk_lookup", "disk_store", "nvrtc_compile",
            "module_load", "first_alloc"} <= set(times)
    for seconds, count in times.values():
        assert isinstance(seconds, float) and isinstance(count, int) and seconds >= 0 and count >= 0


def test_empty_then_warm_disk_cache_processes(tmp_path):
    cold = run_child(tmp_path)
    assert cold["elf"]
    t = cold["times"]
    for stage in ("compile_key", "disk_lookup", "disk_store", "nvrtc_create", "nvrtc_compile", "nvrtc_get_binary"):
        assert t[stage][1] >= 1, (stage, t)
    assert t["nvrtc_compile"][0] > 0
    assert all(count == 0 for _, count in cold["zeroed"].values()), cold["zeroed"]  # reset=True zeroed them
    # self times: the stages of one thread add up to less than the process ran
    assert sum(s for s, _ in t.values()) < 60
    warm = run_child(tmp_path)
    w = warm["times"]
    assert warm["elf"] and warm["hits"] >= 1
    assert w["disk_lookup"][1] >= 1 and w["compile_key"][1] >= 1
    assert w["nvrtc_compile"][1] == 0 and w["nvrtc_create"][1] == 0 and w["disk_store"][1] == 0, w


def test_compile_records_do_not_import_logging(tmp_path):
    warm = run_child(tmp_path)  # a compile, then (same folder) nothing: neither imports logging
    assert not warm["logging"]
