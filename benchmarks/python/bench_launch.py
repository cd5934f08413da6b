"""Per-call launch overhead and first-call (compile) time of jitkernel beside other ways to run a CUDA kernel.

Every variant runs the same tiny kernel, c = a + b on float32 vectors of n elements (n = 1 and 1M by default),
on the legacy default stream where the library lets us choose. Each variant's output is checked against NumPy
once before it is timed. For each variant and size:
  wall_us   median over --reps blocks of --iters calls, one synchronize per block: host time per call
  event_us  the same blocks timed with CUDA events on the launch stream: device-timeline time per call
  rt_us     call + synchronize each time (latency), median over blocks
  x_<base>  wall_us over the baseline's wall_us at the same size (CuPy RawKernel, cuda.core launch)
A peer that cannot run here (not installed, no GPU, an install that is broken in a known way) gets a
"skipped: why" row instead of numbers.
First calls run in a fresh subprocess per library, from a script file in a new temporary folder that also holds
the empty compile caches (CUPY_CACHE_DIR, TRITON_CACHE_DIR, NUMBA_CACHE_DIR, CUDA_CACHE_PATH, JITKERNEL_CACHE_DIR);
the CUDA context is created before the clock starts. Then a second, different kernel in the same process, and a
second process sharing the now-filled cache folder (disk-warm). Two extra rows time MLX's documentation kernel
(seed 003: cooperative_groups::this_grid().thread_rank()) through jitkernel and MLX.
Writes bench_launch.md and bench_launch.json to --out; exits 1 only when a jitkernel variant fails.

    python3 benchmarks/python/bench_launch.py --out DIR [--quick] [--peers jitkernel,cupy,...] [--sizes 1,1048576]

Grown from shared/peers.py (same structure: one function per peer, a common timing loop, cold-start scripts).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

RAW_SRC = r"""
extern "C" __global__ void raw_add(const float* a, const float* b, int n, float* c) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""
# jitkernel / MLX body: n is a scalar input, read as n[0] (works for scalars in both).
JK_BODY = """
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n[0]) c[i] = a[i] + b[i];
"""
# MLX's documentation example (seed 003): the kernel users will compare first-call times with.
CG_BODY = """
    auto elem = cooperative_groups::this_grid().thread_rank();
    T tmp = inp[elem];
    out[elem] = exp(tmp);
"""
BASELINES = ("cupy RawKernel, outputs given", "cuda.core launch, outputs given")
# The driver's CU_STREAM_LEGACY handle: cuda.core's default stream has it, and torch.cuda.ExternalStream(1)
# takes the odd value for a malformed internal stream id ("RuntimeError: invalid StreamId1").
STREAM_LEGACY = 1


class Skip(Exception):
    """A peer or variant that cannot run here (not installed, no GPU support, a known-broken install): a
    "skipped: why" row in the table, never fatal. ``name`` is the row's name (the peer's, when None)."""

    def __init__(self, reason, name=None):
        super().__init__(reason)
        self.name = name


# --- timing ---------------------------------------------------------------------------------------------

class EventTimer:
    """Times a block of calls with CUDA events recorded on a given stream handle (0: legacy default)."""

    def __init__(self):
        self.kind = None
        try:
            import torch
            if torch.cuda.is_available():
                self.kind, self.torch = "torch", torch
                return
        except ImportError:
            pass
        try:
            import cupy
            self.kind, self.cupy = "cupy", cupy
        except ImportError:
            pass

    def block_ms(self, stream, body):
        """Milliseconds for body() on stream ``stream`` (a CUstream handle), or None when it cannot be timed."""
        if stream == STREAM_LEGACY:
            stream = 0  # the same legacy default stream, under the name both frameworks accept
        if self.kind == "torch":
            t = self.torch
            s = t.cuda.ExternalStream(stream) if stream else t.cuda.default_stream()
            e0, e1 = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            e0.record(s)
            body()
            e1.record(s)
            e1.synchronize()
            return e0.elapsed_time(e1)
        if self.kind == "cupy":
            cp = self.cupy
            s = cp.cuda.ExternalStream(stream) if stream else cp.cuda.Stream.null
            e0, e1 = cp.cuda.Event(), cp.cuda.Event()
            e0.record(s)
            body()
            e1.record(s)
            e1.synchronize()
            return cp.cuda.get_elapsed_time(e0, e1)
        return None


