"""``jk.sharded``: how a function that calls kernels is split over many GPUs, declared once for torch and JAX.

A kernel sees raw pointers and the shapes it is given, so only its author knows whether it may run on pieces of its
arrays. ``@jk.sharded(rule)`` on the function that calls it says so, in factors: every dimension of every array
argument and result is named by a factor, and a factor split over a mesh axis splits every array that has it in the
same way. The function then runs on the local shards (it computes its grid and output shapes from the shapes it
receives) and its results are placed by the rule:

- torch: DTensor arguments run on ``to_local()`` shards, results come back as DTensors (``sharding_torch``);
- JAX: under ``jax.jit`` with sharded inputs, XLA partitions the call per the rule (``sharding_jax``); inside
  ``shard_map`` or unsharded it is a plain call.

Placements that do not fit the rule are errors naming the argument, never a redistribution. Rules:

- ``"elementwise"``: every array argument and result has one shape (lower-rank ones align with the trailing
  dimensions); any dimension may be split.
- ``"rowwise"``: as elementwise, but the last dimension is never split (a kernel that reduces each row).
- a factor string, ``"i j, j -> i j"``: one comma-separated entry per array argument, ``->``, one per result; a
  rank-0 array is ``()``. ``replicated=("j",)`` names factors that must never be split.

The rules are parsed and resolved in ``sharding_rules``.
"""
from __future__ import annotations

import functools

from . import post_import, sharding_jax, sharding_torch
from .sharding_rules import check_rule

# The classes a call is dispatched on, set once their framework is imported (never imported from here). Module
# globals, not sys.modules lookups: TorchDynamo traces these calls, and walking sys.modules while it traces fails
# whenever an import changes it ("dictionary changed size during iteration").
dtensor_class = None
jax_array_types: tuple = ()


def dtensor_class_now():
    """``dtensor_class``, for code that TorchDynamo traces from other modules: a function imported there, so that
    this module is reached only as its functions' globals (through two paths, Dynamo would check they agree)."""
    return dtensor_class


def _remember_dtensor(module) -> None:
    global dtensor_class
    dtensor_class = module.DTensor


def _remember_jax(jax) -> None:
    global jax_array_types
    jax_array_types = (jax.Array, jax.core.Tracer)


post_import.when_imported("torch.distributed.tensor", _remember_dtensor)
post_import.when_imported("jax", _remember_jax)


class Sharded:
    """A function that calls kernels, with the rule saying how it runs on shards (``jk.sharded``)."""

    def __init__(self, fn, rule: str, replicated: tuple):
        self.fn = fn
        self.rule = rule
        self.replicated = replicated
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"jitkernel.sharded({self.rule!r}, replicated={self.replicated!r})({self.fn!r})"

    def __get__(self, instance, owner=None):
        """A method: the instance is passed on as a static first argument."""
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        if dtensor_class is not None and any(isinstance(a, dtensor_class) for a in args):
            return sharding_torch.call(self, args, kwargs)
        if jax_array_types and any(isinstance(a, jax_array_types) for a in args):
            return sharding_jax.call(self, args, kwargs)
        return self.fn(*args, **kwargs)


def sharded(rule: str, *, replicated=()):
    """Declares how a function that calls kernels runs on sharded arrays: ``@jk.sharded("elementwise")``,
    ``@jk.sharded("rowwise")`` or ``@jk.sharded("i j, j -> i j", replicated=("j",))``.

    The function must compute its grid and output shapes from the shapes of the arrays it receives: on torch
    DTensors and sharded JAX arrays it receives the local shards. Its positional array arguments are the rule's
    arguments, in order (other arguments are passed through unchanged); it returns one array or a tuple/list of
    them, the rule's results. Placements that do not fit the rule raise ArgumentError naming the argument: jitkernel
    never moves data between GPUs for you."""
    rule, replicated = check_rule(rule, replicated)
    return lambda fn: Sharded(fn, rule, replicated)
