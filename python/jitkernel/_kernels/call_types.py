"""The types of the kernel calls' arguments, for type checkers only.

``cuda_kernel.py``, ``metal_kernel.py`` and ``precompiled.py`` (beside it) import this module under their module-level
``TYPE_CHECKING = False`` block (which mypy and pyright read as true), so it is never imported at run time: the
calls check their arguments themselves (C++), and importing ``typing`` would cost import time for nothing.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, Union

if sys.version_info >= (3, 11):
    from typing import TypeAlias, Unpack
else:  # type checkers know typing_extensions without it being installed
    from typing_extensions import TypeAlias, Unpack

__all__ = ["Dim3", "Shape", "DTypeLike", "Template", "ListInputs", "DictInputs", "AnyInputs", "AnyDTypes",
           "LaunchOnly", "Unpack", "Backward"]

# grid / threadgroup / cluster: three ints (x, y, z); grid counts threads, as in MLX.
Dim3: TypeAlias = tuple[int, int, int]
Shape: TypeAlias = Sequence[int]
# A jitkernel dtype (jk.float32), a NumPy / PyTorch / JAX / ml_dtypes dtype or a name ("float32"): jk.dtype(x)
# reads them all, so the checker cannot narrow it further without importing every framework's stubs.
DTypeLike: TypeAlias = Any
# [("T", jk.float32), ("N", 4)] or {"T": jk.float32, "N": 4}: values are dtypes, ints or bools.
Template: TypeAlias = Union[Sequence[tuple[str, Any]], Mapping[str, Any], None]
# Arrays (NumPy, PyTorch, CuPy, JAX, jk.Array, anything with __dlpack__) and Python scalars.
ListInputs: TypeAlias = Sequence[Any]
DictInputs: TypeAlias = Mapping[str, Any]
AnyInputs: TypeAlias = Union[ListInputs, DictInputs]
AnyDTypes: TypeAlias = Union[Sequence[DTypeLike], Mapping[str, DTypeLike]]

Backward = TypeVar("Backward", bound=Callable[..., Any])


class LaunchOnly(TypedDict, total=False):
    """The call's keywords that only the launch reads: ``source()``, ``entry_name()``, ``compile()`` (and the Metal
    kernel's queries) accept and ignore them, so one keyword dict serves a call and its queries."""

    output_shapes: Sequence[Shape] | Mapping[str, Shape] | None
    grid: Dim3
    threadgroup: Dim3
    init_value: float | None
    verbose: bool
    stream: Any
    outputs: Sequence[Any] | Mapping[str, Any] | None
    cooperative: bool | None
    cluster: Dim3 | None
