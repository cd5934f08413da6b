"""Per-call launch overhead and first-call (compile) time of jitkernel beside other ways to run a CUDA kernel.

Every variant runs the same tiny kernel, c = a + b on float32 vectors of n elements (n = 1 and 1M by default),
on the legacy default stream where the library lets us choose. Each variant's output is checked against NumPy
once before it is timed. For each variant and size:
  wall_us   median over --reps blocks of --iters calls, one synchronize per block: host time per call
  event_us  the same blocks timed with CUDA events on the launch stream: device-timeline time per call
  rt_us     call + synchronize each time (latency), median over blocks
  x_<base>  wall_us over the baseline's wall_us at the same size (CuPy RawKernel, cuda.core launch)
First calls run in a fresh subprocess per library, with empty compile caches (CUPY_CACHE_DIR, TRITON_CACHE_DIR,
NUMBA_CACHE_DIR, CUDA_CACHE_PATH, JITKERNEL_CACHE_DIR in a new temporary folder); the CUDA context is created
before the clock starts. Then a second, different kernel in the same process, and a second process sharing the
now-filled cache folder (disk-warm).
Libraries that are not installed are skipped with a note. Writes bench_launch.md and bench_launch.json to --out.

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
BASELINES = ("cupy RawKernel, outputs given", "cuda.core launch, outputs given")


class Skip(Exception):
    """A peer that cannot run here (not installed, no GPU support): reported, never fatal."""


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
    event = None
    if v.get("stream") is not None and timer.kind:
        event = [timer.block_ms(v["stream"], block) * 1e3 / iters for _ in range(reps)]
    rt_iters = max(iters // 5, 10)
    rt = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(rt_iters):
            fn()
            sync()
        rt.append((time.perf_counter() - t) / rt_iters * 1e6)
    med = lambda xs: statistics.median(xs) if xs else None
    return {"wall_us": med(wall), "event_us": med(event), "rt_us": med(rt),
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


def variant(name, fn, sync, stream, version, note=""):
    return {"name": name, "fn": fn, "sync": sync, "stream": stream, "version": version, "note": note}


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
    try:
        torch, x, y = _torch_inputs(n)
    except Skip as e:
        out.append(Skip(f"jitkernel with torch: {e}"))
    else:
        z = torch.empty_like(x)
        shapes, dtypes = [x.shape], [x.dtype]
        f = lambda: k(inputs=[x, y, n], output_shapes=shapes, output_dtypes=dtypes, **geo)
        check(f()[0], x, y, "jitkernel torch")
        out.append(variant("jitkernel, torch in/out", f, torch.cuda.synchronize, 0, ver))
        g = lambda: k(inputs=[x, y, n], output_shapes=shapes, output_dtypes=dtypes, outputs=[z], **geo)
        z.fill_(float("nan"))
        check(g()[0], x, y, "jitkernel torch outputs=")
        out.append(variant("jitkernel, torch, outputs given", g, torch.cuda.synchronize, 0, ver))
    try:
        cp, xc, yc = _cupy_inputs(n)
    except Skip as e:
        out.append(Skip(f"jitkernel with cupy: {e}"))
    else:
        shapes, dtypes = [xc.shape], [xc.dtype]
        f = lambda: k(inputs=[xc, yc, n], output_shapes=shapes, output_dtypes=dtypes, **geo)
        check(f()[0], xc, yc, "jitkernel cupy")
        out.append(variant("jitkernel, cupy in/out", f, cp.cuda.Stream.null.synchronize, 0, ver))
    # jk.Array in and out: the inputs are kernel outputs made from NumPy arrays (a + 0).
    rng = np.random.default_rng(n)
    xn, yn = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    zeros = np.zeros(n, np.float32)
    call = lambda p, q: k(inputs=[p, q, n], output_shapes=[(n,)], output_dtypes=[np.float32], **geo)[0]
    xa, ya = call(xn, zeros), call(yn, zeros)
    f = lambda: call(xa, ya)
    check(f(), xn, yn, "jitkernel jk.Array")
    out.append(variant("jitkernel, jk.Array in/out", f, jk.synchronize, 0, ver))
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
    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:
        try:
            from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
        except ImportError as e:
            raise Skip(f"cuda.core not installed ({e})")
    return Device, LaunchConfig, Program, ProgramOptions, launch


def peer_cudacore(n):
    Device, LaunchConfig, Program, ProgramOptions, launch = _cuda_core()
    import cuda.core
    cp, x, y = _cupy_inputs(n)  # buffers from CuPy, as in peers.py
    dev = Device()
    dev.set_current()
    s = getattr(dev, "default_stream", None) or dev.create_stream()
    ker = Program(RAW_SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}")).compile(
        "cubin").get_kernel("raw_add")
    z = cp.empty_like(x)
    z.fill(float("nan"))
    cp.cuda.Device().synchronize()
    cfg = LaunchConfig(grid=(n + 255) // 256, block=min(n, 256))
    args = (np.uint64(x.data.ptr), np.uint64(y.data.ptr), np.int32(n), np.uint64(z.data.ptr))
    f = lambda: launch(s, cfg, ker, *args)
    f()
    s.sync()
    check(z, x, y, "cuda.core launch")
    try:
        handle = int(s.handle)
    except (AttributeError, TypeError, ValueError):
        handle = None  # no event timing for this variant
    return [variant("cuda.core launch, outputs given", f, s.sync, handle,
                    getattr(cuda.core, "__version__", "?"))]


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


def peer_numba(n):
    try:
        import numba
        from numba import cuda
    except ImportError as e:
        raise Skip(f"numba not installed ({e})")
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
    f()
    cuda.synchronize()
    check(z.copy_to_host(), xh, yh, "numba")
    return [variant("numba.cuda, outputs given", f, cuda.synchronize, 0, numba.__version__)]


def peer_mlx(n):
    try:
        import mlx.core as mx
    except ImportError as e:
        raise Skip(f"mlx not installed ({e})")
    if not hasattr(mx.fast, "cuda_kernel"):
        raise Skip("this mlx build has no cuda_kernel")
    k = mx.fast.cuda_kernel(name="bench_add", input_names=["a", "b", "n"], output_names=["c"], source=JK_BODY)
    a, b = mx.random.normal(shape=(n,)), mx.random.normal(shape=(n,))
    mx.eval(a, b)
    f = lambda: k(inputs=[a, b, n], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
                  output_dtypes=[a.dtype])[0]
    o = f()
    mx.eval(o)
    check(np.array(o), np.array(a), np.array(b), "mlx")
    pending = []

    def call():  # MLX is lazy: keep the outputs and evaluate them at the synchronize
        pending.append(f())

    def sync():
        mx.eval(pending)
        pending.clear()
        mx.synchronize()
    return [variant("mlx cuda_kernel, output allocated", call, sync, None, mx.__version__,
                    "lazy graph: evaluated at the synchronize; no event timing")]


PEERS = {"jitkernel": peer_jitkernel, "cupy": peer_cupy, "torch": peer_torch, "cudacore": peer_cudacore,
         "triton": peer_triton, "numba": peer_numba, "mlx": peer_mlx}


# --- first calls in fresh processes -------------------------------------------------------------------

COLD_PRELUDE = ("import json, sys, time\nN = 4096\nRAW_SRC = %r\nJK_BODY = %r\n"
                "SUB = lambda src: src.replace('a[i] + b[i]', 'a[i] - b[i]')  # a different kernel\n"
                % (RAW_SRC, JK_BODY))
COLD = {
    "jitkernel": """
