"""Argument handling at the DLPack boundary, checked without a GPU: the DLPack consumer (a ctypes producer stands in
for a framework: capsule renamed and its deleter run exactly once, the stream passed to ``__dlpack__``, versioned
and pre-1.0 producers, rejected devices and dtypes), the conversion of ``stream=`` objects, and jk.Array as a
producer (over host memory posing as device 0). Errors name their argument as in test_api_errors.py.
"""
from __future__ import annotations

import ctypes
import sys
import types

import numpy as np
import pytest

import jitkernel as jk
from _api_call import KERNEL, NO_GPU, call, expect, needs_no_gpu


# --- DLPack consumer: a ctypes producer ------------------------------------------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    pass


class _DLManagedVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DLManaged._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]
_DLManagedVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
                                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


class Producer:
    """A DLPack producer over host memory that records how it is used. `device` is what it claims."""

    def __init__(self, shape=(2, 3), code=2, bits=32, device=(1, 0), strides=None, versioned=False,
                 version=(1, 0), flags=0, fail=None):
        self.shape, self.code, self.bits, self.device = shape, code, bits, device
        self.strides, self.versioned, self.version, self.flags = strides, versioned, version, flags
        self.fail = fail
        self.buffer = (ctypes.c_byte * 256)()
        self.calls, self.deleted, self.capsules, self._keep = [], 0, [], []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **kwargs):
        self.calls.append((stream, kwargs.get("max_version")))
        if self.fail:
            raise RuntimeError(self.fail)
        shape = (ctypes.c_int64 * max(1, len(self.shape)))(*self.shape)
        strides = (ctypes.c_int64 * len(self.strides))(*self.strides) if self.strides else None
        tensor = _DLTensor(ctypes.cast(self.buffer, ctypes.c_void_p), _DLDevice(*self.device), len(self.shape),
                           _DLDataType(self.code, self.bits, 1), shape,
                           strides if strides is None else ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)), 0)

        def on_delete(_):
            self.deleted += 1

        deleter = _DELETER(on_delete)
        if self.versioned and kwargs.get("max_version"):
            managed = _DLManagedVersioned(self.version[0], self.version[1], None, deleter, self.flags, tensor)
            name = b"dltensor_versioned"
        else:
            managed = _DLManaged(tensor, None, deleter)
            name = b"dltensor"
        self._keep += [shape, strides, deleter, managed, name]
        capsule = _capsule_new(ctypes.addressof(managed), name, None)
        self.capsules.append(capsule)
        return capsule


def test_host_dlpack_capsule_is_consumed_and_released_once():
    p = Producer(code=4, bits=16)  # bfloat16, as torch and JAX export it
    text = KERNEL.source(inputs=[p, 3], output_dtypes=[jk.float32])
    assert "const __nv_bfloat16* a" in text
    assert p.calls == [(None, (1, 0))]  # host memory: no stream; a DLPack 1.x capsule was offered
    assert _capsule_name(p.capsules[0]) == b"used_dltensor"
    assert p.deleted == 1


def test_versioned_and_pre_1_0_producers():
    v = Producer(versioned=True)
    KERNEL.source(inputs=[v, 3], output_dtypes=[jk.float32])
    assert _capsule_name(v.capsules[0]) == b"used_dltensor_versioned" and v.deleted == 1

    class OldProducer(Producer):  # DLPack < 1.0: __dlpack__ has no max_version
        attempts = 0

        def __dlpack__(self, stream=None, **kwargs):
            if "max_version" in kwargs:
                OldProducer.attempts += 1
                raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
            return super().__dlpack__(stream)

    old = OldProducer()
    for _ in range(3):
        KERNEL.source(inputs=[old, 3], output_dtypes=[jk.float32])
    assert old.calls == [(None, None)] * 3 and old.deleted == 3
    assert OldProducer.attempts == 1  # learned once per type


