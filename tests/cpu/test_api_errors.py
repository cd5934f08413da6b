"""Every argument error of the public API that can be checked without a GPU.

Each case asserts the exception class and that the message names the argument: ``str(e)`` starts with
``"<argument>: "`` and ``e.argument`` is that name. Also here, because they are argument handling too: the DLPack
consumer (a ctypes producer stands in for a framework: capsule renamed and its deleter run exactly once, the
stream passed to ``__dlpack__``, versioned and pre-1.0 producers, rejected devices and dtypes) and the conversion
of ``stream=`` objects. Calls that pass every check reach the launch, which without a GPU raises
CudaNotAvailableError; those tests are skipped on a GPU machine where the fake device pointers would be launched.
"""
from __future__ import annotations

import ctypes
import re
import sys
import types

import numpy as np
import pytest

import jitkernel as jk

NO_GPU = not jk.cuda_available()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="the call would launch on the GPU")


def expect(exc_type, argument, fn, *args, match=None, **kwargs):
    """Calls fn and checks the error's class, that it names `argument` first, and optionally `match`."""
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    e = info.value
    assert type(e) is exc_type, f"{type(e).__name__}: {e}"
    assert str(e).startswith(f"{argument}: "), str(e)
    assert e.argument == argument
    if match:
        assert re.search(match, str(e)), str(e)
    return e


KERNEL = jk.cuda_kernel(name="scale", input_names=["a", "n"], output_names=["out"],
                        source="out[threadIdx.x] = a[threadIdx.x] * n[0];")
A = np.arange(4, dtype=np.float32)


def call(**overrides):
    kwargs = dict(inputs=[A, 3], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                  threadgroup=(4, 1, 1))
    kwargs.update(overrides)
    return KERNEL(**kwargs)


def accepted(**overrides):
    """The arguments pass every check: the call runs on a GPU, or stops at the missing driver."""
    try:
        return call(**overrides)
    except jk.CudaNotAvailableError:
        assert NO_GPU
        return None


# --- the call -------------------------------------------------------------------------------------------------

