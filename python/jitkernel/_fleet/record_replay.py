"""Call records: reading the file ``JITKERNEL_RECORD`` makes a process write (one line per distinct kernel and
signature it compiled: cpp/jitkernel/engine/record_file.cpp) and compiling each line again (``precompile
--record``).

A line is a serialised call record (cpp/jitkernel/engine/call_record.hpp), the format every front carries a call
in: a JITKERNEL_RECORD line, a JAX program's ``jk_call`` attribute or a torch op's kernel and call joined into a
record all replay. A record is data, never code: the core decodes it (strict JSON, exact fields and types, format
version, canonical form) before anything is made of it, and only then does it become ``cuda_kernel(...)`` and
``kernel.compile(...)`` arguments. Every refusal is a ``RecordError`` naming the file and line. Equal lines are
compiled once. A tuned call record (an autotuned call's line, tune_ahead.py) compiles every candidate, and with
``precompile(..., tune=True)`` decides its bucket on this machine's GPU.
"""
from __future__ import annotations

import json
import os
import stat

from .. import _core
from .._dtypes import numpy_dtype
from .._errors import ArgumentError, ArgumentTypeError, RecordError
from .._kernels.cuda_kernel import cuda_kernel, decoded_options
from . import tune_ahead
from .placeholders import placeholder

MAX_LINE_BYTES = 64 << 20  # a kernel's source and header are in its line


def _placeholder(entry, i: int):
    """A stand-in input of a record's input entry: a zero array of its rank (extents 1 where the record leaves
    them open), or a zero NumPy scalar of its dtype."""
    kind, dtype, shape = entry
    if kind == "scalar":
        return numpy_dtype(dtype).type(0)
    if dtype is None or shape is None:
        raise ArgumentError("inputs", f"inputs[{i}]: the record does not fix this array's dtype and rank, which "
                                      f"the generated source needs")
    return placeholder(tuple(1 if d is None else d for d in shape), dtype)


def _parts(text: str):
    """(cuda_kernel arguments, the decoded call) of a record's text, or None for a precompiled kernel's line
    (nothing to compile); the core's ArgumentError otherwise."""
    kernel, call = _core.decode_record(text.rstrip("\r\n"), "record")
    if kernel.get("backend") == "precompiled":
        return None  # a precompiled_cuda_kernel entry point: its binary is compiled already
    del kernel["backward"]
    kernel["compile_options"] = decoded_options(kernel["compile_options"])  # checked as recorded
    kernel["input_names"], kernel["output_names"] = list(call["input_names"]), list(call["output_names"])
    return kernel, call


def _decode(text: str):
    """(cuda_kernel arguments, inputs, output dtypes, templates to compile, tuned) of one line, or None for a
    precompiled kernel's line; ``tuned``: (the tuned line's fields, its decoded call) for a tuned call record
    (tune_ahead.py: one template per candidate), else None. The core's ArgumentError when not a record."""
    tuned = None
    if text.startswith(tune_ahead.TUNED_PREFIX):
        fields, parts, templates = tune_ahead.replayed(text, _parts)
    else:
        parts = _parts(text)
        templates = None
    if parts is None:
        return None
    kernel, call = parts
    if templates is None:
        templates = [list(call["template"])]
    else:
        tuned = (fields, call)
    inputs = [_placeholder(entry, i) for i, entry in enumerate(call["inputs"])]
    dtypes = [dtype for dtype, _ in call["outputs"]]
    return kernel, inputs, dtypes, templates, tuned


def lines(path: str):
    """(line number, text) of each non-blank line of the record at ``path``; over-long or non-UTF-8 lines are a
    RecordError, and so is a path that is not a regular file (opened without blocking: a FIFO would wait for a
    writer for ever). Read one bounded line at a time."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise RecordError(path, 0, f"cannot be read ({e.strerror or e})") from None
    f = os.fdopen(fd, "rb")
    with f:
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            what = "a FIFO" if stat.S_ISFIFO(kind) else "a folder" if stat.S_ISDIR(kind) else "a special file"
            raise RecordError(path, 0, f"is {what}, not a regular file")
        number = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise RecordError(path, number, f"longer than {MAX_LINE_BYTES} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise RecordError(path, number, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
            if text.strip():
                yield number, text


def replay(path: str, compiler) -> None:
    """Compiles every kernel the record at ``path`` names with ``compiler`` (precompile.Compiler); a tuned call
    record's candidates all, and with ``compiler.tune`` its bucket is then decided on this GPU. All lines are
    checked before the first compile."""
    decoded, kernels = [], {}
    for number, text in lines(path):
        try:
            decoded_line = _decode(text)
            if decoded_line is None:
                continue
            kernel_args, inputs, dtypes, templates, tuned = decoded_line
            key = json.dumps(kernel_args, sort_keys=True)
            kernel = kernels.get(key) or cuda_kernel(**kernel_args)
            kernels[key] = kernel
        except (ArgumentError, ArgumentTypeError) as e:
            raise RecordError(path, number, f"not a valid call record: {e}") from None
        decoded.append((number, kernel, inputs, dtypes, templates, tuned))
    for number, kernel, inputs, dtypes, templates, tuned in decoded:
        try:
            for template in templates:
                compiler.add(kernel, inputs, dtypes, template)
            if tuned is not None and compiler.tune:
                tune_ahead.decide(kernel, tuned[0], tuned[1], templates, compiler)
        except Exception as e:
            if hasattr(e, "add_note"):
                e.add_note(f"while compiling {path} line {number}")
            raise
