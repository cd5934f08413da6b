"""Timing the candidates of an autotuned call: compile them all (in parallel: NVRTC runs with the GIL released),
then time each on the GPU with CUDA events, in interleaved rounds, on scratch arrays.

What a candidate may touch: outputs the caller gave (``outputs=``) are never written by a candidate, which writes
a scratch copy instead (so the caller's outputs are written once, by the chosen configuration's final run); inputs
named in ``restore_inputs`` are copied too, and candidates run on the copies (the caller's arrays keep their
values). Outputs the kernel allocates are new arrays on every run anyway. JAX arrays are immutable: nothing to copy.

Each timed batch is queued behind a short wait kernel, so the host enqueues the whole batch while the GPU is busy
and the events measure GPU time, not Python's launch overhead. Each candidate's time is the median over rounds of
its batch's mean. A candidate that fails to compile or launch (a CompileError, an ArgumentError such as a
threadgroup the GPU cannot run, a CudaError) is skipped with its message; a kernel fault is raised (the context is
lost). ``measure`` replaces all of this in tests (``autotune._set_measure``).
"""
from __future__ import annotations

import sys
import threading

from .. import _core
from .._errors import JitKernelError, KernelFaultError
from .._kernels.cuda_kernel import cuda_kernel
from .placeholders import ShapeDtype

ROUNDS = 3
TARGET_MS = 2.0  # GPU time of one candidate's batch per round
MIN_REPS, MAX_REPS = 3, 200
_WAIT_NS_PER_REP = 20_000  # host time to enqueue one launch, with room to spare
_COMPILE_THREADS = 8

_helpers: dict = {}  # the two helper kernels below, made on first use (not at import)


def _helper(name: str):
    """``wait``: spins on the GPU for ``ns`` nanoseconds; ``copy``: copies ``n`` elements ``src`` -> ``dst``;
    ``zeros``: an output of zeros (``init_value``)."""
    kernel = _helpers.get(name)
    if kernel is None:
        if name == "zeros":  # the output is filled by init_value; the body writes nothing
            kernel = cuda_kernel(name="jk_tune_zeros", input_names=["n"], output_names=["out"], source="(void)n;")
        elif name == "wait":
            kernel = cuda_kernel(name="jk_tune_wait", input_names=["ns"], output_names=["done"], source="""
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < (unsigned long long)ns[0]);
    done[0] = 1;
""")
        else:
            kernel = cuda_kernel(name="jk_tune_copy", input_names=["src", "n"], output_names=["dst"],
                                 source="size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; "
                                        "if (i < (size_t)n[0]) dst[i] = src[i];")
        _helpers[name] = kernel
    return kernel


def stream_handle(stream, inputs) -> int:
    """The int handle of the stream a call runs on: ``stream=`` (an int, a torch / CuPy stream, anything with
    ``__cuda_stream__``), else the current stream of the inputs' framework (torch, CuPy), else 0."""
    if stream is None:
        torch, cupy = sys.modules.get("torch"), sys.modules.get("cupy")
        for x in inputs:
            if torch is not None and isinstance(x, torch.Tensor) and x.is_cuda:
                return torch.cuda.current_stream(x.device).cuda_stream
            if cupy is not None and isinstance(x, cupy.ndarray):
                return cupy.cuda.get_current_stream().ptr
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr", "handle"):
        if isinstance(getattr(stream, attribute, None), int):
            return getattr(stream, attribute)
    return 0


