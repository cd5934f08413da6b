"""``jitkernel.precompiled_cuda_kernel``: launch PTX, a cubin or a fatbin compiled elsewhere (nvcc, NVRTC, other
compilers), MLX-compatible.

The call is a keyword-only front over ``_core.precompiled_cuda_kernel`` (cpp/bindings/objects/precompiled_kernel.cpp), which
converts inputs, outputs and the stream exactly as ``cuda_kernel`` does and launches through the same path. The
binary is loaded once per (content, device); its format, entry points and parameter sizes are read from the bytes
(``inspect_binary``), so a wrong ``name``, a parameter list that does not match the arguments, or a cubin for
another GPU is an error before launch, not a fault after it.
"""
from __future__ import annotations

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError
from .front import REQUIRED, bad_call

__all__ = ["precompiled_cuda_kernel", "inspect_binary", "check_binary_arch"]

# True for type checkers only (mypy and pyright treat the name so): importing typing costs import time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Union

    from .call_types import Dim3, DTypeLike, Shape

    Binary = Union[bytes, bytearray, memoryview]

_INT32_MAX = 2**31 - 1


def _binary_arg(value, argument: str = "compiled_source") -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        raise ArgumentTypeError(argument, "expected bytes (PTX text, a cubin or a fatbin), got str; "
                                          "pass PTX as ptx.encode() or read files with open(path, 'rb')")
    raise ArgumentTypeError(argument, f"expected bytes (PTX text, a cubin or a fatbin), got {type(value).__name__}")


if TYPE_CHECKING:  # keyword-only and typed for type checkers (the run-time version below names bad calls)
    def precompiled_cuda_kernel(*, name: str, compiled_source: Binary, inputs: Sequence[Any],
                                output_shapes: Sequence[Shape], output_dtypes: Sequence[DTypeLike],
                                scalars: Sequence[Any], grid: Dim3, threadgroup: Dim3, shared_memory: int = 0,
                                init_value: float | None = None, ensure_row_contiguous: bool = False,
                                stream: Any = None, outputs: Sequence[Any] | None = None, cooperative: bool = False,
                                cluster: Dim3 | None = None) -> list[Any]: ...
else:
    def precompiled_cuda_kernel(*args, name=REQUIRED, compiled_source=REQUIRED, inputs=REQUIRED,
                                output_shapes=REQUIRED, output_dtypes=REQUIRED, scalars=REQUIRED, grid=REQUIRED,
                                threadgroup=REQUIRED, shared_memory=0, init_value=None, ensure_row_contiguous=False,
                                stream=None, outputs=None, cooperative=False, cluster=None, **unknown) -> list:
        """Runs the entry point ``name`` of a precompiled CUDA binary and returns its outputs as a list.

        Keyword arguments only: ``precompiled_cuda_kernel(*, name, compiled_source, inputs, output_shapes,
        output_dtypes, scalars, grid, threadgroup, shared_memory=0, init_value=None, ensure_row_contiguous=False,
        stream=None, outputs=None, cooperative=False, cluster=None)``; positional arguments, unknown keywords and a
        missing required one are ArgumentTypeError naming the keyword.

        ``compiled_source`` is PTX text, a cubin or a fatbin, as bytes. ``name`` is the exact entry symbol (the
        mangled name for a C++ kernel that is not ``extern "C"``). The kernel's parameters are, in order: a pointer
        per input, a pointer per output, then each of ``scalars`` by value. Scalars: Python ``bool`` -> 1-byte
        ``bool``, ``int`` -> ``int32``, ``float`` -> ``float32`` (as MLX); NumPy scalars pass exactly their C type
        (``np.int64`` for a ``long``, ``np.float64`` for a ``double``, ``np.float16`` for a ``__half``, ...).
        Inputs, outputs, ``outputs=``, ``init_value``, ``stream`` and ``grid`` (counted in threads) behave as in
        ``cuda_kernel``; a Python scalar in ``inputs`` is passed as a pointer to a 0-d device array, as MLX does.
        ``cooperative`` / ``cluster`` as in ``cuda_kernel`` (a cooperative launch is never inferred here: the
        source is not known). Example::

            (y,) = jk.precompiled_cuda_kernel(name="scale", compiled_source=ptx.encode(), inputs=[x],
                                              output_shapes=[x.shape], output_dtypes=[x.dtype], scalars=[2.0],
                                              grid=(x.size, 1, 1), threadgroup=(256, 1, 1))
        """
        if args or unknown or name is REQUIRED or compiled_source is REQUIRED or inputs is REQUIRED or \
                output_shapes is REQUIRED or output_dtypes is REQUIRED or scalars is REQUIRED or grid is REQUIRED or \
                threadgroup is REQUIRED:
            bad_call("precompiled_cuda_kernel", args, unknown,
                     dict(name=name, compiled_source=compiled_source, inputs=inputs, output_shapes=output_shapes,
                          output_dtypes=output_dtypes, scalars=scalars, grid=grid, threadgroup=threadgroup))
        if not isinstance(name, str):
            raise ArgumentTypeError("name", f"expected the entry point's name (a string), got "
                                            f"{type(name).__name__}")
        compiled_source = _binary_arg(compiled_source)
        if isinstance(shared_memory, bool) or not isinstance(shared_memory, int):
            raise ArgumentTypeError("shared_memory", f"expected an int (bytes), got {type(shared_memory).__name__}")
        if not 0 <= shared_memory <= _INT32_MAX:
            raise ArgumentError("shared_memory", f"expected a non-negative number of bytes, got {shared_memory}")
        if not isinstance(ensure_row_contiguous, bool):
            raise ArgumentTypeError("ensure_row_contiguous",
                                    f"expected a bool, got {type(ensure_row_contiguous).__name__}")
        return _core.precompiled_cuda_kernel(name, compiled_source, inputs, output_shapes, output_dtypes, scalars,
                                             grid, threadgroup, shared_memory, init_value, ensure_row_contiguous,
                                             stream, outputs, cooperative, cluster)


def inspect_binary(compiled_source: Binary) -> dict[str, Any]:
    """What is in PTX / cubin / fatbin bytes, read without a GPU.

    Returns ``{"format": "ptx" | "cubin" | "fatbin", "arch": "sm_90a" | None, "ptx_version": (9, 0) | None,
    "elf_abi_version": 8 | None, "entries": {name: [parameter sizes in bytes] | None} | None, "images": [...]}``
    (``entries`` is None when a fatbin holds only compressed images; a size list is None when the binary does not
    record it; ``images`` lists a fatbin's ``{"kind", "arch", "compressed"}``). Raises ArgumentError for bytes
    that are none of these formats.
    """
    return _core.inspect_binary(_binary_arg(compiled_source))


def check_binary_arch(compiled_source: Binary, compute_capability: tuple[int, int], device_name: str = "GPU",
                      device: int = 0) -> None:
    """Raises ArgumentError("compiled_source", ...) when the binary cannot run on a GPU of
    ``compute_capability`` (a ``(major, minor)`` pair): the check made before a binary is loaded."""
    major, minor = compute_capability
    _core.check_binary_arch(_binary_arg(compiled_source), int(major), int(minor), f"device {device}", device_name)
