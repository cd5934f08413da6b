"""The types of the kernel calls' arguments, for type checkers only.

``cuda_kernel.py``, ``metal_kernel.py`` and ``precompiled.py`` (beside it) and the package's ``__init__.py`` (for
``jk.CudaCompileOptions`` / ``jk.MetalCompileOptions``) import this module under their module-level
``TYPE_CHECKING = False`` block (which mypy and pyright read as true), so it is never imported at run time: the
calls check their arguments themselves (C++), and importing ``typing`` would cost import time for nothing.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, SupportsIndex, TypedDict, TypeVar, Union, overload

import numpy as np

from .._core import Array

if sys.version_info >= (3, 11):
    from typing import Required, TypeAlias, Unpack
else:  # type checkers know typing_extensions without it being installed
    from typing_extensions import Required, TypeAlias, Unpack

__all__ = ["Dim3", "Shape", "DTypeLike", "Template", "ListInputs", "DictInputs", "AnyInputs", "AnyDTypes",
           "LaunchOnly", "Unpack", "Backward", "Names", "Texts", "CudaCompileOptions", "MetalCompileOptions",
           "CudaLaunch", "MetalLaunch", "HostArray", "FrameworkArray", "Given"]

_T_co = TypeVar("_T_co", covariant=True)


class SequenceNotStr(Protocol[_T_co]):
    """A sequence that is not a ``str``: a ``str`` is a ``Sequence[str]``, so ``input_names="x"`` (one name where
    a list of names belongs) would pass as ``Sequence[str]``. A str's ``__contains__`` takes only str, this one
    any object, so mypy and pyright both refuse a str here; lists and tuples match."""

    @overload
    def __getitem__(self, index: SupportsIndex, /) -> _T_co: ...
    @overload
    def __getitem__(self, index: slice, /) -> Sequence[_T_co]: ...
    def __contains__(self, value: object, /) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[_T_co]: ...
    def __reversed__(self) -> Iterator[_T_co]: ...
    def index(self, value: Any, start: int = 0, stop: int = ..., /) -> int: ...
    def count(self, value: Any, /) -> int: ...


# input_names / output_names: ["a", "b"] or ("a", "b"), never "a".
Names: TypeAlias = SequenceNotStr[str]
# compile_options' folder and flag lists: the core takes a list or a tuple of strings.
Texts: TypeAlias = Union[list[str], tuple[str, ...]]


class CudaCompileOptions(TypedDict, total=False):
    """``cuda_kernel(compile_options=...)`` / ``compile_cuda``: every key optional, each in the compile cache key
    (docs/compile_options.md); an unknown key or a value of the wrong type is an error for the checkers too."""

    math_mode: Literal["safe", "fast"]
    line_info: bool
    debug: bool
    defines: Mapping[str, Union[str, int, None]]
    std: Literal["c++17", "c++20"]
    max_registers: int
    include_dirs: Texts
    extra_flags: Texts
    checked: bool


class MetalCompileOptions(TypedDict, total=False):
    """``metal_kernel(compile_options=...)`` / ``MetalKernel``: the math mode only (MLX's option)."""

    math_mode: Literal["safe", "relaxed", "fast"]


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


class _DLPackArray(Protocol):
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...


# What a call returns follows its inputs: NumPy arrays and jk.Array give jk.Array outputs (allocated on the GPU);
# a framework's arrays (torch.Tensor, jax.Array, cupy.ndarray: anything with __dlpack__) give that framework's.
# Typed structurally, so checking a user's script never loads torch's or JAX's stubs.
HostArray: TypeAlias = Union["np.ndarray[Any, Any]", Array]
FrameworkArray = TypeVar("FrameworkArray", bound=_DLPackArray)
# A call given outputs= returns those arrays.
Given = TypeVar("Given")


class _Launch(TypedDict, total=False):
    grid: Required[Dim3]
    threadgroup: Required[Dim3]
    template: Template
    init_value: Union[float, None]
    verbose: bool


class CudaLaunch(_Launch, total=False):
    """A CUDA kernel call's keywords besides its arrays (``inputs``, ``output_shapes``, ``output_dtypes``,
    ``outputs``), whose types depend on the call's form."""

    stream: Any
    cooperative: Union[bool, None]
    cluster: Union[Dim3, None]


class MetalLaunch(_Launch, total=False):
    """A Metal kernel call's keywords besides its arrays: ``stream`` must be None (jitkernel's own queue), and the
    CUDA launch options are not taken."""

    stream: None


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
