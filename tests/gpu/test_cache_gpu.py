"""The persistent compile cache on a GPU: a new process runs a kernel from the warm cache (a hit, no NVRTC compile)
and gets correct results; a cubin that ``kernel.compile(arch=...)`` stored is what a launch in another process loads;
and two processes on two GPUs, started together on one empty folder, share it and both verify their results.
Each test runs its processes on a folder of its own (JITKERNEL_CACHE_DIR)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import jitkernel as jk
from _processes import WAIT_FOR_GO, run_together

pytestmark = pytest.mark.gpu

SCRIPT = """
import json, os
import numpy as np
import jitkernel as jk
""" + WAIT_FOR_GO + """
k = jk.cuda_kernel("cache_gpu", ["inp"], ["out"],
                   "const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;"
                   "if (i < inp_shape[0]) { out[i] = inp[i] * 3 + 1; }")
x = np.arange(100_000, dtype=np.float32)
if os.environ.get("JK_TEST_COMPILE_ONLY"):
    k.compile(inputs=[x], output_dtypes=[jk.float32], arch=jk.device_info(0)["arch"])
    ok = True
else:
    (out,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[jk.float32], grid=(x.size, 1, 1),
               threadgroup=(256, 1, 1))
    ok = bool(np.array_equal(out.numpy(), x * 3 + 1))
i = jk.cache_info()
print(json.dumps(dict(ok=ok, hits=i.hits, misses=i.misses, stores=i.stores, corrupt=i.corrupt,
                      gpu=os.environ.get("CUDA_VISIBLE_DEVICES", ""))))
"""


def env_for(folder, **extra):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(folder), **extra)
    for name in ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES"):
        env.pop(name, None)
    return env


def run(folder, **extra):
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env_for(folder, **extra), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(folder):
    return sorted((folder / "kernels").glob("*.jkc"))


def test_new_process_runs_from_the_warm_cache(tmp_path):
    cold = run(tmp_path)
    assert cold["ok"] and cold["misses"] >= 1 and cold["stores"] >= 1 and cold["hits"] == 0
    warm = run(tmp_path)
    assert warm["ok"], "wrong results from the cached cubin"
    assert warm["misses"] == 0 and warm["stores"] == 0 and warm["hits"] >= 1 and warm["corrupt"] == 0


def test_launch_loads_what_compile_stored(tmp_path):
    stored = run(tmp_path, JK_TEST_COMPILE_ONLY="1")
    assert stored["stores"] == 1
    launched = run(tmp_path)
    assert launched["ok"] and launched["misses"] == 0 and launched["hits"] >= 1


def test_two_gpus_share_one_folder(tmp_path):
    if jk.device_count() < 2:
        pytest.skip(f"needs two GPUs, found {jk.device_count()}")
    folder, scratch = tmp_path / "cache", tmp_path / "start"
    scratch.mkdir()
    results = run_together(SCRIPT, [env_for(folder, CUDA_VISIBLE_DEVICES=str(gpu)) for gpu in (0, 1)], scratch)
    assert [r["gpu"] for r in results] == ["0", "1"]
    assert all(r["ok"] and r["corrupt"] == 0 for r in results), results
    assert list((folder / "kernels").glob("*.tmp")) == []
    assert 1 <= len(entries(folder)) <= 2  # one per architecture
    again = run(folder, CUDA_VISIBLE_DEVICES="1")
    assert again["ok"] and again["misses"] == 0
