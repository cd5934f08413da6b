"""What bench_launch.py measures besides the variants: the C++ benchmark's floors (run as a program), where the host
time of a jitkernel call goes (stages), and the bandwidth of jitkernel's kernels and copies.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import time

import numpy as np

from _bench_common import Skip
from _launch_peers import JK_EXP, RAW_EXP, check, cupy_input, exp_of, import_jitkernel, measure, torch_input, variant

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
    jk = import_jitkernel()
    k = jk.cuda_kernel(name="bench_exp", input_names=["inp"], output_names=["out"], source=JK_EXP)
    g, tg, shapes, dtypes = (n, 1, 1), (256, 1, 1), [(n,)], [jk.float32]
    res = {}
    rng = np.random.default_rng(n)
    xa = k(inputs=[rng.standard_normal(n).astype(np.float32)], output_shapes=shapes, output_dtypes=dtypes,
           grid=g, threadgroup=tg)[0]
    za = k(inputs=[xa], output_shapes=shapes, output_dtypes=dtypes, grid=g, threadgroup=tg)[0]
    cases = [("jk.Array", xa, za, jk.synchronize)]
    try:
        torch, x = torch_input(n)
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
    jk = import_jitkernel()
    torch, _ = torch_input(1)
    cp, _ = cupy_input(1)
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
