"""``jitkernel.cuda_kernel``: the MLX-compatible factory and kernel object, and ``jitkernel.compile_cuda``.

The kernel object subclasses ``_core.CudaKernelBase`` (cpp/bindings/kernel.cpp), which converts the arguments,
generates, compiles (once per signature and device), launches and wraps the outputs. Calling a kernel whose
input and output names are known, with lists, is one C function (the base type's call slot): no Python code of
this module runs per call. This module adds what is easiest in Python: argument checks of the factory, and the
dict form of seed 000, where ``inputs``, ``output_shapes``, ``output_dtypes`` (and ``outputs``) are dicts keyed by
name, the factory's names may be omitted, and the call returns a dict (``_call_general``).
"""
from __future__ import annotations

from . import _core
from ._errors import ArgumentError, ArgumentTypeError
from ._kernel_front import resolve_call

__all__ = ["CudaKernel", "cuda_kernel", "compile_cuda"]

_INT32_MAX = 2**31 - 1


def _names_arg(value, argument: str):
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ArgumentTypeError(argument, f"expected a list of names (strings), got {type(value).__name__}")
    for i, name in enumerate(value):
        if not isinstance(name, str):
            raise ArgumentTypeError(argument, f"entry {i} must be a string, got {type(name).__name__} {name!r}")
    return tuple(value)


def _str_arg(value, argument: str) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(argument, f"expected a string, got {type(value).__name__}")
    return value


class CudaKernel(_core.CudaKernelBase):
    """A CUDA kernel whose body is ``source``; call it with keyword arguments (see ``cuda_kernel``)::

        kernel(*, inputs, output_shapes=None, output_dtypes=None, grid, threadgroup, template=None,
               init_value=None, verbose=False, stream=None, outputs=None)

    Runs the kernel and returns the outputs as a list in output_names order (a dict in the dict form).
    ``output_shapes`` / ``output_dtypes`` may be omitted when ``outputs=`` gives the arrays to write.
    ``stream``: None (the inputs' framework's current stream), a stream object (torch, CuPy, anything with
    ``__cuda_stream__``) or an int handle. Outputs are allocated and later freed on that stream, so they keep
    a stream object alive; with an int handle the caller must keep the stream alive while the outputs live.
    """

    __slots__ = ("name", "input_names", "output_names", "source_text", "header", "ensure_row_contiguous",
                 "shared_memory", "_impls")

    def __init__(self, name, input_names, output_names, source, header, ensure_row_contiguous, shared_memory):
        # With both name lists known the C++ kernel is made (and the names validated) right away, and list-form
        # calls go straight to it; without them each call's dicts name the arguments (_call_general).
        named = input_names is not None and output_names is not None
        super().__init__(name, list(input_names) if named else None, list(output_names) if named else None,
                         source, header, ensure_row_contiguous, shared_memory)
        self.name = name
        self.input_names = input_names
        self.output_names = output_names
        self.source_text = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self.shared_memory = shared_memory
        self._impls: dict = {}

    def __repr__(self) -> str:
        return (f"jitkernel.CudaKernel(name={self.name!r}, input_names={self.input_names!r}, "
                f"output_names={self.output_names!r})")

    def _impl_for(self, input_names: tuple, output_names: tuple):
        if input_names == self.input_names and output_names == self.output_names:
            return self  # the names the kernel was made with: its own C++ kernel
        impl = self._impls.get((input_names, output_names))
        if impl is None:
            impl = _core.CudaKernelBase(self.name, list(input_names), list(output_names), self.source_text,
                                        self.header, self.ensure_row_contiguous, self.shared_memory)
            self._impls[(input_names, output_names)] = impl
        return impl

    def _resolve(self, inputs, outputs_by_name: tuple):
        """(impl, inputs as a list, output names, dict_form) for list- or dict-form arguments.

        ``outputs_by_name``: (argument name, value) of the per-output arguments given (shapes, dtypes, outputs).
        """
        in_names, inputs, out_names, dict_form = resolve_call(inputs, outputs_by_name, self.input_names,
                                                              self.output_names, "cuda_kernel")
        return self._impl_for(in_names, out_names), inputs, out_names, dict_form

    def _call_general(self, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream,
                      outputs, verbose):
        """A call with dicts, or to a kernel made without names (the base type's call slot sends those here)."""
        impl, inputs, out_names, dict_form = self._resolve(
            inputs, (("output_shapes", output_shapes), ("output_dtypes", output_dtypes), ("outputs", outputs)))

        def ordered(value):
            return [value[n] for n in out_names] if isinstance(value, dict) else value

        results = impl._call(inputs, ordered(output_shapes), ordered(output_dtypes), grid, threadgroup, template,
                             init_value, stream, ordered(outputs), verbose)
        return dict(zip(out_names, results)) if dict_form else results

    def _signature_args(self, inputs, output_dtypes):
        if self.input_names is not None and self.output_names is not None and \
                not (isinstance(inputs, dict) or isinstance(output_dtypes, dict)):
            return self, inputs, output_dtypes
        impl, inputs, out_names, _ = self._resolve(inputs, (("output_dtypes", output_dtypes),))
        if isinstance(output_dtypes, dict):
            output_dtypes = [output_dtypes[n] for n in out_names]
        return impl, inputs, output_dtypes

    def source(self, *, inputs, output_dtypes, template=None) -> str:
        """The exact CUDA source a call with these arguments compiles (what verbose=True prints). No GPU needed."""
        impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
        return impl._source(inputs, output_dtypes, template)

    def entry_name(self, *, inputs, output_dtypes, template=None) -> str:
        """The generated kernel's extern "C" symbol for these arguments."""
        impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
        return impl._entry_name(inputs, output_dtypes, template)

    def compile(self, *, inputs, output_dtypes, template=None, arch="sm_90a", target="cubin") -> bytes:
        """Compiles the source for these arguments with NVRTC to a cubin (or PTX) for ``arch``. No GPU needed."""
        _str_arg(arch, "arch")
        _str_arg(target, "target")
        impl, inputs, output_dtypes = self._signature_args(inputs, output_dtypes)
        return impl._compile(inputs, output_dtypes, template, arch, target)


