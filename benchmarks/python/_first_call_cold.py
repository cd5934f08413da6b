"""bench_first_call.py's peers section: the first call of c = a + b through jitkernel, CuPy, torch, cuda.core,
Triton, numba and MLX, each a script run in a fresh process with empty caches, then again on the filled caches.
"""
from __future__ import annotations

import os
import sys
import tempfile

from _bench_common import numpy_mismatch, run_fresh

# --- peers section: c = a + b through every library, fresh processes ----------------------------------------
# Each script below runs as a file of its own (Triton reads a kernel's source from its file) in a fresh
# process; it imports the kernel texts and helpers from this module, sets the dict r, and the epilogue prints it.

N_COLD = 4096  # elements in the first-call runs


def other_kernel(src):
    """A second, different kernel from the same text: a - b instead of a + b."""
    return src.replace("a[i] + b[i]", "a[i] - b[i]")


def expect(ok, what):
    """Fails a first-call run whose kernel gave a wrong result (after its clock stopped)."""
    if not ok:
        raise AssertionError(f"{what}: wrong result")


COLD_PRELUDE = f"""import json, sys, time
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from _bench_common import RAW_SRC, JK_BODY
from _first_call_cold import N_COLD as N, other_kernel, expect
"""
COLD_EPILOGUE = "\nprint('RESULT ' + json.dumps(r))\n"
# row of the first-call table: (peer that --peers selects it by, modules it needs, script)
COLD = {
    "jitkernel": ("jitkernel", ("jitkernel", "torch"), """
import torch
t_import = time.perf_counter(); import jitkernel as jk; import_ms = (time.perf_counter() - t_import) * 1e3
from _first_call_children import stage_breakdown
x = torch.randn(N, device="cuda"); y = torch.randn_like(x); torch.cuda.synchronize(); jk.cuda_available()
stages = {}
def first(name, body, want):
    jk._core._stage_times(reset=True)
    t = time.perf_counter()
    k = jk.cuda_kernel(name=name, input_names=["a", "b", "n"], output_names=["c"], source=body)
    factory_ms = (time.perf_counter() - t) * 1e3
    c = k(inputs=[x, y, N], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(N, 1, 1),
          threadgroup=(256, 1, 1))[0]
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t) * 1e3
    stages.setdefault(name, stage_breakdown(ms, factory_ms, import_ms))
    expect(torch.allclose(c, want()), name)
    return ms
r = {"first_call_ms": first("bench_add", JK_BODY, lambda: x + y),
     "second_kernel_ms": first("bench_sub", other_kernel(JK_BODY), lambda: x - y), "stages": stages["bench_add"]}
"""),
    "cupy": ("cupy", ("cupy",), """
import numpy as np, cupy as cp
h = np.arange(N, dtype=np.float32)
x = cp.asarray(h); z = cp.empty_like(x); cp.cuda.Device().synchronize()  # copies only: no kernel compiled yet
def first(src, want):
    t = time.perf_counter()
    k = cp.RawKernel(src, "raw_add"); k((N // 256,), (256,), (x, x, np.int32(N), z)); cp.cuda.Device().synchronize()
    ms = (time.perf_counter() - t) * 1e3
    expect(np.allclose(cp.asnumpy(z), want), "cupy")
    return ms
r = {"first_call_ms": first(RAW_SRC, h + h), "second_kernel_ms": first(other_kernel(RAW_SRC), h - h)}
"""),
    "torch": ("torch", ("torch",), """
import torch
x = torch.randn(N, device="cuda"); z = torch.empty_like(x); torch.cuda.synchronize()
t = time.perf_counter(); torch.add(x, x, out=z); torch.cuda.synchronize()
r = {"first_call_ms": (time.perf_counter() - t) * 1e3, "note": "no compile: first use of a precompiled kernel"}
"""),
    "cuda.core": ("cudacore", ("cuda.core", "cupy"), """
import numpy as np, cupy as cp
from _bench_common import cuda_core
cc, dev, s = cuda_core()  # the launch table's stream: the legacy default stream
h = np.arange(N, dtype=np.float32)
x = cp.asarray(h); z = cp.empty_like(x); cp.cuda.Device().synchronize()  # copies only: no kernel compiled yet
def first(src, want):
    t = time.perf_counter()
    ker = cc.Program(src, code_type="c++", options=cc.ProgramOptions(arch=f"sm_{dev.arch}")).compile(
        "cubin").get_kernel("raw_add")
    cc.launch(s, cc.LaunchConfig(grid=N // 256, block=256), ker, np.uint64(x.data.ptr), np.uint64(x.data.ptr),
              np.int32(N), np.uint64(z.data.ptr))
    s.sync()
    ms = (time.perf_counter() - t) * 1e3
    expect(np.allclose(cp.asnumpy(z), want), "cuda.core")
    return ms
r = {"first_call_ms": first(RAW_SRC, h + h), "second_kernel_ms": first(other_kernel(RAW_SRC), h - h)}
"""),
    "triton": ("triton", ("triton", "torch"), """
import torch, triton, triton.language as tl
x = torch.randn(N, device="cuda"); z = torch.empty_like(x); torch.cuda.synchronize()
@triton.jit
def tadd(A, B, C, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK); m = o < n
    tl.store(C + o, tl.load(A + o, mask=m) + tl.load(B + o, mask=m), mask=m)
@triton.jit
def tsub(A, B, C, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK); m = o < n
    tl.store(C + o, tl.load(A + o, mask=m) - tl.load(B + o, mask=m), mask=m)
def first(kern, want):
    t = time.perf_counter()
    kern[(N // 1024,)](x, x, z, N, BLOCK=1024); torch.cuda.synchronize()
    ms = (time.perf_counter() - t) * 1e3
    expect(torch.allclose(z, want()), kern.__name__)
    return ms
r = {"first_call_ms": first(tadd, lambda: x + x), "second_kernel_ms": first(tsub, lambda: x - x)}
"""),
    "numba": ("numba", ("numba.cuda",), """
import numpy as np
from numba import cuda
h = np.arange(N, dtype=np.float32)
x = cuda.to_device(h); z = cuda.device_array(N, np.float32); cuda.synchronize()
@cuda.jit
def nadd(a, b, c):
    i = cuda.grid(1)
    if i < c.size: c[i] = a[i] + b[i]
@cuda.jit
def nsub(a, b, c):
    i = cuda.grid(1)
    if i < c.size: c[i] = a[i] - b[i]
def first(kern, want):
    t = time.perf_counter()
    kern[N // 256, 256](x, x, z); cuda.synchronize()
    ms = (time.perf_counter() - t) * 1e3
    expect(np.allclose(z.copy_to_host(), want), "numba")
    return ms
r = {"first_call_ms": first(nadd, h + h), "second_kernel_ms": first(nsub, h - h)}
"""),
    "mlx": ("mlx", ("mlx.core",), """
import numpy as np, mlx.core as mx
rng = np.random.default_rng(0)
a, b = (mx.array(rng.standard_normal(N).astype(np.float32)) for _ in range(2)); mx.eval(a, b)  # copies only
def first(name, body, want):
    t = time.perf_counter()
    k = mx.fast.cuda_kernel(name=name, input_names=["a", "b", "n"], output_names=["c"], source=body)
    c = k(inputs=[a, b, N], grid=(N, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
          output_dtypes=[a.dtype])[0]
    mx.eval(c)
    ms = (time.perf_counter() - t) * 1e3
    expect(np.allclose(np.array(c), want(np.array(a), np.array(b))), name)
    return ms
r = {"first_call_ms": first("bench_add", JK_BODY, lambda p, q: p + q),
     "second_kernel_ms": first("bench_sub", other_kernel(JK_BODY), lambda p, q: p - q),
     "note": "MLX puts <cooperative_groups.h> in every kernel"}
"""),
}


