"""A ``jk.sharded`` function called with JAX arrays: under ``jax.jit`` with sharded inputs, XLA runs it per shard.

A kernel call inside a JAX program is an XLA custom call that XLA knows nothing about, so under ``jax.jit`` with
sharded inputs (and no ``shard_map``) XLA must give it whole arrays: it all-gathers the operands and every device
runs the full kernel. ``@jk.sharded(rule)`` declares what the function may run on, and here it becomes a
``jax.experimental.custom_partitioning`` call:

- Shardy (the default partitioner from JAX 0.7 on) reads the rule as a sharding rule (``sharding_rule=`` built from
  the rule's factors, with ``need_replication`` for the factors that must stay whole); GSPMD (older JAX) asks
  ``infer_sharding_from_operands``, which applies the same rule.
- XLA's SPMD partitioner then calls ``partition``, which picks the mesh axes of each factor from the operands'
  shardings, and traces the user's function on the *local* shard shapes: the function computes its grid and output
  shapes from what it receives, and its kernels are compiled for those shapes.
- A factor may be split only where every result keeps it (else a shard would hold a partial result) and where its
  size divides evenly (XLA would pad the shard, and a kernel would read the padding); anything else is gathered
  along that dimension, which is correct and costs the gather.

Gradients: ``custom_partitioning`` has no differentiation rule, so the call is wrapped in ``jax.custom_vjp`` whose
backward is itself partitioned by the same rule: each shard runs the vjp of the function (the kernels' own
``kernel.vjp`` backwards) on its local pieces, and the cotangent of an argument that lacks a split factor (a weight
replicated across the rows that are split) is summed over that factor's mesh axes inside the partitioned backward.

Inside ``shard_map`` (manual axes: the arrays already are the shards) and on unsharded concrete arrays the function
is simply called; concrete arrays sharded over several devices go through ``jax.jit`` and take the path above.
Under ``vmap`` (custom_partitioning has no batching rule) the function is vmapped as it is, on whole arrays.
"""
from __future__ import annotations

import math

from .._errors import ArgumentTypeError
from .jax_call import vma_of
from .sharding_rules import Factors, argument_name as _argument_name, resolve


def _is_array(value) -> bool:
    import jax  # JAX is optional: `import jitkernel` never imports it

    return isinstance(value, (jax.Array, jax.core.Tracer))


def _inside_shard_map(operands) -> bool:
    """True inside shard_map (or another manual-axes context): the operands are the local shards."""
    if any(vma_of(x) for x in operands):
        return True
    try:
        from jax.sharding import get_abstract_mesh  # JAX is optional: `import jitkernel` never imports it
    except ImportError:
        return False
    mesh = get_abstract_mesh()
    return bool(getattr(mesh, "manual_axes", ()))


def _spans_devices(x) -> bool:
    sharding = getattr(x, "sharding", None)
    return sharding is not None and len(sharding.device_set) > 1


def call(sharded, args: tuple, kwargs: dict):
    """Runs ``sharded.fn`` on JAX arrays: per shard under jax.jit (custom_partitioning), else a plain call."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    positions = [i for i, a in enumerate(args) if _is_array(a)]
    operands = [args[i] for i in positions]
    _check_static(sharded, args, kwargs, set(positions))
    if _inside_shard_map(operands):
        return sharded.fn(*args, **kwargs)
    if not any(isinstance(x, jax.core.Tracer) for x in operands):
        if not any(_spans_devices(x) for x in operands):
            return sharded.fn(*args, **kwargs)
        # Concrete arrays over several devices: the same program as under jax.jit.
        return jax.jit(lambda *ops: _partitioned(sharded, args, kwargs, positions, ops))(*operands)
    return _partitioned(sharded, args, kwargs, positions, operands)


def _check_static(sharded, args, kwargs, positions: set) -> None:
    """Arrays must be positional arguments: anything else is static, closed over by the partitioned function."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    def has_array(value):
        return any(_is_array(leaf) for leaf in jax.tree_util.tree_leaves(value))

    for i, a in enumerate(args):
        if i not in positions and has_array(a):
            raise ArgumentTypeError("inputs", f"{_argument_name(sharded, i)} of a jk.sharded function holds JAX "
                                              f"arrays inside a {type(a).__name__}; pass each array as a positional "
                                              f"argument of its own (the rule names one entry per array)")
    for name, value in kwargs.items():
        if has_array(value):
            raise ArgumentTypeError(name, "a jk.sharded function takes its arrays as positional arguments (the "
                                          "rule names one entry per positional array); keyword arguments are "
                                          "static")


