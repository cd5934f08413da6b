"""The backward attached with ``kernel.vjp`` as ``jitkernel::launch_vjp``'s autograd formula, for torch.autograd and
for torch.func's transforms (``grad``, ``vjp``, ``jacrev``, and ``vmap`` over them).

Two forms of one formula (``save`` in the forward, ``array_grads`` in the backward). The op's, registered with
``torch.library.register_autograd``, is what torch.autograd, ``torch.compile`` and exported programs use. But the
autograd.Function torch generates for it has no ``setup_context`` staticmethod, which torch.func requires
(pytorch/pytorch#168393, open as of torch 2.13), so a call under a torch.func transform (``route``) applies
``LaunchVjp`` instead, in that style: its arguments carry the arrays one by one (autograd tracks the tensors passed
directly, not those inside a list), its forward runs ``jitkernel::launch``, and ``generate_vmap_rule`` lets
``torch.func.vmap`` batch it: the forward through the op's own rule (``torch_vmap``, once per element), the backward
by vmapping the kernel's vjp, whose kernel calls take the same rule.
"""
from __future__ import annotations

from .._errors import ArgumentError, ArgumentTypeError

_torch_module = None  # torch, once register() ran
_plan_of = None  # torch_ops._plan: (kernel, call) strings -> the decoded call
_function = None  # the autograd.Function, made by register()


def register(torch, plan_of) -> None:
    """Makes the autograd.Function; ``plan_of(kernel, call)`` decodes a call (``torch_ops._plan``)."""
    global _torch_module, _plan_of, _function
    _torch_module, _plan_of = torch, plan_of

    class LaunchVjp(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(kernel, call, ints, floats, *arrays):
            return tuple(torch.ops.jitkernel.launch(kernel, call, list(arrays), ints, floats))

        @staticmethod
        def setup_context(ctx, inputs, output):
            kernel, call, ints, floats, *arrays = inputs
            save(ctx, (kernel, call, arrays, ints, floats), output)

        @staticmethod
        def backward(ctx, *grads):
            return (None, None, None, None, *array_grads(ctx, grads))

    _function = LaunchVjp


def route(torch, kernel, arrays, compiling: bool, writes_outputs: bool) -> str:
    """How a call meets autograd: ``"none"`` (inputs detached, outputs outside autograd, as for a kernel without a
    backward), ``"op"`` (``launch_vjp`` and the op's formula) or ``"function"`` (``LaunchVjp``, for torch.func).
    TorchDynamo traces this (``compiling``): there torch.func's wrappers say requires_grad=False, so under a
    transform the op's formula decides at its own level. Dynamo guards what it reads here on every call: a kernel
    without a backward is answered first (the guard is ``kernel._vjp is None``, so attaching a backward later
    recompiles), and ``torch`` comes from the caller (read here as this module's global as well, Dynamo would check
    in Python, on every call, that the two are one object)."""
    if kernel._vjp is None or not torch.is_grad_enabled():
        return "none"
    if compiling:
        if not torch._C._are_functorch_transforms_active():
            return "op" if any(a.requires_grad for a in arrays) else "none"
        _refuse_compiled_grad(torch, kernel, arrays)
        return "none" if writes_outputs else "op"
    if torch._C._are_functorch_transforms_active():
        return "function" if any(requires_grad(a) for a in arrays) else "none"
    return "op" if any(a.requires_grad for a in arrays) else "none"


def _refuse_compiled_grad(torch, kernel, arrays) -> None:
    """torch.compile over torch.func.grad (or vjp, jacrev) of a kernel with a backward would reach the op's formula,
    which torch.func cannot use: refused while tracing, with what works instead. Grad's wrappers are told from vmap's
    (which work) by the one test TorchDynamo folds, ``is_batchedtensor``; grad over vmap still reaches the op."""
    if not any(torch._C._functorch.is_batchedtensor(a) for a in arrays):
        raise ArgumentTypeError("inputs", f"kernel {kernel.name!r}: torch.func.grad / vjp inside torch.compile is not "
                                          f"supported for a kernel with a backward (torch.library's autograd "
                                          f"formula cannot serve torch.func, pytorch/pytorch#168393). Run the "
                                          f"torch.func transform outside torch.compile, or use torch.autograd "
                                          f"(loss.backward(), torch.autograd.grad) inside it")


def requires_grad(tensor) -> bool:
    """``tensor.requires_grad`` seen through vmap's batched wrappers, which say False even where the tensor they
    wrap (grad's, or a plain one) requires grad."""
    functorch = _torch_module._C._functorch
    while functorch.is_batchedtensor(tensor):
        tensor = functorch.get_unwrapped(tensor)
    return tensor.requires_grad


def apply(kernel, call, arrays, ints, floats) -> list:
    """The call through the autograd.Function, for calls under a torch.func transform."""
    return list(_function.apply(kernel, call, ints, floats, *arrays))


# The op's formula (torch.library.register_autograd: inputs and output as the op has them).

def setup_context(ctx, inputs, output):
    save(ctx, inputs, output)


def backward(ctx, grads):
    # torch.library matches the returned structure with the inputs': a list of non-tensors is one leaf (None), an
    # empty list a list.
    return (None, None, array_grads(ctx, grads), None if ctx.ints else [], None if ctx.floats else [])


# Shared by both.

def save(ctx, inputs, output) -> None:
    kernel, call, arrays, ints, floats = inputs
    ctx.spec, ctx.call, ctx.ints, ctx.floats, ctx.n_arrays = kernel, call, list(ints), list(floats), len(arrays)
    ctx.save_for_backward(*arrays, *output)


def array_grads(ctx, grads) -> list:
    """The kernel's backward run on what ``save`` kept: the tensor inputs' grads."""
    plan = _plan_of(ctx.spec, ctx.call)
    vjp = plan.kernel._vjp
    r = plan.record
    if vjp is None:
        raise ArgumentError("kernel", f"kernel {plan.kernel.name!r} has no backward: attach one with "
                                      f"@kernel.vjp (a function of primals, outputs, cotangents)")
    saved = ctx.saved_tensors
    arrays, outputs = list(saved[:ctx.n_arrays]), list(saved[ctx.n_arrays:])
    primals = plan.inputs(arrays, ctx.ints, ctx.floats)
    cotangents = [_torch_module.zeros_like(o) if g is None else g for g, o in zip(grads, outputs)]
    if r.dict_form:
        primals, outputs, cotangents = (dict(zip(names, values)) for names, values in (
            (r.input_names, primals), (r.output_names, outputs), (r.output_names, cotangents)))
    return _array_grads(plan, vjp(primals, outputs, cotangents))


def _array_grads(plan, result) -> list:
    """The vjp's result (one entry per input, or a dict in the dict form) reduced to the tensor inputs' grads."""
    r = plan.record
    if isinstance(result, dict):
        result = [result.get(name) for name in r.input_names]
    result = list(result) if isinstance(result, (list, tuple)) else None
    if result is None or len(result) != len(r.inputs):
        raise ArgumentError("vjp", f"the backward of kernel {plan.kernel.name!r} must return one cotangent per "
                                   f"input ({len(r.inputs)}: {', '.join(r.input_names)}), None for scalars")
    return [g for g, entry in zip(result, r.inputs) if entry[0] == "array"]