def missing_module(modules):
    """Why one of ``modules`` cannot be used here (not installed, or its import fails), or None."""
    import importlib.util
    for mod in modules:
        try:
            if importlib.util.find_spec(mod) is None:
                return f"{mod} not installed"
        except ModuleNotFoundError:  # a parent package is missing
            return f"{mod} not installed"
        except Exception as e:  # importing the parent package failed
            return f"{mod} cannot be imported ({type(e).__name__}: {e})"
    return None


def _run_cold(path, env, timeout):
    """One fresh process running the script at ``path``: its r dict, or {"error": last line of stderr}."""
    return run_fresh([sys.executable, path], timeout, env=env)


def cuda_device_count():
    """(number of CUDA devices, why none) from the driver itself through ctypes, so that the first-call rows
    can be skipped on a machine without a GPU whatever frameworks are installed."""
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return 0, f"no CUDA driver ({e})"
    count = ctypes.c_int(0)
    rc = cuda.cuInit(0)
    if rc == 0:
        rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0:
        return 0, f"the CUDA driver reports no usable device (CUresult {rc})"
    return count.value, "" if count.value else "the CUDA driver reports no device"


def cold_start(row, timeout, reps=1):
    """First call in a fresh process with empty caches, then again with the caches the first run filled; with
    reps > 1, the median of reps such pairs (each in new cache folders) and the samples."""
    missing = missing_module(COLD[row][1])
    if missing:
        return {"skipped": missing}
    runs = [_cold_pair(row, timeout) for _ in range(max(1, reps))]
    if reps <= 1 or any("skipped" in r for r in runs):
        return runs[0]
    from _first_call_children import median, median_stages
    out = dict(runs[0])
    for phase in ("cold", "diskwarm"):
        ok = [r[phase] for r in runs if "error" not in r.get(phase, {"error": ""})]
        if not ok:
            continue
        merged = {k: median(p.get(k) for p in ok) for k in ("first_call_ms", "second_kernel_ms")}
        merged["samples_ms"] = [p.get("first_call_ms") for p in ok]
        if any(p.get("stages") for p in ok):
            merged["stages"] = median_stages(ok)
        out[phase] = dict(ok[0], **merged)
    return out


