"""Kernels and calls as text, for the graphs of compiled programs.

A traced call (``torch.compile``, ``torch.export``, autograd) is recorded as a torch.library op whose string
arguments must be enough to run it again, in this process or in a new one that loaded an exported program: the
kernel's *spec* (what ``cuda_kernel`` was given) and the call's *record* (template arguments, scalar inputs, output
dtypes and ranks, init_value). Both are JSON with sorted keys, so equal calls give equal strings (and one compiled
graph). Sizes that may be symbolic (grid, threadgroup, output shapes, int scalar inputs) are not in the record: the
op takes them as a ``SymInt[]`` list; see ``CallRecord.ints``.

``kernel_for(spec)`` finds the kernel object a spec came from (its backward included), or makes it again from the
spec in a new process. ``call_record`` runs at trace time on Python constants only (it is marked as a constant
result for torch's compiler), so nothing in it is traced.
"""
from __future__ import annotations

import json
import threading
import weakref
from dataclasses import dataclass

from ._dtypes import DType, _normalize
from ._errors import ArgumentError, ArgumentTypeError

_lock = threading.Lock()
# spec string -> the kernel object, while it lives (a graph whose kernel died makes it again from the spec)
_kernels: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_records: dict = {}  # record string -> CallRecord

_SPEC_FIELDS = ("name", "input_names", "output_names", "source", "header", "ensure_row_contiguous", "shared_memory")


def kernel_spec(kernel) -> str:
    """The spec string of ``kernel`` (a ``CudaKernel``), made now (a kernel's is made when it is made, and again
    when a backward is attached) and registered so that ``kernel_for`` finds this object."""
    fields = {"name": kernel.name, "input_names": kernel.input_names and list(kernel.input_names),
              "output_names": kernel.output_names and list(kernel.output_names), "source": kernel.source_text,
              "header": kernel.header, "ensure_row_contiguous": kernel.ensure_row_contiguous,
              "shared_memory": kernel.shared_memory, "compile_options": kernel.compile_options}
    vjp = kernel._vjp
    if vjp is not None:  # two kernels with one source but different backwards are different ops
        fields["vjp"] = f"{getattr(vjp, '__module__', '?')}.{getattr(vjp, '__qualname__', repr(vjp))}"
    spec = json.dumps(fields, sort_keys=True)
    kernel._spec = spec
    with _lock:
        _kernels[spec] = kernel
    return spec


def kernel_for(spec: str):
    """The kernel object of a spec string: the one that made it, else a new ``cuda_kernel`` from its fields
    (without a backward: a program exported with one needs its kernel made again before it is differentiated)."""
    kernel = _kernels.get(spec)
    if kernel is not None:
        return kernel
    try:
        fields = json.loads(spec)
        args = {name: fields[name] for name in _SPEC_FIELDS}
        args["compile_options"] = fields.get("compile_options")  # absent in specs written before it existed
    except (ValueError, TypeError, KeyError) as e:
        raise ArgumentError("kernel", f"not a jitkernel kernel spec ({type(e).__name__}: {e})") from None
    from ._cuda_kernel import cuda_kernel

    kernel = cuda_kernel(**args)
    return kernel


@dataclass(frozen=True)
class CallRecord:
    """A decoded record. ``inputs``: per input, ``("array",)`` or ``("scalar", kind, value)`` with kind one of
    int/float/bool/<dtype name> (NumPy scalars) and value None when it is symbolic (then it is the next entry of
    ``ints`` after the shapes, or of ``floats``). ``ints`` holds grid (3), threadgroup (3), then each output's
    shape, then the symbolic int scalars."""

    input_names: tuple
    output_names: tuple
    inputs: tuple
    output_dtypes: tuple  # jk.DType
    output_ranks: tuple
    template: tuple  # (name, value) with jk.DType / int / bool values
    init_value: object
    verbose: bool
    dict_form: bool


def _template_entry(name, value):
    if not isinstance(name, str):
        raise ArgumentTypeError("template", f"names must be strings, got {type(name).__name__} {name!r}")
    if isinstance(value, (bool, int)):
        return [name, "bool" if isinstance(value, bool) else "int", value]
    return [name, "dtype", _normalize(value, "template", f"template argument {name!r}").name]


def call_record(input_names, output_names, inputs, output_dtypes, output_ranks, template, init_value, verbose,
                dict_form) -> str:
    """The record string of a call (see the module docstring); all arguments are Python constants: ``inputs`` as
    the ``CallRecord.inputs`` tuples, dtypes as names or framework dtypes, ``template`` as (name, value) pairs."""
    fields = {
        "input_names": list(input_names), "output_names": list(output_names), "inputs": [list(i) for i in inputs],
        "output_dtypes": [_normalize(d, "output_dtypes", f"output {i}").name for i, d in enumerate(output_dtypes)],
        "output_ranks": list(output_ranks),
        "template": [_template_entry(n, v) for n, v in (template or ())],
        "init_value": init_value, "verbose": bool(verbose), "dict_form": bool(dict_form),
    }
    try:
        return json.dumps(fields, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError("init_value", f"cannot be recorded in a compiled graph ({e})") from None


def decode(record: str) -> CallRecord:
    """The ``CallRecord`` of a record string (cached: a compiled graph passes the same string every call)."""
    hit = _records.get(record)
    if hit is not None:
        return hit
    from ._dtypes import dtype

    try:
        f = json.loads(record)
        result = CallRecord(
            tuple(f["input_names"]), tuple(f["output_names"]), tuple(tuple(i) for i in f["inputs"]),
            tuple(dtype(d) for d in f["output_dtypes"]), tuple(f["output_ranks"]),
            tuple((n, dtype(v) if kind == "dtype" else v) for n, kind, v in f["template"]),
            f["init_value"], f["verbose"], f["dict_form"])
    except (ValueError, TypeError, KeyError) as e:
        raise ArgumentError("call", f"not a jitkernel call record ({type(e).__name__}: {e})") from None
    with _lock:
        if len(_records) < 4096:
            _records[record] = result
    return result


def is_dtype(value) -> bool:
    return isinstance(value, DType)
