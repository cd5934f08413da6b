"""Per-call launch overhead of jitkernel beside other ways to run a CUDA kernel, the floors it is held to, where
the time of a call goes, and the bandwidth of jitkernel's kernels and copies (issue 6).

Every variant runs the same kernel, out = exp(inp) over n float32 (n = 4096 by default), on the legacy default
stream where the library lets us choose; each variant's output is checked once before it is timed. For each:
  wall_us   median over --reps blocks of --iters calls, one synchronize per block: the issue cost of a call
  event_us  the same blocks timed with CUDA events on the launch stream: device-timeline time per call
  rt_us     call + synchronize each time (latency), median over blocks
jitkernel runs with jk.Array, torch and CuPy arrays in and out, each with the output allocated by the call and
given (outputs=), and with 1, 4 and 16 array inputs (out = their sum). Floors: the C++ benchmark's floor/* cases
(the same kernel through the bare driver: launch; stream-ordered alloc + launch + free; launch + synchronize),
run by this script from --cpp-bench (default: where benchmarks/device_run.sh builds it), median of 5 repetitions. Bandwidth: exp over
2^28 float32 (jitkernel vs a CuPy RawKernel with the same body) and the ensure_row_contiguous copy of a
transposed 16384 x 16384 float32 array (vs a device-to-device copy), CUDA-event timed, bytes read + written.
The targets table gives each ratio, its limit, and whether it is met. Writes bench_launch.md / .json to --out;
exits 1 only when a jitkernel variant fails.

    python3 benchmarks/python/bench_launch.py --out DIR [--quick] [--peers jitkernel,cupy,...] [--sizes 4096]
        [--cpp-bench PATH] [--no-bandwidth]

Grown from shared/peers.py (same structure: one function per peer, a common timing loop).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from _bench_common import Skip, cuda_core, environment, fmt, numpy_mismatch

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

BASELINES = ("cupy RawKernel, outputs given", "torch.exp, out= given")
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

def _torch_x(n):
    try:
        import torch
    except ImportError as e:
        raise Skip(f"torch not installed ({e})")
    if not torch.cuda.is_available():
        raise Skip("torch sees no CUDA device")
    g = torch.Generator(device="cuda").manual_seed(n)
    return torch, torch.randn(n, device="cuda", generator=g)


def _cupy_x(n):
    try:
        import cupy as cp
    except ImportError as e:
        raise Skip(f"cupy not installed ({e})")
    return cp, cp.random.RandomState(n).standard_normal(n, dtype=cp.float32)


def _jitkernel():
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
    jk = _jitkernel()
    ver = getattr(jk, "__version__", "?")
    k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
    geo = dict(grid=(n, 1, 1), threadgroup=(256, 1, 1))
    out = []

    def pair(label, x, z, sync):
        shapes, dtypes = [(n,)], [jk.float32]
        f = lambda: k(inputs=[x], output_shapes=shapes, output_dtypes=dtypes, **geo)
        check(f()[0], exp_of(x), f"jitkernel {label}")
        g = lambda: k(inputs=[x], outputs=[z], **geo)
        check(g()[0], exp_of(x), f"jitkernel {label} outputs=")
        return [variant(f"jitkernel, {label}, output allocated", f, sync, 0, ver),
                variant(f"jitkernel, {label}, outputs given", g, sync, 0, ver)]

    def args(label, x, z, sync):
        rows = []
        for count in ARG_COUNTS:
            kk, ins = sum_kernel(jk, count), [x] * count
            f = lambda kk=kk, ins=ins: kk(inputs=ins, outputs=[z], **geo)
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
        torch, x = _torch_x(n)
    except Skip as e:
        out.append(Skip(str(e), "jitkernel, torch"))
    else:  # on torch's current stream, the default one here
        z = torch.full_like(x, float("nan"))
        out += pair("torch", x, z, torch.cuda.synchronize)
        out += args("torch", x, z, torch.cuda.synchronize)
    try:
        cp, xc = _cupy_x(n)
    except Skip as e:
        out.append(Skip(str(e), "jitkernel, cupy"))
    else:  # on CuPy's current stream, the null stream here
        out += pair("cupy", xc, cp.full_like(xc, float("nan")), cp.cuda.Stream.null.synchronize)
    return out


def peer_cupy(n):
    cp, x = _cupy_x(n)
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
    torch, x = _torch_x(n)
    z = torch.empty_like(x)
    torch.exp(x, out=z)
    check(z, exp_of(x), "torch.exp")
    s, v = torch.cuda.synchronize, torch.__version__
    return [variant("torch.exp, out= given", lambda: torch.exp(x, out=z), s, 0, v, "a built-in op"),
            variant("torch.exp, output allocated", lambda: torch.exp(x), s, 0, v, "a built-in op")]


def peer_cudacore(n):
    cc, dev, s = cuda_core()
    cp, x = _cupy_x(n)  # buffers from CuPy, as in peers.py
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
    torch, x = _torch_x(n)

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


# --- floors, stages, bandwidth ----------------------------------------------------------------------------

DEFAULT_CPP_BENCH = os.path.join(os.environ.get("TMPDIR", "/tmp"), "jitkernel_cpp_bench", "benchmarks", "cpp",
                                 "jitkernel_bench")  # where benchmarks/device_run.sh's cpp step builds it


def cpp_cases(path, pattern):
    """{case: µs per operation} of the C++ benchmark's cases matching ``pattern`` (a prefix regex), run now with
    the NVRTC the Python package finds; raises Skip when the program is missing or fails."""
    if not path or not os.path.exists(path):
        raise Skip(f"no C++ benchmark at {path!r} (build it with -DJITKERNEL_BUILD_BENCHMARKS=ON, or --cpp-bench)")
    env = dict(os.environ)
    try:
        from jitkernel import _toolkit_search
        tk = _toolkit_search.search()
        if tk.nvrtc_library:
            env["JITKERNEL_NVRTC_PATH"] = tk.nvrtc_library
        if tk.include_dirs:
            env["JITKERNEL_INCLUDE_PATH"] = os.pathsep.join(tk.include_dirs)
    except Exception:  # the benchmark then uses its own defaults
        pass
    out, errors = None, []
    # Google Benchmark's flags first, then the built-in loop's (main_simple.cpp).
    gbench = [f"--benchmark_filter={pattern}", "--benchmark_min_time=0.2", "--benchmark_repetitions=5",
              "--benchmark_report_aggregates_only=true"]
    for flags in (gbench, [f"--filter={pattern.lstrip('^')}"]):
        r = subprocess.run([path, *flags], capture_output=True, text=True, timeout=120, env=env)
        if r.returncode == 0:
            out = r.stdout
            break
        errors.append((r.stderr or r.stdout).strip()[-300:])
    if out is None:
        raise Skip(f"{path} failed: " + " / ".join(errors))
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
    cases = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].startswith(pattern.lstrip("^")):
            continue
        try:
            value = float(parts[1])
        except ValueError:
            continue
        unit = parts[2] if len(parts) > 2 and parts[2] in scale else "us"
        name = parts[0].replace("/manual_time", "")
        # Google Benchmark's repetitions: keep the median of the 5 (its _mean/_stddev/_cv rows are dropped).
        if name.endswith(("_mean", "_stddev", "_cv")):
            continue
        cases[name.removesuffix("_median")] = value * scale[unit]
    return cases


def host_us(fn, iters, reps):
    """Median host µs per call of fn() with no synchronize (for steps that launch nothing)."""
    for _ in range(min(iters, 200)):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t) / iters * 1e6)
    return statistics.median(times)


def stages(n, iters, reps):
    """Where the host time of a jitkernel call goes, each step timed on its own (no launch where it says so):
    the whole call; the list-form entry `_call` (the same work minus the keyword parsing of the call slot);
    `_convert` (argument parsing, array import, stream: no launch)."""
    jk = _jitkernel()
    k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
    g, tg, shapes, dtypes = (n, 1, 1), (256, 1, 1), [(n,)], [jk.float32]
    res = {}
    rng = np.random.default_rng(n)
    xa = k(inputs=[rng.standard_normal(n).astype(np.float32)], output_shapes=shapes, output_dtypes=dtypes,
           grid=g, threadgroup=tg)[0]
    za = k(inputs=[xa], output_shapes=shapes, output_dtypes=dtypes, grid=g, threadgroup=tg)[0]
    cases = [("jk.Array", xa, za, jk.synchronize)]
    try:
        torch, x = _torch_x(n)
        cases.append(("torch", x, torch.empty_like(x), torch.cuda.synchronize))
    except Skip:
        pass
    for label, x, z, sync in cases:
        for given in (True, False):
            outs = [z] if given else None
            key = f"{label}, {'outputs given' if given else 'output allocated'}"
            call = lambda: k(inputs=[x], output_shapes=shapes, output_dtypes=dtypes, grid=g, threadgroup=tg,
                             outputs=outs)
            entry = lambda: k._call([x], shapes, dtypes, g, tg, None, None, None, outs, False)
            conv = lambda: k._convert([x], shapes, dtypes, g, tg, None, None, None, outs)
            res[key] = {
                "call_us": measure(variant("", call, sync, None, ""), iters, reps, None)["wall_us"],
                "entry_call_us": measure(variant("", entry, sync, None, ""), iters, reps, None)["wall_us"],
                "convert_us": host_us(conv, iters, reps),
            }
    if len(cases) > 1:
        x = cases[1][1]
        res["torch attribute reads (shape, stride(), dtype, data_ptr(), is_cuda, get_device(), is_neg())"] = {
            "host_us": host_us(lambda: (x.shape, x.stride(), x.dtype, x.data_ptr(), x.is_cuda, x.get_device(),
                                        x.is_neg()), iters, reps)}
    return res


def event_ms(torch, fn, reps):
    """Median milliseconds of fn() on torch's current stream, CUDA-event timed, after one warm-up call."""
    fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ms.append(e0.elapsed_time(e1))
    return statistics.median(ms)


