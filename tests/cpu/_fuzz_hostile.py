"""Hostile stand-ins for what users pass to jitkernel, for the fuzz test (tests/cpu/test_fuzz.py): protocol objects
(``__dlpack_device__``, ``__dlpack__``, ``shape``, ``dtype``, ``__array_interface__``, ``__cuda_stream__``, ...)
whose answers have the wrong type, length or range, sequences that lie about their length, ints whose
``__index__`` misbehaves. Hypothesis draws descriptions (``Make``), which are built into objects only when the
call is made; a description's ``repr`` is the call to the function here that builds it, so a failure message
shows an input that can be rebuilt.

Every object is a new class, because jitkernel classifies inputs by type (and remembers the answer per type).
Methods told to fail raise ``HostileError``.
"""
from __future__ import annotations

import ctypes

import numpy as np

import jitkernel as jk

RAISE = "<raises HostileError>"  # a value that makes the attribute or method raise


class HostileError(Exception):
    """Raised by a hostile object's method (stands for any bug in a user's protocol implementation)."""


# --- DLPack capsules ---------------------------------------------------------------------------------------------

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

_KEEP = []  # memory and names that capsules or fake arrays point at: alive for the process


def fake_device_array(shape=(2, 3), dtype="float32", stream=0, device=0):
    """A jk.Array that claims to be on CUDA device ``device`` over host memory (no GPU needed; never launched:
    the fuzz children run with no visible GPU)."""
    memory = (ctypes.c_byte * 256)()
    _KEEP.append(memory)
    return jk._core._array_view_for_tests(ctypes.addressof(memory), list(shape), dtype, device, stream)


def make_capsule(kind: str, stream=None, max_version=None):
    """What a hostile ``__dlpack__`` returns: a real capsule (host NumPy or a fake device jk.Array), a capsule with a
    foreign or used name, or a non-capsule."""
    if kind == "numpy":
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        _KEEP.append(a)
        return a.__dlpack__() if max_version is None else a.__dlpack__(max_version=max_version)
    if kind == "numpy_bool":
        a = np.zeros((3,), dtype=np.bool_)
        _KEEP.append(a)
        return a.__dlpack__()
    if kind == "device":
        return fake_device_array().__dlpack__(max_version=max_version)
    if kind == "device_strided_bf16":
        return fake_device_array((4, 2), "bfloat16").__dlpack__()
    if kind in ("foreign_name", "used_name"):
        memory = (ctypes.c_byte * 64)()
        _KEEP.append(memory)
        name = b"not_a_dltensor" if kind == "foreign_name" else b"used_dltensor"
        _KEEP.append(name)
        return _capsule_new(ctypes.addressof(memory), name, None)
    if kind == "used_numpy":
        cap = make_capsule("numpy")
        _capsule_set_name(cap, b"used_dltensor")
        return cap
    if kind == "none":
        return None
    if kind == "int":
        return 12345
    if kind == "str":
        return "dltensor"
    raise HostileError(f"__dlpack__ told to fail ({kind})")


CAPSULE_KINDS = ("numpy", "numpy_bool", "device", "device_strided_bf16", "foreign_name", "used_name",
                 "used_numpy", "none", "int", "str", "raise")


# --- protocol objects ---------------------------------------------------------------------------------------------

def _answer(value):
    if isinstance(value, str) and value == RAISE:
        raise HostileError("told to fail")
    return build(value)


class Make:
    """The description of a hostile object, built by ``build``: its repr is the call that makes it."""

    def __init__(self, kind: str, *args):
        self.kind, self.args = kind, args

    def __repr__(self):
        return f"{self.kind}({', '.join(repr(a) for a in self.args)})"


def build(value):
    """Turns a description into the object it describes: ``Make`` objects are built, containers element by
    element; anything else is itself."""
    if isinstance(value, Make):
        return _BUILDERS[value.kind](*value.args)
    if type(value) is list:
        return [build(v) for v in value]
    if type(value) is tuple:
        return tuple(build(v) for v in value)
    if type(value) is dict:
        return {k: build(v) for k, v in value.items()}
    return value


def hostile(spec: dict):
    """An object of a new class that has exactly the protocol members in ``spec`` (name -> answer)."""
    attrs = {"__repr__": lambda self: f"hostile({spec!r})", "__module__": spec.get("__module__", "fuzz")}
    for key, value in spec.items():
        if key == "__module__":
            continue
        if key == "__dlpack__":
            def dlpack(self, stream=None, max_version=None, dl_device=None, copy=None, _kind=value):
                return make_capsule(_kind, stream, max_version)
            attrs[key] = dlpack
        elif key in ("__dlpack_device__", "__array__", "tobytes", "stride", "data_ptr", "get_device"):
            attrs[key] = (lambda v: lambda self, *a, **k: _answer(v))(value)
        elif key == "__cuda_stream__" and isinstance(value, tuple) and value[:1] == ("attr",):
            attrs[key] = build(value[1])  # a plain attribute instead of a method
        elif key == "__cuda_stream__":
            attrs[key] = (lambda v: lambda self, *a, **k: _answer(v))(value)
        else:  # shape, dtype, __array_interface__, __cuda_array_interface__, flags, cuda_stream, ptr, ...
            attrs[key] = property((lambda v: lambda self: _answer(v))(value))
    return type("Hostile", (), attrs)()


class _HostileIndex:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return _answer(self.value)

    def __repr__(self):
        return f"index({self.value!r})"


def index(value):
    """An object whose ``__index__`` returns ``value`` (or raises)."""
    return _HostileIndex(value)


class LyingList(list):
    """A list whose ``len()`` is not its length."""

    def __init__(self, items, length):
        super().__init__(items)
        self._length = length

    def __len__(self):
        return _answer(self._length)

    def __repr__(self):
        return f"lying('list', {list.__repr__(self)}, {self._length!r})"


class LyingTuple(tuple):
    """A tuple whose ``len()`` is not its length."""

    def __new__(cls, items, length):
        obj = super().__new__(cls, items)
        obj._length = length
        return obj

    def __len__(self):
        return _answer(self._length)

    def __repr__(self):
        return f"lying('tuple', {tuple.__repr__(self)}, {self._length!r})"


class RaisingList(list):
    """A list whose iteration and indexing raise."""

    def __iter__(self):
        raise HostileError("iteration told to fail")

    def __getitem__(self, i):
        raise HostileError("indexing told to fail")

    def __repr__(self):
        return f"lying('raising', {list.__repr__(self)}, None)"


class RaisingDict(dict):
    """A dict whose iteration and item access raise."""

    def __iter__(self):
        raise HostileError("iteration told to fail")

    def __getitem__(self, key):
        raise HostileError("item access told to fail")

    def __repr__(self):
        return f"lying('raising_dict', {dict.__repr__(self)}, None)"


def lying(kind, items, length):
    items = [build(v) for v in items] if not isinstance(items, dict) else {k: build(v) for k, v in items.items()}
    if kind == "list":
        return LyingList(items, length)
    if kind == "tuple":
        return LyingTuple(items, length)
    if kind == "raising_dict":
        return RaisingDict(items)
    return RaisingList(items)


def device_array(shape, dtype, stream):
    return fake_device_array(shape, dtype, stream)


_BUFFER = (ctypes.c_byte * 4096)()
BUFFER_ADDRESS = ctypes.addressof(_BUFFER)  # what hostile __array_interface__ dicts point at (4 KiB)

_BUILDERS = {"hostile": hostile, "index": index, "lying": lying, "device_array": device_array}