def _cold_pair(row, timeout):
    """One cold process and one disk-warm process after it, in new cache folders."""
    peer, _, script = COLD[row]
    d = tempfile.mkdtemp(prefix=f"jkbench_{peer}_")
    caches = {"CUPY_CACHE_DIR": "cupy", "TRITON_CACHE_DIR": "triton", "NUMBA_CACHE_DIR": "numba",
              "CUDA_CACHE_PATH": "nv", "JITKERNEL_CACHE_DIR": "jitkernel", "XDG_CACHE_HOME": "xdg"}
    env = dict(os.environ, **{k: os.path.join(d, v) for k, v in caches.items()})
    path = os.path.join(d, f"first_call_{peer}.py")
    with open(path, "w") as f:
        f.write(COLD_PRELUDE + script + COLD_EPILOGUE)
    out = {"cold": _run_cold(path, env, timeout)}
    reason = numpy_mismatch(peer, out["cold"].get("error", ""))
    if reason:
        return {"skipped": reason}
    notes = [out["cold"].get("note", "")]
    if peer == "jitkernel" and "error" not in out["cold"]:
        jk_cache = env["JITKERNEL_CACHE_DIR"]
        if not any(files for _, _, files in os.walk(jk_cache)):
            notes.append("in-memory compile cache only (nothing was written to JITKERNEL_CACHE_DIR): the "
                         "disk-warm process compiles again, so disk-warm = cold")
    out["diskwarm"] = _run_cold(path, env, timeout)
    out["note"] = "; ".join(n for n in notes if n)
    return out