@pytest.mark.parametrize("producer, exc, pattern", [
    (Producer(device=(3, 0)), jk.ArgumentError, "pinned host memory"),
    (Producer(device=(10, 0)), jk.ArgumentError, "ROCm"),
    (Producer(device=(2, 0), code=2, bits=8), jk.ArgumentTypeError, r"DLPack dtype \(code 2, 8 bits"),
    (Producer(device=(2, 0), versioned=True, version=(2, 0)), jk.ArgumentTypeError, "DLPack version 2.0"),
    (Producer(fail="boom"), jk.ArgumentError, r"exporting it through DLPack failed \(RuntimeError: boom\)"),
])
def test_rejected_dlpack_inputs_are_released(producer, exc, pattern):
    expect(exc, "inputs", KERNEL.source, inputs=[producer, 3], output_dtypes=[jk.float32],
           match=r"input 0 \('a'\): .*" + pattern)
    assert producer.deleted == (0 if producer.fail else 1)


def test_dlpack_strides_and_ndim_reach_the_signature():
    k = jk.cuda_kernel(name="strided", input_names=["a"], output_names=["out"], ensure_row_contiguous=False,
                       source="out[0] = a[elem_to_loc(0, a_shape, a_strides, a_ndim)];")
    text = k.source(inputs=[Producer(shape=(2, 3, 4), strides=(1, 2, 6))], output_dtypes=[jk.float32])
    assert "a_shape" in text and "a_ndim" in text


def test_dlpack_output_must_be_writable_and_on_a_device():
    ro = Producer(device=(2, 0), versioned=True, flags=1)
    expect(jk.ArgumentError, "outputs", call, outputs=[ro], match=r"output 0 \('out'\): the array is read-only")
    assert ro.deleted == 1
    host = Producer(device=(1, 0))
    expect(jk.ArgumentTypeError, "outputs", call, outputs=[host], match="host memory")
    assert host.deleted == 1


def test_jax_outputs_are_refused(monkeypatch):
    # An array type counts as JAX's only while JAX is loaded: a stand-in module plays it where JAX is not installed.
    if "jaxlib" not in sys.modules:
        monkeypatch.setitem(sys.modules, "jaxlib", types.ModuleType("jaxlib"))
    jax_like = type("ArrayImpl", (Producer,), {"__module__": "jaxlib.xla_extension"})(device=(2, 0))
    expect(jk.ArgumentError, "outputs", call, outputs=[jax_like], match="JAX arrays are immutable")
    assert jax_like.calls == []


@needs_no_gpu
@pytest.mark.parametrize("stream, expected", [
    (None, 1),  # legacy default stream: spelled 1 in DLPack
    (0, 1),
    (7, 7),
    (type("S", (), {"__cuda_stream__": lambda self: (0, 42)})(), 42),
    (type("Stream", (), {"__module__": "torch.cuda.streams", "cuda_stream": 43})(), 43),
    (type("Stream", (), {"__module__": "cupy.cuda.stream", "ptr": 44})(), 44),
    (np.uint64(45), 45),
])
def test_device_input_is_exported_on_the_launch_stream(stream, expected):
    p = Producer(device=(2, 0))
    with pytest.raises(jk.CudaNotAvailableError):
        call(inputs=[p, 3], stream=stream)
    assert p.calls == [(expected, (1, 0))]
    assert p.deleted == 1  # released after the (failed) launch


def test_stream_object_errors():
    bad = type("S", (), {"__cuda_stream__": lambda self: 5})()
    expect(jk.ArgumentTypeError, "stream", call, stream=bad, match=r"\(version, handle\)")
    neg = type("S", (), {"__cuda_stream__": lambda self: (0, -3)})()
    expect(jk.ArgumentError, "stream", call, stream=neg, match="non-negative")
    torch_like = type("Stream", (), {"__module__": "torch.cuda", "cuda_stream": "x"})()
    expect(jk.ArgumentTypeError, "stream", call, stream=torch_like, match="not an int handle")


# --- jk.Array as a producer (over host memory posing as device 0: no GPU needed) -----------------------------------

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]


_USED_NAMES = {b"dltensor": b"used_dltensor", b"dltensor_versioned": b"used_dltensor_versioned"}


def fake_device_array(shape=(2, 3), dtype=jk.float32, stream=0):
    memory = (ctypes.c_byte * 64)()
    arr = jk._core._array_view_for_tests(ctypes.addressof(memory), list(shape), dtype, 0, stream)
    return arr, memory


