"""``jitkernel.precompiled_cuda_kernel``: launch PTX, a cubin or a fatbin compiled elsewhere (nvcc, NVRTC, other
compilers), MLX-compatible.

The call is a keyword-only front over ``_core.precompiled_cuda_kernel`` (cpp/bindings/objects/precompiled_kernel.cpp), which
converts inputs, outputs and the stream exactly as ``cuda_kernel`` does and launches through the same path. The
binary is loaded once per (content, device); its format, entry points and parameter sizes are read from the bytes
(``inspect_binary``), so a wrong ``name``, a parameter list that does not match the arguments, or a cubin for
another GPU is an error before launch, not a fault after it.

A call on traced arrays (``torch.compile``, ``make_fx``, ``jax.jit``) goes to ``call_routes.precompiled``
(_frameworks/precompiled_call.py), which records it as the torch op or the XLA custom call every kernel uses. There
the entry point is a ``RecordedEntry``: kernel text of backend "precompiled" (the binary, its format, the entry
name, how many of the call's last inputs pass by value), which the torch op's two implementations and XLA's
handler run.
"""
from __future__ import annotations

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError
from . import call_routes
from .front import REQUIRED, KernelFront, bad_call

__all__ = ["precompiled_cuda_kernel", "inspect_binary", "check_binary_arch", "RecordedEntry", "entry_for",
           "is_entry_text"]

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
        call = (name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup,
                shared_memory, init_value, ensure_row_contiguous, stream, outputs, cooperative, cluster)
        if call_routes.compiling():  # TorchDynamo traces this: the C function would break the graph
            return call_routes.precompiled(*call)
        try:
            return _core.precompiled_cuda_kernel(*call)
        except ArgumentTypeError as e:
            # A traced array cannot be read eagerly (a FakeTensor under make_fx, a JAX tracer): the test the
            # Python path of kernels without names makes (no backward here) tells it from a wrong argument.
            if e.argument not in ("inputs", "outputs", "scalars") or not KernelFront._traced(None, inputs,
                                                                                             outputs):
                raise
        return call_routes.precompiled(*call)


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


# ---------------------------------------------------------------------------
# The entry point as kernel text, for the traced fronts.

_PREFIX = '{"jitkernel_kernel":2,"backend":"precompiled",'  # every canonical precompiled kernel text starts so
_MAX_CACHED = 256
_texts: dict = {}  # (name, binary, scalars, ensure_row_contiguous, shared_memory) -> kernel text
_entries: dict = {}  # kernel text -> RecordedEntry


class RecordedEntry:
    """A precompiled entry point as the traced fronts take a kernel: ``_spec`` is its kernel text (the core's
    codec, backend "precompiled"), and ``_impl_for(...)._call`` runs a recorded call eagerly (the torch op's
    Python implementation). A recorded call's inputs are its arrays, then the ``scalars`` values passed by value."""

    __slots__ = ("name", "compiled_source", "scalars", "ensure_row_contiguous", "shared_memory", "_spec")

    _factory = "precompiled_cuda_kernel"
    _vjp = None  # no backward: autograd never records these calls
    _impl = None
    _widen_int = False  # a Python int scalar is an int32, a float a float32, as eagerly

    def __init__(self, name: str, compiled_source: bytes, scalars: int, ensure_row_contiguous: bool,
                 shared_memory: int, text: str):
        self.name = name
        self.compiled_source = compiled_source
        self.scalars = scalars
        self.ensure_row_contiguous = ensure_row_contiguous
        self.shared_memory = shared_memory
        self._spec = text

    def _impl_for(self, input_names, output_names) -> RecordedEntry:
        return self

    def _call(self, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream, outputs,
              verbose):
        n = len(inputs) - self.scalars
        return _core.precompiled_cuda_kernel(self.name, self.compiled_source, inputs[:n], output_shapes,
                                             output_dtypes, inputs[n:], grid, threadgroup, self.shared_memory,
                                             init_value, self.ensure_row_contiguous, stream, outputs)


def _remember(cache: dict, key, value):
    if len(cache) >= _MAX_CACHED:
        cache.clear()
    cache[key] = value
    return value


def entry_text(name: str, compiled_source: bytes, scalars: int, ensure_row_contiguous: bool,
               shared_memory: int) -> str:
    """The kernel text of an entry point (its format read from the bytes: ArgumentError("compiled_source") for
    bytes that are no binary, or larger than a traced call carries)."""
    key = (name, compiled_source, scalars, ensure_row_contiguous, shared_memory)
    text = _texts.get(key)
    if text is None:
        text = _remember(_texts, key, _core.encode_precompiled(name, compiled_source, scalars,
                                                               ensure_row_contiguous, shared_memory))
    return text


def is_entry_text(text) -> bool:
    """Whether ``text`` is (claims to be) a precompiled kernel's text; ``entry_for`` checks it."""
    return isinstance(text, str) and text.startswith(_PREFIX)


def entry_for(text: str) -> RecordedEntry:
    """The entry point of a precompiled kernel's text, decoded by the core (strict and canonical: ArgumentError
    ("kernel", ...) naming the field otherwise)."""
    entry = _entries.get(text)
    if entry is not None:
        return entry
    args = _core.decode_kernel(text, "kernel")
    if args.get("backend") != "precompiled":
        raise ArgumentError("kernel", "not a precompiled kernel's text")
    return _remember(_entries, text, RecordedEntry(args["name"], args["compiled_source"], args["scalars"],
                                                   args["ensure_row_contiguous"], args["shared_memory"], text))
