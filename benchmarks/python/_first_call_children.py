"""The measured processes of bench_first_call.py's issue section: `python bench_first_call.py --child SPEC` runs
one of ``CHILDREN`` (jitkernel, CuPy, MLX, bare NVRTC) on one of ``KERNELS`` in a fresh process and prints
"RESULT <json>"; imports, inputs and the CUDA context come before the clock starts, the result check after it stops.
"""
from __future__ import annotations

import dataclasses
import hashlib
import statistics
import time

import numpy as np

from _bench_common import CG_BODY

N_ISSUE = 4096  # elements of the issue-4 kernels
NOCG_BODY = CG_BODY.replace("cooperative_groups::this_grid().thread_rank()", "blockIdx.x * blockDim.x + threadIdx.x")
KERNELS = {"seed003": ("seed 003 (cooperative_groups)", CG_BODY), "nocg": ("without cooperative_groups", NOCG_BODY)}


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def median_stages(runs):
    """{stage: median ms} over the runs that report a stage breakdown (a stage a run did not pass counts 0)."""
    runs = [r["stages"] for r in runs if r.get("stages")]
    names = sorted({n for r in runs for n in r}, key=lambda n: (n in ("other", "factory", "import_jitkernel"), n))
    return {n: median(r.get(n, 0.0) for r in runs) for n in names}


# --- children: one measurement in a fresh process ----------------------------------------------------------------
# The parent runs `python bench_first_call.py --child SPEC` (SPEC: JSON); the child prints "RESULT <json>".

def _exp_inputs(kind):
    """(array on the GPU, a function giving it back as NumPy, synchronize) from ``kind`` (cupy / torch; numpy: the
    host array itself, which jitkernel uploads into its own pool, its output a jk.Array)."""
    host = np.random.default_rng(0).standard_normal(N_ISSUE).astype(np.float32)
    if kind == "numpy":
        import jitkernel as jk
        return host, np.asarray, jk.synchronize
    if kind == "cupy":
        import cupy as cp
        x = cp.asarray(host)
        cp.cuda.Device().synchronize()
        return x, cp.asnumpy, cp.cuda.Device().synchronize
    import torch
    x = torch.from_numpy(host).cuda()
    torch.cuda.synchronize()
    return x, lambda t: t.cpu().numpy(), torch.cuda.synchronize