def cuda_kernel(name, input_names=None, output_names=None, source=None, header="", ensure_row_contiguous=True,
                shared_memory=0) -> CudaKernel:
    """A JIT-compiled CUDA kernel from the body ``source`` (MLX's ``mx.fast.cuda_kernel``).

    The signature is generated from what each call passes: ``const T* name`` per array input (Python scalars by
    value), ``T* name`` per output, ``name_shape`` / ``name_strides`` / ``name_ndim`` when the body uses them, and
    template arguments as ``constexpr`` / ``using`` lines. ``header`` goes at file scope. ``shared_memory`` is the
    dynamic shared memory in bytes. Call the result with keyword arguments::

        outs = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                      grid=(a.size, 1, 1), threadgroup=(256, 1, 1), template=[("T", jk.float32)])

    ``input_names`` / ``output_names`` may be omitted when calls pass dicts keyed by name.
    """
    _str_arg(name, "name")
    input_names = _names_arg(input_names, "input_names")
    output_names = _names_arg(output_names, "output_names")
    if source is None:
        raise ArgumentTypeError("source", "required: the body of the kernel (a string)")
    _str_arg(source, "source")
    _str_arg(header, "header")
    if not isinstance(ensure_row_contiguous, bool):
        raise ArgumentTypeError("ensure_row_contiguous", f"expected True or False, got {ensure_row_contiguous!r}")
    if isinstance(shared_memory, bool) or not isinstance(shared_memory, int):
        raise ArgumentTypeError("shared_memory", f"expected an int (bytes), got {type(shared_memory).__name__}")
    if not 0 <= shared_memory <= _INT32_MAX:
        raise ArgumentError("shared_memory", f"expected a non-negative number of bytes, got {shared_memory}")
    return CudaKernel(name, input_names, output_names, source, header, ensure_row_contiguous, shared_memory)


def compile_cuda(source, arch="sm_90a", target="cubin", name="program.cu") -> bytes:
    """Compiles standalone CUDA source with NVRTC (no GPU needed): cubin bytes, or PTX text as bytes."""
    _str_arg(source, "source")
    _str_arg(arch, "arch")
    _str_arg(target, "target")
    _str_arg(name, "name")
    return _core.compile_cuda(source, arch, target, name)