CALL_ERRORS = [
    # (overrides, exception, argument, message pattern)
    (dict(inputs=[A]), jk.ArgumentError, "inputs", r"expected 2 inputs \(input_names: a, n\), got 1"),
    (dict(inputs=[A, 1, 2]), jk.ArgumentError, "inputs", "got 3"),
    (dict(inputs=A), jk.ArgumentTypeError, "inputs", "list"),
    (dict(inputs="ab"), jk.ArgumentTypeError, "inputs", "got str"),
    (dict(inputs=[A, "x"]), jk.ArgumentTypeError, "inputs", r"input 1 \('n'\).*got str"),
    (dict(inputs=[A, object()]), jk.ArgumentTypeError, "inputs", r"input 1 \('n'\).*got object"),
    (dict(inputs=[A, None]), jk.ArgumentTypeError, "inputs", "NoneType"),
    (dict(inputs=[A, 2**70]), jk.ArgumentError, "inputs", r"input 1 \('n'\).*does not fit in int64"),
    (dict(inputs=[A, np.complex128(1)]), jk.ArgumentError, "inputs", "complex128"),
    (dict(inputs=[np.zeros(4, np.complex128), 1]), jk.ArgumentError, "inputs", r"input 0 \('a'\).*complex128"),
    (dict(inputs=[np.zeros(4, object), 1]), jk.ArgumentError, "inputs", "object"),
    (dict(inputs=[np.array(["x"]), 1]), jk.ArgumentError, "inputs", "str|U1"),
    (dict(inputs=[np.zeros(4, ">f4"), 1]), jk.ArgumentError, "inputs", "byte order"),
    (dict(output_shapes=None), jk.ArgumentTypeError, "output_shapes", "required"),
    (dict(output_shapes=(4,)), jk.ArgumentTypeError, "output_shapes", r"output 0 \('out'\).*got int"),
    (dict(output_shapes=[4]), jk.ArgumentTypeError, "output_shapes", "shape must be a tuple"),
    (dict(output_shapes=[(4,), (4,)]), jk.ArgumentError, "output_shapes", r"expected 1 shape \(output_names: out\)"),
    (dict(output_shapes=[]), jk.ArgumentError, "output_shapes", "got 0"),
    (dict(output_shapes=[(-1,)]), jk.ArgumentError, "output_shapes", "dimension 0 is -1"),
    (dict(output_shapes=[(2, -3)]), jk.ArgumentError, "output_shapes", "dimension 1 is -3"),
    (dict(output_shapes=[(2.0,)]), jk.ArgumentTypeError, "output_shapes", "must be an int, got float"),
    (dict(output_shapes=[(True,)]), jk.ArgumentTypeError, "output_shapes", "got bool"),
    (dict(output_shapes=[(2**40, 2**40)]), jk.ArgumentError, "output_shapes", "too many elements"),
    (dict(output_shapes=[(2**64,)]), jk.ArgumentError, "output_shapes", "dimension 0"),
    (dict(output_dtypes=None), jk.ArgumentTypeError, "output_dtypes", "required"),
    (dict(output_dtypes=jk.float32), jk.ArgumentTypeError, "output_dtypes", "list of dtypes"),
    (dict(output_dtypes=[jk.float32, jk.int32]), jk.ArgumentError, "output_dtypes", "expected 1 dtype"),
    (dict(output_dtypes=["flaot32"]), jk.ArgumentError, "output_dtypes", r"output 0 \('out'\).*'flaot32'"),
    (dict(output_dtypes=[np.complex128]), jk.ArgumentError, "output_dtypes", "complex128"),
    (dict(output_dtypes=[object()]), jk.ArgumentTypeError, "output_dtypes", "expected a dtype"),
    (dict(output_dtypes=[None]), jk.ArgumentTypeError, "output_dtypes", "expected a dtype"),
    (dict(output_dtypes=[float]), jk.ArgumentTypeError, "output_dtypes", "ambiguous"),
    (dict(output_dtypes=[[1]]), jk.ArgumentTypeError, "output_dtypes", "expected a dtype"),
    (dict(grid=None), jk.ArgumentTypeError, "grid", "3 positive ints"),
    (dict(grid=4), jk.ArgumentTypeError, "grid", "got int"),
    (dict(grid=(4, 1)), jk.ArgumentError, "grid", "got 2 values"),
    (dict(grid=(4, 1, 1, 1)), jk.ArgumentError, "grid", "got 4 values"),
    (dict(grid=(0, 1, 1)), jk.ArgumentError, "grid", "entry 0 is 0"),
    (dict(grid=(4, -1, 1)), jk.ArgumentError, "grid", "entry 1 is -1"),
    (dict(grid=(True, 1, 1)), jk.ArgumentTypeError, "grid", "entry 0 is bool"),
    (dict(grid=(4.0, 1, 1)), jk.ArgumentTypeError, "grid", "entry 0 is float"),
    (dict(grid=(4, 1, 2**70)), jk.ArgumentError, "grid", "entry 2"),
    (dict(threadgroup=(4, 1)), jk.ArgumentError, "threadgroup", "got 2 values"),
    (dict(threadgroup=(4, 0, 1)), jk.ArgumentError, "threadgroup", "entry 1 is 0"),
    (dict(threadgroup=(4, 1, False)), jk.ArgumentTypeError, "threadgroup", "entry 2 is bool"),
    (dict(threadgroup="abc"), jk.ArgumentTypeError, "threadgroup", "got str"),
    (dict(template="T"), jk.ArgumentTypeError, "template", "pairs or a dict"),
    (dict(template=[("T",)]), jk.ArgumentTypeError, "template", r"entry 0 must be a \(name, value\) pair"),
    (dict(template=["T"]), jk.ArgumentTypeError, "template", "pair"),
    (dict(template=[(1, 2)]), jk.ArgumentTypeError, "template", "names must be strings"),
    (dict(template=[("T", 1.5)]), jk.ArgumentTypeError, "template", r"entry 0 \('T'\).*got 1.5"),
    (dict(template={"T": 1j}), jk.ArgumentTypeError, "template", "ints, bools or dtypes"),
    (dict(template={"T": np.float32(2)}), jk.ArgumentTypeError, "template", "ints, bools or dtypes"),
    (dict(template={"T": "flaot"}), jk.ArgumentError, "template", r"'T'.*unknown dtype name 'flaot'"),
    (dict(template={"T": object()}), jk.ArgumentTypeError, "template", r"'T'.*expected a dtype"),
    (dict(template={"N": 2**64}), jk.ArgumentError, "template", "does not fit in int64"),
    (dict(init_value="1"), jk.ArgumentTypeError, "init_value", "got str"),
    (dict(init_value=1j), jk.ArgumentTypeError, "init_value", "got complex"),
    (dict(init_value=[1.0]), jk.ArgumentTypeError, "init_value", "got list"),
    (dict(init_value=np.complex64(1)), jk.ArgumentTypeError, "init_value", "complex64"),
    (dict(stream="s"), jk.ArgumentTypeError, "stream", "__cuda_stream__"),
    (dict(stream=1.5), jk.ArgumentTypeError, "stream", "float"),
    (dict(stream=True), jk.ArgumentTypeError, "stream", "got bool"),
    (dict(stream=-5), jk.ArgumentError, "stream", "non-negative"),
    (dict(outputs=[np.zeros(4, np.float32)]), jk.ArgumentTypeError, "outputs", r"output 0 \('out'\).*host memory"),
    (dict(outputs=[]), jk.ArgumentError, "outputs", r"expected 1 array"),
    (dict(outputs=np.zeros(4)), jk.ArgumentTypeError, "outputs", "list of device arrays"),
    (dict(outputs=[3.0]), jk.ArgumentTypeError, "outputs", r"output 0.*expected an array.*got float"),
    (dict(verbose=1), jk.ArgumentTypeError, "verbose", "True or False"),
    (dict(verbose="yes"), jk.ArgumentTypeError, "verbose", "True or False"),
]


