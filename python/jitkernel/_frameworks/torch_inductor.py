"""Inductor writes jitkernel's torch ops as direct launches.

In a compiled graph's Python wrapper, Inductor would call ``torch.ops.jitkernel.launch.default(...)``: torch's
dispatcher boxes the arguments (two strings, three lists) into its own values on every call and converts them again
for the ops' C++ implementation, which costs more than the launch. Through Inductor's registry of custom extern
kernel code (``torch._inductor.codegen.custom_extern_kernel_codegen``, torch 2.11 on) the wrapper calls
``extern_kernels.jitkernel_launch(...)`` -- ``_core._torch_graph_launch`` -- with the same arguments instead: the
same call site and checks (cpp/bindings/call/graph_launch.cpp), jitkernel's own exception types, the outputs
from torch's allocator on torch's current stream. Everything else Inductor does with the op (its outputs, their
checks, functionalization of ``launch_into``) is unchanged, and so is the C++ wrapper (AOTInductor), which keeps
the op. A torch without that registry keeps the op call.
"""
from __future__ import annotations

from .. import _core
from . import post_import

_FUNCTION = "jitkernel_launch"  # the name under torch._inductor.select_algorithm.extern_kernels
_OPS = ("launch", "launch_vjp", "launch_into")


def _write_launch(node, writeline) -> None:
    """The wrapper's line for one of the ops: the op's own arguments, to the direct launch."""
    from torch._inductor import ir  # loaded already: Inductor is generating code

    args = ", ".join([*node.codegen_args(), *node.codegen_kwargs()])
    call = f"extern_kernels.{_FUNCTION}({args})"
    writeline(call if isinstance(node.layout, ir.NoneLayout) else f"{node.get_name()} = {call}")


def _register_codegen(registry) -> None:
    for op in _OPS:
        registry.CUSTOM_EXTERN_KERNEL_CODEGEN[f"torch.ops.jitkernel.{op}.default"] = \
            registry.CustomCodegen(python=_write_launch)


def _register_function(select_algorithm) -> None:
    setattr(select_algorithm.extern_kernels, _FUNCTION, _core._torch_graph_launch)


def register() -> None:
    """Called once the ops are defined: both halves wait for the Inductor modules they extend."""
    post_import.when_imported("torch._inductor.codegen.custom_extern_kernel_codegen", _register_codegen)
    post_import.when_imported("torch._inductor.select_algorithm", _register_function)
