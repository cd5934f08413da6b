"""jitkernel dtypes: ``jk.float32``, ``jk.bfloat16``, ... (singletons of ``jk.DType``) and ``jk.dtype(x)``.

``dtype(x)`` accepts jitkernel dtypes, NumPy dtypes and scalar types (``np.float16``, ``np.dtype("int64")``,
``ml_dtypes.bfloat16``), JAX dtypes, PyTorch dtypes (``torch.bfloat16``) and names (``"float32"``, ``"half"``).
No framework is imported here: a torch dtype can only exist once torch is imported, so ``sys.modules`` is asked
(``numpy_dtype``, the NumPy dtype of a jitkernel dtype, imports NumPy when it is called).
The extension reads names, NumPy and PyTorch dtypes itself and calls ``_normalize`` for other dtype-likes and for
every error message (cpp/bindings/objects/dtypes.cpp), remembering each answer.
"""
from __future__ import annotations

import sys

from . import _core
from ._errors import ArgumentError, ArgumentTypeError

DType = _core.DType

bool_ = _core.bool_
int8 = _core.int8
int16 = _core.int16
int32 = _core.int32
int64 = _core.int64
uint8 = _core.uint8
uint16 = _core.uint16
uint32 = _core.uint32
uint64 = _core.uint64
float16 = _core.float16
bfloat16 = _core.bfloat16
float32 = _core.float32
float64 = _core.float64
complex64 = _core.complex64

ALL_DTYPES: tuple = _core.dtypes
_SUPPORTED = ", ".join(d.name for d in ALL_DTYPES)
_AMBIGUOUS = {bool: "bool_", int: "int32 or jitkernel.int64", float: "float32 or jitkernel.float64",
              complex: "complex64"}

_cache: dict = {}  # (type, value) -> DType; keyed by type too since np.dtype("float32") == "float32"


def dtype(x) -> DType:
    """The jitkernel dtype for ``x`` (see the module docstring); ``ArgumentError`` / ``ArgumentTypeError``."""
    return _normalize(x, "dtype", "")


def numpy_dtype(dtype: DType):
    """The NumPy dtype of a jitkernel dtype (bfloat16 needs ml_dtypes)."""
    import numpy as np  # import jitkernel imports no array framework, NumPy included

    if dtype.name == "bfloat16":
        try:
            import ml_dtypes  # optional: NumPy's bfloat16
        except ImportError:
            raise ArgumentError("dtype", "bfloat16 placeholders need ml_dtypes (pip install ml-dtypes)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype.name)


def _normalize(x, argument: str, context: str) -> DType:
    if isinstance(x, DType):
        return x
    try:
        key = (type(x), x)
        hit = _cache.get(key)
    except TypeError:  # unhashable
        key = hit = None
    if hit is not None:
        return hit
    result = _convert(x, argument, f"{context}: " if context else "")
    if key is not None and len(_cache) < 1024:
        _cache[key] = result
    return result


def _by_name(name: str, argument: str, prefix: str, what: str) -> DType:
    d = _core.dtype_from_name(name)
    if d is None:
        raise ArgumentError(argument, f"{prefix}{what} (jitkernel supports {_SUPPORTED})")
    return d


def _convert(x, argument: str, prefix: str) -> DType:
    if isinstance(x, str):
        return _by_name(x, argument, prefix, f"unknown dtype name {x!r}")
    if x is None or isinstance(x, bool):
        raise ArgumentTypeError(argument, f"{prefix}expected a dtype, got {x!r}")
    if isinstance(x, type) and x in _AMBIGUOUS:
        raise ArgumentTypeError(argument, f"{prefix}the Python type {x.__name__!r} is ambiguous as a dtype; "
                                          f"use jitkernel.{_AMBIGUOUS[x]}")
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.dtype):
        return _by_name(str(x).rpartition(".")[2], argument, prefix, f"PyTorch dtype {x} is not supported")
    if type(x).__module__.partition(".")[0] == "mlx":
        return _by_name(str(x).rpartition(".")[2], argument, prefix, f"MLX dtype {x} is not supported")
    np = sys.modules.get("numpy")
    if np is not None and (isinstance(x, (np.dtype, type)) or hasattr(x, "dtype")):
        try:
            nd = np.dtype(x)
        except (TypeError, ValueError):
            nd = None
        if nd is not None:
            if not nd.isnative:
                raise ArgumentError(argument, f"{prefix}NumPy dtype {nd.str!r} is not in this machine's byte "
                                              f"order; convert with .astype({nd.name!r}) first")
            return _by_name(nd.name, argument, prefix, f"NumPy dtype {nd.name} is not supported")
    raise ArgumentTypeError(argument, f"{prefix}expected a dtype (jitkernel.float32, a NumPy/PyTorch/JAX dtype "
                                      f"or a name such as 'float32'), got {type(x).__name__} {x!r}")


def scalar_value(dtype: DType, raw: bytes):
    """A recorded scalar's value from its bytes: a Python bool, else a NumPy scalar of its exact dtype."""
    if dtype.name == "bool":
        return raw != b"\0"
    import numpy as np  # import jitkernel imports no array framework, NumPy included

    return np.frombuffer(raw, dtype=numpy_dtype(dtype))[0]