def _flat_outputs(result):
    """(list of arrays, how to rebuild the function's result)."""
    import jax  # JAX is optional: `import jitkernel` never imports it

    if isinstance(result, (jax.Array, jax.core.Tracer, jax.ShapeDtypeStruct)):
        return [result], lambda outs: outs[0]
    if isinstance(result, (tuple, list)) and all(
            isinstance(o, (jax.Array, jax.core.Tracer, jax.ShapeDtypeStruct)) for o in result):
        return list(result), lambda outs: type(result)(outs)
    raise ArgumentTypeError("outputs", f"a jk.sharded function returns an array or a tuple/list of arrays, got "
                                       f"{type(result).__name__}")


# ---- the rule applied to shardings --------------------------------------------------------------------------


class _Layout:
    """The rule for one call, with the factors XLA may split: those every result has, not kept whole."""

    def __init__(self, factors: Factors, shapes: list):
        self.factors = factors
        everywhere = None
        for dims in factors.outputs:
            everywhere = set(dims) if everywhere is None else everywhere & set(dims)
        every_factor = {f for dims in factors.inputs + factors.outputs for f in dims}
        self.splittable = (everywhere or set()) - set(factors.replicated)
        self.kept_whole = tuple(sorted(every_factor - self.splittable))
        self.sizes = {}
        for dims, shape in zip(factors.inputs, shapes):
            for f, n in zip(dims, shape):
                self.sizes.setdefault(f, int(n))

    def axes_by_factor(self, mesh, entries) -> dict:
        """factor -> tuple of mesh axes splitting it, from (factor dims, sharding) pairs of the operands: each
        factor takes the first split it is given, if no other factor already uses those mesh axes and its size
        divides evenly."""
        chosen, used = {}, set()
        for dims, sharding in entries:
            spec = tuple(getattr(sharding, "spec", ()) or ())
            for d, f in enumerate(dims):
                entry = spec[d] if d < len(spec) else None
                if f in chosen or entry is None or f not in self.splittable:
                    continue
                axes = tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)
                shards = math.prod(int(mesh.shape[a]) for a in axes)
                if used & set(axes) or (f in self.sizes and self.sizes[f] % shards):
                    continue
                chosen[f] = axes
                used |= set(axes)
        return chosen

    @staticmethod
    def sharding(mesh, dims, axes: dict):
        from jax.sharding import NamedSharding, PartitionSpec  # JAX is optional: `import jitkernel` never imports it

        spec = [axes.get(f) for f in dims]
        return NamedSharding(mesh, PartitionSpec(*[a[0] if a and len(a) == 1 else a for a in spec]))

    def sdy_rule(self, inputs, outputs):
        # JAX is optional: `import jitkernel` never imports it
        from jax.experimental.custom_partitioning import ArrayMapping, SdyShardingRule

        mapped = lambda entries: tuple(ArrayMapping(*dims) for dims in entries)  # noqa: E731
        used = {f for dims in inputs + outputs for f in dims}
        return SdyShardingRule(mapped(inputs), mapped(outputs),
                               need_replication_factors=tuple(f for f in self.kept_whole if f in used))


def _named(sharding) -> bool:
    return hasattr(sharding, "spec") and hasattr(sharding, "mesh")


def _replicated_like(sharding):
    """A fully replicated sharding on the devices of one that is not a NamedSharding (no mesh to name axes)."""
    from jax._src.sharding_impls import GSPMDSharding  # JAX is optional: `import jitkernel` never imports it

    return GSPMDSharding.get_replicated(sharding._device_assignment)


