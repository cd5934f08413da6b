"""A kernel call on JAX tracers: an XLA FFI custom call whose handler lives in jitkernel's C++ core.

``call(kernel, traced)`` puts the call into the JAX program being traced (``jax.jit``, ``shard_map``, ``vmap``,
``jax.grad``) as ``jax.ffi.ffi_call`` of one target registered for CUDA (cpp/jitkernel/xla/ffi_handler.hpp).
Everything the handler needs to rebuild the kernel in another process (a program served from JAX's persistent
compilation cache) travels in the custom call's attributes: ``jk_call``, the serialised call record (the kernel with
its compile options, the inputs' dtypes and shapes, scalar values, template arguments, geometry, init_value; the
one format of cpp/jitkernel/engine/call_record.hpp) and ``jk_key``, its 64-bit key. While tracing, the kernel is generated, compiled and loaded on the local GPUs, so
codegen and compile errors are raised here with jitkernel's types and XLA's stages only look it up.

- Array inputs are the custom call's operands; Python/NumPy scalars are static (part of the attributes).
- ``outputs=``: an output given as an array that is also an input aliases that input (``input_output_aliases``);
  one that is not an input is passed as an extra operand aliased to that output. The call returns new arrays
  (JAX is functional); under ``jax.jit(..., donate_argnums=...)`` XLA writes into the donated buffer.
- ``vmap``: ``vmap_method="sequential"``: the kernel runs once per batch element (a loop in the program).
- Gradients: ``kernel.vjp(fn)`` wraps the call in ``jax.custom_vjp``; ``fn(primals, outputs, cotangents)`` (lists,
  or dicts keyed by name in the dict form) returns one cotangent per input (None for scalars or zero).
- ``shard_map`` (check_vma on): every value's type carries the manual mesh axes it varies over (its vma), and a
  custom call has no vma rule of its own. So the array operands are first made varying over the union of their
  axes (``pcast(..., to="varying")``, a no-op at run time), the results are typed varying over that union, and the
  backward's cotangents are brought to it. JAX's AD transposes that pcast of a replicated operand into a psum: the
  gradient of a replicated weight is the sum of the per-shard contributions, as for any jnp op.
- Lowering for a platform other than CUDA raises ArgumentError naming the platform.

The target is registered once jax is imported (``post_import.when_imported``, set up by ``import jitkernel``, which
imports no jax), so a program JAX loads from its persistent cache finds it; ``register()`` is idempotent.
"""
from __future__ import annotations

import operator
import threading

from .. import _core
from .._dtypes import dtype as jk_dtype
from .._errors import ArgumentError

TARGET = "jitkernel_cuda_kernel"

_lock = threading.Lock()
_registered = False
_guard = None  # the platform-check primitive, made on first use


def register(jax_module=None) -> None:
    """Registers the FFI target with JAX for the CUDA platform (once per process; the argument is unused)."""
    global _registered
    with _lock:
        if _registered:
            return
        import jax  # JAX is optional: `import jitkernel` never imports it

        jax.ffi.register_ffi_target(TARGET, _core.xla_handlers(), platform="CUDA", api_version=1)
        _registered = True


def jax_export_disabled_checks() -> list:
    """What ``jax.export.export(..., disabled_checks=...)`` needs for a program that calls jitkernel kernels.

    jax.export refuses custom calls whose targets JAX itself does not vouch for. jitkernel's target keeps its own
    compatibility: every call carries its kernel and call in the ``jk_call`` attribute, in a versioned format
    (``"jitkernel_record": N``), and a jitkernel that reads another format refuses the call with an error naming
    both versions (never a wrong kernel). The process that deserialises and runs the program must
    ``import jitkernel`` (which registers the target) and have a CUDA GPU::

        exported = jax.export.export(jax.jit(f), disabled_checks=jk.jax_export_disabled_checks())(x)
        blob = exported.serialize()
        ...
        jax.export.deserialize(blob).call(x)   # in a process that imported jitkernel

    Shapes must be concrete (a symbolic dimension is an ArgumentError): kernels are generated and compiled per
    shape. Serialising needs the ``flatbuffers`` package, as for any jax.export program.
    """
    import jax  # JAX is optional: `import jitkernel` never imports it

    register()
    return [jax.export.DisabledSafetyCheck.custom_call(TARGET)]