@pytest.mark.parametrize("overrides, exc, argument, pattern", CALL_ERRORS,
                         ids=[f"{c[2]}-{i}" for i, c in enumerate(CALL_ERRORS)])
def test_call_argument_errors(overrides, exc, argument, pattern):
    expect(exc, argument, call, match=pattern, **overrides)


def test_errors_are_value_and_type_errors():
    assert issubclass(jk.ArgumentError, ValueError) and issubclass(jk.ArgumentTypeError, TypeError)
    for cls in (jk.ArgumentError, jk.ArgumentTypeError, jk.CompileError, jk.CudaNotAvailableError, jk.CudaError):
        assert issubclass(cls, jk.JitKernelError)
    assert issubclass(jk.KernelFaultError, jk.CudaError) and issubclass(jk.CompileError, RuntimeError)


def test_call_is_keyword_only():
    with pytest.raises(TypeError, match="positional"):
        KERNEL([A, 3], [(4,)], [jk.float32], (4, 1, 1), (4, 1, 1))
    with pytest.raises(TypeError, match="grid"):
        KERNEL(inputs=[A, 3], output_shapes=[(4,)], output_dtypes=[jk.float32], threadgroup=(4, 1, 1))


@pytest.mark.parametrize("overrides", [
    dict(grid=(np.int64(4), 1, 1), threadgroup=[4, np.int32(1), 1]),  # NumPy ints and lists are ints
    dict(output_shapes=[[np.int64(4)]], output_dtypes=["float32"]),
    dict(output_dtypes=[np.float32], inputs=[A, np.int64(3)]),
    dict(output_dtypes=[np.dtype("float32")], inputs=[A, 2**40]),  # int64 scalar
    dict(template=[("T", jk.float16), ("N", np.int64(3)), ("B", np.True_), ("C", False), ("D", "bfloat16")]),
    dict(init_value=0), dict(init_value=np.float32(1.5)), dict(init_value=True), dict(stream=0),
    dict(stream=np.uint64(0)),
])
def test_valid_variants_pass_the_checks(overrides):
    accepted(**overrides)


