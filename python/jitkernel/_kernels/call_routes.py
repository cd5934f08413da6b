"""Where a kernel call on the Python path goes when this layer does not launch it: the registration points that the
layers above fill in, so that the kernel API never imports them.

- ``traced``: records a call whose arrays are being traced (``torch.compile``, ``jax.jit``, ...), or that torch
  autograd must record, as its framework's op: ``traced(kernel, inputs, output_shapes, output_dtypes, grid,
  threadgroup, template, init_value, stream, outputs, verbose, cooperative, cluster)``. ``import jitkernel`` sets it
  to ``_frameworks/traced_call.py``'s ``call`` before any kernel can be called.
- ``precompiled``: records a ``precompiled_cuda_kernel`` call on traced arrays (its arguments in order);
  ``compiling()`` is True while TorchDynamo traces, when that call must not reach a C function. ``import
  jitkernel`` sets them to ``_frameworks/precompiled_call.py``'s ``call`` and ``torch_ops.compiling``.
- ``precompile_session``: the ``jk.precompile`` session running in this process, or None. While one runs, every
  CUDA kernel call comes to the Python path (``_core._calls_to_python``) and ``session.call(kernel, ...)`` compiles
  it instead of launching; ``_fleet/precompile.py`` sets and clears it.
"""
from __future__ import annotations

from .._errors import JitKernelError

traced = None
precompiled = None
precompile_session = None


def compiling() -> bool:
    """False until ``import jitkernel`` puts torch_ops.compiling here."""
    return False


def call_traced(kernel, *call):
    """Hands a traced call to the framework path that ``import jitkernel`` registered."""
    if traced is None:  # only while jitkernel itself is still being imported
        raise JitKernelError("jitkernel is not fully imported: traced kernel calls are not set up yet")
    return traced(kernel, *call)
