"""jitkernel's exceptions.

The C++ core raises typed errors (cpp/jitkernel/core/errors.hpp); the extension turns each into the class here
that matches it (cpp/bindings/objects/exception_translation.cpp), and Python code raises these directly. Every error about a bad argument
names the argument first: ``str(e)`` starts with ``"<argument>: "`` and ``e.argument`` holds the name.
"""
from __future__ import annotations

import re

__all__ = [
    "JitKernelError",
    "ArgumentError",
    "ArgumentTypeError",
    "CompileError",
    "CudaNotAvailableError",
    "MetalNotAvailableError",
    "CudaError",
    "KernelFaultError",
    "KernelBoundsError",
    "UnwrittenOutputError",
    "RecordError",
    "BundleError",
]


# Where the toolkit search looked for NVRTC and why (``_toolkit_search.search_notes``), added to the core's "NVRTC
# not found" message. ``import jitkernel`` registers it (``register_nvrtc_notes``): this module, the bottom of the
# package, imports none of it, while the search imports this module to raise its errors.
_nvrtc_notes = None


def register_nvrtc_notes(notes) -> None:
    """Sets the function ``notes(with_hint: bool) -> str`` that ``CudaNotAvailableError`` adds to NVRTC errors."""
    global _nvrtc_notes
    _nvrtc_notes = notes


class JitKernelError(Exception):
    """Base class of every error jitkernel raises."""


class _NamesArgument:
    """Mixin: ``Error("grid", "expected ...")`` -> message ``"grid: expected ..."``, ``.argument == "grid"``."""

    argument: str | None

    def __init__(self, argument: str, message: str | None = None):
        if message is None:
            argument, message = None, argument
        self.argument = argument
        super().__init__(f"{argument}: {message}" if argument else message)


class ArgumentError(_NamesArgument, JitKernelError, ValueError):
    """An argument has a bad value (wrong count, negative shape, unknown name, ...).

    ``e.argument`` is the argument's name (``"grid"``, ``"inputs"``, ...) and ``str(e)`` starts with it."""


class ArgumentTypeError(_NamesArgument, JitKernelError, TypeError):
    """An argument has the wrong type (a float where an int belongs, an unknown object as an input, ...), or a
    keyword-only call got positional arguments, an unknown keyword or lacks a required one.

    ``e.argument`` is the argument's name (``"grid"``, ``"inputs"``, ...) and ``str(e)`` starts with it."""


class CompileError(JitKernelError, RuntimeError):
    """NVRTC rejected the generated source.

    ``log`` is NVRTC's log with line numbers pointing into your ``source`` / ``header``; ``source`` is the full
    generated text that was compiled (what ``kernel.source(...)`` returns).
    """

    def __init__(self, message: str, log: str = "", source: str = ""):
        super().__init__(message)
        self.log = log
        self.source = source


class CudaNotAvailableError(JitKernelError, RuntimeError):
    """The CUDA driver or NVRTC could not be found or loaded; the message says which and how to install it."""

    @classmethod
    def _from_core(cls, message: str) -> "CudaNotAvailableError":
        # The core knows the path it failed to load; the toolkit search knows where it looked and why.
        if "nvrtc" in message.lower() and _nvrtc_notes is not None:
            notes = _nvrtc_notes(with_hint="pip install" not in message)
            if notes:
                message = f"{message}\n{notes}"
        return cls(message)


class MetalNotAvailableError(JitKernelError, RuntimeError):
    """A Metal kernel was called where Metal cannot run: this needs macOS on Apple silicon (jitkernel built there,
    with its Metal backend). Making the kernel and ``kernel.source(...)`` works everywhere."""