# --- the factory and the dict form -------------------------------------------------------------------------------

FACTORY_ERRORS = [
    (dict(name=1, source="x"), jk.ArgumentTypeError, "name"),
    (dict(name="k", input_names="a", output_names=["o"], source="x"), jk.ArgumentTypeError, "input_names"),
    (dict(name="k", input_names=["a", 2], output_names=["o"], source="x"), jk.ArgumentTypeError, "input_names"),
    (dict(name="k", input_names=["a"], output_names=("o", None), source="x"), jk.ArgumentTypeError, "output_names"),
    (dict(name="k", input_names=["a"], output_names=["o"]), jk.ArgumentTypeError, "source"),
    (dict(name="k", input_names=["a"], output_names=["o"], source=b"x"), jk.ArgumentTypeError, "source"),
    (dict(name="k", input_names=["a"], output_names=["o"], source="x", header=None), jk.ArgumentTypeError, "header"),
    (dict(name="k", input_names=["a"], output_names=["o"], source="x", ensure_row_contiguous=1),
     jk.ArgumentTypeError, "ensure_row_contiguous"),
    (dict(name="k", input_names=["a"], output_names=["o"], source="x", shared_memory=-1),
     jk.ArgumentError, "shared_memory"),
    (dict(name="k", input_names=["a"], output_names=["o"], source="x", shared_memory=2**40),
     jk.ArgumentError, "shared_memory"),
    (dict(name="k", input_names=["a"], output_names=["o"], source="x", shared_memory=True),
     jk.ArgumentTypeError, "shared_memory"),
    (dict(name="k", input_names=["a"], output_names=["o"], source="x", shared_memory=1024.0),
     jk.ArgumentTypeError, "shared_memory"),
    # Checked by the core (codegen) and translated: names must be unique C identifiers.
    (dict(name="k", input_names=["1a"], output_names=["o"], source="x"), jk.ArgumentError, "input_names"),
    (dict(name="k", input_names=["a"], output_names=["o-1"], source="x"), jk.ArgumentError, "output_names"),
    (dict(name="bad name", input_names=["a"], output_names=["o"], source="x"), jk.ArgumentError, "name"),
]


@pytest.mark.parametrize("kwargs, exc, argument", FACTORY_ERRORS,
                         ids=[f"{c[2]}-{i}" for i, c in enumerate(FACTORY_ERRORS)])
def test_factory_argument_errors(kwargs, exc, argument):
    expect(exc, argument, jk.cuda_kernel, **kwargs)


NAMELESS = jk.cuda_kernel(name="copy", source="out[0] = inp[0];")


def named_call(**overrides):
    kwargs = dict(inputs={"inp": A}, output_shapes={"out": (1,)}, output_dtypes={"out": jk.float32},
                  grid=(1, 1, 1), threadgroup=(1, 1, 1))
    kwargs.update(overrides)
    return NAMELESS(**kwargs)


def test_dict_form_errors():
    expect(jk.ArgumentError, "inputs", named_call, inputs=[A], match="without input_names")
    expect(jk.ArgumentError, "output_shapes", named_call, output_shapes=[(1,)], output_dtypes=[jk.float32],
           match="without output_names")
    expect(jk.ArgumentError, "output_dtypes", named_call, output_dtypes={"o2": jk.float32},
           match=r"keys \['o2'\] do not match")
    expect(jk.ArgumentTypeError, "inputs", named_call, inputs={1: A}, match="keys must be names")
    expect(jk.ArgumentError, "input_names", named_call, inputs={"1x": A}, match="C identifier")
    # With names given to the factory, dict keys must be exactly those names.
    expect(jk.ArgumentError, "inputs", call, inputs={"a": A, "m": 3}, match=r"do not match the kernel's input_names")
    expect(jk.ArgumentError, "output_shapes", call, output_shapes={"res": (4,)}, match="do not match")


