"""``jitkernel.Config`` and the checks of ``jitkernel.autotune``'s arguments: one candidate launch configuration
(template constants, threadgroup, grid) and how it is written into a decision (``to_json``).
"""
from __future__ import annotations

import json
from collections.abc import Mapping

from .. import _core
from .._dtypes import dtype as _jk_dtype
from .._errors import ArgumentError, ArgumentTypeError, JitKernelError

__all__ = ["Config", "TuningWarning"]

MAX_CONFIGS = 256
_TEMPLATE_SCALARS = (bool, int)


class TuningWarning(RuntimeWarning):
    """An autotuned call that could not tune (a CUDA graph is being captured, torch.compile or jax.jit is tracing)
    and found no stored decision: it runs the first configuration. Once per tuned kernel and cause."""


TuningWarning.__module__ = "jitkernel"


def _dims(value, argument: str) -> tuple:
    """A (x, y, z) of positive ints from 1 to 3 ints (missing ones are 1): the core's rule (``_tune_dims``, which
    also checks what grid and threadgroup functions return); here only which error names what is wrong."""
    dims = _core._tune_dims(value)
    if dims is not None:
        return dims
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= 3:
        raise ArgumentTypeError(argument, f"expected 1 to 3 positive ints (x, y, z), got {value!r}")
    raise ArgumentError(argument, f"expected positive ints, got {value!r}")


def _template_value(name: str, value):
    """An int, a bool or a jitkernel dtype (any dtype-like is converted)."""
    if isinstance(value, _TEMPLATE_SCALARS):
        return value
    try:
        return _jk_dtype(value)
    except JitKernelError:
        raise ArgumentTypeError("template", f"{name}: expected an int, a bool or a dtype, got "
                                            f"{type(value).__name__} {value!r}") from None


class Config:
    """One candidate launch configuration of an autotuned kernel: ``template`` (a dict or list of (name, value):
    ints, bools, dtypes), ``threadgroup`` and ``grid`` ((x, y, z), or None to use the ``autotune`` function's or
    the call's). Immutable and comparable; ``str(config)`` is readable."""

    __slots__ = ("template", "threadgroup", "grid")

    def __init__(self, template=None, threadgroup=None, grid=None):
        if template is None:
            pairs = ()
        elif isinstance(template, Mapping):
            pairs = tuple(template.items())
        elif isinstance(template, (list, tuple)):
            pairs = tuple(template)
        else:
            raise ArgumentTypeError("template", f"expected a dict or a list of (name, value), got "
                                                f"{type(template).__name__}")
        checked = []
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str) and pair[0].isidentifier()):
                raise ArgumentTypeError("template", f"expected (name, value) pairs with identifier names, got {pair!r}")
            checked.append((pair[0], _template_value(pair[0], pair[1])))
        if len({n for n, _ in checked}) != len(checked):
            raise ArgumentError("template", f"a name is given twice: {[n for n, _ in checked]}")
        object.__setattr__(self, "template", tuple(checked))
        object.__setattr__(self, "threadgroup", None if threadgroup is None else _dims(threadgroup, "threadgroup"))
        object.__setattr__(self, "grid", None if grid is None else _dims(grid, "grid"))

    def __setattr__(self, name, value):
        raise AttributeError("jitkernel.Config is immutable")

    def to_json(self) -> dict:
        """The configuration as stored in a decision (dtypes by name)."""
        return {"template": [[n, v if isinstance(v, _TEMPLATE_SCALARS) else {"dtype": v.name}]
                             for n, v in self.template],
                "threadgroup": None if self.threadgroup is None else list(self.threadgroup),
                "grid": None if self.grid is None else list(self.grid)}

    def __eq__(self, other):
        return isinstance(other, Config) and self.to_json() == other.to_json()

    def __hash__(self):
        return hash(json.dumps(self.to_json(), sort_keys=True))

    def __repr__(self):
        parts = [f"template={dict(self.template)!r}"] if self.template else []
        parts += [f"{k}={getattr(self, k)!r}" for k in ("threadgroup", "grid") if getattr(self, k) is not None]
        return f"Config({', '.join(parts)})"


Config.__module__ = "jitkernel"


def _configs_arg(configs) -> tuple:
    if isinstance(configs, (str, bytes, Mapping)) or not hasattr(configs, "__iter__"):
        raise ArgumentTypeError("configs", f"expected a list of jitkernel.Config, got {type(configs).__name__}")
    out = []
    for i, c in enumerate(configs):
        if len(out) >= MAX_CONFIGS:
            raise ArgumentError("configs", f"at most {MAX_CONFIGS} configurations")
        if not isinstance(c, Config):
            raise ArgumentTypeError("configs", f"entry {i}: expected a jitkernel.Config, got {type(c).__name__}")
        if c in out:
            raise ArgumentError("configs", f"entry {i} repeats entry {out.index(c)}: {c!r}")
        out.append(c)
    if not out:
        raise ArgumentError("configs", "empty: give at least one jitkernel.Config")
    return tuple(out)


def _launch_arg(value, argument: str):
    if value is None or callable(value):
        return value
    return _dims(value, argument)


def _names_arg(kernel, names) -> tuple:
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise ArgumentTypeError("restore_inputs", f"expected a list of input names, got {type(names).__name__}")
    for n in names:
        if n not in (kernel.input_names or ()):
            raise ArgumentError("restore_inputs", f"{n!r} is not one of the kernel's inputs "
                                                  f"{list(kernel.input_names or ())}")
    return tuple(names)


def _count_arg(value, argument: str, minimum: int):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ArgumentError(argument, f"expected an int >= {minimum}, got {value!r}")
    return value



def _dtype_name(d) -> str:
    try:
        return _jk_dtype(d).name
    except JitKernelError:
        return str(d)
