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

from . import _strict_json
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
    (without a backward: a program exported with one needs its kernel made again before it is differentiated).
    A spec this module did not write (a loaded program, a caller of the op) is checked field by field first:
    anything else is an ``ArgumentError("kernel", ...)`` naming the field."""
    if not isinstance(spec, str):
        raise ArgumentTypeError("kernel", f"expected a kernel spec string, got {type(spec).__name__}")
    kernel = _kernels.get(spec)
    if kernel is not None:
        return kernel
    try:
        args = _spec_args(_strict_json.loads(spec))
    except _strict_json.JsonError as e:
        raise ArgumentError("kernel", f"not a jitkernel kernel spec ({e})") from None
    from ._cuda_kernel import cuda_kernel

    kernel = cuda_kernel(**args)
    return kernel


_SPEC_TYPES = {"name": str, "input_names": (list, type(None)), "output_names": (list, type(None)), "source": str,
               "header": str, "ensure_row_contiguous": bool, "shared_memory": int}
_SPEC_OPTIONAL = {"compile_options": (dict, type(None)), "vjp": str}  # compile_options: absent in older specs


def _check_field(value, kind, what: str) -> None:
    if isinstance(kind, tuple):
        if not isinstance(value, kind):
            names = " or ".join("null" if k is type(None) else k.__name__ for k in kind)
            raise _strict_json.JsonError(f"{what}: expected {names}, got {type(value).__name__}")
    else:
        _strict_json.check_type(value, kind, what)


def _check_keys(fields, required, optional=()) -> None:
    _strict_json.check_type(fields, dict, "the top level")
    missing, unknown = set(required) - set(fields), set(fields) - set(required) - set(optional)
    if missing or unknown:
        raise _strict_json.JsonError(
            f"{'missing' if missing else 'unknown'} field {sorted(missing or unknown)[0]!r} (expected the fields "
            f"{', '.join(sorted(required))}{' and optionally ' + ', '.join(sorted(optional)) if optional else ''})")


def _string_list(value, what: str) -> None:
    _strict_json.check_type(value, list, what)
    for i, item in enumerate(value):
        _strict_json.check_type(item, str, f"{what}[{i}]")


def _spec_args(fields) -> dict:
    """The ``cuda_kernel`` arguments of a parsed spec, each field's type checked (values are cuda_kernel's to
    check), or JsonError naming the field."""
    _check_keys(fields, _SPEC_TYPES, _SPEC_OPTIONAL)
    for name, kind in {**_SPEC_TYPES, **_SPEC_OPTIONAL}.items():
        if name in fields:
            _check_field(fields[name], kind, name)
    for name in ("input_names", "output_names"):
        if fields[name] is not None:
            _string_list(fields[name], name)
    args = {name: fields[name] for name in _SPEC_FIELDS}
    args["compile_options"] = fields.get("compile_options")
    return args


@dataclass(frozen=True)
class CallRecord:
    """A decoded record. ``inputs``: per input, ``("array",)`` or ``("scalar", kind, value)`` with kind one of
    int/float/bool and value None when it is symbolic (then it is the next entry of ``ints`` after the shapes, or of
    ``floats``). ``ints`` holds grid (3), threadgroup (3), then each output's
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
    """The ``CallRecord`` of a record string (cached: a compiled graph passes the same string every call). A
    record this module did not write (a loaded program, a caller of the op) is checked field by field: anything
    else is an ``ArgumentError("call", ...)`` naming the field."""
    if not isinstance(record, str):
        raise ArgumentTypeError("call", f"expected a call record string, got {type(record).__name__}")
    hit = _records.get(record)
    if hit is not None:
        return hit
    try:
        result = _record_of(_strict_json.loads(record, constants=True))
    except _strict_json.JsonError as e:
        raise ArgumentError("call", f"not a jitkernel call record ({e})") from None
    with _lock:
        if len(_records) < 4096:
            _records[record] = result
    return result


_RECORD_FIELDS = ("input_names", "output_names", "inputs", "output_dtypes", "output_ranks", "template", "init_value",
                  "verbose", "dict_form")
_MAX_RANK = 64
_SCALAR_VALUE = {"bool": bool, "int": int, "float": (int, float)}  # a scalar's kind -> its recorded value's type


def _scalar_value_ok(kind: str, value) -> bool:
    if value is None:
        return True
    if kind == "int":
        return _strict_json.is_int(value)
    return isinstance(value, _SCALAR_VALUE[kind]) and (kind == "bool" or not isinstance(value, bool))


def _input_entry(item, what: str) -> tuple:
    """One ``CallRecord.inputs`` entry: ``["array"]`` or ``["scalar", kind, value]`` (what ``_torch_ops`` writes)."""
    _strict_json.check_type(item, list, what)
    if item == ["array"]:
        return ("array",)
    if (len(item) != 3 or item[0] != "scalar" or not isinstance(item[1], str) or item[1] not in _SCALAR_VALUE
            or not _scalar_value_ok(item[1], item[2])):
        raise _strict_json.JsonError(f"{what}: expected ['array'] or ['scalar', 'int' | 'float' | 'bool', value or "
                                     f"null], got {_shown(item)}")
    return tuple(item)


def _template_entry_of(item, what: str) -> tuple:
    """One ``CallRecord.template`` entry from its recorded ``[name, kind, value]`` (``_template_entry``)."""
    _strict_json.check_type(item, list, what)
    if len(item) != 3 or not isinstance(item[0], str) or item[1] not in ("int", "bool", "dtype"):
        raise _strict_json.JsonError(f"{what}: expected [name, 'int' | 'bool' | 'dtype', value], got {_shown(item)}")
    name, kind, value = item
    if kind == "dtype":
        return name, _strict_json.dtype_field(value, f"{what} value")
    _strict_json.check_type(value, int if kind == "int" else bool, f"{what} value")
    return name, value


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _record_of(f) -> CallRecord:
    """The CallRecord of a parsed record, each field checked, or JsonError naming the field."""
    _check_keys(f, _RECORD_FIELDS)
    for name in ("input_names", "output_names"):
        _string_list(f[name], name)
    for name in ("inputs", "output_dtypes", "output_ranks", "template"):
        _strict_json.check_type(f[name], list, name)
    inputs = tuple(_input_entry(item, f"inputs[{i}]") for i, item in enumerate(f["inputs"]))
    dtypes = tuple(_strict_json.dtype_field(d, f"output_dtypes[{i}]") for i, d in enumerate(f["output_dtypes"]))
    for i, rank in enumerate(f["output_ranks"]):
        _strict_json.check_type(rank, int, f"output_ranks[{i}]")
        if not 0 <= rank <= _MAX_RANK:
            raise _strict_json.JsonError(f"output_ranks[{i}]: {rank} is outside 0 to {_MAX_RANK}")
    if len(f["output_ranks"]) != len(dtypes):
        raise _strict_json.JsonError(f"output_ranks: {len(f['output_ranks'])} ranks for {len(dtypes)} output dtypes")
    template = tuple(_template_entry_of(item, f"template[{i}]") for i, item in enumerate(f["template"]))
    _check_field(f["init_value"], (int, float, type(None)), "init_value")  # bool is an int, as eagerly
    for name in ("verbose", "dict_form"):
        _strict_json.check_type(f[name], bool, name)
    return CallRecord(tuple(f["input_names"]), tuple(f["output_names"]), inputs, dtypes, tuple(f["output_ranks"]),
                      template, f["init_value"], f["verbose"], f["dict_form"])


def is_dtype(value) -> bool:
    return isinstance(value, DType)