def _empty_like(x):
    """An uninitialised array like ``x`` from its own framework (torch or CuPy)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        import torch
        return torch.empty_like(x)
    import cupy as cp
    return cp.empty_like(x)


def _check_exp(got, x_host, what):
    want = np.exp(x_host)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        raise AssertionError(f"{what}: wrong result")


def _check_cubin(binary, what):
    if not binary or bytes(binary[:4]) != b"\x7fELF":
        raise AssertionError(f"{what}: not a cubin (ELF) image")


def stage_breakdown(total_ms, factory_ms=None, import_ms=None):
    """jitkernel's stage clock (``_core._stage_times()``, reset when the clock started) as {stage: ms}, with
    "other" = total - the stages (Python, argument handling, launch, synchronize) and, when given, the factory
    call (jk.cuda_kernel(...), inside the total) and `import jitkernel` (before the clock, not in the total)."""
    from jitkernel import _core
    stages = {name: s * 1e3 for name, (s, count) in _core._stage_times().items() if count}
    out = dict(stages)
    out["other"] = total_ms - sum(stages.values()) - (factory_ms or 0.0)
    if factory_ms is not None:
        out["factory"] = factory_ms
    if import_ms is not None:
        out["import_jitkernel"] = import_ms
    return out


def child_jitkernel(spec):
    t_import = time.perf_counter()
    import jitkernel as jk
    import_ms = (time.perf_counter() - t_import) * 1e3
    name, body = "myexp", KERNELS[spec["kernel"]][1]
    kw = dict(template=[("T", jk.float32)])
    if spec["compile_only"]:
        x = np.zeros(N_ISSUE, np.float32)
        jk._core._stage_times(reset=True)
        t = time.perf_counter()
        k = jk.cuda_kernel(name=name, input_names=["inp"], output_names=["out"], source=body)
        factory_ms = (time.perf_counter() - t) * 1e3
        cubin = k.compile(inputs=[x], output_dtypes=[np.float32], arch=spec["arch"], **kw)
        ms = (time.perf_counter() - t) * 1e3
        _check_cubin(cubin, "jitkernel compile")
        res = {"ms": ms, "cubin_sha256": hashlib.sha256(cubin).hexdigest()}
    else:
        x, to_host, sync = _exp_inputs(spec.get("input_kind", spec["inputs"]))
        jk.cuda_available()  # driver loaded before the clock (the context exists already: the inputs)
        # outputs_given: the output comes from the input's framework before the clock, so the first call
        # makes no allocation (the driver's first stream-ordered allocation in a process costs ~10 ms).
        given = [_empty_like(x)] if spec.get("outputs_given") else None
        if given:
            sync()
        jk._core._stage_times(reset=True)
        t = time.perf_counter()
        k = jk.cuda_kernel(name=name, input_names=["inp"], output_names=["out"], source=body)
        factory_ms = (time.perf_counter() - t) * 1e3
        if given:
            out = k(inputs=[x], grid=(N_ISSUE, 1, 1), threadgroup=(256, 1, 1), outputs=given, **kw)[0]
        else:
            out = k(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[jk.float32], grid=(N_ISSUE, 1, 1),
                    threadgroup=(256, 1, 1), **kw)[0]
        sync()
        ms = (time.perf_counter() - t) * 1e3
        _check_exp(to_host(out), to_host(x), "jitkernel")
        res = {"ms": ms}
    res["stages"] = stage_breakdown(ms, factory_ms, import_ms)
    if hasattr(jk, "cache_info"):  # this process's disk-cache hits and misses: the warm run must be a hit
        res["cache"] = dataclasses.asdict(jk.cache_info())
    return res


def child_cupy(spec):
    import cupy as cp
    x, to_host, sync = _exp_inputs("cupy")
    out = cp.empty_like(x)
    t = time.perf_counter()
    k = cp.RawKernel(spec["source"], spec["entry"], options=("--std=c++17",))
    k((N_ISSUE // 256,), (256,), (x, out))
    sync()
    ms = (time.perf_counter() - t) * 1e3
    _check_exp(to_host(out), to_host(x), "cupy RawKernel")
    return {"ms": ms}


def child_mlx(spec):
    import mlx.core as mx
    host = np.random.default_rng(0).standard_normal(N_ISSUE).astype(np.float32)
    a = mx.array(host)
    mx.eval(a)  # a copy only: nothing compiled yet
    t = time.perf_counter()
    k = mx.fast.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                            source=KERNELS[spec["kernel"]][1])
    o = k(inputs=[a], template=[("T", mx.float32)], grid=(N_ISSUE, 1, 1), threadgroup=(256, 1, 1),
          output_shapes=[a.shape], output_dtypes=[a.dtype])[0]
    mx.eval(o)
    ms = (time.perf_counter() - t) * 1e3
    _check_exp(np.array(o), host, "mlx cuda_kernel")
    return {"ms": ms}


def child_nvrtc(spec):
    """The generated source through NVRTC alone (ctypes): first compile in this process, then a few more."""
    import ctypes
    t = time.perf_counter()
    for pre in spec["nvrtc_preload"]:
        ctypes.CDLL(pre, mode=ctypes.RTLD_GLOBAL)
    nv = ctypes.CDLL(spec["nvrtc_library"])
    major, minor = ctypes.c_int(), ctypes.c_int()
    if nv.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) != 0:
        raise RuntimeError("nvrtcVersion failed")
    load_ms = (time.perf_counter() - t) * 1e3
    opts = [f"--gpu-architecture={spec['arch']}"]
    if "#include" in spec["source"]:
        opts += ["-I" + d for d in spec["include_dirs"]]
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    src = spec["source"].encode()

    def compile_once():
        prog = ctypes.c_void_p()
        t = time.perf_counter()
        if nv.nvrtcCreateProgram(ctypes.byref(prog), src, b"bare.cu", 0, None, None) != 0:
            raise RuntimeError("nvrtcCreateProgram failed")
        try:
            rc = nv.nvrtcCompileProgram(prog, len(opts), argv)
            size = ctypes.c_size_t()
            if rc != 0:
                nv.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
                log = ctypes.create_string_buffer(size.value)
                nv.nvrtcGetProgramLog(prog, log)
                raise RuntimeError(f"NVRTC error {rc}: {log.value.decode(errors='replace')[:500]}")
            if nv.nvrtcGetCUBINSize(prog, ctypes.byref(size)) != 0:
                raise RuntimeError("nvrtcGetCUBINSize failed")
            cubin = ctypes.create_string_buffer(size.value)
            if nv.nvrtcGetCUBIN(prog, cubin) != 0:
                raise RuntimeError("nvrtcGetCUBIN failed")
            ms = (time.perf_counter() - t) * 1e3
        finally:
            nv.nvrtcDestroyProgram(ctypes.byref(prog))
        _check_cubin(cubin.raw, "bare NVRTC")
        return ms

    first = compile_once()
    again = [compile_once() for _ in range(spec.get("repeats", 5))]
    return {"ms": first, "repeat_median_ms": median(again), "load_ms": load_ms,
            "nvrtc_version": f"{major.value}.{minor.value}",
            "options": opts[:1] + (["-I..."] if len(opts) > 1 else [])}


CHILDREN = {"jitkernel": child_jitkernel, "cupy": child_cupy, "mlx": child_mlx, "nvrtc": child_nvrtc}
