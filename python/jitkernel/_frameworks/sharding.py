"""``jk.sharded``: how a function that calls kernels is split over many GPUs, declared once for torch and JAX.

A kernel sees raw pointers and the shapes it is given, so only its author knows whether it may run on pieces of its
arrays. ``@jk.sharded(rule)`` on the function that calls it says so, in factors: every dimension of every array
argument and result is named by a factor, and a factor split over a mesh axis splits every array that has it in the
same way. The function then runs on the local shards (it computes its grid and output shapes from the shapes it
receives) and its results are placed by the rule:

- torch: DTensor arguments run on ``to_local()`` shards, results come back as DTensors (``_sharding_torch``);
- JAX: under ``jax.jit`` with sharded inputs, XLA partitions the call per the rule (``_sharding_jax``); inside
  ``shard_map`` or unsharded it is a plain call.

Placements that do not fit the rule are errors naming the argument, never a redistribution. Rules:

- ``"elementwise"``: every array argument and result has one shape (lower-rank ones align with the trailing
  dimensions); any dimension may be split.
- ``"rowwise"``: as elementwise, but the last dimension is never split (a kernel that reduces each row).
- a factor string, ``"i j, j -> i j"``: one comma-separated entry per array argument, ``->``, one per result; a
  rank-0 array is ``()``. ``replicated=("j",)`` names factors that must never be split.
"""
from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass

from . import _post_import
from ._errors import ArgumentError, ArgumentTypeError

_NAMED = ("elementwise", "rowwise")

# The classes a call is dispatched on, set once their framework is imported (never imported from here). Module
# globals, not sys.modules lookups: TorchDynamo traces these calls, and walking sys.modules while it traces fails
# whenever an import changes it ("dictionary changed size during iteration").
dtensor_class = None
jax_array_types: tuple = ()


def _remember_dtensor(module) -> None:
    global dtensor_class
    dtensor_class = module.DTensor


def _remember_jax(jax) -> None:
    global jax_array_types
    jax_array_types = (jax.Array, jax.core.Tracer)


_post_import.when_imported("torch.distributed.tensor", _remember_dtensor)
_post_import.when_imported("jax", _remember_jax)
_FACTOR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class Factors:
    """A rule resolved for one call: the factor of each dimension of each array argument and result."""

    inputs: tuple
    outputs: tuple
    replicated: frozenset

    def shardy(self) -> str:
        """The rule as written in messages: ``"i j, j -> i j"``, a rank-0 array as ``()``."""
        def side(entries):
            return ", ".join(" ".join(e) if e else "()" for e in entries)
        return f"{side(self.inputs)} -> {side(self.outputs)}"

    def factor_size(self, factor: str, input_shapes) -> int | None:
        """The size of ``factor`` in the arguments' (global) shapes, None when no argument has it."""
        for dims, shape in zip(self.inputs, input_shapes):
            if factor in dims:
                return int(shape[dims.index(factor)])
        return None


def _parse_side(text: str, what: str) -> tuple:
    entries = []
    for raw in text.split(","):
        entry = raw.strip()
        if entry == "()":
            entries.append(())
            continue
        names = tuple(entry.split())
        if not names:
            raise ArgumentError("rule", f"an empty {what} entry in the rule; write () for a rank-0 array")
        for name in names:
            if not _FACTOR.match(name):
                raise ArgumentError("rule", f"{name!r} is not a factor name (letters, digits, _)")
        if len(set(names)) != len(names):
            raise ArgumentError("rule", f"{what} entry {entry!r} names a factor twice")
        entries.append(names)
    return tuple(entries)


def parse(rule: str) -> tuple:
    """(inputs, outputs) of a factor string; ArgumentError naming what is wrong."""
    if rule.count("->") != 1:
        raise ArgumentError("rule", f"expected 'elementwise', 'rowwise' or factors such as 'i j, j -> i j', "
                                    f"got {rule!r}")
    left, right = rule.split("->")
    return _parse_side(left, "argument"), _parse_side(right, "result")


def check_rule(rule, replicated) -> tuple:
    """Validates ``jk.sharded``'s arguments; returns (rule, replicated as a tuple)."""
    if not isinstance(rule, str):
        raise ArgumentTypeError("rule", f"expected 'elementwise', 'rowwise' or a factor string such as "
                                        f"'i j, j -> i j', got {type(rule).__name__}")
    if isinstance(replicated, str):
        replicated = (replicated,)
    if not isinstance(replicated, (tuple, list)) or not all(isinstance(r, str) for r in replicated):
        raise ArgumentTypeError("replicated", "expected a list of factor names (strings)")
    if rule not in _NAMED:
        inputs, outputs = parse(rule)
        known = {f for entry in inputs + outputs for f in entry}
        for name in replicated:
            if name not in known:
                raise ArgumentError("replicated", f"factor {name!r} is not in the rule {rule!r}")
    elif replicated:
        raise ArgumentError("replicated", f"the named rule {rule!r} fixes which dimensions are split; write the "
                                          "rule as factors to name replicated ones")
    return rule, tuple(replicated)


def _trailing(rank: int, full: int) -> tuple:
    return tuple(f"d{k}" for k in range(full - rank, full))


def resolve(rule: str, replicated, input_ranks, output_ranks) -> Factors:
    """The rule's factors for arrays of these ranks (named rules align every array with the trailing dimensions
    of the highest-rank one). ArgumentError when the counts or ranks do not match the rule. ``output_ranks`` None:
    the results are not known yet (checked later); their factors are the rule's as written."""
    checked_outputs = output_ranks is not None
    input_ranks, output_ranks = list(input_ranks), list(output_ranks or ())
    if rule in _NAMED:
        full = max(input_ranks + output_ranks, default=0)
        inputs = tuple(_trailing(r, full) for r in input_ranks)
        outputs = tuple(_trailing(r, full) for r in output_ranks)
        fixed = frozenset({f"d{full - 1}"} if rule == "rowwise" and full > 0 else ())
        return Factors(inputs, outputs, fixed)
    inputs, outputs = parse(rule)
    sides = [("argument", inputs, input_ranks)] + ([("result", outputs, output_ranks)] if checked_outputs else [])
    for what, entries, ranks in sides:
        if len(entries) != len(ranks):
            raise ArgumentError("rule", f"the rule {rule!r} describes {len(entries)} array {what}(s), the call "
                                        f"has {len(ranks)}")
        for k, (entry, rank) in enumerate(zip(entries, ranks)):
            if len(entry) != rank:
                raise ArgumentError("rule", f"array {what} {k} has {rank} dimension(s) but the rule gives it "
                                            f"{len(entry)} ({' '.join(entry) or '()'})")
    return Factors(inputs, outputs, frozenset(replicated))


def argument_name(sharded, position: int) -> str:
    """``argument 1 ('w')``: the position and, where the signature tells it, the parameter's name."""
    try:
        params = [p for p in inspect.signature(sharded.fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return f"argument {position} ({params[position].name!r})" if position < len(params) else f"argument {position}"


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
            from . import _sharding_torch

            return _sharding_torch.call(self, args, kwargs)
        if jax_array_types and any(isinstance(a, jax_array_types) for a in args):
            from . import _sharding_jax

            return _sharding_jax.call(self, args, kwargs)
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
