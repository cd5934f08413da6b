"""Ahead-of-time builds on a real GPU: kernels precompiled for this device's architecture in a process that sees no
GPU (CUDA_VISIBLE_DEVICES=""), then a fresh process on the GPU runs them with no NVRTC compile (disk cache misses ==
0) and correct results; the same through a bundle imported into an empty cache folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import jitkernel as jk

pytestmark = pytest.mark.gpu

CALLS = '''
import numpy as np, jitkernel as jk
scale = jk.cuda_kernel(name="scale", input_names=["x", "s"], output_names=["y"],
                       source="uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; if (i < N) y[i] = x[i] * s[0];")
def calls(x=None):
    outs = []
    for dtype in (np.float32, np.float64):
        xs = jk.ShapeDtype((4096,), dtype) if x is None else x.astype(dtype)
        outs.append(scale(inputs=[xs, np.float32(3)], output_shapes=[(4096,)], output_dtypes=[dtype],
                          grid=(4096, 1, 1), threadgroup=(256, 1, 1), template=[("N", 4096)])[0])
    return outs
'''

RUN = '''
import json, sys, numpy as np, jitkernel as jk
sys.path.insert(0, sys.argv[1])
import aot_calls
x = np.linspace(-1, 1, 4096).astype(np.float32)
outs = aot_calls.calls(x)
ok = all(np.allclose(np.asarray(o), x.astype(np.asarray(o).dtype) * 3) for o in outs)
i = jk.cache_info()
print(json.dumps({"ok": ok, "hits": i.hits, "misses": i.misses}))
'''


def run(args, cache, cwd, **env):
    environment = dict(os.environ, JITKERNEL_CACHE_DIR=str(cache), **env)
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=environment,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_precompiled_without_a_gpu_runs_with_no_compile(tmp_path):
    (tmp_path / "aot_calls.py").write_text(CALLS)
    arch = jk.device_info(0)["arch"]
    built = tmp_path / "built"
    out = run(["-m", "jitkernel", "precompile", "--arch", f"sm_80,{arch}", "--calls", "aot_calls:calls"], built,
              tmp_path, CUDA_VISIBLE_DEVICES="")
    assert "2 kernels" in out.stdout, out.stdout
    result = json.loads(run(["-c", RUN, str(tmp_path)], built, tmp_path).stdout.strip().splitlines()[-1])
    assert result == {"ok": True, "hits": 2, "misses": 0}
    bundle = tmp_path / "k.jkbundle"
    run(["-m", "jitkernel", "cache", "export", str(bundle)], built, tmp_path)
    fresh = tmp_path / "fresh"
    run(["-m", "jitkernel", "cache", "import", str(bundle)], fresh, tmp_path)
    result = json.loads(run(["-c", RUN, str(tmp_path)], fresh, tmp_path).stdout.strip().splitlines()[-1])
    assert result == {"ok": True, "hits": 2, "misses": 0}