# ---- varying manual axes (shard_map's check_vma) ---------------------------------------------------------------
# JAX 0.6-0.9 spell a value's vma ``jax.typeof(x).vma`` and make a value varying with ``jax.lax.pvary``; 0.10 and
# later spell it ``jax.typeof(x).mat.varying`` and ``jax.lax.pcast(x, axes, to="varying")``. Older JAX has neither
# and no vma: every helper here is then the identity.


def vma_of(x) -> frozenset:
    """The manual mesh axes `x` varies over (empty outside shard_map, with check_vma off, or on old JAX)."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    typeof = getattr(jax, "typeof", None)
    if typeof is None:
        return frozenset()
    try:
        aval = typeof(x)
    except TypeError:
        return frozenset()
    mat = getattr(aval, "mat", None)
    if mat is not None:
        return frozenset(getattr(mat, "varying", ()))
    return frozenset(getattr(aval, "vma", ()))


def _sorted_axes(axes) -> tuple:
    return tuple(sorted(axes, key=str))


def pvary(x, axes):
    """`x` made varying over `axes` too (a no-op at run time; its transpose is a psum over them)."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    missing = _sorted_axes(frozenset(axes) - vma_of(x))
    if not missing:
        return x
    pcast = getattr(jax.lax, "pcast", None)
    if pcast is not None:
        return pcast(x, missing, to="varying")
    return jax.lax.pvary(x, missing)


def _typed_like(result, operand):
    """A result's type under shard_map: `operand`'s (its mesh and vma, which every operand shares) with the
    result's shape and dtype, replicated within the shard."""
    import jax  # JAX is optional: `import jitkernel` never imports it
    from jax.sharding import NamedSharding, PartitionSpec

    aval = jax.typeof(operand)
    return aval.update(shape=tuple(result.shape), dtype=result.dtype, weak_type=False,
                       sharding=NamedSharding(aval.sharding.mesh, PartitionSpec(*[None] * len(result.shape))))


def _to_vma(kernel, g, vma: frozenset, pos: int):
    """A cotangent brought to its primal's vma: varying over the axes it lacks; an axis the primal does not vary
    over cannot come from the primals, outputs and cotangents the backward was given (all typed `vma`)."""
    extra = vma_of(g) - vma
    if extra:
        raise ArgumentError("vjp", f"kernel '{kernel.name}': cotangent {pos} varies over mesh axes "
                                   f"{_sorted_axes(extra)} that input {pos} does not vary over (the backward used "
                                   f"a value from outside its arguments that differs between shards)")
    return pvary(g, vma)


def _is_scalar(value) -> bool:
    import numpy as np  # imported on use: `import jitkernel` imports no NumPy (JAX has imported it here)

    return isinstance(value, (bool, int, float, complex, np.generic))


class _Plan:
    """A traced call as the custom call takes it. A plain class, not a dataclass: this module is imported by
    ``import jitkernel``, and making a dataclass costs more import time than the rest of the module."""

    __slots__ = ("operands", "array_positions", "aliases", "result_avals", "text", "key", "vma")

    def __init__(self, operands: list, array_positions: list, aliases: dict, result_avals: list, text: str,
                 key: int):
        self.operands = operands  # array inputs, then outputs= arrays that are not inputs
        self.array_positions = array_positions  # index in `inputs` of each array input
        self.aliases = aliases  # operand index -> output index
        self.result_avals = result_avals
        self.text = text
        self.key = key
        self.vma: frozenset = frozenset()  # shard_map: the manual axes the operands (and so the results) vary over

    @property
    def key_attr(self):
        """jk_key as an int64 attribute (MLIR's Python binding takes no uint64 above 2**63; same bits)."""
        import numpy as np  # imported on use: `import jitkernel` imports no NumPy (JAX has imported it here)

        return np.array(self.key, dtype=np.uint64).view(np.int64)[()]


def _static_dims(values, argument: str, what: str) -> tuple:
    """`values` (a shape, grid or threadgroup) as ints; a symbolic dimension (jax.export's shape polymorphism)
    is an ArgumentError: a kernel is generated, compiled and launched for concrete sizes."""
    out = []
    for d in values:
        try:
            out.append(operator.index(d))
        except Exception:  # jax.export's symbolic dimensions raise their own error class here
            raise ArgumentError(argument, f"{what} is {tuple(values)}, with a symbolic dimension {d!r}: jitkernel "
                                          "kernels are specialised to concrete sizes; export one program per shape "
                                          "(jax.export with concrete jax.ShapeDtypeStruct shapes)") from None
    return tuple(out)


