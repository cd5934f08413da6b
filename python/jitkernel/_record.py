"""Call records: reading the file ``JITKERNEL_RECORD`` makes a process write (one JSON line per distinct kernel and
signature it compiled: cpp/jitkernel/engine/call_record.cpp) and compiling each line again (``precompile --record``).

A record is data, never code: each line is parsed as strict JSON (_strict_json: duplicate keys, NaN/Infinity,
lone surrogates, nesting too deep and over-long lines refused), checked field by field against the format (exact
keys, types, counts, dtype names, format version), and only then turned into ``cuda_kernel(...)`` and
``kernel.compile(...)`` arguments. As a last check the line is made again from the kernel and arguments it gave and
must come out equal, so a line that parses but does not mean what it says is refused. Every refusal is a
``RecordError`` naming the file and line. Equal lines are compiled once.
"""
from __future__ import annotations

import json
import os
import stat

from . import _core, _strict_json
from ._errors import ArgumentError, ArgumentTypeError, RecordError

FORMAT = 1
MAX_LINE_BYTES = 64 << 20  # a kernel's source and header are in its line
_MAX_NDIM = 64

_TOP = {"jitkernel_record", "backend", "kernel", "inputs", "output_dtypes", "template"}
_KERNEL = {"name": str, "input_names": list, "output_names": list, "source": str, "header": str,
           "ensure_row_contiguous": bool, "shared_memory": int, "compile_options": dict}


_Bad = _strict_json.JsonError  # a check failed; replay() turns it into a RecordError naming the line
_check_type, _dtype = _strict_json.check_type, _strict_json.dtype_field


def _input(item, i: int):
    """A placeholder input of record input ``item``: a zero array of rank ndim, or a NumPy scalar."""
    from ._precompile import numpy_dtype, placeholder

    what = f"inputs[{i}]"
    _check_type(item, list, what)
    if len(item) == 3 and item[0] == "array":
        dtype = _dtype(item[1], what)
        _check_type(item[2], int, f"{what} ndim")
        if not 0 <= item[2] <= _MAX_NDIM:
            raise _Bad(f"{what}: ndim {item[2]} is out of range (0 to {_MAX_NDIM})")
        return placeholder((1,) * item[2], dtype)
    if len(item) == 2 and item[0] == "scalar":
        return numpy_dtype(_dtype(item[1], what)).type(0)
    raise _Bad(f"{what}: expected ['array', dtype, ndim] or ['scalar', dtype]")


def _template_arg(item, i: int):
    what = f"template[{i}]"
    _check_type(item, list, what)
    if len(item) != 3 or not isinstance(item[0], str) or item[1] not in ("int", "bool", "dtype"):
        raise _Bad(f"{what}: expected [name, 'int' | 'bool' | 'dtype', value]")
    name, kind, value = item
    if kind == "dtype":
        return name, _dtype(value, what)
    _check_type(value, int if kind == "int" else bool, what)
    return name, value


def _decode(text: str):
    """(cuda_kernel arguments, inputs, output dtypes, template, parsed line) of one line, or _Bad."""
    line = _strict_json.loads(text)
    if not isinstance(line, dict) or set(line) != _TOP:
        raise _Bad(f"expected a JSON object with the keys {', '.join(sorted(_TOP))}")
    if not _strict_json.is_int(line["jitkernel_record"]) or line["jitkernel_record"] != FORMAT:
        raise _Bad(f"record format {line['jitkernel_record']!r} is not one this jitkernel reads ({FORMAT})")
    if line["backend"] != "cuda":
        raise _Bad(f"backend {line['backend']!r}: only 'cuda' kernels are recorded")
    kernel = line["kernel"]
    if not isinstance(kernel, dict) or set(kernel) != set(_KERNEL):
        raise _Bad(f"kernel: expected an object with the keys {', '.join(sorted(_KERNEL))}")
    for key, kind in _KERNEL.items():
        _check_type(kernel[key], kind, f"kernel.{key}")
    for key in ("input_names", "output_names"):
        for name in kernel[key]:
            _check_type(name, str, f"kernel.{key} item")
    for key in ("inputs", "output_dtypes", "template"):
        _check_type(line[key], list, key)
    if len(line["inputs"]) != len(kernel["input_names"]):
        raise _Bad(f"inputs: {len(line['inputs'])} given for {len(kernel['input_names'])} input names")
    if len(line["output_dtypes"]) != len(kernel["output_names"]):
        raise _Bad(f"output_dtypes: {len(line['output_dtypes'])} given for {len(kernel['output_names'])} outputs")
    inputs = [_input(item, i) for i, item in enumerate(line["inputs"])]
    dtypes = [_dtype(d, f"output_dtypes[{i}]") for i, d in enumerate(line["output_dtypes"])]
    template = [_template_arg(item, i) for i, item in enumerate(line["template"])]
    return kernel, inputs, dtypes, template, line


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
    """Compiles every kernel the record at ``path`` names with ``compiler`` (_precompile.Compiler). All lines are
    checked before the first compile."""
    from ._cuda_kernel import cuda_kernel

    decoded, kernels = [], {}
    for number, text in lines(path):
        try:
            kernel_args, inputs, dtypes, template, line = _decode(text)
            key = json.dumps(kernel_args, sort_keys=True)
            kernel = kernels.get(key) or cuda_kernel(**kernel_args)
            kernels[key] = kernel
            again = json.loads(_core._call_record_line(kernel, inputs, dtypes, template))
        except _Bad as e:
            raise RecordError(path, number, str(e)) from None
        except (ArgumentError, ArgumentTypeError) as e:
            raise RecordError(path, number, f"not a valid call: {e}") from None
        if again != line:
            raise RecordError(path, number, "the line does not describe the call it makes again (a field has a "
                                            "value of another form than jitkernel writes)")
        decoded.append((number, kernel, inputs, dtypes, template))
    for number, kernel, inputs, dtypes, template in decoded:
        try:
            compiler.add(kernel, inputs, dtypes, template)
        except Exception as e:
            if hasattr(e, "add_note"):
                e.add_note(f"while compiling {path} line {number}")
            raise
