"""Ahead-of-time builds: ``jitkernel.precompile(calls, archs)`` compiles the kernels a program calls, for a list of
GPU architectures, into the compile cache, on a machine that needs no GPU. A later process on a GPU of one of those
architectures then loads every kernel from the disk cache (no NVRTC compile).

``calls`` is either a function that makes the kernel calls (run once, with every CUDA kernel call turned into a
compile: see ``Session``) or the path of a call record a previous run wrote (``JITKERNEL_RECORD``, read by
record_replay.py). Both compile through ``kernel.compile(..., arch=)``, whose cache key is the one a launch on a GPU of
that architecture uses. docs/precompile.md describes the commands and formats.

With ``tune=True`` (a GPU of one of ``archs`` present) the buckets of autotuned kernels are decided too, as an eager
call would decide them (docs/autotuning.md): the session's interception is suspended for the tuning launches only.
"""
from __future__ import annotations

import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError, JitKernelError
from .._kernels import call_routes
from . import record_replay, tune_ahead
from .cache import cache_info
from .placeholders import ShapeDtype, placeholder

__all__ = ["PrecompileReport", "precompile"]

# Guards the process's one precompile session (``call_routes.precompile_session``, read by
# CudaKernel._call_general).
_session_lock = threading.Lock()

_ARCH = re.compile(r"sm_[0-9]{2,3}[af]?")


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
    decisions: int = 0  # tune=True: autotuning buckets decided (found stored, or timed now)
    tuned: int = 0  # of those, timed now


class Compiler:
    """Compiles (kernel, signature) pairs for ``archs``, each pair once (keyed by its call-record line)."""

    def __init__(self, archs: tuple, tune: bool = False):
        self.archs, self.tune = archs, tune
        self.seen: set = set()
        self.calls = 0
        self.decided: set = set()  # tune=True: the buckets decided, as (tuned object's static key, bucket)
        self.tuned = 0  # of those, timed now
        self.tuning_misses = 0  # compiles the tuning itself made (its helper kernels): not binaries of ``archs``

    @contextmanager
    def tuning(self):
        """Counts what the tuning launches inside compile (its helper kernels), apart from the binaries."""
        before = cache_info().misses
        try:
            yield
        finally:
            self.tuning_misses += cache_info().misses - before

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

    @contextmanager
    def suspended(self):
        """Kernel calls launch instead of compiling while this runs (an autotuned bucket's timing runs under
        ``tune=True``). The interception is process-wide: calls other threads make meanwhile launch too."""
        with _session_lock:
            call_routes.precompile_session = None
            _core._calls_to_python(False)
        try:
            with self.tuning():
                yield
        finally:
            with _session_lock:
                _core._calls_to_python(True)
                call_routes.precompile_session = self


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


def precompile(calls, archs, tune: bool = False) -> PrecompileReport:
    """Compiles kernels for ``archs`` (e.g. ``["sm_80", "sm_90a", "sm_100a"]`` or ``"sm_80,sm_90a"``) into the
    compile cache; no GPU needed. ``calls``: a function taking no arguments that makes the kernel calls (while it
    runs, a CUDA kernel call compiles and returns placeholder outputs instead of launching; inputs may be NumPy
    arrays or ``jitkernel.ShapeDtype(shape, dtype)``), or the path of a call record (``JITKERNEL_RECORD``).
    ``tune=True``: also decide every autotuned bucket the calls reach (timing on this machine's GPU, whose
    architecture must be one of ``archs``), so that ``export_cache`` ships the decisions.
    Returns a ``PrecompileReport``. The cache must be enabled and writable (``cache_info().enabled``)."""
    archs = archs_arg(archs)
    if not isinstance(tune, bool):
        raise ArgumentTypeError("tune", f"expected True or False, got {type(tune).__name__}")
    if tune:
        tune_ahead.check_gpu(archs)
    before = cache_info()
    if not before.enabled:
        raise JitKernelError(f"precompile: the compile cache is off ({before.disabled_reason or 'disabled'}), so "
                             f"nothing compiled would be kept; see python -m jitkernel cache info")
    if callable(calls):
        compiler = _run_function(calls, archs, tune)
    elif isinstance(calls, (str, os.PathLike)):
        compiler = Compiler(archs, tune)
        record_replay.replay(os.fspath(calls), compiler)
    else:
        raise ArgumentTypeError("calls", f"expected a function that makes the kernel calls or the path of a call "
                                         f"record, got {type(calls).__name__}")
    after = cache_info()
    binaries = len(compiler.seen) * len(archs)
    compiled = after.misses - before.misses - compiler.tuning_misses
    return PrecompileReport(archs, compiler.calls, len(compiler.seen), binaries, compiled,
                            max(binaries - compiled, 0), after.path, len(compiler.decided), compiler.tuned)


def _run_function(fn, archs, tune: bool) -> Session:
    """Runs ``fn()`` as the process's precompile session: every kernel call goes to the session."""
    with _session_lock:
        if call_routes.precompile_session is not None:
            raise JitKernelError("precompile: another precompile is running in this process")
        session = call_routes.precompile_session = Session(archs, tune)
        _core._calls_to_python(True)
    try:
        fn()
        return session
    finally:
        with _session_lock:
            _core._calls_to_python(False)
            call_routes.precompile_session = None
