"""``jitkernel.metal_kernel`` (MLX's ``mx.fast.metal_kernel``) and the older ``jitkernel.MetalKernel`` form.

The kernel object subclasses ``_core.KernelBase`` (cpp/bindings/objects/kernel_object.cpp), the type of CUDA kernels
too: a call is one C function (the type's call slot) that checks the arguments through the same conversion as a
CUDA call's (host-memory policy), generates the Metal source (byte-identical with MLX 0.32.4's, see
docs/metal_codegen_differences.md) and hands the call to the Metal runtime. The source can be generated on any OS (``kernel.source(...)``); calling a
kernel needs macOS on Apple silicon and raises ``MetalNotAvailableError`` elsewhere, after the arguments have been
checked (so argument errors show up on every OS).

The seeds' older forms are thin layers over the same object: seed 000's dict form (``inputs={"inp": a}``,
``output_shapes={"out": ...}``, the factory's names omitted, a dict returned; ``metal_kernel(name, source)``
positionally), and seed 002's ``MetalKernel(name=, source=, grid=, threadgroup=, output_shapes=,
output_dtypes=)`` with ``.template(T=...)``, called with the inputs as keyword arguments.
"""
from __future__ import annotations

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError
from .front import (REQUIRED, KernelFront, bad_call, query_keywords, bool_arg, factory_args, refuse_unknown_keywords,
                    show_call)

__all__ = ["MetalKernelFunction", "MetalKernel", "metal_kernel"]

# True for type checkers only (mypy and pyright treat the name so): importing typing costs import time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, overload

    from typing_extensions import Never

    import numpy as np

    from .call_types import (AnyDTypes, AnyInputs, DictInputs, Dim3, DTypeLike, Given, LaunchOnly, ListInputs,
                             MetalCompileOptions, MetalLaunch, Names, Shape, Template, Unpack)

_MATH_MODES = ("safe", "relaxed", "fast")
_FACTORY_KEYWORDS = ("name", "input_names", "output_names", "source", "header", "ensure_row_contiguous",
                     "atomic_outputs", "compile_options")


def _math_mode(compile_options) -> str:
    """The math mode of ``compile_options`` (None or {"math_mode": "safe" | "relaxed" | "fast"}); MLX's default
    is "safe"."""
    if compile_options is None:
        return "safe"
    if not isinstance(compile_options, dict):
        raise ArgumentTypeError("compile_options", f"expected a dict such as {{'math_mode': 'fast'}} or None, "
                                                   f"got {type(compile_options).__name__}")
    if "checked" in compile_options:
        raise ArgumentError("compile_options", "checked: checked mode is CUDA-only; Metal kernels are not bounds-"
                                               "checked (docs/checked.md)")
    unknown = [k for k in compile_options if k != "math_mode"]
    if unknown:
        raise ArgumentError("compile_options", f"unknown option {unknown[0]!r}; the only option is 'math_mode'")
    mode = compile_options.get("math_mode", "safe")
    if mode not in _MATH_MODES or not isinstance(mode, str):
        raise ArgumentError("compile_options", f"math_mode must be 'safe', 'relaxed' or 'fast', got {mode!r}")
    return mode


