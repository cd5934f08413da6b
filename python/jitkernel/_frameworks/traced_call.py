"""Kernel calls that a framework records instead of running: the path off the eager one.

A ``CudaKernel`` call runs in C++ (cpp/bindings/objects/kernel_object.cpp) unless an array is being traced -- a torch.Tensor
subclass such as FakeTensor or FunctionalTensor (``torch.compile``, ``torch.export``, ``make_fx``), a JAX tracer
(``jax.jit``, ``jax.grad``, ``vmap``) -- or the kernel has a backward (``kernel.vjp``) and torch autograd must record
the call. Then the C++ call slot hands the call to ``_call_traced``, which comes here (``call``, registered by
``import jitkernel`` as the kernel layer's ``call_routes.traced``): torch calls become the ``jitkernel::launch`` op
(``torch_ops``), JAX calls an XLA FFI custom call (``jax_call``).

``torch.compile`` never enters the C++ call slot: TorchDynamo reads ``type(kernel).__call__`` to trace a call, and
finds ``dynamo_call`` there (``expose_to_dynamo``), while CPython keeps calling the C slot. So this module's torch
path is written for TorchDynamo to trace: plain Python on the arguments, no C calls before the op.
"""
from __future__ import annotations

import sys

from .. import _core
from .._errors import ArgumentTypeError
from . import jax_call
from .call_form import list_form
from .._kernels.cuda_kernel import call_signature
from .._kernels.front import show_call
# Functions, not their module: TorchDynamo reaching one module both as a global of its own functions and as an
# attribute of this one guards that the two are the same object in Python, on every call.
from .torch_ops import call as torch_call
from .torch_ops import compiling


def _is_jax_tracer(value) -> bool:
    jax_core = sys.modules.get("jax.core")
    return jax_core is not None and isinstance(value, jax_core.Tracer)


def reject_launch_options(cooperative, cluster) -> None:
    """``cooperative=`` / ``cluster=`` run eagerly only: the torch op and the XLA custom call launch plainly."""
    for name, value in (("cooperative", cooperative), ("cluster", cluster)):
        if value is not None and value is not False:
            raise ArgumentTypeError(name, f"{name}= is not supported when traced (torch.compile, autograd with a "
                                          f"backward, jax.jit): call the kernel eagerly with concrete arrays")


def call(kernel, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream, outputs,
         verbose, cooperative=None, cluster=None):
    """A call with traced arrays (or one autograd must record), from the kernel's C++ call slot."""
    reject_launch_options(cooperative, cluster)
    if kernel._factory != "cuda_kernel":
        raise ArgumentTypeError("inputs", f"{kernel._factory} kernels run eagerly only: they cannot be traced by "
                                          f"torch.compile, jax.jit or autograd (pass concrete arrays)")
    values = inputs.values() if isinstance(inputs, dict) else inputs
    if any(_is_jax_tracer(v) for v in values) or any(
            _is_jax_tracer(v) for v in (outputs.values() if isinstance(outputs, dict) else outputs or ())):
        if stream is not None:
            raise ArgumentTypeError("stream", "a call traced by JAX runs on XLA's stream; omit stream=")
        return jax_call.call(kernel, list_form(kernel, inputs, output_shapes, output_dtypes, grid, threadgroup,
                                               template, init_value, outputs, verbose))
    return torch_call(kernel, inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes,
                      grid=grid, threadgroup=threadgroup, template=template, init_value=init_value,
                      stream=stream, outputs=outputs, verbose=verbose)


def dynamo_call(self, *args, **kwargs):
    # ``type(kernel).__call__`` as TorchDynamo reads it (see the module docstring); help() shows the call's own
    # keywords and docstring (cuda_kernel.call_signature, through front.show_call). CPython calls the C slot
    # instead, except for a user's subclass of ``CudaKernel``, where this runs eagerly and hands over to it. A
    # call with bad keywords goes to the C slot too, which raises the eager call's error.
    #
    # TorchDynamo guards every global this reads, on every call of the compiled function: the C call slot's keyword
    # table (cpp/bindings/call/call_args.hpp; ``_core._call_keywords``, ``_call_required``, ``_call_defaults``, all
    # None but verbose's False) is therefore written out here as literals, which its code object's guard covers
    # (tests/cpu/test_dynamo_guards.py checks them against the table), and the only globals read are functions.
    if not args and compiling():
        for name in kwargs:
            if name not in ("inputs", "output_shapes", "output_dtypes", "grid", "threadgroup", "template",
                            "init_value", "stream", "outputs", "verbose", "cooperative", "cluster"):
                break
        else:
            if "inputs" in kwargs and "grid" in kwargs and "threadgroup" in kwargs:
                reject_launch_options(kwargs.get("cooperative"), kwargs.get("cluster"))
                return torch_call(self, inputs=kwargs["inputs"], output_shapes=kwargs.get("output_shapes"),
                                  output_dtypes=kwargs.get("output_dtypes"), grid=kwargs["grid"],
                                  threadgroup=kwargs["threadgroup"], template=kwargs.get("template"),
                                  init_value=kwargs.get("init_value"), stream=kwargs.get("stream"),
                                  outputs=kwargs.get("outputs"), verbose=kwargs.get("verbose", False))
    return _core.KernelBase.__call__(self, *args, **kwargs)


def expose_to_dynamo(cls) -> None:
    """Puts ``dynamo_call`` in ``cls.__dict__`` as ``__call__`` without changing the C call slot that CPython
    uses; help() shows the call's keywords (front.show_call)."""
    show_call(cls, dynamo_call, call_signature)