def bandwidth(quick):
    """GB/s (bytes read + written) of exp over 2^28 float32 (jitkernel, and a CuPy RawKernel with the same body,
    on the same buffers), of a device-to-device copy of those bytes, and of jitkernel's ensure_row_contiguous copy
    of a transposed square float32 array (its kernel reads one element; the copy dominates) beside torch's
    .contiguous() and the device-to-device copy."""
    jk = _jitkernel()
    torch, _ = _torch_x(1)
    cp, _ = _cupy_x(1)
    m = 1 << (24 if quick else 28)
    side = 4096 if quick else 16384
    reps = 5 if quick else 20
    x = torch.randn(m, device="cuda")
    y = torch.empty_like(x)
    k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
    jk_exp = lambda: k(inputs=[x], outputs=[y], grid=(m, 1, 1), threadgroup=(256, 1, 1))
    jk_exp()
    torch.cuda.synchronize()
    check(y[:4096], exp_of(x[:4096]), "jitkernel exp 2^28")
    raw = cp.RawKernel(RAW_EXP, "raw_exp")
    xc, yc = cp.from_dlpack(x), cp.from_dlpack(y)  # the same memory; CuPy's null stream is torch's default
    cp_exp = lambda: raw(((m + 255) // 256,), (256,), (xc, yc, np.int64(m)))
    gbs = lambda nbytes, ms: nbytes / ms / 1e6
    res = {"exp_elements": m, "exp_jitkernel_GBps": gbs(8 * m, event_ms(torch, jk_exp, reps)),
           "exp_cupy_rawkernel_GBps": gbs(8 * m, event_ms(torch, cp_exp, reps)),
           "d2d_copy_GBps": gbs(8 * m, event_ms(torch, lambda: y.copy_(x), reps))}
    a = torch.randn(side, side, device="cuda")
    at = a.t()
    probe = jk.cuda_kernel(name="bench_first", input_names=["inp"], output_names=["out"],
                           source="if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = inp[1];")
    o = torch.empty(1, device="cuda")
    contig = lambda: probe(inputs=[at], outputs=[o], grid=(1, 1, 1), threadgroup=(1, 1, 1))
    contig()
    torch.cuda.synchronize()
    if float(o[0]) != float(a[1, 0]):
        raise AssertionError("ensure_row_contiguous of a transposed array: wrong element")
    nbytes = 8 * side * side
    res.update({"transpose_side": side,
                "contiguous_copy_jitkernel_GBps": gbs(nbytes, event_ms(torch, contig, reps)),
                "contiguous_copy_torch_GBps": gbs(nbytes, event_ms(torch, lambda: at.contiguous(), reps))})
    return res


# --- targets ---------------------------------------------------------------------------------------------

def targets(res, n):
    """Issue 6's targets as rows: (target, value, limit, met, note). Ratios use numbers from this run only."""
    rows = res["launch"].get(str(n), {})
    floors = res.get("cpp", {})
    wall = lambda name: rows.get(name, {}).get("wall_us")
    rt = lambda name: rows.get(name, {}).get("rt_us")
    out = []

    def ratio(target, num, den, limit, den_name, higher_is_better=False):
        if num is None or den is None:
            out.append({"target": target, "value": None, "limit": limit, "met": None,
                        "note": f"not measured ({den_name} missing)" if den is None else "not measured"})
            return
        value = num / den
        met = value >= limit if higher_is_better else value <= limit
        out.append({"target": target, "value": value, "limit": limit, "met": met,
                    "note": f"{fmt(num)} / {fmt(den)} ({den_name})"})

    f_launch = floors.get("floor/raw_exp4096_launch")
    f_alloc = floors.get("floor/raw_exp4096_alloc_launch_free")
    f_sync = floors.get("floor/raw_exp4096_launch_sync")
    for label in ("jk.Array", "torch"):
        ratio(f"{label}: output allocated ≤ 1.3 × raw alloc+launch+free", wall(f"jitkernel, {label}, output allocated"),
              f_alloc, 1.3, "C++ floor/raw_exp4096_alloc_launch_free")
        ratio(f"{label}: outputs given ≤ 1.2 × raw launch", wall(f"jitkernel, {label}, outputs given"), f_launch, 1.2,
              "C++ floor/raw_exp4096_launch")
        ratio(f"{label}: call + synchronize ≤ 1.1 × raw", rt(f"jitkernel, {label}, outputs given"), f_sync, 1.1,
              "C++ floor/raw_exp4096_launch_sync")
    ratio("torch in/out, outputs given ≤ torch.exp(x, out=)", wall("jitkernel, torch, outputs given"),
          wall("torch.exp, out= given"), 1.0, "torch.exp, out= given")
    ratio("torch in/out, output allocated ≤ torch.exp(x)", wall("jitkernel, torch, output allocated"),
          wall("torch.exp, output allocated"), 1.0, "torch.exp, output allocated")
    for label in ("jk.Array", "torch"):
        w = [wall(f"jitkernel, {label}, {c} inputs, outputs given") for c in ARG_COUNTS]
        if None in w:
            out.append({"target": f"{label}: each extra array input ≤ 0.15 µs", "value": None, "limit": 0.15,
                        "met": None, "note": "not measured"})
        else:
            slope = (w[-1] - w[0]) / (ARG_COUNTS[-1] - ARG_COUNTS[0])
            out.append({"target": f"{label}: each extra array input ≤ 0.15 µs", "value": slope, "limit": 0.15,
                        "met": slope <= 0.15, "note": f"({fmt(w[-1])} − {fmt(w[0])}) / 15 µs"})
    bw = res.get("bandwidth", {})
    ratio("exp over 2^28 floats ≥ 0.98 × CuPy RawKernel (GB/s)", bw.get("exp_jitkernel_GBps"),
          bw.get("exp_cupy_rawkernel_GBps"), 0.98, "CuPy RawKernel", higher_is_better=True)
    ratio("ensure_row_contiguous of a transposed array ≥ 0.8 × D2D copy (GB/s)",
          bw.get("contiguous_copy_jitkernel_GBps"), bw.get("d2d_copy_GBps"), 0.8, "device-to-device copy",
          higher_is_better=True)
    return out


# --- report -----------------------------------------------------------------------------------------------

def markdown(res):
    env = res["environment"]
    lines = ["# Launch overhead: jitkernel and peers",
             "",
             f"{env.get('device', 'no CUDA device')} · commit {env.get('commit')} · {env.get('date')} · "
             f"Python {env.get('python')} · {res['config']['iters']} calls per block, median of "
             f"{res['config']['reps']} blocks",
             "",
             "Kernel: out = exp(inp), float32. wall = host time per call (the issue cost), one synchronize per "
             "block; event = CUDA events on the launch stream; rt = call + synchronize each time. Ratios are wall "
             "over the baseline's wall at the same size, measured in this run.",
             ""]
    if res.get("targets"):
        lines += ["## Targets (issue 6; ratios from this run)", "",
                  "| target | value | limit | met | how |", "|---|---:|---:|---|---|"]
        for t in res["targets"]:
            met = "–" if t["met"] is None else ("yes" if t["met"] else "**no**")
            if t["met"] is False and t["value"] is not None:
                over = t["value"] / t["limit"]
                met += f" ({fmt((over - 1) * 100, 0)}% over)" if over > 1 else f" ({fmt((1 - over) * 100, 0)}% short)"
            lines.append(f"| {t['target']} | {fmt(t['value'])} | {t['limit']} | {met} | {t['note']} |")
        lines.append("")
    if res.get("cpp"):
        lines += ["## C++ floors (benchmarks/cpp, same run)", "", "| case | µs per operation |", "|---|---:|"]
        lines += [f"| {name} | {fmt(us)} |" for name, us in res["cpp"].items()]
        lines.append("")
    elif res.get("cpp_skipped"):
        lines += [f"C++ floors: skipped: {res['cpp_skipped']}", ""]
    notes = {}
    for n, rows in res["launch"].items():
        base = {b: rows.get(b, {}).get("wall_us") for b in BASELINES}
        lines += [f"## n = {n}", "",
                  "| variant | wall µs/call | event µs/call | rt µs | × CuPy RawKernel | × torch.exp out= | version |",
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
    if res.get("stages"):
        lines += ["## Where a jitkernel call's host time goes", "",
                  "call = the whole call with one synchronize per block; `_call` = the list-form entry the call "
                  "slot forwards to (the difference is the keyword parsing); `_convert` = argument parsing, array "
                  "import and stream lookup, no launch.", "",
                  "| call | call µs | `_call` µs | `_convert` µs (no launch) |", "|---|---:|---:|---:|"]
        for name, st in res["stages"].items():
            if "host_us" in st:
                lines.append(f"| {name} | {fmt(st['host_us'])} | | |")
            else:
                lines.append(f"| {name} | {fmt(st['call_us'])} | {fmt(st['entry_call_us'])} | {fmt(st['convert_us'])} |")
        lines.append("")
    bw = res.get("bandwidth")
    if bw:
        lines += ["## Bandwidth (GB/s, bytes read + written, CUDA events, median)", ""]
        if "skipped" in bw or "error" in bw:
            lines += [f"{bw.get('skipped') or bw.get('error')}", ""]
        else:
            lines += ["| what | GB/s |", "|---|---:|"]
            lines += [f"| {k_} | {fmt(v, 0)} |" for k_, v in bw.items() if k_.endswith("GBps")]
            lines += ["", f"exp over {bw['exp_elements']} float32; transposed array {bw['transpose_side']}² float32.",
                      ""]
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
    ap.add_argument("--sizes", default="4096", help="comma-separated element counts")
    ap.add_argument("--cpp-bench", default=DEFAULT_CPP_BENCH, help="the C++ benchmark program (floors)")
    ap.add_argument("--no-bandwidth", action="store_true", help="skip the 2^28-element bandwidth runs")
    ap.add_argument("--iters", type=int, default=5000, help="calls per timed block")
    ap.add_argument("--reps", type=int, default=5, help="timed blocks per measurement")
    ap.add_argument("--quick", action="store_true", help="500 calls x 3 blocks (smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.iters, args.reps = 500, 3
    peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    os.makedirs(args.out, exist_ok=True)

    res = {"environment": environment(), "launch": {}, "skipped": [],
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
    if "jitkernel" in peers:
        try:
            res["stages"] = stages(sizes[0], args.iters, args.reps)
        except Skip as e:
            res["stages_skipped"] = str(e)
        except Exception as e:
            res["stages_error"] = f"{type(e).__name__}: {e}"
            failed = True
        save(res, args.out)
        try:
            res["cpp"] = {**cpp_cases(args.cpp_bench, "^floor/"), **cpp_cases(args.cpp_bench, "^launch/")}
        except Skip as e:
            res["cpp_skipped"] = str(e)
        except (OSError, subprocess.SubprocessError) as e:
            res["cpp_skipped"] = f"{type(e).__name__}: {e}"
        if not args.no_bandwidth:
            try:
                res["bandwidth"] = bandwidth(args.quick)
            except Skip as e:
                res["bandwidth"] = {"skipped": str(e)}
            except Exception as e:
                res["bandwidth"] = {"error": f"{type(e).__name__}: {e}"}
                failed = True
        res["targets"] = targets(res, sizes[0])
    md = save(res, args.out)
    print()
    print(md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
