"""The variants bench_launch.py times: the exp kernel through jitkernel and each peer (CuPy, torch, cuda.core,
Triton, numba, MLX), each checked once, and the timing loop (wall clock, CUDA events, call + synchronize).
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from _bench_common import Skip, cuda_core, numpy_mismatch

# The kernel every variant runs: out = exp(inp) over n float32, blocks of 256 threads.
RAW_EXP = r"""
extern "C" __global__ void raw_exp(const float* inp, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(inp[i]);
}
"""
# jitkernel / MLX body of the same kernel (n from the input's shape).
JK_EXP = """
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < inp_shape[0]) out[i] = expf(inp[i]);
"""
ARG_COUNTS = (1, 4, 16)

# The driver's CU_STREAM_LEGACY handle: cuda.core's default stream has it, and torch.cuda.ExternalStream(1)
# takes the odd value for a malformed internal stream id ("RuntimeError: invalid StreamId1").
STREAM_LEGACY = 1


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


def check(out, want, name):
    """`out` (any array) equals `want` (NumPy, float64) to float32 precision."""
    got = to_numpy(out)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        raise AssertionError(f"{name}: wrong result (shape {got.shape}, expected {want.shape})")


def exp_of(x):
    return np.exp(to_numpy(x).astype(np.float64))


def variant(name, fn, sync, stream, version, note="", rt=None):
    """One timed way to run the kernel: fn() launches, sync() waits for it; stream is the CUstream handle that
    fn launches on (None: unknown, no event timing); rt, when given, is one call + wait for the rt column."""
    return {"name": name, "fn": fn, "sync": sync, "stream": stream, "version": version, "note": note, "rt": rt}


# --- peers: each returns checked variants for n elements ------------------------------------------------

def torch_input(n):
    try:
        import torch
    except ImportError as e:
        raise Skip(f"torch not installed ({e})")
    if not torch.cuda.is_available():
        raise Skip("torch sees no CUDA device")
    g = torch.Generator(device="cuda").manual_seed(n)
    return torch, torch.randn(n, device="cuda", generator=g)


def cupy_input(n):
    try:
        import cupy as cp
    except ImportError as e:
        raise Skip(f"cupy not installed ({e})")
    return cp, cp.random.RandomState(n).standard_normal(n, dtype=cp.float32)


def import_jitkernel():
    try:
        import jitkernel as jk
    except ImportError as e:
        raise Skip(f"jitkernel not importable ({e})")
    if not jk.cuda_available():
        raise Skip("jk.cuda_available() is False")
    return jk


def sum_kernel(jk, k):
    """out = a0 + ... + a{k-1} (the 1/4/16-argument variants)."""
    names = [f"a{j}" for j in range(k)]
    body = ("const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
            f"if (i < a0_shape[0]) out[i] = {' + '.join(f'{a}[i]' for a in names)};")
    return jk.cuda_kernel(name=f"bench_sum{k}", input_names=names, output_names=["out"], source=body)


def peer_jitkernel(n):
    """jitkernel with jk.Array, torch and CuPy arrays in and out (output allocated per call, and given), and with
    1, 4 and 16 array inputs (outputs given)."""
    jk = import_jitkernel()
    ver = getattr(jk, "__version__", "?")
    k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
    geo = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1))
    out = []

    def pair(label, x, z, sync):
        # Written as users write a call: keywords spelled out, the lists and tuples built per call.
        f = lambda: k(inputs=[x], output_shapes=[(n,)], output_dtypes=[jk.float32], grid=(n, 1, 1),
                      threadgroup=(256, 1, 1))
        check(f()[0], exp_of(x), f"jitkernel {label}")
        g = lambda: k(inputs=[x], outputs=[z], grid=(n, 1, 1), threadgroup=(256, 1, 1))
        check(g()[0], exp_of(x), f"jitkernel {label} outputs=")
        h = lambda: k(inputs=[x], outputs=[z], **geo)  # CPython builds a dict for **: the slower way to call
        return [variant(f"jitkernel, {label}, output allocated", f, sync, 0, ver),
                variant(f"jitkernel, {label}, outputs given", g, sync, 0, ver),
                variant(f"jitkernel, {label}, outputs given, **kwargs", h, sync, 0, ver)] + bound(label, x, z, sync)

    def bound(label, x, z, sync):
        # kernel.bind(...): the static part once, each call passing only the arrays.
        if not hasattr(k, "bind"):
            return [Skip("this jitkernel has no kernel.bind", f"jitkernel, {label}, bound")]
        ba = k.bind(inputs=[x], output_shapes=[(n,)], output_dtypes=[jk.float32], **geo)
        check(ba(x)[0], exp_of(x), f"jitkernel {label} bound")
        bg = k.bind(inputs=[x], outputs=[z], **geo)
        check(bg(x, outputs=[z])[0], exp_of(x), f"jitkernel {label} bound outputs=")
        zs = [z]
        return [variant(f"jitkernel, {label}, bound, output allocated", lambda: ba(x), sync, 0, ver),
                variant(f"jitkernel, {label}, bound, outputs given", lambda: bg(x, outputs=zs), sync, 0, ver)]

    def args(label, x, z, sync):
        rows = []
        for count in ARG_COUNTS:
            kk, ins = sum_kernel(jk, count), [x] * count
            f = lambda kk=kk, ins=ins: kk(inputs=ins, outputs=[z], grid=(n, 1, 1), threadgroup=(256, 1, 1))
            check(f()[0], to_numpy(x).astype(np.float64) * count, f"jitkernel {label} {count} inputs")
            rows.append(variant(f"jitkernel, {label}, {count} inputs, outputs given", f, sync, 0, ver))
        return rows

    # jk.Array in and out, no framework: the input and the given output are kernel outputs made from NumPy.
    rng = np.random.default_rng(n)
    xn = rng.standard_normal(n).astype(np.float32)
    copy = jk.cuda_kernel(name="bench_upload", input_names=["inp"], output_names=["out"],
                          source=JK_EXP.replace("expf(inp[i])", "inp[i]"))
    upload = lambda h: copy(inputs=[h], output_shapes=[(n,)], output_dtypes=[jk.float32], **geo)[0]
    xa, za = upload(xn), upload(np.full(n, np.nan, np.float32))
    out += pair("jk.Array", xa, za, jk.synchronize)
    out += args("jk.Array", xa, za, jk.synchronize)
    try:
        torch, x = torch_input(n)
    except Skip as e:
        out.append(Skip(str(e), "jitkernel, torch"))
    else:  # on torch's current stream, the default one here
        z = torch.full_like(x, float("nan"))
        out += pair("torch", x, z, torch.cuda.synchronize)
        out += args("torch", x, z, torch.cuda.synchronize)
    try:
        cp, xc = cupy_input(n)
    except Skip as e:
        out.append(Skip(str(e), "jitkernel, cupy"))
    else:  # on CuPy's current stream, the null stream here
        out += pair("cupy", xc, cp.full_like(xc, float("nan")), cp.cuda.Stream.null.synchronize)
    return out


def peer_cupy(n):
    cp, x = cupy_input(n)
    sync = cp.cuda.Stream.null.synchronize
    k = cp.RawKernel(RAW_EXP, "raw_exp")
    z = cp.full_like(x, float("nan"))
    nn = np.int64(n)
    blocks, threads = ((n + 255) // 256,), (256,)
    pre = lambda: k(blocks, threads, (x, z, nn))
    pre()
    check(z, exp_of(x), "cupy RawKernel")

    def alloc():
        o = cp.empty_like(x)
        k(blocks, threads, (x, o, nn))
        return o
    check(alloc(), exp_of(x), "cupy RawKernel alloc")
    v = cp.__version__
    return [variant("cupy RawKernel, outputs given", pre, sync, 0, v),
            variant("cupy RawKernel, output allocated", alloc, sync, 0, v),
            variant("cupy.exp, output allocated", lambda: cp.exp(x), sync, 0, v, "a built-in ufunc")]


def peer_torch(n):
    torch, x = torch_input(n)
    z = torch.empty_like(x)
    torch.exp(x, out=z)
    check(z, exp_of(x), "torch.exp")
    s, v = torch.cuda.synchronize, torch.__version__
    return [variant("torch.exp, out= given", lambda: torch.exp(x, out=z), s, 0, v, "a built-in op"),
            variant("torch.exp, output allocated", lambda: torch.exp(x), s, 0, v, "a built-in op")]


def peer_cudacore(n):
    cc, dev, s = cuda_core()
    cp, x = cupy_input(n)  # buffers from CuPy, as in peers.py
    ker = cc.Program(RAW_EXP, code_type="c++", options=cc.ProgramOptions(arch=f"sm_{dev.arch}")).compile(
        "cubin").get_kernel("raw_exp")
    z = cp.full_like(x, float("nan"))
    cp.cuda.Device().synchronize()
    cfg = cc.LaunchConfig(grid=(n + 255) // 256, block=256)
    args = (np.uint64(x.data.ptr), np.uint64(z.data.ptr), np.int64(n))
    f = lambda: cc.launch(s, cfg, ker, *args)
    f()
    s.sync()
    check(z, exp_of(x), "cuda.core launch")
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
    torch, x = torch_input(n)

    @triton.jit
    def texp(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(Y + offs, tl.exp(tl.load(X + offs, mask=m)), mask=m)

    z = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    pre = lambda: texp[grid](x, z, n, BLOCK=1024)

    def alloc():
        o = torch.empty_like(x)
        texp[grid](x, o, n, BLOCK=1024)
        return o
    pre()
    check(z, exp_of(x), "triton")
    check(alloc(), exp_of(x), "triton alloc")
    s, v = torch.cuda.synchronize, triton.__version__
    return [variant("triton, outputs given", pre, s, 0, v), variant("triton, output allocated", alloc, s, 0, v)]


def peer_numba(n):
    try:
        import math

        import numba
        from numba import cuda
    except ImportError as e:
        raise Skip(f"numba not installed ({e})")
    try:
        if not cuda.is_available():
            raise Skip("numba sees no CUDA device")

        @cuda.jit
        def nexp(a, c):
            i = cuda.grid(1)
            if i < c.size:
                c[i] = math.exp(a[i])

        xh = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        x, z = cuda.to_device(xh), cuda.device_array(n, np.float32)
        blocks = (n + 255) // 256
        f = lambda: nexp[blocks, 256](x, z)
        f()  # compiles
        cuda.synchronize()
    except AttributeError as e:
        reason = numpy_mismatch("numba", f"{type(e).__name__}: {e}")
        if reason is None:
            raise
        raise Skip(reason) from None
    check(z.copy_to_host(), exp_of(xh), "numba")
    return [variant("numba.cuda, outputs given", f, cuda.synchronize, 0, numba.__version__)]


def peer_mlx(n):
    """MLX is lazy: a call only records the kernel. Each timed call is therefore followed by mx.async_eval,
    which launches it without waiting; synchronize is mx.synchronize(); rt is mx.eval + mx.synchronize per call.
    MLX launches on its own stream: no event timing."""
    try:
        import mlx.core as mx
    except ImportError as e:
        raise Skip(f"mlx not installed ({e})")
    if not hasattr(mx.fast, "cuda_kernel"):
        raise Skip("this mlx build has no cuda_kernel")
    k = mx.fast.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
    a = mx.random.normal(shape=(n,))
    mx.eval(a)
    kw = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype])
    f = lambda: k(inputs=[a], **kw)[0]
    o = f()
    mx.eval(o)
    check(np.array(o), exp_of(np.array(a)), "mlx")
    return [variant("mlx cuda_kernel, output allocated", lambda: mx.async_eval(f()), mx.synchronize, None,
                    mx.__version__, "each call + mx.async_eval; rt: mx.eval + mx.synchronize; no event timing",
                    rt=lambda: (mx.eval(f()), mx.synchronize()))]


# Row names for a peer that is skipped as a whole.
PEER_LABELS = {"jitkernel": "jitkernel", "cupy": "cupy", "torch": "torch", "cudacore": "cuda.core launch",
               "triton": "triton", "numba": "numba.cuda", "mlx": "mlx cuda_kernel"}
PEERS = {"jitkernel": peer_jitkernel, "cupy": peer_cupy, "torch": peer_torch, "cudacore": peer_cudacore,
         "triton": peer_triton, "numba": peer_numba, "mlx": peer_mlx}
