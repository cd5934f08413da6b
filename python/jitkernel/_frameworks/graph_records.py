"""Calls as text, for the graphs of compiled programs.

A traced call (``torch.compile``, ``torch.export``, autograd) is recorded as a torch.library op whose string
arguments must be enough to run it again, in this process or in a new one that loaded an exported program: the
serialised *kernel* (what ``cuda_kernel`` was given, and its backward's identity: ``kernel_text`` / ``kernel_for``
in _kernels/cuda_kernel.py) and the serialised *call* (template arguments, scalar inputs, output dtypes and ranks,
init_value), made and decoded here. Both are written and read by the core's one codec
(cpp/jitkernel/engine/call_record.hpp), the same that XLA's attribute and ``JITKERNEL_RECORD`` lines use; equal
calls give equal text (and one compiled graph). Sizes that may be symbolic (grid, threadgroup, output shapes, int
scalar inputs) are null in the call and travel in the op's ``SymInt[]`` list; see ``CallRecord``.

``call_record`` runs at trace time on Python constants only (it is marked as a constant result for torch's
compiler), so nothing in it is traced.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from .. import _core
from .._dtypes import DType, _normalize, scalar_value
from .._errors import ArgumentTypeError

_lock = threading.Lock()
_records: dict = {}  # call text -> CallRecord

# A scalar input fixed at run time is recorded with the dtype an eager call gives its Python value.
_SYMBOLIC_DTYPE = {"int": "int32", "float": "float32"}


@dataclass(frozen=True)
class CallRecord:
    """A decoded call. ``inputs``: per input ``("array", dtype or None, shape or None)`` or ``("scalar", dtype,
    value)``, value a Python/NumPy scalar or None when the caller passes it (then it is the next entry of
    ``ints``, or of ``floats`` for a float dtype). ``outputs``: ``(dtype, shape)``. In ``grid``, ``threadgroup``
    and the output shapes a None extent is the next entry of ``ints``; ``ints`` holds those first, in that order,
    then the scalars'."""

    input_names: tuple
    output_names: tuple
    inputs: tuple
    outputs: tuple
    template: tuple  # (name, value) with jk.DType / int / bool values
    grid: tuple
    threadgroup: tuple
    init_value: float | None
    verbose: bool
    dict_form: bool

    @property
    def output_dtypes(self) -> tuple:
        return tuple(d for d, _ in self.outputs)


def _input_entry(entry) -> tuple:
    """An input entry of ``torch_ops.call`` (``("array", dtype, ndim)``, ``("scalar", "bool", value)``,
    ``("scalar", "int" | "float", None)``) as the codec takes it: a tensor's dtype and rank are fixed while tracing
    (so the record replays in ``precompile --record``), its extents are not."""
    if entry[0] == "array":
        return ("array", entry[1], (None,) * entry[2])
    if entry[1] == "bool":
        return ("scalar", bool(entry[2]))
    return ("scalar", _SYMBOLIC_DTYPE[entry[1]], None)


def call_record(input_names, output_names, inputs, output_dtypes, output_ranks, template, init_value, verbose,
                dict_form) -> str:
    """The serialised call of a traced torch call; all arguments are Python constants: ``inputs`` as
    ``_input_entry`` takes them, dtypes as names or framework dtypes, ``template`` as (name, value) pairs.
    Geometry and output extents are left to the op's ``ints``."""
    outputs = [(_normalize(d, "output_dtypes", f"output {i}"), (None,) * rank)
               for i, (d, rank) in enumerate(zip(output_dtypes, output_ranks))]
    template = [(n, _normalize(v, "template", f"template argument {n!r}") if isinstance(v, str) else v)
                for n, v in (template or ())]
    return _core.encode_call(list(input_names), list(output_names), [_input_entry(e) for e in inputs], outputs,
                             template, (None,) * 3, (None,) * 3, init_value, bool(verbose), bool(dict_form), 0,
                             False)


def record_of(fields: dict) -> CallRecord:
    """The ``CallRecord`` of a call the core decoded (``_core.decode_call`` / ``decode_record``)."""
    inputs = tuple(e if e[0] == "array" or e[2] is None else ("scalar", e[1], scalar_value(e[1], e[2]))
                   for e in fields["inputs"])
    return CallRecord(fields["input_names"], fields["output_names"], inputs, fields["outputs"],
                      fields["template"], fields["grid"], fields["threadgroup"], fields["init_value"],
                      fields["verbose"], fields["dict_form"])


def decode(text: str) -> CallRecord:
    """The ``CallRecord`` of a serialised call (cached: a compiled graph passes the same text every call). Text
    this process did not write is checked by the core: anything else is an ``ArgumentError("call", ...)`` naming
    the field."""
    if not isinstance(text, str):
        raise ArgumentTypeError("call", f"expected a serialised call (str), got {type(text).__name__}")
    hit = _records.get(text)
    if hit is not None:
        return hit
    result = record_of(_core.decode_call(text, "call"))
    with _lock:
        if len(_records) < 4096:
            _records[text] = result
    return result
