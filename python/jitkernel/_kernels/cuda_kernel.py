"""``jitkernel.cuda_kernel``: the MLX-compatible factory and kernel object, and ``jitkernel.compile_cuda``.

The kernel object subclasses ``_core.KernelBase`` (cpp/bindings/objects/kernel_object.cpp), which converts the arguments,
generates, compiles (once per signature and device), launches and wraps the outputs. Calling a kernel whose
input and output names are known, with lists, is one C function (the base type's call slot): no Python code of
this module runs per call, in the list form or the dict form (``inputs``, ``output_shapes``, ``output_dtypes``,
``outputs`` keyed by name; a dict returned). This module adds the factory's argument checks and, for kernels made
without names, the engine per name set (``_call_general``, shared with the Metal front in ``front.py``).

A kernel is also text: ``kernel_text`` serialises what ``cuda_kernel`` was given (and its backward's identity) with
the core's codec (cpp/jitkernel/engine/call_record.hpp), and ``kernel_for`` finds the kernel object of such text,
or makes it again in a new process. The torch ops of compiled graphs carry kernels so (_frameworks/torch_ops.py).
"""
from __future__ import annotations

import os
import threading
import weakref

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError
from . import call_routes
from .sass import disassemble
from .front import REQUIRED, KernelFront, bad_call, query_keywords, factory_args, refuse_unknown_keywords, str_arg

__all__ = ["CudaKernel", "cuda_kernel", "compile_cuda", "kernel_text", "kernel_for"]

# True for type checkers only (mypy and pyright treat the name so): importing typing costs import time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, overload

    from typing_extensions import Never

    from .._core import Array
    from .call_types import (AnyDTypes, AnyInputs, Backward, CudaCompileOptions, CudaLaunch, DictInputs, Dim3,
                             DTypeLike, FrameworkArray, Given, HostArray, LaunchOnly, ListInputs, Names, Shape,
                             Template, Unpack)

_INT32_MAX = 2**31 - 1
_FACTORY_KEYWORDS = ("name", "input_names", "output_names", "source", "header", "ensure_row_contiguous",
                     "shared_memory", "compile_options")

# kernel.bind(...)'s result (cpp/bindings/objects/bound_call.cpp): the call's static part fixed, arrays per call.
BoundCall = _core.BoundCall


