"""A ``jk.sharded`` function called with torch DTensors: it runs on the local shards, its results become DTensors.

The rule (``sharding_rules``) maps every dimension of every tensor argument to a factor. For each axis of the device
mesh the arguments' placements must agree on at most one split factor: every argument that has that factor is
``Shard`` along it there, and no factor the rule keeps whole is split. Then ``to_local()`` gives each rank exactly
the rows (or blocks) the function needs, the function runs there with no communication, and each result is
``Shard`` along the split factor's dimension (``Replicate`` where nothing is split). Anything else -- ``Partial``,
two arguments split differently, a kept-whole dimension split, tensors on different meshes -- is an ArgumentError
naming the argument: redistributing would move data behind the user's back. Plain tensors beside DTensors count as
replicated. ``to_local`` / ``from_local`` carry gradients, so autograd (and the kernels' ``vjp``) works through it;
the gradient of an argument replicated over an axis that splits the others is each rank's partial sum
(``Partial``), which DTensor reduces where it is used.
"""
from __future__ import annotations

from .._errors import ArgumentError, ArgumentTypeError
from .sharding_rules import Factors, argument_name as _argument_name, resolve


def _placements_of(a, mesh_ndim: int, replicate):
    return tuple(a.placements) if hasattr(a, "placements") else (replicate,) * mesh_ndim


def _split(sharded, factors: Factors, arrays, positions, mesh_ndim: int, shard_cls, replicate) -> list:
    """The factor split on each mesh axis (None where nothing is), checked against every argument."""
    split = []
    for axis in range(mesh_ndim):
        chosen, by = None, None
        for k, a in enumerate(arrays):
            p = _placements_of(a, mesh_ndim, replicate)[axis]
            name = _argument_name(sharded, positions[k])
            if p.is_replicate():
                continue
            if type(p) is not shard_cls:
                kind = "Partial (a pending reduction)" if p.is_partial() else repr(p)
                raise ArgumentError("inputs", f"{name} is {kind} on mesh axis {axis}; a jk.sharded function takes "
                                              f"Shard and Replicate placements: reduce or redistribute it first")
            dim = p.dim % a.ndim
            factor = factors.inputs[k][dim]
            if factor in factors.replicated:
                raise ArgumentError("inputs", f"{name} is split along dimension {dim} on mesh axis {axis}, which "
                                              f"the rule {sharded.rule!r} keeps whole (the kernel reads all of it); "
                                              f"redistribute it to Replicate() on that axis, or shard another "
                                              f"dimension")
            if chosen is not None and factor != chosen:
                raise ArgumentError("inputs", f"{name} splits dimension {dim} on mesh axis {axis} but {by} splits "
                                              f"another dimension there (rule {factors.shardy()!r}): shard both "
                                              f"along the same factor")
            chosen, by = factor, name
        if chosen is not None:
            for k, a in enumerate(arrays):
                if chosen not in factors.inputs[k]:
                    continue
                dim = factors.inputs[k].index(chosen)
                p = _placements_of(a, mesh_ndim, replicate)[axis]
                if not (type(p) is shard_cls and p.dim % a.ndim == dim):
                    raise ArgumentError("inputs", f"{_argument_name(sharded, positions[k])} is {p!r} on mesh axis "
                                                  f"{axis}, but {by} splits the factor that its dimension {dim} "
                                                  f"shares (rule {factors.shardy()!r}): shard it the same way "
                                                  f"(Shard({dim}))")
            sizes = {int(a.shape[factors.inputs[k].index(chosen)]) for k, a in enumerate(arrays)
                     if chosen in factors.inputs[k]}
            if len(sizes) > 1:
                raise ArgumentError("inputs", f"the arguments split on mesh axis {axis} disagree on the size of the "
                                              f"split dimension: {sorted(sizes)}")
        split.append(chosen)
    return split


def call(sharded, args: tuple, kwargs: dict):
    """Runs ``sharded.fn`` on the local shards of its DTensor arguments; returns its results as DTensors."""
    import torch  # torch is optional: `import jitkernel` never imports it
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    arrays = [args[i] for i in positions]
    dtensors = [(i, a) for i, a in zip(positions, arrays) if isinstance(a, DTensor)]
    mesh = dtensors[0][1].device_mesh
    for i, a in dtensors[1:]:
        if a.device_mesh != mesh:
            raise ArgumentError("inputs", f"{_argument_name(sharded, i)} is on device mesh {a.device_mesh} but "
                                          f"{_argument_name(sharded, dtensors[0][0])} is on {mesh}; a jk.sharded "
                                          f"function takes DTensors of one mesh")
    ranks = [a.ndim for a in arrays]
    split = _split(sharded, resolve(sharded.rule, sharded.replicated, ranks, None), arrays, positions, mesh.ndim,
                   Shard, Replicate())
    local = list(args)
    for i, a in dtensors:
        # Replicated on an axis whose ranks work on different pieces: each rank's gradient is its share of the sum.
        grads = [Partial() if p.is_replicate() and split[axis] is not None else p
                 for axis, p in enumerate(a.placements)]
        local[i] = a.to_local(grad_placements=grads)
    result = sharded.fn(*local, **kwargs)
    single = isinstance(result, torch.Tensor)
    outputs = [result] if single else list(result) if isinstance(result, (tuple, list)) else None
    if outputs is None or not all(isinstance(o, torch.Tensor) for o in outputs):
        raise ArgumentTypeError("outputs", f"a jk.sharded function returns a tensor or a tuple/list of tensors, "
                                           f"got {type(result).__name__}")
    # Resolved again with the results' ranks (named rules align everything with the highest rank).
    factors = resolve(sharded.rule, sharded.replicated, ranks, [o.ndim for o in outputs])
    split = _split(sharded, factors, arrays, positions, mesh.ndim, Shard, Replicate())
    shapes = [tuple(a.shape) for a in arrays]  # global shapes (a DTensor's shape is its global one)
    placed = [_place(factors, k, o, split, shapes, mesh, DTensor, Shard, Replicate())
              for k, o in enumerate(outputs)]
    return placed[0] if single else type(result)(placed)


def _place(factors: Factors, k: int, out, split: list, shapes: list, mesh, dtensor, shard_cls, replicate):
    """Result ``k`` (a local tensor) as the DTensor the rule makes of it."""
    dims = factors.outputs[k]
    placements = []
    for axis, factor in enumerate(split):
        if factor is None:
            placements.append(replicate)
        elif factor in dims:
            placements.append(shard_cls(dims.index(factor)))
        else:
            raise ArgumentError("outputs", f"result {k} has no dimension of the factor {factor!r} that mesh axis "
                                           f"{axis} splits (rule {factors.shardy()!r}): each rank would hold a "
                                           f"partial result; declare a rule whose results keep that factor")
    shape = list(out.shape)
    for d, factor in enumerate(dims):
        if factor in split:
            shape[d] = factors.factor_size(factor, shapes)
    stride, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        stride[d] = step
        step *= max(shape[d], 1)
    return dtensor.from_local(out, mesh, placements, run_check=False, shape=tuple(shape), stride=tuple(stride))
