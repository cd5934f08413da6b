"""compile_options on the GPU: fast math stays within stated error bounds of NumPy (and is really on: its results
differ from the safe build's), a register cap and device debug code (-G) run correctly, and a kernel's first launch
logs where its cubin came from (a second kernel with the same text is a memory cache hit)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX

pytestmark = pytest.mark.gpu

N = 1 << 16
TG = 256


def run(body, x, options=None, name="copts_gpu"):
    k = jk.cuda_kernel(name, ["x"], ["out"], INDEX + "if (i < x_size) " + body, compile_options=options)
    (out,) = k(inputs=[x], grid=(x.size, 1, 1),
               threadgroup=(TG, 1, 1), output_shapes=[x.shape], output_dtypes=[jk.float32],
               template=[("x_size", x.size)])
    return out.numpy()


# (body, inputs, NumPy reference, bound): CUDA's documented bounds for the fast intrinsics on these ranges
# (__expf: 2 + floor(|1.16 x|) ulp, so < 1e-5 relative on [-10, 10]; __logf: 2^-21.41 absolute on [0.5, 2] and
# 3 ulp elsewhere; __sinf: 2^-21.41 absolute on [-pi, pi]), with margin.
CASES = {
    "exp": ("out[i] = expf(x[i]);", np.linspace(-10, 10, N, dtype=np.float32), np.exp,
            lambda err, ref: err <= 1e-5 * np.abs(ref)),
    "log": ("out[i] = logf(x[i]);", np.geomspace(1e-3, 1e3, N, dtype=np.float32), np.log,
            lambda err, ref: err <= 2e-6 * np.maximum(1.0, np.abs(ref))),
    "sin": ("out[i] = sinf(x[i]);", np.linspace(-np.pi, np.pi, N, dtype=np.float32), np.sin,
            lambda err, ref: err <= 1e-6),
}


@pytest.mark.parametrize("fn", sorted(CASES))
def test_fast_math_within_bounds(fn):
    body, x, reference, within = CASES[fn]
    ref = reference(x.astype(np.float64))
    fast = run(body, x, {"math_mode": "fast"}, name=f"fast_{fn}")
    safe = run(body, x, name=f"safe_{fn}")
    err = np.abs(fast.astype(np.float64) - ref)
    assert within(err, ref).all(), (fn, float(err.max()))
    assert np.abs(safe - ref).max() <= np.abs(fast - ref).max()
    assert (fast != safe).any()  # the option reached the compiler


REGISTER_HUNGRY = """{
float acc[32];
#pragma unroll
for (int k = 0; k < 32; ++k) acc[k] = x[(i * 32 + k) % x_size];
float s = 0.0f;
#pragma unroll
for (int k = 0; k < 32; ++k) s += acc[k] * acc[31 - k] + acc[(k * 7) % 32];
out[i] = s;
}"""


def register_hungry_reference(x):
    i = np.arange(x.size)[:, None]
    acc = x.astype(np.float64)[(i * 32 + np.arange(32)) % x.size]
    k = np.arange(32)
    return (acc * acc[:, 31 - k] + acc[:, (k * 7) % 32]).sum(axis=1)


@pytest.mark.parametrize("options", [{"max_registers": 32}, {"debug": True}, {"line_info": False}])
def test_options_run_correctly(options):
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float32)
    out = run(REGISTER_HUNGRY, x, options, name="hungry")
    np.testing.assert_allclose(out, register_hungry_reference(x), rtol=1e-4, atol=1e-4)


def test_first_launch_logs_where_the_cubin_came_from(caplog):
    x = np.ones(TG, np.float32)
    body = "out[i] = x[i] + 41.0f; // logged on the GPU"
    with caplog.at_level(logging.INFO, logger="jitkernel"):
        first = run(body, x, name="gpu_logged")
        second = run(body, x, name="gpu_logged")  # another kernel object with the same text
    caches = [r.jitkernel_cache for r in caplog.records if getattr(r, "jitkernel_kernel", "") == "gpu_logged.cu"]
    assert caches[0] in ("compile", "disk") and caches[1:] == ["memory"], caches
    assert (first == 42).all() and (second == 42).all()
