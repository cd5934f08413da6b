"""``torch.func.vmap`` over a kernel call: the ops' batching rules (``torch.library.register_vmap``).

A kernel sees one element of the batch, as under JAX's ``vmap_method="sequential"`` (``jax_call``): the rule
unbinds each batched tensor along its batch dimension, runs the op once per element (in order, each with the
unbatched shapes the call recorded: the ``ints`` the user's call computed inside ``vmap`` are already per
element), and stacks each output along a new dimension 0. A kernel's backward is a function of kernel calls,
batched by the same rules when torch.func vmaps it (``torch_autograd``: ``vmap(grad(f))``, ``grad(vmap(f))``,
``jacrev``); ``launch_vjp`` has its rule for programs torch.compile records. ``launch_into`` (``outputs=``)
writes element i into slice i of each output, which must therefore be batched itself (an unbatched output
written by every element would keep only the last one: refused).

Registered by ``torch_ops.register``; ``torch.library.register_vmap`` exists in every torch that has the
``register_fake`` the ops need (2.4 and later).
"""
from __future__ import annotations

from .._errors import ArgumentError

_torch_module = None  # torch, once register() ran (a module global: no sys.modules lookups in traced code)
_element_outputs = None  # torch_ops._launch_fake: one element's outputs, allocated


def register(torch, lib, element_outputs) -> None:
    """Registers the batching rules of ``jitkernel::launch``, ``launch_vjp`` and ``launch_into`` in ``lib``;
    ``element_outputs`` takes the op's arguments and allocates one element's outputs (``torch_ops._launch_fake``)."""
    global _torch_module, _element_outputs
    _torch_module, _element_outputs = torch, element_outputs
    for name in ("launch", "launch_vjp"):
        torch.library.register_vmap("jitkernel::" + name, _launch_rule(getattr(torch.ops.jitkernel, name)),
                                    lib=lib)
    torch.library.register_vmap("jitkernel::launch_into", _launch_into_rule, lib=lib)


def _elements(arrays, dims, batch_size: int) -> list:
    """Per batch element, the op's tensor list: batched tensors unbound along their batch dimension (views),
    unbatched ones as they are."""
    columns = [a.unbind(d) if d is not None else (a,) * batch_size for a, d in zip(arrays, dims)]
    return [list(row) for row in zip(*columns)] if columns else [[] for _ in range(batch_size)]


def _launch_rule(op):
    def rule(info, in_dims, kernel, call, arrays, ints, floats):
        torch = _torch_module
        elements = _elements(arrays, in_dims[2], info.batch_size)
        if not elements:  # an empty batch: no launch, outputs of the recorded per-element shapes
            return [o.new_empty((0, *o.shape)) for o in _element_outputs(kernel, call, arrays, ints, floats)], 0
        per_element = [op(kernel, call, element, ints, floats) for element in elements]
        return [torch.stack(list(outs)) for outs in zip(*per_element)], 0
    return rule


def _launch_into_rule(info, in_dims, kernel, call, arrays, ints, floats, outputs):
    unbatched = [i for i, d in enumerate(in_dims[5]) if d is None]
    if unbatched:
        raise ArgumentError("outputs", f"under torch.func.vmap every outputs= tensor must be batched: each batch "
                                       f"element writes its own slice, and output {unbatched[0]} has no batch "
                                       f"dimension (every element would write all of it). Pass it into the "
                                       f"vmapped function as a batched argument, or omit outputs=")
    op = _torch_module.ops.jitkernel.launch_into
    for element, outs in zip(_elements(arrays, in_dims[2], info.batch_size),
                             _elements(outputs, in_dims[5], info.batch_size)):
        op(kernel, call, element, ints, floats, outs)
    return None, None