def measure(v, iters, reps, timer):
    """wall / event / round-trip microseconds per call for one variant (see the module docstring)."""
    fn, sync = v["fn"], v["sync"]
    rt_call = v["rt"] or (lambda: (fn(), sync()))

    def block():
        for _ in range(iters):
            fn()

    for _ in range(min(iters, 200)):
        fn()
    sync()
    wall = []
    for _ in range(reps):
        t = time.perf_counter()
        block()
        sync()
        wall.append((time.perf_counter() - t) / iters * 1e6)
    event, note = None, v["note"]
    if v.get("stream") is not None and timer.kind:
        try:
            ms = [timer.block_ms(v["stream"], block) for _ in range(reps)]
            event = None if None in ms else [m * 1e3 / iters for m in ms]
        except Exception as e:  # the wall and rt numbers stand without it
            sync()
            note = "; ".join(x for x in (note, f"no event timing: {type(e).__name__}: {e}") if x)
    rt_iters = max(iters // 5, 10)
    rt = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(rt_iters):
            rt_call()
        rt.append((time.perf_counter() - t) / rt_iters * 1e6)
    med = lambda xs: statistics.median(xs) if xs else None
    return {"wall_us": med(wall), "event_us": med(event), "rt_us": med(rt), "note": note,
            "wall_samples_us": wall, "event_samples_us": event, "rt_samples_us": rt}


def to_numpy(x):
    if hasattr(x, "cpu"):
        return x.cpu().numpy()
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        return x.get()
    return np.asarray(x)


def check(out, a, b, name):
    got, want = to_numpy(out), to_numpy(a) + to_numpy(b)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
        raise AssertionError(f"{name}: wrong result (shape {got.shape}, expected {want.shape})")


def variant(name, fn, sync, stream, version, note="", rt=None):
    """One timed way to run the kernel: fn() launches, sync() waits for it; stream is the CUstream handle that
    fn launches on (None: unknown, no event timing); rt, when given, is one call + wait for the rt column."""
    return {"name": name, "fn": fn, "sync": sync, "stream": stream, "version": version, "note": note, "rt": rt}


# --- peers: each returns checked variants for n elements ------------------------------------------------

def _torch_inputs(n):
    try:
        import torch
    except ImportError as e:
        raise Skip(f"torch not installed ({e})")
    if not torch.cuda.is_available():
        raise Skip("torch sees no CUDA device")
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    return torch, x, y


def _cupy_inputs(n):
    try:
        import cupy as cp
    except ImportError as e:
        raise Skip(f"cupy not installed ({e})")
    rs = cp.random.RandomState(n)
    return cp, rs.standard_normal(n, dtype=cp.float32), rs.standard_normal(n, dtype=cp.float32)


def peer_jitkernel(n):
    """jitkernel with torch, CuPy and jk.Array inputs, each with the output allocated per call and given."""
    try:
        import jitkernel as jk
    except ImportError as e:
        raise Skip(f"jitkernel not importable ({e})")
    if not jk.cuda_available():
        raise Skip("jk.cuda_available() is False")
    ver = getattr(jk, "__version__", "?")
    k = jk.cuda_kernel(name="bench_add", input_names=["a", "b", "n"], output_names=["c"], source=JK_BODY)
    geo = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1))
    out = []

    def pair(label, x, y, z, sync):
        """'<label>, output allocated' (a new output each call) and '<label>, outputs given' (written into z)."""
        shapes, dtypes = [tuple(x.shape)], [x.dtype]
        f = lambda: k(inputs=[x, y, n], output_shapes=shapes, output_dtypes=dtypes, **geo)
        check(f()[0], x, y, f"jitkernel {label}")
        g = lambda: k(inputs=[x, y, n], outputs=[z], **geo)
        check(g()[0], x, y, f"jitkernel {label} outputs=")
        return [variant(f"jitkernel, {label}, output allocated", f, sync, 0, ver),
                variant(f"jitkernel, {label}, outputs given", g, sync, 0, ver)]

    try:
        torch, x, y = _torch_inputs(n)
    except Skip as e:
        out.append(Skip(str(e), "jitkernel, torch"))
    else:  # on torch's current stream, the default one here
        out += pair("torch", x, y, torch.full_like(x, float("nan")), torch.cuda.synchronize)
    try:
        cp, xc, yc = _cupy_inputs(n)
    except Skip as e:
        out.append(Skip(str(e), "jitkernel, cupy"))
    else:  # on CuPy's current stream, the null stream here
        out += pair("cupy", xc, yc, cp.full_like(xc, float("nan")), cp.cuda.Stream.null.synchronize)
    # jk.Array in and out, no framework: the inputs are kernel outputs made from NumPy arrays (a + 0), the
    # given output one more (NaN + 0); launches go to the legacy default stream.
    rng = np.random.default_rng(n)
    xn, yn = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    zeros = np.zeros(n, np.float32)
    upload = lambda h: k(inputs=[h, zeros, n], output_shapes=[(n,)], output_dtypes=[np.float32], **geo)[0]
    xa, ya, za = upload(xn), upload(yn), upload(np.full(n, np.nan, np.float32))
    check(xa, xn, zeros, "jitkernel NumPy upload")
    out += pair("jk.Array", xa, ya, za, jk.synchronize)
    return out


