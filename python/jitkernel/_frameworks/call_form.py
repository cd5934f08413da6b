"""A traced call's arguments in the list form: the call with its dicts turned into lists in name order.

The Python twin of the C++ resolver of the dict form (cpp/bindings/call/call_form.cpp), written for TorchDynamo to trace
(``torch_ops.call`` runs it inside ``torch.compile``): plain Python on the arguments, no C calls before a mismatch,
which is left to the C++ resolver so that it raises the error an eager call gets. ``jax_call`` takes its
``TracedCall``, ``torch_ops`` the plain tuple of ``resolve`` (every class TorchDynamo builds is guarded).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import _core
from .._errors import ArgumentTypeError
from . import post_import


@dataclass
class TracedCall:
    """A call in the list form, names resolved: what a framework path records."""

    input_names: tuple
    output_names: tuple
    inputs: list
    output_shapes: list | None
    output_dtypes: list | None
    grid: tuple
    threadgroup: tuple
    template: list | None
    init_value: object
    outputs: list | None
    verbose: bool
    dict_form: bool


def kernel_constants(kernel) -> tuple:
    """(input names, output names, text) of a kernel: what a traced call reads of it. TorchDynamo takes them as
    constants of the kernel object (``torch.compiler.assume_constant_result``, marked once Dynamo is imported): it
    then guards the kernel's identity -- one pointer compare per call -- instead of comparing each name and the
    kernel's text. The text changes only when ``vjp`` attaches a backward, which ``torch_autograd.route`` guards
    (it reads ``kernel._vjp``); the names never change."""
    return kernel.input_names, kernel.output_names, kernel._spec


def _mark_kernel_constants(dynamo) -> None:
    """Marks ``kernel_constants`` where TorchDynamo takes a constant result of a non-constant argument (torch 2.13
    on; torch 2.11 refuses it: "UserDefinedObjectVariable(CudaKernel) is not a constant"). Before, it is traced as
    plain attribute reads, guarded by value (string compares in C++, a few more guards)."""
    import torch  # imported already: this runs when torch._dynamo is

    version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2] if part.isdigit())
    if version >= (2, 13):
        dynamo.assume_constant_result(kernel_constants)  # marks the function itself


post_import.when_imported("torch._dynamo", _mark_kernel_constants)


def _ordered(value, names):
    """A dict's values in ``names`` order, or None when its keys differ; anything else unchanged."""
    if not isinstance(value, dict):
        return value
    if len(value) != len(names) or any(n not in value for n in names):
        return None
    return [value[n] for n in names]


def resolve(kernel, inputs, output_shapes, output_dtypes, outputs) -> tuple:
    """(input names, output names, the kernel's text, inputs, output_shapes, output_dtypes, outputs, dict form): a
    call's names resolved and its dicts turned into lists in name order. Plain Python for TorchDynamo, which builds
    the plain tuple without guarding a class; any mismatch is left to the C++ resolver, which raises the same error
    an eager call gets."""
    dict_form = (isinstance(inputs, dict) or isinstance(output_shapes, dict) or isinstance(output_dtypes, dict)
                 or isinstance(outputs, dict))
    in_names, out_names, spec = kernel_constants(kernel)
    if dict_form:
        if in_names is None and isinstance(inputs, dict):
            in_names = tuple(inputs)
        for value in (output_shapes, output_dtypes, outputs):
            if out_names is None and isinstance(value, dict):
                out_names = tuple(value)
        resolved = [_ordered(inputs, in_names or ())] + [_ordered(v, out_names or ())
                                                         for v in (output_shapes, output_dtypes, outputs)]
        if in_names is None or out_names is None or any(
                r is None and v is not None for r, v in zip(resolved, (inputs, output_shapes, output_dtypes,
                                                                       outputs))):
            _core._resolve_call(inputs, output_shapes, output_dtypes, outputs, kernel.input_names,
                                kernel.output_names, kernel._factory, False)  # raises the eager call's error
            raise ArgumentTypeError("inputs", "inputs and outputs must be dicts keyed by the kernel's names")
        inputs, output_shapes, output_dtypes, outputs = resolved
    if in_names is None or out_names is None:
        raise ArgumentTypeError("inputs", "this kernel was made without input_names/output_names: pass inputs "
                                          "and outputs as dicts keyed by name")
    return (tuple(in_names), tuple(out_names), spec, list(inputs), output_shapes and list(output_shapes),
            output_dtypes and list(output_dtypes), outputs and list(outputs), dict_form)


def list_form(kernel, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, outputs,
              verbose) -> TracedCall:
    """The call with dicts turned into lists in name order (``resolve``), as a ``TracedCall``."""
    in_names, out_names, _, inputs, output_shapes, output_dtypes, outputs, dict_form = resolve(
        kernel, inputs, output_shapes, output_dtypes, outputs)
    return TracedCall(in_names, out_names, inputs, output_shapes, output_dtypes, tuple(grid), tuple(threadgroup),
                      template, init_value, outputs, bool(verbose), dict_form)