class CudaError(JitKernelError, RuntimeError):
    """A CUDA driver call failed; ``code`` is the CUresult."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class KernelFaultError(CudaError):
    """A kernel faulted on the device (illegal address, trap, ...); the message names the kernel."""


_BOUNDS = re.compile(r"^(?P<array>\w+)\[(?P<index>-?\d+)\] out of bounds \((?:extent (?P<extent>\d+)|valid offsets "
                     r"(?P<lo>-?\d+) to (?P<top>-?\d+))\) at (?:body line (?P<line>\d+)|an unknown body line[^,]*), "
                     r"block \((?P<block>[\d,]+)\) thread \((?P<thread>[\d,]+)\) in kernel '(?P<kernel>[^']*)' "
                     r"\(an (?P<role>input|output)\)")


class KernelBoundsError(JitKernelError, IndexError):
    """Checked mode (``compile_options={"checked": True}`` or ``JITKERNEL_CHECKED=1``; docs/checked.md): the kernel
    body indexed an array outside its extent. Only the launch's first violation is reported; the access itself was
    suppressed, so the context stays usable.

    ``str(e)`` reads ``"y[4096] out of bounds (extent 4096) at body line 3, block (16,0,0) thread (0,0,0) in kernel
    'add' (an output)"``. Attributes: ``array`` (the parameter's name), ``index`` (the element offset from the
    array's start), ``extent`` (its element count; for a strided view, one past the highest offset it reaches),
    ``line`` (the body line, None when unknown: a ``*p`` or ``p->`` access), ``block`` and ``thread`` (3-tuples),
    ``kernel`` (the kernel's name) and ``is_output``."""

    def __init__(self, message: str, array: str | None = None, index: int | None = None,
                 extent: int | None = None, line: int | None = None, block: tuple | None = None,
                 thread: tuple | None = None, kernel: str | None = None, is_output: bool | None = None):
        super().__init__(message)
        m = _BOUNDS.match(message) if array is None else None
        if m is not None:  # rebuilt from its message (a torch op's error text)
            array, index, kernel = m["array"], int(m["index"]), m["kernel"]
            extent = int(m["extent"]) if m["extent"] else int(m["top"]) + 1
            line = int(m["line"]) if m["line"] else None
            block = tuple(int(v) for v in m["block"].split(","))
            thread = tuple(int(v) for v in m["thread"].split(","))
            is_output = m["role"] == "output"
        self.array, self.index, self.extent, self.line = array, index, extent, line
        self.block, self.thread, self.kernel, self.is_output = block, thread, kernel, is_output


class UnwrittenOutputError(JitKernelError, RuntimeError):
    """Checked mode: an output jitkernel allocated for the call still holds the NaN it was filled with before the
    launch, so the kernel never wrote that element. ``output`` names it, ``index`` is the first such element (flat,
    row-major), ``kernel`` the kernel's name. Only floating-point outputs are checked (docs/checked.md)."""

    def __init__(self, message: str, kernel: str | None = None, output: str | None = None,
                 index: int | None = None):
        super().__init__(message)
        m = re.match(r"^(\w+)\[(\d+)\] was never written by kernel '([^']*)'", message) if output is None else None
        if m is not None:
            output, index, kernel = m[1], int(m[2]), m[3]
        self.kernel, self.output, self.index = kernel, output, index


class RecordError(JitKernelError, ValueError):
    """A call record (``JITKERNEL_RECORD``) line that ``precompile`` cannot replay; the message starts with
    ``"<file> line <n>: "`` and ``path`` / ``line`` hold the file and the 1-based line number."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path} line {line}: {message}")
        self.path = path
        self.line = line


class BundleError(JitKernelError, ValueError):
    """A cache bundle that is refused (damaged, of another format, or unsafe to unpack: a member name that is not
    an entry name, a size over the limits, a bad checksum); the message names the file and what was wrong. Nothing
    is written when a bundle is refused."""


for _cls in (JitKernelError, ArgumentError, ArgumentTypeError, CompileError, CudaNotAvailableError,
             MetalNotAvailableError, CudaError, KernelFaultError, KernelBoundsError, UnwrittenOutputError, RecordError,
             BundleError):
    _cls.__module__ = "jitkernel"  # tracebacks show jitkernel.CompileError, the public name
del _cls


def from_op_message(message: str) -> JitKernelError | None:
    """The jitkernel error a torch op's C++ implementation reported as ``RuntimeError("jitkernel.<class>: <text>")``
    (cpp/jitkernel/torch_op/op_kernels.cpp), or None for any other message. An argument error's text starts with
    its argument's name."""
    head, sep, text = message.partition(": ")
    if not sep or not head.startswith("jitkernel."):
        return None
    cls = globals().get(head[len("jitkernel."):])
    if not (isinstance(cls, type) and issubclass(cls, JitKernelError)):
        return None
    if issubclass(cls, _NamesArgument):
        argument, sep, rest = text.partition(": ")
        return cls(argument, rest) if sep else cls(text)
    return cls(text)
