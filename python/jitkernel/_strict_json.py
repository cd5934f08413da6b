"""JSON that jitkernel reads but did not necessarily write: call records (``JITKERNEL_RECORD``), and the kernel and
call strings of the ``jitkernel::launch`` torch ops (which a loaded ``torch.export`` program, or any caller of the
op, hands over). One loader for all of them, so that each refuses the same things the same way:

- text that is not JSON, or JSON nested too deeply for Python's parser (``RecursionError``);
- an object that repeats a key (by default the last value would silently win);
- ``NaN`` / ``Infinity`` where the format has no use for them (``constants=False``);
- a string (value or key) holding a lone surrogate (``"\\ud800"`` is valid JSON but no UTF-8 text: the C++ core
  could not take it).

Then the fields, with the checks below (``check_type``, ``dtype_field``), which say which field is wrong the same way.
Every refusal is a ``JsonError`` (a ``ValueError``) whose message starts with the field: the caller turns it into the
typed error of its format (``RecordError``, ``ArgumentError``) naming the argument.
"""
from __future__ import annotations

import json

from ._dtypes import dtype
from ._errors import ArgumentError, ArgumentTypeError


class JsonError(ValueError):
    """Text refused by ``loads``; the message says what and where (``kernel.name``, ...)."""


def unique_keys(pairs):
    """``json.loads``'s object_pairs_hook for untrusted files (records, bundle manifests): a JSON object that repeats
    a key is a ValueError (by default the last value would silently win)."""
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a JSON object repeats a key ({sorted(k for k in keys if keys.count(k) > 1)[0]!r})")
    return dict(pairs)


def _no_constant(name):
    raise JsonError(f"{name} is not valid here")


def _is_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def path_text(path) -> str:
    """``("kernel", "input_names", 0)`` -> ``kernel.input_names[0]``."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "the top level"


def _check_strings(value) -> None:
    """Every string of a parsed document, keys included, is UTF-8 text. Iterative: the parser accepted the depth,
    a recursive walk on top of the caller's stack might not."""
    stack = [((), value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, str):
            if not _is_text(v):
                raise JsonError(f"{path_text(path)}: not valid Unicode text (a lone surrogate, {v[:40]!r})")
        elif isinstance(v, dict):
            for k, item in v.items():
                if not _is_text(k):
                    raise JsonError(f"{path_text(path)}: a key is not valid Unicode text (a lone surrogate, "
                                    f"{k[:40]!r})")
                stack.append((path + (k,), item))
        elif isinstance(v, list):
            stack.extend((path + (i,), item) for i, item in enumerate(v))


def loads(text, *, constants: bool = False):
    """The value of JSON ``text`` (a str), or ``JsonError`` (see the module docstring). ``constants=True`` accepts
    ``NaN``, ``Infinity`` and ``-Infinity`` (a float init_value is written so)."""
    if not isinstance(text, str):
        raise JsonError(f"expected a JSON string, got {type(text).__name__}")
    try:
        value = json.loads(text, object_pairs_hook=unique_keys,
                           **({} if constants else {"parse_constant": _no_constant}))
    except RecursionError:
        raise JsonError("JSON nested too deeply") from None
    except JsonError:
        raise
    except ValueError as e:
        raise JsonError(f"not JSON ({e})") from None
    _check_strings(value)
    return value


# ---- field checks ---------------------------------------------------------------------------------------------


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_type(value, kind, what: str) -> None:
    """``value`` is a ``kind`` (``int`` excludes ``bool``), else JsonError naming ``what``."""
    ok = is_int(value) if kind is int else isinstance(value, kind)
    if not ok:
        raise JsonError(f"{what}: expected {kind.__name__}, got {type(value).__name__}")


def dtype_field(name, what: str):
    """The ``jk.DType`` a field names, else JsonError naming ``what``."""
    check_type(name, str, what)
    try:
        return dtype(name)
    except (ArgumentError, ArgumentTypeError):
        raise JsonError(f"{what}: unknown dtype {name!r}") from None
