"""Streams: turning ``stream=`` objects into CUstream handles, and the current stream of the inputs' framework
(used when ``stream=None``). The extension calls these (cpp/bindings/streams.cpp); plain int handles never get
here. Frameworks are looked up in ``sys.modules``, never imported.

Lifetimes: outputs are freed on the stream they were allocated on, so they keep the stream *object* they came from
alive (cpp/bindings/streams.cpp attaches it to their buffers). A plain int handle carries no owner: whoever passes
one keeps that stream alive as long as the outputs live. torch's streams come from pools that are never destroyed.
"""
from __future__ import annotations

import operator
import sys

from ._errors import ArgumentError, ArgumentTypeError, JitKernelError

_EXPECTED = ("expected None, an int stream handle, an object with __cuda_stream__ (cuda.core), "
             "a torch.cuda.Stream or a CuPy Stream")


def _checked(handle, source: str) -> int:
    try:
        value = operator.index(handle)
    except TypeError:
        raise ArgumentTypeError("stream", f"{source} gave {handle!r}, not an int handle") from None
    if not 0 <= value < 2**64:
        raise ArgumentError("stream", f"{source} gave {value}; a stream handle is a non-negative int below 2**64")
    return value


def stream_handle(obj) -> int:
    """The CUstream handle of a stream object (``__cuda_stream__``, torch / CuPy streams, NumPy ints). Whatever
    the object does wrong (a protocol method that raises, a result of the wrong type) is an error naming
    ``stream``."""
    try:
        return _stream_handle(obj)
    except JitKernelError:
        raise
    except Exception as e:
        raise ArgumentTypeError("stream", f"reading the stream object ({type(obj).__qualname__}) failed "
                                          f"({type(e).__name__}: {e})") from e


def _stream_handle(obj) -> int:
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        if not (isinstance(value, tuple) and len(value) == 2):
            raise ArgumentTypeError("stream", f"__cuda_stream__ must give (version, handle), got {value!r}")
        return _checked(value[1], "__cuda_stream__")
    module = type(obj).__module__
    root = module.partition(".")[0] if isinstance(module, str) else ""
    if root == "torch" and hasattr(obj, "cuda_stream"):
        return _checked(obj.cuda_stream, "torch stream .cuda_stream")
    if root in ("cupy", "cupy_backends") and hasattr(obj, "ptr"):
        return _checked(obj.ptr, "CuPy stream .ptr")
    if not isinstance(obj, bool) and hasattr(type(obj), "__index__"):
        return _checked(obj, "stream")
    raise ArgumentTypeError("stream", f"{_EXPECTED}; got {module}.{type(obj).__qualname__}")


def current_stream_getter(framework: str):
    """A function ``device -> CUstream handle or stream object (with ``.ptr``)`` giving the framework's current
    stream, or None (legacy default)."""
    if framework == "torch":
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # a C function: no Stream object per call
        if raw is not None:
            return raw
        return lambda device: torch.cuda.current_stream(device).cuda_stream
    if framework == "cupy":
        cupy = sys.modules["cupy"]

        # The Stream object, not just its handle: outputs allocated on it keep it alive (a CuPy stream can be
        # destroyed while arrays allocated on it live on).
        def cupy_current(device: int):
            try:
                return cupy.cuda.get_current_stream(device)
            except TypeError:  # CuPy < 12: no device argument
                with cupy.cuda.Device(device):
                    return cupy.cuda.get_current_stream()

        return cupy_current
    return None