class MetalKernelFunction(KernelFront, _core.KernelBase):
    """A Metal kernel whose body is ``source`` (made by ``metal_kernel``); call it with keyword arguments only::

        kernel(*, inputs, output_shapes=None, output_dtypes=None, grid, threadgroup, template=None,
               init_value=None, verbose=False, stream=None, outputs=None)

    Returns the outputs as a list in output_names order (a dict in the dict form, where ``inputs``,
    ``output_shapes``, ``output_dtypes`` and ``outputs`` are dicts keyed by name). ``grid`` counts threads
    (Metal's dispatchThreads) and ``threadgroup`` is the threads per threadgroup; ``template``, ``init_value`` and
    ``outputs`` work as in ``cuda_kernel``; ``verbose=True`` prints the generated source as MLX does; ``stream``
    must be None (Metal kernels run on jitkernel's own command queue), and ``cooperative`` / ``cluster`` (CUDA
    launch options) are refused. Wrong keywords, types or values raise ``jk.ArgumentTypeError`` /
    ``jk.ArgumentError`` naming the argument, worded as for ``cuda_kernel``. Calling needs macOS on Apple silicon
    (``jk.MetalNotAvailableError`` elsewhere, after the arguments are checked); ``kernel.source(...)``,
    ``kernel.kernel_name(...)`` and ``kernel.buffers(...)`` work on any OS.
    """

    __slots__ = ("name", "input_names", "output_names", "source_text", "header", "ensure_row_contiguous",
                 "atomic_outputs", "math_mode", "_impls")

    _factory = "metal_kernel"

    def __init__(self, name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs,
                 math_mode):
        # With both name lists known the C++ kernel is made (and the names checked) right away, and calls go
        # straight to it; without them each call's dicts name the arguments (_call_general).
        named = input_names is not None and output_names is not None
        super().__init__("metal", name, list(input_names) if named else None, list(output_names) if named else None,
                         source, header, ensure_row_contiguous, atomic_outputs=atomic_outputs, math_mode=math_mode)
        self._store(name, input_names, output_names, source, header, ensure_row_contiguous)
        self.atomic_outputs = atomic_outputs
        self.math_mode = math_mode

    def __reduce__(self):
        """Pickles as the factory's arguments: unpickling makes the kernel again."""
        return (type(self), (self.name, self.input_names, self.output_names, self.source_text, self.header,
                             self.ensure_row_contiguous, self.atomic_outputs, self.math_mode))

    @property
    def _impl(self):
        """The kernel itself (its own C++ kernel) when it was made with both name lists, else None."""
        return self if self.input_names is not None and self.output_names is not None else None

    def _new_engine(self, input_names: tuple, output_names: tuple):
        return _core.KernelBase("metal", self.name, list(input_names), list(output_names), self.source_text,
                                self.header, self.ensure_row_contiguous, atomic_outputs=self.atomic_outputs,
                                math_mode=self.math_mode)

    if TYPE_CHECKING:  # the call itself runs in C (cpp/bindings/call/call_slot.cpp) and the queries' run-time
        # versions below name bad calls: their keywords for type checkers; ``stream`` must be None (Metal kernels
        # run on jitkernel's own command queue)
        @overload
        def __call__(self, *, inputs: ListInputs, output_shapes: Sequence[Shape] | None = None,
                     output_dtypes: Sequence[DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[MetalLaunch]) -> list[np.ndarray[Any, Any]]: ...

        @overload
        def __call__(self, *, inputs: ListInputs, outputs: Sequence[Given], output_shapes: None = None,
                     output_dtypes: None = None, **launch: Unpack[MetalLaunch]) -> list[Given]: ...

        @overload
        def __call__(self, *, inputs: DictInputs, output_shapes: Mapping[str, Shape] | None = None,
                     output_dtypes: Mapping[str, DTypeLike] | None = None, outputs: None = None,
                     **launch: Unpack[MetalLaunch]) -> dict[str, np.ndarray[Any, Any]]: ...

        @overload
        def __call__(self, *, inputs: DictInputs, outputs: Mapping[str, Given], output_shapes: None = None,
                     output_dtypes: None = None, **launch: Unpack[MetalLaunch]) -> dict[str, Given]: ...

        def __call__(self, **kwargs: Any) -> Any: ...

        def source(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                   with_utils: bool = False, **launch: Unpack[LaunchOnly]) -> str: ...

        def kernel_name(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                        **launch: Unpack[LaunchOnly]) -> str: ...

        def buffers(self, *, inputs: AnyInputs, output_dtypes: AnyDTypes, template: Template = None,
                    **launch: Unpack[LaunchOnly]) -> list[tuple[int, str, int, str, str]]: ...
    else:
        def source(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, with_utils=False,
                   **unknown) -> str:
            """The Metal source a call with these arguments generates: MLX's text, what ``verbose=True`` prints
            (``with_utils=True``: with jitkernel's metal_utils headers before it, the whole text that is compiled).
            Works on any OS. Keyword arguments only: ``source(*, inputs, output_dtypes, template=None,
            with_utils=False)``."""
            unknown = query_keywords(unknown)
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("MetalKernelFunction.source", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._source(inputs, output_dtypes, template, bool_arg(with_utils, "with_utils"))

        def kernel_name(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, **unknown) -> str:
            """The generated [[kernel]] function's name (its host_name) for these arguments."""
            unknown = query_keywords(unknown)
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("MetalKernelFunction.kernel_name", args, unknown,
                         dict(inputs=inputs, output_dtypes=output_dtypes))
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._entry_name(inputs, output_dtypes, template)

        def buffers(self, *args, inputs=REQUIRED, output_dtypes=REQUIRED, template=None, **unknown) -> list:
            """The generated kernel's buffers in [[buffer(n)]] order: (n, what, index, address space, how passed),
            what being "input", "input_shape", "input_strides", "input_ndim" or "output"."""
            unknown = query_keywords(unknown)
            if args or unknown or inputs is REQUIRED or output_dtypes is REQUIRED:
                bad_call("MetalKernelFunction.buffers", args, unknown, dict(inputs=inputs, output_dtypes=output_dtypes))
            impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
            return impl._buffers(inputs, output_dtypes, template)


def _call_signature(self, *, inputs, output_shapes=None, output_dtypes=None, grid, threadgroup, template=None,
                    init_value=None, stream=None, outputs=None, verbose=False):
    """Runs the kernel on ``inputs`` (macOS on Apple silicon) and returns its outputs as NumPy arrays: a list in
    output_names order, or a dict keyed by name when ``inputs`` (and ``output_shapes``, ``output_dtypes``,
    ``outputs``) are dicts. Keyword arguments only; ``help(type(kernel))`` describes each keyword."""
    # The call's keywords for help() and inspect (front.show_call); the call runs in C.


def _call(self, *args, **kwargs):
    # type(kernel).__call__ for introspection; CPython calls the C slot, or this for a user's subclass.
    return _core.KernelBase.__call__(self, *args, **kwargs)


show_call(MetalKernelFunction, _call, _call_signature)


if TYPE_CHECKING:  # seed 000's metal_kernel(name, source), else names as lists: a bare str is one mistake less
    @overload
    def metal_kernel(name: str, source: str, /) -> MetalKernelFunction: ...

    @overload
    def metal_kernel(name: str, input_names: Names | None = None, output_names: Names | None = None,
                     source: str | None = None, header: str = "", ensure_row_contiguous: bool = True,
                     atomic_outputs: bool = False, compile_options: MetalCompileOptions | None = None,
                     **unknown: Never) -> MetalKernelFunction: ...

    def metal_kernel(*args: Any, **kwargs: Any) -> MetalKernelFunction: ...
else:
    def metal_kernel(name, input_names=None, output_names=None, source=None, header="", ensure_row_contiguous=True,
                     atomic_outputs=False, compile_options=None, **unknown):
        """A JIT-compiled Metal kernel from the body ``source`` (MLX's ``mx.fast.metal_kernel``).

        The signature is generated from what each call passes, as MLX generates it: ``const device T* name`` per
        array input (``constant`` below 8 elements, ``const constant T& name`` for 0-d inputs and Python scalars),
        ``device T* name`` per output (``device atomic<T>*`` with ``atomic_outputs``), ``name_shape`` /
        ``name_strides`` / ``name_ndim`` and Metal attributes (``thread_position_in_grid``, ...) when the body uses
        them, and template arguments as a ``template <...>`` instantiated for the call. ``header`` goes before the
        kernel. ``compile_options={"math_mode": "safe" | "relaxed" | "fast"}`` (default "safe"). Call the result with
        keyword arguments::

            outs = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                          grid=(a.size, 1, 1), threadgroup=(256, 1, 1), template=[("T", jk.float32)])

        ``input_names`` / ``output_names`` may be omitted when calls pass dicts keyed by name (seed 000's form, where
        ``metal_kernel(name, source)`` also works positionally). Calling needs macOS on Apple silicon; making the
        kernel and ``kernel.source(...)`` work everywhere.
        """
        if isinstance(input_names, str) and output_names is None and source is None:
            input_names, source = None, input_names  # seed 000: metal_kernel(name, source)
        refuse_unknown_keywords("metal_kernel", unknown, _FACTORY_KEYWORDS)
        input_names, output_names = factory_args(name, input_names, output_names, source, header,
                                                 ensure_row_contiguous)
        bool_arg(atomic_outputs, "atomic_outputs")
        if input_names is None or output_names is None:  # else the C++ kernel made right away checks every name
            _core.validate_metal_kernel_name(name)
        return MetalKernelFunction(name, input_names, output_names, source, header, ensure_row_contiguous,
                                   atomic_outputs, _math_mode(compile_options))


class MetalKernel:
    """Seed 002's form: everything but the inputs and template values given up front, inputs as keywords::

        kernel = jk.MetalKernel(name="myexp", source=source, grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                                output_shapes={"out": a.shape}, output_dtypes={"out": a.dtype})
        kernel.template(T=jk.float32)
        outputs = kernel(inp=a)          # {"out": ...}

    ``verbose=True`` prints the generated source at each call.
    """

    __slots__ = ("_kernel", "_output_shapes", "_output_dtypes", "_grid", "_threadgroup", "_template",
                 "_init_value", "_verbose")

    def __init__(self, name: str, source: str, grid: Dim3, threadgroup: Dim3, output_shapes: Mapping[str, Shape],
                 output_dtypes: Mapping[str, DTypeLike], ensure_row_contiguous: bool = True,
                 atomic_outputs: bool = False, header: str = "", init_value: float | None = None,
                 verbose: bool = False, compile_options: MetalCompileOptions | None = None):
        for value, argument in ((output_shapes, "output_shapes"), (output_dtypes, "output_dtypes")):
            if not isinstance(value, dict):
                raise ArgumentTypeError(argument, f"expected a dict {{output name: value}}, got "
                                                  f"{type(value).__name__}")
        self._kernel = metal_kernel(name, None, tuple(output_shapes), source, header, ensure_row_contiguous,
                                    atomic_outputs, compile_options)
        self._output_shapes = dict(output_shapes)
        self._output_dtypes = dict(output_dtypes)
        self._grid = grid
        self._threadgroup = threadgroup
        self._template: dict[str, Any] | None = None
        self._init_value = init_value
        self._verbose = bool_arg(verbose, "verbose")

    def __repr__(self) -> str:
        return f"jitkernel.MetalKernel(name={self._kernel.name!r})"

    def template(self, **template: Any) -> MetalKernel:
        """Sets the template arguments of the next calls (ints, bools, dtypes), e.g. ``.template(T=jk.float32)``."""
        self._template = template
        return self

    if TYPE_CHECKING:  # inputs by keyword only (the run-time versions below name positional arguments)
        def __call__(self, **inputs: Any) -> dict[str, Any]: ...

        def source(self, *, with_utils: bool = False, **inputs: Any) -> str: ...
    else:
        def __call__(self, *args, **inputs) -> dict:
            """Runs the kernel on the inputs given by name; returns {output name: array}."""
            if args:
                bad_call("MetalKernel.__call__", args, {}, dict(inputs=inputs))
            return self._kernel(inputs=inputs, output_shapes=self._output_shapes, output_dtypes=self._output_dtypes,
                                grid=self._grid, threadgroup=self._threadgroup, template=self._template,
                                init_value=self._init_value, verbose=self._verbose)

        def source(self, *args, with_utils=False, **inputs) -> str:
            """The Metal source a call with these inputs generates (see ``MetalKernelFunction.source``)."""
            if args:
                bad_call("MetalKernel.source", args, {}, dict(inputs=inputs))
            return self._kernel.source(inputs=inputs, output_dtypes=self._output_dtypes, template=self._template,
                                       with_utils=with_utils)