def peer_cupy(n):
    cp, x, y = _cupy_inputs(n)
    sync = cp.cuda.Stream.null.synchronize
    k = cp.RawKernel(RAW_SRC, "raw_add")
    z = cp.empty_like(x)
    nn = np.int32(n)
    blocks, threads = ((n + 255) // 256,), (min(n, 256),)
    pre = lambda: k(blocks, threads, (x, y, nn, z))
    z.fill(float("nan"))
    pre()
    check(z, x, y, "cupy RawKernel")

    def alloc():
        o = cp.empty_like(x)
        k(blocks, threads, (x, y, nn, o))
        return o
    check(alloc(), x, y, "cupy RawKernel alloc")
    ek = cp.ElementwiseKernel("float32 a, float32 b", "float32 c", "c = a + b", "bench_add_ew")
    check(ek(x, y), x, y, "cupy ElementwiseKernel")
    ek_out = lambda: ek(x, y, z)
    z.fill(float("nan"))
    ek_out()
    check(z, x, y, "cupy ElementwiseKernel out")
    v = cp.__version__
    return [variant("cupy RawKernel, outputs given", pre, sync, 0, v),
            variant("cupy RawKernel, output allocated", alloc, sync, 0, v),
            variant("cupy ElementwiseKernel, outputs given", ek_out, sync, 0, v),
            variant("cupy ElementwiseKernel, output allocated", lambda: ek(x, y), sync, 0, v)]


def peer_torch(n):
    torch, x, y = _torch_inputs(n)
    z = torch.empty_like(x)
    torch.add(x, y, out=z)
    check(z, x, y, "torch.add")
    check(x + y, x, y, "torch +")
    s, v = torch.cuda.synchronize, torch.__version__
    return [variant("torch.add, out= given (floor reference)", lambda: torch.add(x, y, out=z), s, 0, v,
                    "no compile, a precompiled kernel"),
            variant("torch a + b, output allocated", lambda: x + y, s, 0, v, "no compile")]


def _cuda_core():
    """cuda.core's names (the package or its older .experimental home) and its legacy default stream."""
    try:
        import cuda.core as cc
    except ImportError as e:
        raise Skip(f"cuda.core not installed ({e})")
    if not hasattr(cc, "launch"):  # cuda.core < 0.3 kept everything in cuda.core.experimental
        try:
            import cuda.core.experimental as cc
        except ImportError as e:
            raise Skip(f"this cuda.core has no launch() ({e})")
    dev = cc.Device()
    dev.set_current()
    # LEGACY_DEFAULT_STREAM: cuda.core >= 0.6; before that Device.default_stream is the same stream (unless
    # CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM is set).
    stream = getattr(cc, "LEGACY_DEFAULT_STREAM", None) or dev.default_stream
    return cc, dev, stream


def peer_cudacore(n):
    cc, dev, s = _cuda_core()
    cp, x, y = _cupy_inputs(n)  # buffers from CuPy, as in peers.py
    ker = cc.Program(RAW_SRC, code_type="c++", options=cc.ProgramOptions(arch=f"sm_{dev.arch}")).compile(
        "cubin").get_kernel("raw_add")
    z = cp.full_like(x, float("nan"))
    cp.cuda.Device().synchronize()
    cfg = cc.LaunchConfig(grid=(n + 255) // 256, block=min(n, 256))
    args = (np.uint64(x.data.ptr), np.uint64(y.data.ptr), np.int32(n), np.uint64(z.data.ptr))
    f = lambda: cc.launch(s, cfg, ker, *args)
    f()
    s.sync()
    check(z, x, y, "cuda.core launch")
    try:
        handle = int(s.handle)
    except (AttributeError, TypeError, ValueError):
        handle = None  # no event timing for this variant
    ver = getattr(cc, "__version__", None) or getattr(sys.modules.get("cuda.core"), "__version__", "?")
    return [variant("cuda.core launch, outputs given", f, s.sync, handle, ver)]


def peer_triton(n):
    try:
        import triton
        import triton.language as tl
    except ImportError as e:
        raise Skip(f"triton not installed ({e})")
    torch, x, y = _torch_inputs(n)

    @triton.jit
    def tadd(A, B, C, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(C + offs, tl.load(A + offs, mask=m) + tl.load(B + offs, mask=m), mask=m)

    z = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    pre = lambda: tadd[grid](x, y, z, n, BLOCK=1024)

    def alloc():
        o = torch.empty_like(x)
        tadd[grid](x, y, o, n, BLOCK=1024)
        return o
    pre()
    check(z, x, y, "triton")
    check(alloc(), x, y, "triton alloc")
    s, v = torch.cuda.synchronize, triton.__version__
    return [variant("triton, outputs given", pre, s, 0, v), variant("triton, output allocated", alloc, s, 0, v)]


def numpy_mismatch(lib, error):
    """A skip reason when the error text ``error`` shows ``lib`` calling a NumPy function that the installed NumPy
    no longer has (numba on a NumPy newer than it supports: 'module 'numpy' has no attribute 'row_stack''), else
    None. Used for the launch table and for the fresh-process first calls alike."""
    if "module 'numpy' has no attribute" not in error:
        return None
    ver = getattr(sys.modules.get(lib), "__version__", None)
    if ver is None:
        try:
            from importlib.metadata import version
            ver = version(lib)
        except Exception:  # the reason matters, not the version
            ver = "(version unknown)"
    return f"{lib} {ver} does not work with the installed NumPy {np.__version__} ({error})"


def peer_numba(n):
    try:
        import numba
        from numba import cuda
    except ImportError as e:
        raise Skip(f"numba not installed ({e})")
    try:
        if not cuda.is_available():
            raise Skip("numba sees no CUDA device")

        @cuda.jit
        def nadd(a, b, c):
            i = cuda.grid(1)
            if i < c.size:
                c[i] = a[i] + b[i]

        rng = np.random.default_rng(n)
        xh, yh = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        x, y, z = cuda.to_device(xh), cuda.to_device(yh), cuda.device_array(n, np.float32)
        blocks, threads = (n + 255) // 256, min(n, 256)
        f = lambda: nadd[blocks, threads](x, y, z)
        f()  # compiles
        cuda.synchronize()
    except AttributeError as e:
        reason = numpy_mismatch("numba", f"{type(e).__name__}: {e}")
        if reason is None:
            raise
        raise Skip(reason) from None
    check(z.copy_to_host(), xh, yh, "numba")
    return [variant("numba.cuda, outputs given", f, cuda.synchronize, 0, numba.__version__)]


def peer_mlx(n):
    """MLX is lazy: a call only records the kernel. Each timed call is therefore followed by mx.async_eval,
    which launches it without waiting (the output is dropped and its buffer recycled, as with the eager peers);
    synchronize is mx.synchronize(); rt is mx.eval + mx.synchronize per call. MLX launches on its own stream:
    no event timing."""
    try:
        import mlx.core as mx
    except ImportError as e:
        raise Skip(f"mlx not installed ({e})")
    if not hasattr(mx.fast, "cuda_kernel"):
        raise Skip("this mlx build has no cuda_kernel")
    k = mx.fast.cuda_kernel(name="bench_add", input_names=["a", "b", "n"], output_names=["c"], source=JK_BODY)
    a, b = mx.random.normal(shape=(n,)), mx.random.normal(shape=(n,))
    n_array = mx.array(n, dtype=mx.int32)
    mx.eval(a, b, n_array)
    kw = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype])
    out = []
    for label, scalar in (("", n), (", n as a ready mx.array", n_array)):
        f = lambda scalar=scalar: k(inputs=[a, b, scalar], **kw)[0]
        o = f()
        mx.eval(o)
        check(np.array(o), np.array(a), np.array(b), "mlx" + label)
        out.append(variant(f"mlx cuda_kernel, output allocated{label}", lambda f=f: mx.async_eval(f()),
                           mx.synchronize, None, mx.__version__,
                           "each call + mx.async_eval; rt: mx.eval + mx.synchronize; no event timing",
                           rt=lambda f=f: (mx.eval(f()), mx.synchronize())))
    return out


# Row names for a peer that is skipped as a whole.
PEER_LABELS = {"jitkernel": "jitkernel", "cupy": "cupy", "torch": "torch", "cudacore": "cuda.core launch",
               "triton": "triton", "numba": "numba.cuda", "mlx": "mlx cuda_kernel"}
PEERS = {"jitkernel": peer_jitkernel, "cupy": peer_cupy, "torch": peer_torch, "cudacore": peer_cudacore,
         "triton": peer_triton, "numba": peer_numba, "mlx": peer_mlx}


# --- first calls in fresh processes -------------------------------------------------------------------
# Each script below runs as a file of its own (Triton reads a kernel's source from its file) in a fresh
# process; it imports the kernel texts and helpers from this module, sets the dict r, and the epilogue prints it.

N_COLD = 4096  # elements in the first-call runs


def other_kernel(src):
    """A second, different kernel from the same text: a - b instead of a + b, exp(-x) instead of exp(x)."""
    return src.replace("a[i] + b[i]", "a[i] - b[i]").replace("exp(tmp)", "exp(-tmp)")


def expect(ok, what):
    """Fails a first-call run whose kernel gave a wrong result (after its clock stopped)."""
    if not ok:
        raise AssertionError(f"{what}: wrong result")


COLD_PRELUDE = f"""import json, sys, time
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from bench_launch import N_COLD as N, RAW_SRC, JK_BODY, CG_BODY, other_kernel, expect
"""
COLD_EPILOGUE = "\nprint('RESULT ' + json.dumps(r))\n"
_JK_CG = "jitkernel, seed-003 exp (cooperative_groups)"
_MLX_CG = "mlx, seed-003 exp (cooperative_groups)"
# row of the first-call table: (peer that --peers selects it by, modules it needs, script)
COLD = {
    "jitkernel": ("jitkernel", ("jitkernel", "torch"), """
import torch, jitkernel as jk
x = torch.randn(N, device="cuda"); y = torch.randn_like(x); torch.cuda.synchronize(); jk.cuda_available()
def first(name, body, want):
    t = time.perf_counter()
    k = jk.cuda_kernel(name=name, input_names=["a", "b", "n"], output_names=["c"], source=body)
    c = k(inputs=[x, y, N], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(N, 1, 1),
          threadgroup=(256, 1, 1))[0]
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t) * 1e3
    expect(torch.allclose(c, want()), name)
    return ms
r = {"first_call_ms": first("bench_add", JK_BODY, lambda: x + y),
     "second_kernel_ms": first("bench_sub", other_kernel(JK_BODY), lambda: x - y)}
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
from bench_launch import _cuda_core
cc, dev, s = _cuda_core()  # the launch table's stream: the legacy default stream
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
    # MLX's documentation kernel through both; the note says whether jitkernel needed the real header.
    _JK_CG: ("jitkernel", ("jitkernel", "torch"), """
import re, torch, jitkernel as jk
x = torch.randn(N, device="cuda"); torch.cuda.synchronize(); jk.cuda_available()
sig = dict(inputs=[x], output_dtypes=[x.dtype], template=[("T", jk.float32)])
def first(name, body, want):
    t = time.perf_counter()
    k = jk.cuda_kernel(name=name, input_names=["inp"], output_names=["out"], source=body)
    o = k(**sig, output_shapes=[x.shape], grid=(N, 1, 1), threadgroup=(256, 1, 1))[0]
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t) * 1e3
    expect(torch.allclose(o, want(), rtol=1e-5, atol=1e-6), name)
    return ms, k.source(**sig)
ms, src = first("seed_exp", CG_BODY, lambda: torch.exp(x))
real = re.search(r"^[ \\t]*#[ \\t]*include[ \\t]*<cooperative_groups\\.h>", src, re.M) is not None
r = {"first_call_ms": ms, "second_kernel_ms": first("seed_exp_neg", other_kernel(CG_BODY), lambda: torch.exp(-x))[0],
     "note": "the generated source includes <cooperative_groups.h>" if real else
             "the generated source defines the cooperative_groups subset it uses (no <cooperative_groups.h>)"}
"""),
    _MLX_CG: ("mlx", ("mlx.core",), """
import numpy as np, mlx.core as mx
a = mx.array(np.random.default_rng(0).standard_normal(N).astype(np.float32)); mx.eval(a)  # a copy only
def first(name, body, want):
    t = time.perf_counter()
    k = mx.fast.cuda_kernel(name=name, input_names=["inp"], output_names=["out"], source=body)
    o = k(inputs=[a], template=[("T", mx.float32)], grid=(N, 1, 1), threadgroup=(256, 1, 1),
          output_shapes=[a.shape], output_dtypes=[a.dtype])[0]
    mx.eval(o)
    ms = (time.perf_counter() - t) * 1e3
    expect(np.allclose(np.array(o), want(np.array(a)), rtol=1e-5, atol=1e-6), name)
    return ms
r = {"first_call_ms": first("seed_exp", CG_BODY, np.exp),
     "second_kernel_ms": first("seed_exp_neg", other_kernel(CG_BODY), lambda v: np.exp(-v)),
     "note": "MLX puts <cooperative_groups.h> in every kernel"}
"""),
}


def _missing_module(modules):
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
    try:
        p = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode == 0 and lines:
        return json.loads(lines[-1][len("RESULT "):])
    return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300]}


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


def cold_start(row, timeout):
    """First call in a fresh process with empty caches, then again with the caches the first run filled."""
    peer, needs, script = COLD[row]
    missing = _missing_module(needs)
    if missing:
        return {"skipped": missing}
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


# --- report -----------------------------------------------------------------------------------------------

def git_commit():
    """Short hash (+dirty) of the checkout; JK_COMMIT wins (device_run.sh sets it: the device's copy has no .git)."""
    if os.environ.get("JK_COMMIT"):
        return os.environ["JK_COMMIT"]
    try:
        git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, timeout=10).stdout.strip()
        commit = git("rev-parse", "--short", "HEAD")
        return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "") if commit else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def environment():
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "host": platform.node(), "commit": git_commit()}
    try:
        import torch
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name()
            info["torch_cuda"] = torch.version.cuda
    except ImportError:
        pass
    try:
        import jitkernel as jk
        tk = jk.toolkit_info()
        info["jitkernel_toolkit"] = {k: v for k, v in tk.items() if isinstance(v, (str, int, float, bool))}
    except Exception as e:  # report, not fail: the table is still useful without it
        info["jitkernel_toolkit"] = f"{type(e).__name__}: {e}"
    return info