import torch, jitkernel as jk
x = torch.randn(N, device="cuda"); y = torch.randn_like(x); torch.cuda.synchronize()
def first(name, body):
    t = time.perf_counter()
    k = jk.cuda_kernel(name=name, input_names=["a", "b", "n"], output_names=["c"], source=body)
    c = k(inputs=[x, y, N], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(N, 1, 1),
          threadgroup=(256, 1, 1))[0]
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3
r = {"first_call_ms": first("bench_add", JK_BODY), "second_kernel_ms": first("bench_sub", SUB(JK_BODY)),
     "note": "no on-disk cache yet: disk-warm = cold"}
""",
    "cupy": """
import numpy as np, cupy as cp
x = cp.ones(N, dtype=cp.float32); z = cp.empty_like(x); cp.cuda.Device().synchronize()
def first(src):
    t = time.perf_counter()
    k = cp.RawKernel(src, "raw_add"); k((N // 256,), (256,), (x, x, np.int32(N), z)); cp.cuda.Device().synchronize()
    return (time.perf_counter() - t) * 1e3
r = {"first_call_ms": first(RAW_SRC), "second_kernel_ms": first(SUB(RAW_SRC))}
""",
    "cudacore": """
import numpy as np, cupy as cp
try:
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
except ImportError:
    from cuda.core.experimental import Device, LaunchConfig, Program, ProgramOptions, launch
dev = Device(); dev.set_current(); s = getattr(dev, "default_stream", None) or dev.create_stream()
x = cp.ones(N, dtype=cp.float32); z = cp.empty_like(x); cp.cuda.Device().synchronize()
def first(src):
    t = time.perf_counter()
    ker = Program(src, code_type="c++", options=ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin").get_kernel("raw_add")
    launch(s, LaunchConfig(grid=N // 256, block=256), ker, np.uint64(x.data.ptr), np.uint64(x.data.ptr), np.int32(N), np.uint64(z.data.ptr))
    s.sync()
    return (time.perf_counter() - t) * 1e3
r = {"first_call_ms": first(RAW_SRC), "second_kernel_ms": first(SUB(RAW_SRC))}
""",
    "triton": """
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
def first(kern):
    t = time.perf_counter()
    kern[(N // 1024,)](x, x, z, N, BLOCK=1024); torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3
r = {"first_call_ms": first(tadd), "second_kernel_ms": first(tsub)}
""",
    "numba": """
import numpy as np
from numba import cuda
x = cuda.to_device(np.ones(N, np.float32)); z = cuda.device_array(N, np.float32); cuda.synchronize()
@cuda.jit
def nadd(a, b, c):
    i = cuda.grid(1)
    if i < c.size: c[i] = a[i] + b[i]
@cuda.jit
def nsub(a, b, c):
    i = cuda.grid(1)
    if i < c.size: c[i] = a[i] - b[i]
def first(kern):
    t = time.perf_counter()
    kern[N // 256, 256](x, x, z); cuda.synchronize()
    return (time.perf_counter() - t) * 1e3
r = {"first_call_ms": first(nadd), "second_kernel_ms": first(nsub)}
""",
    "torch": """
import torch
x = torch.randn(N, device="cuda"); z = torch.empty_like(x); torch.cuda.synchronize()
t = time.perf_counter(); torch.add(x, x, out=z); torch.cuda.synchronize()
r = {"first_call_ms": (time.perf_counter() - t) * 1e3, "note": "no compile: first use of a precompiled kernel"}
""",
    "mlx": """
import mlx.core as mx
a = mx.ones((N,)); mx.eval(a)
def first(name, body):
    t = time.perf_counter()
    k = mx.fast.cuda_kernel(name=name, input_names=["a", "b", "n"], output_names=["c"], source=body)
    mx.eval(k(inputs=[a, a, N], grid=(N, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape], output_dtypes=[a.dtype])[0])
    return (time.perf_counter() - t) * 1e3
r = {"first_call_ms": first("bench_add", JK_BODY), "second_kernel_ms": first("bench_sub", SUB(JK_BODY))}
""",
}
COLD_EPILOGUE = "\nprint('RESULT ' + json.dumps(r))\n"
COLD_NEEDS = {"jitkernel": ("jitkernel", "torch"), "cupy": ("cupy",), "cudacore": ("cuda.core", "cupy"),
              "triton": ("triton", "torch"), "numba": ("numba.cuda",), "torch": ("torch",), "mlx": ("mlx.core",)}


def cold_start(peer, timeout):
    """First call in a fresh process with empty caches, then again with the caches the first run filled."""
    import importlib.util
    for mod in COLD_NEEDS[peer]:
        try:
            found = importlib.util.find_spec(mod) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return {"skipped": f"{mod} not installed"}
    d = tempfile.mkdtemp(prefix=f"jkbench_{peer}_")
    env = dict(os.environ, CUPY_CACHE_DIR=os.path.join(d, "cupy"), TRITON_CACHE_DIR=os.path.join(d, "triton"),
               NUMBA_CACHE_DIR=os.path.join(d, "numba"), CUDA_CACHE_PATH=os.path.join(d, "nv"),
               JITKERNEL_CACHE_DIR=os.path.join(d, "jitkernel"), XDG_CACHE_HOME=os.path.join(d, "xdg"))
    code = COLD_PRELUDE + COLD[peer] + COLD_EPILOGUE
    out = {}
    for label in ("cold", "diskwarm"):
        try:
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            out[label] = {"error": f"timed out after {timeout} s"}
            continue
        lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        if p.returncode == 0 and lines:
            out[label] = json.loads(lines[-1][len("RESULT "):])
        else:
            out[label] = {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:300]}
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
    for n, rows in res["launch"].items():
        base = {b: rows.get(b, {}).get("wall_us") for b in BASELINES}
        lines += [f"## n = {n}", "",
                  "| variant | wall µs/call | event µs/call | rt µs | × CuPy RawKernel | × cuda.core | version |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for name, r in rows.items():
            if "error" in r:
                lines.append(f"| {name} | error: {r['error'][:120]} | | | | | |")
                continue
            ratios = [fmt(r["wall_us"] / b) if b else "–" for b in base.values()]
            lines.append(f"| {name} | {fmt(r['wall_us'])} | {fmt(r['event_us'])} | {fmt(r['rt_us'])} | "
                         f"{ratios[0]} | {ratios[1]} | {r.get('version', '')} |")
        lines.append("")
    if res.get("cold"):
        lines += ["## First call (compile + load + launch + synchronize), fresh process", "",
                  "| library | cold ms | second kernel, same process ms | disk-warm process ms | note |",
                  "|---|---:|---:|---:|---|"]
        for peer, r in res["cold"].items():
            if "skipped" in r:
                lines.append(f"| {peer} | skipped: {r['skipped']} | | | |")
                continue
            c, w = r.get("cold", {}), r.get("diskwarm", {})
            note = c.get("note") or c.get("error") or w.get("error") or ""
            lines.append(f"| {peer} | {fmt(c.get('first_call_ms'), 1)} | {fmt(c.get('second_kernel_ms'), 1)} | "
                         f"{fmt(w.get('first_call_ms'), 1)} | {note[:160]} |")
        lines.append("")
    if res["skipped"]:
        lines += ["Skipped: " + "; ".join(res["skipped"]), ""]
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
                if n == sizes[0]:
                    res["skipped"].append(f"{peer}: {e}")
                continue
            except Exception as e:  # a broken peer is reported in the table; the others still run
                rows[f"{peer} (setup)"] = {"error": f"{type(e).__name__}: {e}"}
                failed |= peer == "jitkernel"
                continue
            for v in variants:
                if isinstance(v, Skip):
                    if n == sizes[0]:
                        res["skipped"].append(str(v))
                    continue
                try:
                    r = measure(v, args.iters, args.reps, timer)
                    r.update(version=v["version"], note=v["note"])
                except Exception as e:
                    r = {"error": f"{type(e).__name__}: {e}"}
                    failed |= peer == "jitkernel"
                rows[v["name"]] = r
                print(f"n={n:<8} {v['name']:<45} " + (
                    f"wall {fmt(r['wall_us'])} µs  event {fmt(r['event_us'])} µs  rt {fmt(r['rt_us'])} µs"
                    if "error" not in r else r["error"]), flush=True)
            save(res, args.out)
    if not args.no_cold:
        for peer in peers:
            if peer in COLD:
                res["cold"][peer] = cold_start(peer, args.cold_timeout)
                print(f"first call {peer}: {json.dumps(res['cold'][peer])}", flush=True)
                save(res, args.out)
    md = save(res, args.out)
    print()
    print(md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