def _partition_callbacks(layout: _Layout, in_dims, out_dims, local_fn, reduce_over=None):
    """(partition, infer_sharding_from_operands) for a call whose operands have factors `in_dims` and results
    `out_dims`. `reduce_over[k]`: the factors whose split makes result k a partial sum (the backward)."""

    def plan(mesh, arg_shapes):
        if not all(_named(a.sharding) for a in arg_shapes):
            return None
        return layout.axes_by_factor(mesh, [(d, a.sharding) for d, a in zip(in_dims, arg_shapes)])

    def infer(mesh, arg_shapes, result_shape):
        axes = plan(mesh, arg_shapes)
        if axes is None:
            return tuple(_replicated_like(arg_shapes[0].sharding) for _ in out_dims)
        return tuple(layout.sharding(mesh, d, axes) for d in out_dims)

    def partition(mesh, arg_shapes, result_shape):
        axes = plan(mesh, arg_shapes)
        if axes is None:
            replicated = _replicated_like(arg_shapes[0].sharding)
            return mesh, local_fn, tuple(replicated for _ in out_dims), tuple(replicated for _ in in_dims)
        arg_shardings = tuple(layout.sharding(mesh, d, axes) for d in in_dims)
        result_shardings = tuple(layout.sharding(mesh, d, axes) for d in out_dims)
        if not reduce_over:
            return mesh, local_fn, result_shardings, arg_shardings
        sums = [tuple(a for f in factors if f in axes for a in axes[f]) for factors in reduce_over]

        def local_and_sum(*ops):
            import jax  # JAX is optional: `import jitkernel` never imports it

            outs = local_fn(*ops)
            return tuple(jax.lax.psum(o, s) if s and o is not None else o for o, s in zip(outs, sums))

        return mesh, local_and_sum, result_shardings, arg_shardings

    return partition, infer


def _custom_partitioned(fn, layout: _Layout, in_dims, out_dims, reduce_over=None):
    """`fn` (operands -> tuple of results) as a custom_partitioning call by the rule. custom_partitioning has no
    batching rule: under vmap the call is `fn` vmapped (the kernels' own vmap, whole arrays)."""
    import jax  # JAX is optional: `import jitkernel` never imports it
    from jax.custom_batching import custom_vmap
    from jax.experimental.custom_partitioning import custom_partitioning

    cp = custom_partitioning(fn)
    partition, infer = _partition_callbacks(layout, in_dims, out_dims, fn, reduce_over)
    use_shardy = bool(getattr(jax.config, "jax_use_shardy_partitioner", False))
    rule = layout.sdy_rule(in_dims, out_dims) if use_shardy else None
    cp.def_partition(partition, infer_sharding_from_operands=infer, sharding_rule=rule)

    @custom_vmap
    def call(*ops):
        return cp(*ops)

    @call.def_vmap
    def _batched(axis_size, in_batched, *ops):
        outs = jax.vmap(fn, in_axes=[0 if b else None for b in in_batched], axis_size=axis_size)(*ops)
        return outs, tuple(True for _ in outs)

    return call


def _partitioned(sharded, args, kwargs, positions, operands):
    import jax  # JAX is optional: `import jitkernel` never imports it

    def body(*ops):
        full = list(args)
        for i, x in zip(positions, ops):
            full[i] = x
        return sharded.fn(*full, **kwargs)

    shapes = [tuple(x.shape) for x in operands]
    ranks = [len(s) for s in shapes]
    resolve(sharded.rule, sharded.replicated, ranks, None)  # the arguments' side, before tracing the function
    out_avals, rebuild = _flat_outputs(jax.eval_shape(body, *operands))
    factors = resolve(sharded.rule, sharded.replicated, ranks, [len(o.shape) for o in out_avals])
    layout = _Layout(factors, shapes)

    def flat_body(*ops):
        outs, _ = _flat_outputs(body(*ops))
        return tuple(outs)

    forward = _custom_partitioned(flat_body, layout, factors.inputs, factors.outputs)
    differentiable = [jax.numpy.issubdtype(x.dtype, jax.numpy.inexact) for x in operands]

    def backward_body(*ops_and_cts):
        ops, cts = ops_and_cts[:len(operands)], ops_and_cts[len(operands):]
        wrt = [k for k, d in enumerate(differentiable) if d]

        def of_wrt(*xs):
            full = list(ops)
            for k, x in zip(wrt, xs):
                full[k] = x
            return flat_body(*full)

        _, vjp = jax.vjp(of_wrt, *[ops[k] for k in wrt])
        return tuple(vjp(tuple(cts)))

    wrt_dims = [factors.inputs[k] for k, d in enumerate(differentiable) if d]
    # The cotangent of an argument is a partial sum on each shard over every split factor it lacks.
    lacking = [tuple(f for f in layout.splittable if f not in dims) for dims in wrt_dims]
    backward = _custom_partitioned(backward_body, layout, list(factors.inputs) + list(factors.outputs), wrt_dims,
                                   reduce_over=lacking)

    @jax.custom_vjp
    def f(*ops):
        return forward(*ops)

    def f_fwd(*ops):
        return forward(*ops), ops

    def f_bwd(ops, cts):
        grads = iter(backward(*ops, *cts))
        return tuple(next(grads) if d else None for d in differentiable)

    f.defvjp(f_fwd, f_bwd)
    return rebuild(list(f(*operands)))