def _output_meta(call):
    """(shapes, jk dtypes) of the outputs: as given, else from the outputs= arrays."""
    shapes, dtypes = call.output_shapes, call.output_dtypes
    if not shapes and call.outputs is not None:
        shapes = [tuple(o.shape) for o in call.outputs]
    if not dtypes and call.outputs is not None:
        dtypes = [o.dtype for o in call.outputs]
    if shapes is None or dtypes is None:
        raise ArgumentError("output_shapes", "required unless outputs= gives the arrays")
    names = list(call.output_names)
    return ([_static_dims(s, "output_shapes", f"the shape of output '{names[j] if j < len(names) else j}'")
             for j, s in enumerate(shapes)], [jk_dtype(d) for d in dtypes])


def _aliases(call, arrays: list):
    """Operand -> output aliases for outputs=, and the outputs= arrays that are not inputs."""
    aliases: dict = {}
    extra: list = []
    for j, out in enumerate(call.outputs or ()):
        index = next((k for k, a in enumerate(arrays) if a is out), None)
        if index is None:
            index = len(arrays) + len(extra)
            extra.append(out)
        if index in aliases:
            raise ArgumentError("outputs", f"outputs[{j}] is the same array as outputs[{aliases[index]}]; each "
                                           "output needs its own buffer")
        aliases[index] = j
    return aliases, extra


def _local_cuda_devices() -> list:
    """CUDA ordinals of the GPUs this JAX process uses (empty without any)."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    if not _core.cuda_available():
        return []
    try:
        devices = jax.local_devices(backend="gpu")
    except RuntimeError:
        return []
    return [d.local_hardware_id if d.local_hardware_id is not None else d.id for d in devices]


def _plan(kernel, call) -> _Plan:
    import jax  # JAX is optional: `import jitkernel` never imports it
    import jax.numpy as jnp

    arrays, positions, described = [], [], []
    for i, x in enumerate(call.inputs):
        if _is_scalar(x):
            described.append(("scalar", x))
        else:
            positions.append(i)
            arrays.append(x)
            described.append(("array", x.dtype, _static_dims(x.shape, "inputs", f"the shape of input "
                                                                          f"'{call.input_names[i]}'")))
    shapes, dtypes = _output_meta(call)
    _static_dims(call.grid, "grid", "grid")
    _static_dims(call.threadgroup, "threadgroup", "threadgroup")
    aliases, extra = _aliases(call, arrays)
    widen_int = getattr(kernel, "_widen_int", True)  # False for a precompiled entry: a Python int is an int32
    call_text = _core.encode_call(list(call.input_names), list(call.output_names), described,
                                  list(zip(dtypes, shapes)), call.template, call.grid, call.threadgroup,
                                  call.init_value, False, False, len(extra), widen_int)
    text = _core.encode_record(kernel._spec, call_text)
    key = _core.xla_call_key(text)
    _core.xla_prepare(text, key, _local_cuda_devices())
    if call.verbose:
        _print_source(kernel, call, described, dtypes)
    avals = [jax.ShapeDtypeStruct(s, jnp.dtype(d.name)) for s, d in zip(shapes, dtypes)]
    return _Plan(arrays + extra, positions, aliases, avals, text, key)


def _print_source(kernel, call, described, dtypes) -> None:
    """verbose=True: the generated source, from zero-stride stand-ins of the traced shapes (no memory)."""
    import numpy as np  # imported on use: `import jitkernel` imports no NumPy (JAX has imported it here)

    stand_ins = []
    for item in described:
        if item[0] == "scalar":
            stand_ins.append(item[1])
        else:
            zero = np.zeros((), dtype=item[1])
            stand_ins.append(np.lib.stride_tricks.as_strided(zero, item[2], [0] * len(item[2])))
    impl = kernel._impl if kernel._impl is not None else kernel._new_engine(tuple(call.input_names),
                                                                            tuple(call.output_names))
    print(impl._source(stand_ins, dtypes, call.template))


def _guard_primitive():
    """An identity primitive whose lowering refuses every platform but CUDA, naming it."""
    global _guard
    if _guard is not None:
        return _guard
    from jax.extend.core import Primitive  # JAX is optional: `import jitkernel` never imports it
    from jax.interpreters import batching, mlir

    guard = Primitive("jitkernel_cuda_only")

    def impl(x):
        for device in getattr(x, "devices", lambda: ())():
            if device.platform not in ("gpu", "cuda"):
                raise _not_cuda(device.platform)
        return x

    def refuse(ctx, x):
        raise _not_cuda(", ".join(ctx.module_context.platforms))

    guard.def_impl(impl)
    guard.def_abstract_eval(lambda x: x)
    mlir.register_lowering(guard, lambda ctx, x: [x], platform="cuda")
    mlir.register_lowering(guard, refuse)
    batching.primitive_batchers[guard] = lambda args, dims: (guard.bind(*args), dims[0])
    _guard = guard
    return guard


def _not_cuda(platform: str) -> ArgumentError:
    return ArgumentError("inputs", f"jitkernel CUDA kernels run only on CUDA GPUs; this JAX program is being "
                                   f"lowered for platform '{platform}' (put the inputs on a CUDA device)")


def _runner(plan: _Plan):
    import jax  # JAX is optional: `import jitkernel` never imports it

    guard = _guard_primitive()

    def run(*operands):
        avals = [_typed_like(a, operands[0]) for a in plan.result_avals] if plan.vma else plan.result_avals
        ffi = jax.ffi.ffi_call(TARGET, avals, vmap_method="sequential", input_output_aliases=plan.aliases or None)
        operands = list(operands)
        if operands:
            operands[0] = guard.bind(operands[0])
        results = list(ffi(*operands, jk_call=plan.text, jk_key=plan.key_attr))
        if not operands:
            results[0] = guard.bind(results[0])
        return tuple(results)

    return run


def _differentiable(kernel, call, plan: _Plan, run):
    """`run` under jax.custom_vjp with the kernel's backward; differentiating without one raises."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    backward = getattr(kernel, "_vjp", None)
    n_arrays = len(plan.array_positions)

    @jax.custom_vjp
    def f(*operands):
        return run(*operands)

    def fwd(*operands):
        if backward is None:
            raise ArgumentError("vjp", f"kernel '{kernel.name}' is being differentiated but has no backward: "
                                       "attach one with kernel.vjp(fn), fn(primals, outputs, cotangents) -> "
                                       "one cotangent per input")
        outs = run(*operands)
        return outs, (operands, outs)

    def bwd(residuals, cotangents):
        operands, outs = residuals
        primals = list(call.inputs)
        for k, pos in enumerate(plan.array_positions):
            primals[pos] = operands[k]
        if call.dict_form:  # the backward sees the call's form: dicts keyed by name
            grads = backward(dict(zip(call.input_names, primals)), dict(zip(call.output_names, outs)),
                             dict(zip(call.output_names, cotangents)))
            if isinstance(grads, dict):
                grads = [grads.get(name) for name in call.input_names]
        else:
            grads = backward(primals, list(outs), list(cotangents))
        return _input_cotangents(kernel, grads, primals, plan, operands[n_arrays:])

    f.defvjp(fwd, bwd)
    return f