def consume(capsule, versioned):
    """What a DLPack consumer does: read the tensor, rename the capsule, call the deleter once."""
    name = b"dltensor_versioned" if versioned else b"dltensor"
    managed_type = _DLManagedVersioned if versioned else _DLManaged
    managed = managed_type.from_address(_capsule_pointer(capsule, name))
    t = managed.dl_tensor
    seen = dict(data=t.data, device=(t.device.device_type, t.device.device_id), ndim=t.ndim,
                dtype=(t.dtype.code, t.dtype.bits, t.dtype.lanes), shape=tuple(t.shape[i] for i in range(t.ndim)),
                strides=tuple(t.strides[i] for i in range(t.ndim)), byte_offset=t.byte_offset)
    if versioned:
        seen.update(version=(managed.major, managed.minor), flags=managed.flags)
    assert _capsule_set_name(capsule, _USED_NAMES[name]) == 0  # the capsule keeps the pointer: long-lived bytes
    managed.deleter(ctypes.addressof(managed))
    return seen


@pytest.mark.parametrize("versioned", [False, True])
def test_array_exports_dlpack(versioned):
    arr, memory = fake_device_array((2, 3), jk.bfloat16)
    assert arr.__dlpack_device__() == (2, 0)
    capsule = arr.__dlpack__(max_version=(1, 0)) if versioned else arr.__dlpack__()
    seen = consume(capsule, versioned)
    assert seen["data"] == ctypes.addressof(memory) and seen["device"] == (2, 0)
    assert seen["dtype"] == (4, 16, 1) and seen["shape"] == (2, 3) and seen["strides"] == (3, 1)
    assert seen["byte_offset"] == 0
    if versioned:
        assert seen["version"] == (1, 0) and seen["flags"] == 0
    assert _capsule_name(capsule) == (b"used_dltensor_versioned" if versioned else b"used_dltensor")
    # An unconsumed capsule frees its tensor itself when collected.
    arr.__dlpack__(max_version=(1, 0) if versioned else None)


def test_array_attributes_and_cuda_array_interface():
    arr, memory = fake_device_array((2, 3), jk.float16, stream=0)
    assert (arr.shape, arr.dtype, arr.device, arr.ndim, arr.size, arr.nbytes) == ((2, 3), jk.float16, 0, 2, 6, 12)
    assert repr(arr) == "jitkernel.Array(shape=(2, 3), dtype=float16, device=0)"
    cai = arr.__cuda_array_interface__
    assert cai == {"shape": (2, 3), "typestr": "<f2", "descr": [("", "<f2")], "data": (ctypes.addressof(memory), False),
                   "strides": None, "version": 3, "stream": 1}  # 1: the legacy default stream
    on_stream, _ = fake_device_array((4,), jk.bool_, stream=1234)
    assert on_stream.__cuda_array_interface__["stream"] == 1234
    assert on_stream.__cuda_array_interface__["typestr"] == "|b1"
    assert repr(on_stream) == "jitkernel.Array(shape=(4,), dtype=bool, device=0)"
    bf16, _ = fake_device_array((4,), jk.bfloat16)
    assert not hasattr(bf16, "__cuda_array_interface__")  # no typestr for bfloat16: consumers use DLPack


def test_array_dlpack_argument_errors():
    arr, _ = fake_device_array()
    with pytest.raises(BufferError, match="CUDA device 0"):
        arr.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="copy=True"):
        arr.__dlpack__(copy=True)
    with pytest.raises(ValueError, match="ambiguous"):
        arr.__dlpack__(stream=0)
    with pytest.raises(TypeError):
        arr.__dlpack__(stream="s")
    with pytest.raises(TypeError):
        arr.__dlpack__(1)  # stream is keyword-only
    arr.__dlpack__(stream=-1, dl_device=(2, 0), copy=False)  # no synchronisation asked: fine
    if NO_GPU:  # a different consumer stream needs ordering, which needs the driver
        with pytest.raises(jk.CudaNotAvailableError):
            arr.__dlpack__(stream=5)


def test_array_input_needs_no_dlpack_round_trip():
    arr, _ = fake_device_array((2, 3), jk.float16)
    text = KERNEL.source(inputs=[arr, 3], output_dtypes=[arr.dtype])
    assert "const __half* a" in text and "__half* out" in text