class CudaKernel(KernelFront, _core.KernelBase):
    """A CUDA kernel whose body is ``source`` (made by ``cuda_kernel``); call it with keyword arguments only::

        kernel(*, inputs, output_shapes=None, output_dtypes=None, grid, threadgroup, template=None,
               init_value=None, verbose=False, stream=None, outputs=None, cooperative=None, cluster=None)

    Runs the kernel and returns the outputs as a list in output_names order (a dict in the dict form, where
    ``inputs``, ``output_shapes``, ``output_dtypes`` and ``outputs`` are dicts keyed by name).

    - ``inputs``: arrays (NumPy, PyTorch, CuPy, JAX, ``jk.Array``, anything with ``__dlpack__``) and Python
      scalars, passed by value. Outputs come back in the inputs' framework (``jk.Array`` for NumPy inputs).
    - ``output_shapes`` / ``output_dtypes``: one shape and one dtype per output; may be omitted when ``outputs=``
      gives the arrays to write (checked, written in place and returned).
    - ``grid``: threads (x, y, z), as in MLX: blocks = ceil(grid / threadgroup); ``threadgroup``: threads per
      block (x, y, z).
    - ``template``: ``[(name, value)]`` or a dict of ints, bools and dtypes (``constexpr`` / ``using`` lines).
    - ``init_value``: fills the outputs before the launch; ``verbose=True`` prints the generated source.
    - ``stream``: None (the inputs' framework's current stream), a stream object (torch, CuPy, anything with
      ``__cuda_stream__``) or an int handle. Outputs are allocated and later freed on that stream, so they keep
      a stream object alive; with an int handle the caller must keep the stream alive while the outputs live.
    - ``cooperative=True``: a cooperative launch (inferred when the body syncs the grid); ``cluster``:
      thread-block clusters (threadgroups per cluster, compute capability 9.0+).

    Wrong keywords, types or values raise ``jk.ArgumentTypeError`` / ``jk.ArgumentError`` naming the argument.
    ``kernel.source(...)``, ``kernel.entry_name(...)`` and ``kernel.compile(...)`` take the call's keywords and
    need no GPU; ``kernel.attributes(...)`` reports registers and occupancy; ``kernel.vjp`` attaches a backward.
    """

    __slots__ = ("name", "input_names", "output_names", "source_text", "header", "ensure_row_contiguous",
                 "shared_memory", "compile_options", "_impls", "_vjp", "_spec", "__weakref__")

    _factory = "cuda_kernel"

    if TYPE_CHECKING:  # the call itself runs in C (cpp/bindings/call/call_slot.cpp): its signature for type checkers
        # The list form returns a list, the dict form a dict: the given outputs= arrays, else new arrays in the
        # inputs' framework (jk.Array for NumPy and jk.Array inputs; call_types.FrameworkArray).
        @overload
        def __call__(self, *, inputs: Sequence[HostArray], output_shapes: Sequence[Shape] | None = None,
                     output_dtypes: Sequence[DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[CudaLaunch]) -> list[Array]: ...

        @overload
        def __call__(self, *, inputs: Sequence[FrameworkArray], output_shapes: Sequence[Shape] | None = None,
                     output_dtypes: Sequence[DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[CudaLaunch]) -> list[FrameworkArray]: ...

        @overload
        def __call__(self, *, inputs: ListInputs, outputs: Sequence[Given], output_shapes: None = None,
                     output_dtypes: None = None, **launch: Unpack[CudaLaunch]) -> list[Given]: ...

        @overload
        def __call__(self, *, inputs: ListInputs, output_shapes: Sequence[Shape] | None = None,
                     output_dtypes: Sequence[DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[CudaLaunch]) -> list[Any]: ...

        @overload
        def __call__(self, *, inputs: Mapping[str, HostArray], output_shapes: Mapping[str, Shape] | None = None,
                     output_dtypes: Mapping[str, DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[CudaLaunch]) -> dict[str, Array]: ...

        @overload
        def __call__(self, *, inputs: Mapping[str, FrameworkArray], output_shapes: Mapping[str, Shape] | None = None,
                     output_dtypes: Mapping[str, DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[CudaLaunch]) -> dict[str, FrameworkArray]: ...

        @overload
        def __call__(self, *, inputs: DictInputs, outputs: Mapping[str, Given], output_shapes: None = None,
                     output_dtypes: None = None, **launch: Unpack[CudaLaunch]) -> dict[str, Given]: ...

        @overload
        def __call__(self, *, inputs: DictInputs, output_shapes: Mapping[str, Shape] | None = None,
                     output_dtypes: Mapping[str, DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[CudaLaunch]) -> dict[str, Any]: ...

        def __call__(self, **kwargs: Any) -> Any: ...

        def bind(self, *, inputs: ListInputs, grid: Dim3, threadgroup: Dim3,
                 output_shapes: Sequence[Shape] | None = None, output_dtypes: Sequence[DTypeLike] | None = None,
                 template: Template = None, init_value: float | None = None, stream: Any = None,
                 outputs: Sequence[Any] | None = None, cooperative: bool | None = None,
                 cluster: Dim3 | None = None) -> _core.BoundCall: ...

    def __init__(self, name, input_names, output_names, source, header, ensure_row_contiguous, shared_memory,
                 compile_options=None):
        # With both name lists known the C++ kernel is made (and the names validated) right away, and list-form
        # and dict-form calls go straight to it; without them each call's dicts name the arguments (_call_general).
        named = input_names is not None and output_names is not None
        compile_options = _with_checked_switch(compile_options)
        super().__init__("cuda", name, list(input_names) if named else None, list(output_names) if named else None,
                         source, header, ensure_row_contiguous, shared_memory, compile_options)
        self._store(name, input_names, output_names, source, header, ensure_row_contiguous)
        self.shared_memory = shared_memory
        self.compile_options = _copy_options(compile_options)
        self._vjp = None
        kernel_text(self)  # sets self._spec, read by traced calls

    def __reduce__(self):
        """Pickles as the factory's arguments and the backward (which pickles by reference): unpickling makes the
        kernel again (in another process its first call finds the binary in the disk cache), so kernels go to
        spawned workers (multiprocessing, DataLoader); copy.copy / deepcopy make a new, equal kernel."""
        return (_rebuild_kernel, (self.name, self.input_names, self.output_names, self.source_text, self.header,
                                  self.ensure_row_contiguous, self.shared_memory, self.compile_options, self._vjp))

    def vjp(self, backward: Backward) -> Backward:
        """Attaches a backward to this kernel's calls (use as a decorator); returns ``backward``.

        ``backward(primals, outputs, cotangents)`` gets a call's inputs (arrays and scalars, in order), its outputs
        and the cotangents of the outputs (lists; dicts keyed by name in the dict form) and returns one cotangent
        per input (None for scalars and inputs without one), usually by calling other jitkernel kernels. Calls
        then differentiate under torch autograd (eager and torch.compile) and jax.grad."""
        if not callable(backward):
            raise ArgumentTypeError("backward", f"expected a function (primals, outputs, cotangents) -> input "
                                                f"cotangents, got {type(backward).__name__}")
        self._vjp = backward
        self._has_vjp = True
        kernel_text(self)
        return backward

    def _call_general(self, *call):
        """The Python path of a call (kernels made without names, traced calls); while ``jk.precompile`` runs,
        every call comes here (cpp/bindings/objects/kernel_object.cpp) and compiles instead of launching."""
        session = call_routes.precompile_session
        if session is not None:
            return session.call(self, *call)
        return KernelFront._call_general(self, *call)

    @property
    def _impl(self):
        """The kernel itself (its own C++ kernel) when it was made with both name lists, else None."""
        return self if self.input_names is not None and self.output_names is not None else None

    def _new_engine(self, input_names: tuple, output_names: tuple):
        return _core.KernelBase("cuda", self.name, list(input_names), list(output_names), self.source_text,
                                self.header, self.ensure_row_contiguous, self.shared_memory, self.compile_options)

    if TYPE_CHECKING:  # the queries' keywords for type checkers (the run-time versions below name bad calls)
        def source(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                   **launch: Unpack[LaunchOnly]) -> str: ...

        def entry_name(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                       **launch: Unpack[LaunchOnly]) -> str: ...

        def compile(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                    arch: str = "sm_90a", target: str = "cubin", **launch: Unpack[LaunchOnly]) -> bytes: ...

        def attributes(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                       threadgroup: Dim3 | None = None, shared_memory: int | None = None,
                       device: int = 0) -> dict[str, Any]: ...

        def sass(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                 arch: str = "sm_90a") -> str: ...
    else:
        def source(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, **unknown) -> str:
            """The exact CUDA source a call with these arguments compiles (what verbose=True prints). No GPU needed.
            Keyword arguments only: ``source(*, inputs, output_dtypes, template=None)``."""
            unknown = query_keywords(unknown)
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("CudaKernel.source", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._source(inputs, output_dtypes, template)

        def entry_name(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, **unknown) -> str:
            """The generated kernel's extern "C" symbol for these arguments (keyword arguments as in ``source``)."""
            unknown = query_keywords(unknown)
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("CudaKernel.entry_name", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._entry_name(inputs, output_dtypes, template)

        def compile(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, arch="sm_90a", target="cubin",
                    **unknown) -> bytes:
            """Compiles the source for these arguments with NVRTC to a cubin (or PTX) for ``arch``. No GPU needed.
            Keyword arguments only: ``compile(*, inputs, output_dtypes, template=None, arch="sm_90a",
            target="cubin")``."""
            unknown = query_keywords(unknown)
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("CudaKernel.compile", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            str_arg(arch, "arch")
            str_arg(target, "target")
            if target == "sass":
                return self.sass(inputs=inputs, output_dtypes=output_dtypes, template=template, arch=arch).encode()
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._compile(inputs, output_dtypes, template, arch, target)

        def attributes(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, threadgroup=None,
                       shared_memory=None, device=0, **unknown) -> dict:
            """What the driver reports of this kernel compiled for these arguments on ``device`` (needs a GPU: it
            compiles and loads): ``registers_per_thread``, ``static_shared_memory``, ``dynamic_shared_memory``,
            ``max_dynamic_shared_memory``, ``max_threads_per_block``, ``local_memory_per_thread``, ``const_memory``,
            ``ptx_version``, ``binary_version``, and the occupancy for ``threadgroup`` (None: the most threads the
            kernel allows) with ``shared_memory`` dynamic bytes (None: the kernel's): ``active_blocks_per_sm`` and
            ``occupancy`` (resident threads over the SM's maximum, 0..1)."""
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("CudaKernel.attributes", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            if isinstance(device, bool) or not isinstance(device, int):
                raise ArgumentTypeError("device", f"expected a device ordinal (int), got {type(device).__name__}")
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._attributes(inputs, output_dtypes, template, threadgroup, shared_memory, device)

        def sass(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, arch="sm_90a", **unknown) -> str:
            """The SASS (machine code) of this kernel for these arguments and ``arch``, disassembled by NVIDIA's
            ``nvdisasm`` (pip install "jitkernel[sass]") or a CUDA toolkit's ``cuobjdump`` on PATH. No GPU needed."""
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("CudaKernel.sass", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            return disassemble(self.compile(inputs=inputs, output_dtypes=output_dtypes, template=template,
                                            arch=arch, target="cubin"))


def call_signature(self, *, inputs, output_shapes=None, output_dtypes=None, grid, threadgroup, template=None,
                   init_value=None, stream=None, outputs=None, verbose=False, cooperative=None, cluster=None):
    """Runs the kernel on ``inputs`` and returns its outputs: a list in output_names order, or a dict keyed by name
    when ``inputs`` (and ``output_shapes``, ``output_dtypes``, ``outputs``) are dicts. Keyword arguments only;
    ``help(type(kernel))`` describes each keyword."""
    # The call's keywords for help() and inspect (front.show_call): the call itself runs in C, with this keyword
    # table (cpp/bindings/call/call_args.hpp; tests/cpu/test_help_text.py compares the two).


def _copy_options(options):
    """A copy of a (checked) compile_options dict that later edits of the caller's dict do not reach."""
    if options is None:
        return None
    return {k: dict(v) if isinstance(v, dict) else list(v) if isinstance(v, (list, tuple)) else v
            for k, v in options.items()}


def _with_checked_switch(options):
    """``options`` with ``JITKERNEL_CHECKED=1`` applied once, as the kernel is made: ``"checked": True`` written
    into the options when they do not say ``checked``, so that the kernel's text, its engines made later and its
    pickle all say what it is, whatever the environment is by then."""
    if os.environ.get("JITKERNEL_CHECKED") != "1" or (isinstance(options, dict) and "checked" in options):
        return options
    if options is not None and not isinstance(options, dict):
        return options  # the core names the wrong type
    return {**(options or {}), "checked": True}


def _rebuild_kernel(name, input_names, output_names, source, header, ensure_row_contiguous, shared_memory,
                    compile_options, backward):
    """A pickled CudaKernel made again (CudaKernel.__reduce__)."""
    kernel = CudaKernel(name, input_names, output_names, source, header, ensure_row_contiguous, shared_memory,
                        compile_options)
    if backward is not None:
        kernel.vjp(backward)
    return kernel


def cuda_kernel(name: str, input_names: Names | None = None, output_names: Names | None = None,
                source: str | None = None, header: str = "", ensure_row_contiguous: bool = True,
                shared_memory: int = 0, compile_options: CudaCompileOptions | None = None,
                **unknown: Never) -> CudaKernel:
    """A JIT-compiled CUDA kernel from the body ``source`` (MLX's ``mx.fast.cuda_kernel``).

    The signature is generated from what each call passes: ``const T* name`` per array input (Python scalars by
    value), ``T* name`` per output, ``name_shape`` / ``name_strides`` / ``name_ndim`` when the body uses them, and
    template arguments as ``constexpr`` / ``using`` lines. ``header`` goes at file scope. ``shared_memory`` is the
    dynamic shared memory in bytes. Call the result with keyword arguments::

        outs = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                      grid=(a.size, 1, 1), threadgroup=(256, 1, 1), template=[("T", jk.float32)])

    ``input_names`` / ``output_names`` may be omitted when calls pass dicts keyed by name.

    ``compile_options`` (a dict, all keys optional, typed as ``jk.CudaCompileOptions``; each is part of the compile
    cache key): ``math_mode``
    ("safe" or "fast": ``--use_fast_math``), ``line_info`` (default True: ``-lineinfo``), ``debug`` (``-G``),
    ``defines`` (``{"NAME": value or None}``: ``-DNAME=value``), ``std`` ("c++17" or "c++20"),
    ``max_registers`` (``--maxrregcount``), ``include_dirs`` (folders for ``-I``) and ``extra_flags`` (NVRTC
    flags from an allowlist, e.g. ``["--ftz=true"]``) and ``checked`` (True: bounds-checked array indexes that raise
    ``KernelBoundsError``, unwritten outputs that raise ``UnwrittenOutputError``; every launch synchronises; also
    ``JITKERNEL_CHECKED=1``; docs/checked.md). See docs/compile_options.md.

    A keyword it does not take is an ArgumentTypeError naming it (and the keyword it most likely meant).
    """
    refuse_unknown_keywords("cuda_kernel", unknown, _FACTORY_KEYWORDS)
    input_names, output_names = factory_args(name, input_names, output_names, source, header,
                                             ensure_row_contiguous)
    if isinstance(shared_memory, bool) or not isinstance(shared_memory, int):
        raise ArgumentTypeError("shared_memory", f"expected an int (bytes), got {type(shared_memory).__name__}")
    if not 0 <= shared_memory <= _INT32_MAX:
        raise ArgumentError("shared_memory", f"expected a non-negative number of bytes, got {shared_memory}")
    return CudaKernel(name, input_names, output_names, source, header, ensure_row_contiguous, shared_memory,
                      compile_options)


def compile_cuda(source: str, arch: str = "sm_90a", target: str = "cubin", name: str = "program.cu",
                 compile_options: CudaCompileOptions | None = None) -> bytes:
    """Compiles standalone CUDA source with NVRTC (no GPU needed): cubin bytes, or PTX text as bytes.
    ``compile_options`` as in ``cuda_kernel``."""
    str_arg(source, "source")
    str_arg(arch, "arch")
    str_arg(target, "target")
    str_arg(name, "name")
    return _core.compile_cuda(source, arch, target, name, compile_options)


# ---------------------------------------------------------------------------
# The kernel as text.

_lock = threading.Lock()
# kernel text -> the kernel object, while it lives (a graph whose kernel died makes it again from the text)
_by_text: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def backward_id(vjp) -> str | None:
    """The identity of a backward in a kernel's text: two kernels with one source but different backwards are
    different ops."""
    if vjp is None:
        return None
    return f"{getattr(vjp, '__module__', '?')}.{getattr(vjp, '__qualname__', repr(vjp))}"


def kernel_text(kernel) -> str:
    """The serialised kernel of ``kernel`` (a ``CudaKernel``), made now (a kernel's is made when it is made, and
    again when a backward is attached) and registered so that ``kernel_for`` finds this object."""
    text = _core.encode_kernel(kernel.name, kernel.input_names, kernel.output_names, kernel.source_text,
                               kernel.header, kernel.ensure_row_contiguous, kernel.shared_memory,
                               kernel.compile_options, backward_id(kernel._vjp))
    kernel._spec = text
    with _lock:
        _by_text[text] = kernel
    return text


def kernel_for(text: str):
    """The kernel object of a serialised kernel: the one that made it, else a new ``cuda_kernel`` from its fields
    (without a backward: a program exported with one needs its kernel made again before it is differentiated).
    Text this process did not write is decoded by the core, which refuses anything but the canonical form with
    an ``ArgumentError("kernel", ...)`` naming the field."""
    if not isinstance(text, str):
        raise ArgumentTypeError("kernel", f"expected a serialised kernel (str), got {type(text).__name__}")
    kernel = _by_text.get(text)
    if kernel is not None:
        return kernel
    args = _core.decode_kernel(text, "kernel")
    del args["backward"]
    args["compile_options"] = decoded_options(args["compile_options"])
    return cuda_kernel(**args)


def decoded_options(options):
    """The compile_options of a decoded kernel text (a graph's, a call record's) for ``cuda_kernel``, such that a
    decoded kernel is checked exactly when the kernel that wrote the text was (the text says ``checked`` only when
    true): while JITKERNEL_CHECKED=1 would turn it on, an explicit ``"checked": False`` is added, since the switch
    must not change a decoded kernel (the C++ decoders, the torch op's and XLA's, never read it)."""
    if (options and options.get("checked")) or os.environ.get("JITKERNEL_CHECKED") != "1":
        return options
    return {**(options or {}), "checked": False}