def _input_cotangents(kernel, grads, primals, plan: _Plan, extra) -> tuple:
    """The backward's answer checked and laid out as the operands' cotangents."""
    if grads is None or len(grads) != len(primals):
        got = "None" if grads is None else f"{len(grads)} entries"
        raise ArgumentError("vjp", f"kernel '{kernel.name}': the backward must return one cotangent per input "
                                   f"({len(primals)}), got {got}")
    result = []
    for pos in plan.array_positions:
        g, x = grads[pos], primals[pos]
        if g is not None and tuple(g.shape) != tuple(x.shape):
            raise ArgumentError("vjp", f"kernel '{kernel.name}': cotangent {pos} has shape {tuple(g.shape)}, "
                                       f"input {pos} has shape {tuple(x.shape)}")
        result.append(None if g is None else _to_vma(kernel, g.astype(x.dtype), plan.vma, pos))
    return tuple(result) + (None,) * len(extra)


def call(kernel, traced):
    """Runs `kernel` as described by `traced` (a TracedCall) inside the JAX program being traced."""
    register()
    plan = _plan(kernel, traced)
    # Under shard_map the custom call needs operands of one vma; pcast outside the custom_vjp, so that JAX's AD
    # turns it into the psum that a replicated operand's cotangent needs.
    plan.vma = frozenset().union(*(vma_of(x) for x in plan.operands))
    operands = [pvary(x, plan.vma) for x in plan.operands]
    outs = list(_differentiable(kernel, traced, plan, _runner(plan))(*operands))
    if traced.dict_form:
        return dict(zip(traced.output_names, outs))
    return outs
