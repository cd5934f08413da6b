"""The rules of ``jk.sharded`` (sharding.py): parsed, checked, and resolved for the ranks of one call's arrays into
the factor of every dimension (``Factors``), which the torch (sharding_torch.py) and JAX (sharding_jax.py) paths
place. Pure Python on strings and ranks: no framework is imported here.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from .._errors import ArgumentError, ArgumentTypeError

NAMED = ("elementwise", "rowwise")
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
    if rule not in NAMED:
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
    if rule in NAMED:
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