def clone(x):
    """A new array with ``x``'s contents, in ``x``'s framework (JAX arrays: ``x`` itself, they are immutable)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x.clone()
    if type(x).__module__.startswith(("jax", "jaxlib")):
        return x
    if isinstance(x, _core.Array):
        return _device_copy(x)
    return x.copy()  # NumPy, CuPy


def _device_copy(x):
    """A ``jk.Array`` copy of ``x`` (a ``jk.Array`` or a NumPy array, uploaded by the call)."""
    n = 1
    for d in x.shape:
        n *= d
    (copy,) = _helper("copy")(inputs=[x, n], output_shapes=[tuple(x.shape)], output_dtypes=[x.dtype],
                              grid=(max(n, 1), 1, 1), threadgroup=(256, 1, 1), template=None)
    return copy


def zeros(shape, dtype):
    """A ``jk.Array`` of zeros (on the default device)."""
    (out,) = _helper("zeros")(inputs=[0], output_shapes=[tuple(shape)], output_dtypes=[dtype], grid=(1, 1, 1),
                              threadgroup=(1, 1, 1), init_value=0)
    return out


def on_device(inputs) -> list:
    """The inputs of a precompile session's tuning, on the GPU: a ``ShapeDtype`` or a placeholder (a NumPy array
    whose elements are all one element, ``placeholders.placeholder``) becomes a ``jk.Array`` of zeros, another NumPy
    array a ``jk.Array`` copy of it (uploaded once, not on every timed run); device arrays and scalars stay."""
    np = sys.modules.get("numpy")
    out = []
    for x in inputs:
        if isinstance(x, ShapeDtype) or (np is not None and isinstance(x, np.ndarray) and x.ndim
                                                and not any(x.strides)):
            out.append(zeros(x.shape, x.dtype))
        elif np is not None and isinstance(x, np.ndarray) and x.ndim:
            out.append(_device_copy(x))
        else:
            out.append(x)
    return out


class Candidates:
    """The runs of one tuning: ``calls[i]`` launches candidate ``i`` on the scratch arrays (keyword arguments of
    the kernel call) and ``compile_args[i]`` compiles and loads it (``kernel.attributes`` keywords)."""

    def __init__(self, kernel, calls: list, compile_args: list, device: int, stream: int):
        self.kernel, self.calls, self.compile_args = kernel, calls, compile_args
        self.device, self.stream = device, stream


def compile_all(c: Candidates) -> list:
    """Compiles and loads every candidate, in parallel threads (NVRTC runs with the GIL released; plain threads:
    concurrent.futures would import logging into every ``import jitkernel``); returns each one's error message
    (None: ready). A kernel fault is raised."""
    results: list = [None] * len(c.compile_args)
    todo = list(range(len(c.compile_args)))
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop()
            try:
                c.kernel.attributes(**c.compile_args[i])
            except JitKernelError as e:
                results[i] = e

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(_COMPILE_THREADS, len(todo)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for error in results:
        if isinstance(error, KernelFaultError):
            raise error
    return [None if e is None else f"{type(e).__name__}: {e}" for e in results]


def _median(values: list) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _batch(c: Candidates, timer, i: int, reps: int) -> float:
    """Mean GPU milliseconds of ``reps`` back-to-back runs of candidate ``i``, queued behind a wait kernel."""
    _helper("wait")(inputs=[min(reps * _WAIT_NS_PER_REP, 50_000_000)], output_shapes=[(1,)], output_dtypes=["int32"],
          grid=(1, 1, 1), threadgroup=(1, 1, 1), stream=c.stream)
    call = c.calls[i]
    timer.start(c.stream)
    for _ in range(reps):
        c.kernel(**call)
    timer.stop(c.stream)
    return timer.elapsed_ms() / reps


def _launch_errors(c: Candidates, errors: list, warmup: int) -> None:
    """Runs each ready candidate ``1 + warmup`` times; a launch that fails records the candidate's error."""
    for i, call in enumerate(c.calls):
        if errors[i] is not None:
            continue
        try:
            for _ in range(1 + warmup):
                c.kernel(**call)
            _core.synchronize(c.device)
        except KernelFaultError:
            raise
        except JitKernelError as e:
            errors[i] = f"{type(e).__name__}: {e}"


def _stage(c: Candidates) -> None:
    """Candidates run on GPU copies of the NumPy arrays among their inputs and outputs, uploaded once: a NumPy
    argument would be copied to and from the GPU on every timed run, and those host-bound copies would hide the
    kernels' differences. A NumPy array that is not C-contiguous stays (its copy would have another layout, so
    another kernel); the caller's arrays are never among these (the final run uses them)."""
    np = sys.modules.get("numpy")
    if np is None:
        return
    copies: dict = {}

    def staged(x):
        if not (isinstance(x, np.ndarray) and x.ndim > 0 and x.flags.c_contiguous):
            return x
        if id(x) not in copies:
            copies[id(x)] = (x, _device_copy(x))  # x kept alive: its id stays its own
        return copies[id(x)][1]

    for args in (*c.calls, *c.compile_args):
        for name in ("inputs", "outputs"):
            if args.get(name) is not None:
                args[name] = [staged(x) for x in args[name]]


def measure(c: Candidates, warmup: int, reps: int | None) -> tuple:
    """(times in ms, errors): one entry per candidate, None where it has none."""
    _stage(c)
    errors = compile_all(c)
    _launch_errors(c, errors, warmup)
    ready = [i for i, e in enumerate(errors) if e is None]
    times: list = [None] * len(c.calls)
    if not ready:
        return times, errors
    timer = _core._EventTimer(c.device)
    counts = {}
    for i in ready:
        estimate = _batch(c, timer, i, 1)
        counts[i] = reps if reps is not None else max(MIN_REPS, min(MAX_REPS, int(TARGET_MS / max(estimate, 1e-4))))
    samples: dict = {i: [] for i in ready}
    for _ in range(ROUNDS):
        for i in ready:
            samples[i].append(_batch(c, timer, i, counts[i]))
    for i in ready:
        times[i] = _median(samples[i])
    return times, errors