def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def markdown(res):
    env = res["environment"]
    lines = [f"# Launch overhead: jitkernel and peers",
             "",
             f"{env.get('device', 'no CUDA device')} · commit {env.get('commit')} · {env.get('date')} · "
             f"Python {env.get('python')} · {res['config']['iters']} calls per block, median of "
             f"{res['config']['reps']} blocks",
             "",
             "Kernel: c = a + b, float32. wall = host time per call, one synchronize per block; event = CUDA "
             "events on the launch stream; rt = call + synchronize each time. Ratios are wall over the "
             "baseline's wall at the same size, measured in this run.",
             ""]
    notes = {}
    for n, rows in res["launch"].items():
        base = {b: rows.get(b, {}).get("wall_us") for b in BASELINES}
        lines += [f"## n = {n}", "",
                  "| variant | wall µs/call | event µs/call | rt µs | × CuPy RawKernel | × cuda.core | version |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for name, r in rows.items():
            if "skipped" in r or "error" in r:
                what = f"skipped: {r['skipped']}" if "skipped" in r else f"error: {r['error']}"
                lines.append(f"| {name} | {what[:200]} | | | | | |")
                continue
            ratios = [fmt(r["wall_us"] / b) if b else "–" for b in base.values()]
            lines.append(f"| {name} | {fmt(r['wall_us'])} | {fmt(r['event_us'])} | {fmt(r['rt_us'])} | "
                         f"{ratios[0]} | {ratios[1]} | {r.get('version', '')} |")
            if r.get("note"):
                notes.setdefault(name, r["note"])
        lines.append("")
    if notes:
        lines += ["Notes: " + "; ".join(f"*{name}*: {note}" for name, note in notes.items()), ""]
    if res.get("cold"):
        lines += ["## First call (compile + load + launch + synchronize), fresh process", "",
                  "| library | cold ms | second kernel, same process ms | disk-warm process ms | note |",
                  "|---|---:|---:|---:|---|"]
        for row, r in res["cold"].items():
            if "skipped" in r:
                lines.append(f"| {row} | skipped: {r['skipped'][:200]} | | | |")
                continue
            c, w = r.get("cold", {}), r.get("diskwarm", {})
            note = "; ".join(x for x in (r.get("note"), c.get("error") and f"cold: {c['error']}",
                                         w.get("error") and f"disk-warm: {w['error']}") if x)
            lines.append(f"| {row} | {fmt(c.get('first_call_ms'), 1)} | {fmt(c.get('second_kernel_ms'), 1)} | "
                         f"{fmt(w.get('first_call_ms'), 1)} | {note[:300]} |")
        lines.append("")
    return "\n".join(lines)


def save(res, out):
    """Writes bench_launch.json and .md (also after each peer: a crash or timeout keeps what was measured)."""
    with open(os.path.join(out, "bench_launch.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(out, "bench_launch.md"), "w") as f:
        f.write(md + "\n")
    return md


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for bench_launch.md and bench_launch.json")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--sizes", default="1,1048576", help="comma-separated element counts")
    ap.add_argument("--iters", type=int, default=5000, help="calls per timed block")
    ap.add_argument("--reps", type=int, default=5, help="timed blocks per measurement")
    ap.add_argument("--quick", action="store_true", help="500 calls x 3 blocks (smoke test)")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process first-call measurements")
    ap.add_argument("--cold-timeout", type=float, default=120, help="seconds per fresh process")
    args = ap.parse_args(argv)
    if args.quick:
        args.iters, args.reps = 500, 3
    peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    os.makedirs(args.out, exist_ok=True)

    res = {"environment": environment(), "launch": {}, "cold": {}, "skipped": [],
           "config": {"iters": args.iters, "reps": args.reps, "sizes": sizes, "peers": peers}}
    print(json.dumps(res["environment"]), flush=True)
    timer = EventTimer()
    failed = False
    for n in sizes:
        rows = res["launch"].setdefault(str(n), {})
        for peer in peers:
            try:
                variants = PEERS[peer](n)
            except Skip as e:
                variants = [e]
            except Exception as e:  # a broken peer is reported in the table; the others still run
                rows[f"{peer} (setup)"] = {"error": f"{type(e).__name__}: {e}"}
                failed |= peer == "jitkernel"
                continue
            for v in variants:
                if isinstance(v, Skip):
                    name = v.name or PEER_LABELS[peer]
                    rows[name] = {"skipped": str(v)}
                    if n == sizes[0]:
                        res["skipped"].append(f"{name}: {v}")
                    print(f"n={n:<8} {name:<45} skipped: {v}", flush=True)
                    continue
                try:
                    r = measure(v, args.iters, args.reps, timer)
                    r["version"] = v["version"]
                except Exception as e:
                    r = {"error": f"{type(e).__name__}: {e}"}
                    failed |= peer == "jitkernel"
                rows[v["name"]] = r
                print(f"n={n:<8} {v['name']:<45} " + (
                    f"wall {fmt(r['wall_us'])} µs  event {fmt(r['event_us'])} µs  rt {fmt(r['rt_us'])} µs"
                    if "error" not in r else r["error"]), flush=True)
            save(res, args.out)
    if not args.no_cold:
        devices, why = cuda_device_count()
        for row, (peer, _, _) in COLD.items():
            if peer in peers:
                res["cold"][row] = cold_start(row, args.cold_timeout) if devices else {"skipped": why}
                print(f"first call {row}: {json.dumps(res['cold'][row])}", flush=True)
                save(res, args.out)
    md = save(res, args.out)
    print()
    print(md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