def test_dict_form_is_accepted_in_any_key_order():
    accepted(inputs={"n": 3, "a": A}, output_shapes={"out": (4,)}, output_dtypes={"out": "float32"})
    result = None
    try:
        result = named_call()
    except jk.CudaNotAvailableError:
        assert NO_GPU
    if result is not None:
        assert list(result) == ["out"]


# --- compile / compile_cuda / source ------------------------------------------------------------------------------

def test_compile_argument_errors():
    sig = dict(inputs=[A, 3], output_dtypes=[jk.float32])
    expect(jk.ArgumentError, "arch", KERNEL.compile, arch="sm90", **sig)
    expect(jk.ArgumentError, "arch", KERNEL.compile, arch="compute_90", **sig, match="sm_90a")
    expect(jk.ArgumentTypeError, "arch", KERNEL.compile, arch=90, **sig)
    expect(jk.ArgumentError, "target", KERNEL.compile, target="elf", **sig, match="'cubin' or 'ptx'")
    expect(jk.ArgumentTypeError, "target", KERNEL.compile, target=None, **sig)
    expect(jk.ArgumentError, "inputs", KERNEL.source, inputs=[A], output_dtypes=[jk.float32])
    expect(jk.ArgumentError, "output_dtypes", KERNEL.source, inputs=[A, 1], output_dtypes=[])
    expect(jk.ArgumentTypeError, "source", jk.compile_cuda, 1)
    expect(jk.ArgumentTypeError, "name", jk.compile_cuda, "x", name=None)
    expect(jk.ArgumentError, "arch", jk.compile_cuda, "x", arch="hopper")
    expect(jk.ArgumentError, "target", jk.compile_cuda, "x", target="fatbin")


# --- dtypes --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, exc, pattern", [
    ("flaot32", jk.ArgumentError, "unknown dtype name 'flaot32'"),
    ("f4", jk.ArgumentError, "unknown dtype name"),
    (np.complex128, jk.ArgumentError, "complex128 is not supported"),
    (np.dtype("datetime64[s]"), jk.ArgumentError, "datetime64"),
    (np.dtype(">i8"), jk.ArgumentError, "byte order"),
    (None, jk.ArgumentTypeError, "expected a dtype"),
    (True, jk.ArgumentTypeError, "expected a dtype"),
    (float, jk.ArgumentTypeError, "ambiguous"),
    (int, jk.ArgumentTypeError, "ambiguous"),
    (object(), jk.ArgumentTypeError, "expected a dtype"),
    ([1], jk.ArgumentTypeError, "expected a dtype"),
])
def test_dtype_errors(value, exc, pattern):
    expect(exc, "dtype", jk.dtype, value, match=pattern)


# --- devices and arrays --------------------------------------------------------------------------------------------

def test_device_arguments():
    expect(jk.ArgumentTypeError, "device", jk.synchronize, "0")
    expect(jk.ArgumentTypeError, "device", jk.synchronize, True)
    expect(jk.ArgumentTypeError, "device", jk.device_info, 0.0)
    if NO_GPU:
        with pytest.raises(jk.CudaNotAvailableError):
            jk.device_info(0)
    else:
        expect(jk.ArgumentError, "device", jk.synchronize, jk.device_count())


def test_array_cannot_be_made_from_python():
    with pytest.raises(TypeError):
        jk.Array()


@needs_no_gpu
def test_valid_call_without_gpu_says_what_is_missing():
    with pytest.raises(jk.CudaNotAvailableError, match="driver") as info:
        call()
    assert "install" in str(info.value)


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
