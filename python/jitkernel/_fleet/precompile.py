"""Ahead-of-time builds: ``jitkernel.precompile(calls, archs)`` compiles the kernels a program calls, for a list of
GPU architectures, into the compile cache, on a machine that needs no GPU. A later process on a GPU of one of those
architectures then loads every kernel from the disk cache (no NVRTC compile).

``calls`` is either a function that makes the kernel calls (run once, with every CUDA kernel call turned into a
compile: see ``session``) or the path of a call record a previous run wrote (``JITKERNEL_RECORD``, read by
_record.py). Both compile through ``kernel.compile(..., arch=)``, whose cache key is the one a launch on a GPU of
that architecture uses. docs/precompile.md describes the commands and formats.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass

from . import _core
from ._dtypes import _normalize
from ._errors import ArgumentError, ArgumentTypeError, JitKernelError

__all__ = ["ShapeDtype", "PrecompileReport", "precompile"]

# The precompile session running in this process, or None; read by CudaKernel._call_general.
session = None
_session_lock = threading.Lock()

_ARCH = re.compile(r"sm_[0-9]{2,3}[af]?")


class ShapeDtype:
    """A placeholder input for calls made under ``precompile``: an array of this shape and dtype that has no data.
    The generated kernel depends only on an input's dtype and number of dimensions, so this is enough to compile
    it; it takes no memory. (NumPy arrays work too.)"""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or any(
                isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in shape):
            raise ArgumentTypeError("shape", f"expected a tuple of non-negative ints, got {shape!r}")
        self.shape = tuple(shape)
        self.dtype = _normalize(dtype, "dtype", "")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"jitkernel.ShapeDtype({self.shape!r}, jitkernel.{self.dtype.name})"


ShapeDtype.__module__ = "jitkernel"


@dataclass(frozen=True)
class PrecompileReport:
    """What ``precompile`` did. ``binaries`` == ``kernels * len(archs)`` == ``compiled + cached``."""

    archs: tuple  # the architectures compiled for
    calls: int  # kernel calls the function made, or record lines read
    kernels: int  # distinct (kernel, signature) pairs among them
    binaries: int  # binaries requested: one per kernel and architecture
    compiled: int  # of those, compiled by NVRTC now (disk cache misses)
    cached: int  # of those, already in the cache
    cache_dir: str  # the compile cache folder they are in


def numpy_dtype(dtype):
    """The NumPy dtype of a jitkernel dtype (bfloat16 needs ml_dtypes)."""
    import numpy as np

    if dtype.name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise ArgumentError("dtype", "bfloat16 placeholders need ml_dtypes (pip install ml-dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype.name)


def placeholder(shape, dtype):
    """A read-only NumPy array of zeros of ``shape`` that takes no memory (every element is one element)."""
    import numpy as np

    return np.broadcast_to(np.zeros((), numpy_dtype(_normalize(dtype, "output_dtypes", ""))), tuple(shape))


class Compiler:
    """Compiles (kernel, signature) pairs for ``archs``, each pair once (keyed by its call-record line)."""

    def __init__(self, archs: tuple):
        self.archs = archs
        self.seen: set = set()
        self.calls = 0

    def add(self, impl, inputs, output_dtypes, template) -> None:
        """``impl``: a kernel made with names; list-form arguments."""
        self.calls += 1
        line = _core._call_record_line(impl, inputs, output_dtypes, template)
        if line in self.seen:
            return
        for arch in self.archs:
            impl._compile(inputs, output_dtypes, template, arch, "cubin")
        self.seen.add(line)


class Session(Compiler):
    """A precompile run of a user function: each CUDA kernel call compiles its kernel for every architecture and
    returns placeholder outputs (read-only zero arrays of the declared shapes and dtypes; the ``outputs=``
    arrays when given) instead of launching."""

    def call(self, kernel, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream,
             outputs, verbose, cooperative=None, cluster=None):
        in_names, inputs, shapes, dtypes, outs, out_names, dict_form = kernel._names(
            inputs, output_shapes, output_dtypes, outputs, False)
        if dtypes is None or shapes is None:
            if outs is None:
                raise ArgumentTypeError("output_dtypes", "required: a list with one dtype per output")
            dtypes = [o.dtype for o in outs] if dtypes is None else dtypes
            shapes = [o.shape for o in outs] if shapes is None else shapes
        inputs = [placeholder(x.shape, x.dtype) if isinstance(x, ShapeDtype) else x for x in inputs]
        self.add(kernel._impl_for(in_names, out_names), inputs, list(dtypes), template)
        results = list(outs) if outs is not None else [placeholder(s, d) for s, d in zip(shapes, dtypes)]
        return dict(zip(out_names, results)) if dict_form else results


def archs_arg(archs) -> tuple:
    """The architectures as a tuple: a list of names, or one string of comma-separated names."""
    if isinstance(archs, str):
        archs = [a.strip() for a in archs.split(",") if a.strip()]
    if not isinstance(archs, (list, tuple)) or not archs:
        raise ArgumentTypeError("archs", f"expected a list of GPU architectures such as ['sm_80', 'sm_90a'], "
                                         f"got {archs!r}")
    for arch in archs:
        if not isinstance(arch, str) or not _ARCH.fullmatch(arch):
            raise ArgumentError("archs", f"expected architectures such as 'sm_80', 'sm_90a' or 'sm_100a' (the "
                                         f"cubin a GPU of that architecture loads), got {arch!r}")
    return tuple(dict.fromkeys(archs))


def precompile(calls, archs) -> PrecompileReport:
    """Compiles kernels for ``archs`` (e.g. ``["sm_80", "sm_90a", "sm_100a"]`` or ``"sm_80,sm_90a"``) into the
    compile cache; no GPU needed. ``calls``: a function taking no arguments that makes the kernel calls (while it
    runs, a CUDA kernel call compiles and returns placeholder outputs instead of launching; inputs may be NumPy
    arrays or ``jitkernel.ShapeDtype(shape, dtype)``), or the path of a call record (``JITKERNEL_RECORD``).
    Returns a ``PrecompileReport``. The cache must be enabled and writable (``cache_info().enabled``)."""
    archs = archs_arg(archs)
    from ._cache import cache_info

    before = cache_info()
    if not before.enabled:
        raise JitKernelError(f"precompile: the compile cache is off ({before.disabled_reason or 'disabled'}), so "
                             f"nothing compiled would be kept; see python -m jitkernel cache info")
    if callable(calls):
        compiler = _run_function(calls, archs)
    elif isinstance(calls, (str, os.PathLike)):
        from . import _record

        compiler = Compiler(archs)
        _record.replay(os.fspath(calls), compiler)
    else:
        raise ArgumentTypeError("calls", f"expected a function that makes the kernel calls or the path of a call "
                                         f"record, got {type(calls).__name__}")
    after = cache_info()
    binaries = len(compiler.seen) * len(archs)
    compiled = after.misses - before.misses
    return PrecompileReport(archs, compiler.calls, len(compiler.seen), binaries, compiled,
                            max(binaries - compiled, 0), after.path)


def _run_function(fn, archs) -> Session:
    """Runs ``fn()`` as the process's precompile session: every kernel call goes to the session."""
    global session
    with _session_lock:
        if session is not None:
            raise JitKernelError("precompile: another precompile is running in this process")
        session = Session(archs)
        _core._calls_to_python(True)
    try:
        fn()
        return session
    finally:
        with _session_lock:
            _core._calls_to_python(False)
            session = None
