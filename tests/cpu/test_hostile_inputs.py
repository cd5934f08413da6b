"""Inputs that break the protocols they claim to implement: ``__dlpack_device__`` results of the wrong length or
type, CUDA-array stand-ins whose ``.shape`` is not a tuple of ints, stream handles out of range, lists changed
while they are read, unknown keywords and positional arguments. Each must end in a jitkernel error naming the
argument, never a crash or a bare Python/C++ error; the cases that used to kill the interpreter run in child
processes (tests/_processes.py), so a crash fails one test instead of the run. Also here: the per-type cache of
the argument conversion does not keep the types it has seen alive.

The fake arrays claim to be CUDA device arrays (``__dlpack_device__`` = (2, 0), kDLCUDA): every check below
happens before any driver call, so these tests mean the same with or without a GPU.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import weakref

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from _processes import WAIT_FOR_GO, run_together  # noqa: E402

# --- the child-process harness ---------------------------------------------------------------------------------

# Defines the kernels and fakes, runs the entry point named by JK_CASE with the input described there, and prints
# what it raised as JSON (the parent asserts it).
CHILD = WAIT_FOR_GO + """
import json, os
import numpy as np
import jitkernel as jk

case = json.loads(os.environ["JK_CASE"])

class Fake:
    def __init__(self, device, shape=(4,)):
        self.device, self.shape, self.dtype = device, shape, np.float32
    def __dlpack_device__(self):
        return self.device
    def __dlpack__(self, stream=None, max_version=None):
        raise RuntimeError("not exported in this test")

def value(v):  # JSON cannot say tuple or 2**70
    if isinstance(v, dict):
        return {"tuple": lambda x: tuple(value(i) for i in x), "big": lambda x: 2 ** x}[v["kind"]](v["value"])
    return [value(i) for i in v] if isinstance(v, list) else v

fake = Fake(value(case["device"]), value(case.get("shape", [4])))
KERNEL = jk.cuda_kernel("k", ["a"], ["out"], "out[0] = a[0];")
METAL = jk.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
f32 = [jk.float32]
launch = dict(output_shapes=[(4,)], output_dtypes=f32, grid=(1, 1, 1), threadgroup=(1, 1, 1))
entries = {
    "source": lambda: KERNEL.source(inputs=[fake], output_dtypes=f32),
    "compile": lambda: KERNEL.compile(inputs=[fake], output_dtypes=f32),
    "call": lambda: KERNEL(inputs=[fake], **launch),
    "call_dict": lambda: KERNEL(inputs={"a": fake}, **launch),
    "call_outputs": lambda: KERNEL(inputs=[np.ones(4, np.float32)], outputs=[fake], grid=(1, 1, 1),
                                   threadgroup=(1, 1, 1)),
    "metal_source": lambda: METAL.source(inputs=[fake], output_dtypes=f32),
    "metal_call": lambda: METAL(inputs=[fake], **launch),
    "precompiled": lambda: jk.precompiled_cuda_kernel(name="k", compiled_source=b".version 8.0", inputs=[fake],
                                                      scalars=[], **launch),
}
try:
    entries[case["entry"]]()
    result = {"raised": None}
except Exception as e:
    result = {"raised": type(e).__name__, "jk": isinstance(e, (jk.ArgumentError, jk.ArgumentTypeError)),
              "argument": getattr(e, "argument", None), "message": str(e)}
print(json.dumps(result))
"""

ENTRIES = ["source", "compile", "call", "call_dict", "call_outputs", "metal_source", "metal_call", "precompiled"]


def tup(*items):
    return {"kind": "tuple", "value": list(items)}


def big(exponent):
    return {"kind": "big", "value": exponent}


def run_cases(cases, tmp_path):
    """Runs each case (a dict for CHILD) in its own child process; returns their results in order."""
    envs = [dict(os.environ, JK_CASE=json.dumps(c)) for c in cases]
    return run_together(CHILD, envs, tmp_path)


def assert_named_error(result, case, argument, *patterns):
    assert result["raised"] is not None and result["jk"], (case, result)
    assert result["argument"] == argument, (case, result)
    assert result["message"].startswith(f"{argument}: "), (case, result)
    for p in patterns:
        assert p in result["message"], (case, result)


# --- 1. __dlpack_device__ results -----------------------------------------------------------------------------

BAD_DEVICES = [
    tup(2),  # too short: read past the end (SIGSEGV before)
    tup(),
    tup(2, 0, 0),
    [2, 0],  # a list
    None,
    tup("2", 0),
    tup(2, None),
    tup(2, big(31)),  # device ids are int32
    tup(big(70), 0),
    tup(2, -1),
]


@pytest.mark.parametrize("entry", ENTRIES)
def test_malformed_dlpack_device_is_a_named_error(entry, tmp_path):
    cases = [{"entry": entry, "device": d} for d in BAD_DEVICES]
    argument = "outputs" if entry == "call_outputs" else "inputs"
    where = {"call_outputs": "output 0 ('out')", "precompiled": "input 0"}.get(entry, "input 0 ('a')")
    for case, result in zip(cases, run_cases(cases, tmp_path)):
        assert_named_error(result, case, argument, where, "__dlpack_device__() returned",
                           "(device_type, device_id)")


# --- 2. .shape of CUDA-array stand-ins ------------------------------------------------------------------------

BAD_SHAPES = [tup("4"), tup(None), tup(big(70)), tup(-1), "abc", 5, None]


@pytest.mark.parametrize("entry", ["source", "compile", "metal_source", "metal_call"])
def test_malformed_shape_of_a_device_array_is_a_named_error(entry, tmp_path):
    cases = [{"entry": entry, "device": tup(2, 0), "shape": s} for s in BAD_SHAPES]
    # A Metal call reads each input once, as the host array it must be: a device array is refused before its
    # shape is read.
    expected = "CPU memory" if entry == "metal_call" else "shape"
    for case, result in zip(cases, run_cases(cases, tmp_path)):
        assert_named_error(result, case, "inputs", "input 0 ('a')", expected)


def test_malformed_shape_of_a_metal_output_is_a_named_error():
    # outputs= entries are imported as arrays (their shapes come from the import, not from .shape): an object
    # with only .shape and .dtype is refused as no array, naming the output, whatever its .shape holds.
    class Out:
        dtype = np.float32

        def __init__(self, shape):
            self.shape = shape

    kernel = jk.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
    for shape in [5, None, ("4",), (2**70,)]:
        with pytest.raises((jk.ArgumentError, jk.ArgumentTypeError)) as info:
            kernel(inputs=[np.ones(4, np.float32)], outputs=[Out(shape)], grid=(1, 1, 1), threadgroup=(1, 1, 1))
        assert str(info.value).startswith("outputs: output 0 ('out'): "), str(info.value)


# --- 2. stream handles ----------------------------------------------------------------------------------------

KERNEL = jk.cuda_kernel("k", ["a"], ["out"], "out[0] = a[0];")
A = np.ones(4, np.float32)


def convert(**overrides):
    """The call's argument conversion without the launch (safe with or without a GPU)."""
    kwargs = dict(inputs=[A], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(1, 1, 1),
                  threadgroup=(1, 1, 1), template=None, init_value=None, stream=None, outputs=None)
    kwargs.update(overrides)
    return KERNEL._convert(**kwargs)


class CudaStream:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        if isinstance(self.handle, Exception):
            raise self.handle
        return (0, self.handle)


class BadModule:
    """A type whose __module__ is not a string."""


BadModule.__module__ = 5


@pytest.mark.parametrize("stream", [2**64, 2**70, CudaStream(2**64)], ids=["int-2**64", "int-2**70", "protocol"])
def test_stream_handles_beyond_64_bits_are_argument_errors(stream):
    with pytest.raises(jk.ArgumentError) as info:
        convert(stream=stream)
    message = str(info.value)
    assert message.startswith("stream: ") and info.value.argument == "stream", message
    assert "non-negative" not in message or "below 2**64" in message, message
    assert "2**64" in message, message


def test_stream_handles_up_to_64_bits_are_accepted():
    for stream in [0, 2**63, 2**64 - 1, CudaStream(2**64 - 1), np.uint64(2**64 - 1)]:
        convert(stream=stream)


@pytest.mark.parametrize("stream, exc", [
    (-1, jk.ArgumentError),
    (CudaStream(-5), jk.ArgumentError),
    (CudaStream("7"), jk.ArgumentTypeError),
    (CudaStream(ValueError("broken stream")), jk.ArgumentTypeError),
    (BadModule(), jk.ArgumentTypeError),
])
def test_malformed_stream_objects_are_named_errors(stream, exc):
    with pytest.raises(exc) as info:
        convert(stream=stream)
    assert str(info.value).startswith("stream: "), str(info.value)


# --- a list changed while it is read ---------------------------------------------------------------------------

CHANGED_LIST = WAIT_FOR_GO + """
import json
import numpy as np
import jitkernel as jk

KERNEL = jk.cuda_kernel("k", ["a", "b"], ["out"], "out[0] = a[0] + b[0];")
class Clears:
    dtype, shape = np.float32, (4,)
    def __dlpack_device__(self):
        inputs.clear()  # a protocol method that empties the list being read
        return (2, 0)
    def __dlpack__(self, stream=None, max_version=None):
        raise RuntimeError("not exported in this test")
results = []
for run in ("source", "convert"):
    inputs = [Clears(), np.ones(4, np.float32)]
    try:
        if run == "source":
            KERNEL.source(inputs=inputs, output_dtypes=[jk.float32])
        else:
            KERNEL._convert(inputs=inputs, output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(1, 1, 1),
                            threadgroup=(1, 1, 1), template=None, init_value=None, stream=None, outputs=None)
        results.append(None)
    except Exception as e:
        results.append([type(e).__name__, str(e)])
print(json.dumps(results))
"""


def test_inputs_list_emptied_by_a_protocol_method(tmp_path):
    [results] = run_together(CHANGED_LIST, [dict(os.environ)], tmp_path)
    for r in results:
        assert r is not None and r[0] == "ArgumentError" and r[1].startswith("inputs: "), results
        assert "changed" in r[1], results


# --- unknown keywords and positional arguments ----------------------------------------------------------------

METAL = jk.metal_kernel("k", ["a"], ["out"], "out[0] = a[0];")
UNNAMED = jk.cuda_kernel("k", source="out[0] = a[0];")
LAUNCH = dict(inputs=[A], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))
SIGNATURE = dict(inputs=[A], output_dtypes=[jk.float32])
PRECOMPILED = dict(name="k", compiled_source=b".version 8.0", scalars=[], **LAUNCH)

CALLS = {
    "cuda_call": (KERNEL, LAUNCH),
    "cuda_call_unnamed": (UNNAMED, dict(LAUNCH, inputs={"a": A}, output_shapes={"out": (4,)},
                                        output_dtypes={"out": jk.float32})),
    "cuda_source": (KERNEL.source, SIGNATURE),
    "cuda_entry_name": (KERNEL.entry_name, SIGNATURE),
    "cuda_compile": (KERNEL.compile, SIGNATURE),
    "metal_call": (METAL, LAUNCH),
    "metal_source": (METAL.source, SIGNATURE),
    "metal_kernel_name": (METAL.kernel_name, SIGNATURE),
    "metal_buffers": (METAL.buffers, SIGNATURE),
    "precompiled": (jk.precompiled_cuda_kernel, PRECOMPILED),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_unknown_keyword_is_an_argument_type_error_naming_it(name):
    fn, kwargs = CALLS[name]
    with pytest.raises(jk.ArgumentTypeError) as info:
        fn(**kwargs, shared_mem=1)
    assert info.value.argument == "shared_mem", str(info.value)
    assert str(info.value).startswith("shared_mem: "), str(info.value)
    assert "unexpected keyword argument 'shared_mem'" in str(info.value)


@pytest.mark.parametrize("name", list(CALLS))
def test_positional_arguments_are_an_argument_type_error(name):
    fn, kwargs = CALLS[name]
    first = next(iter(kwargs))
    with pytest.raises(jk.ArgumentTypeError) as info:
        fn(kwargs[first], **{k: v for k, v in kwargs.items() if k != first})
    assert info.value.argument == first and "keyword arguments only" in str(info.value), str(info.value)


@pytest.mark.parametrize("name", list(CALLS))
def test_missing_keyword_is_an_argument_type_error_naming_it(name):
    fn, kwargs = CALLS[name]
    missing = "inputs"
    with pytest.raises(jk.ArgumentTypeError) as info:
        fn(**{k: v for k, v in kwargs.items() if k != missing})
    assert info.value.argument == missing and "missing required keyword argument" in str(info.value), \
        str(info.value)


# --- 10. the per-type cache -------------------------------------------------------------------------------------


def test_the_type_cache_does_not_keep_types_alive():
    class Once:
        pass

    with pytest.raises(jk.ArgumentTypeError):
        KERNEL.source(inputs=[Once()], output_dtypes=[jk.float32])
    ref = weakref.ref(Once)
    del Once
    gc.collect()
    assert ref() is None, "the conversion's type cache still holds the class"


MANY_TYPES = WAIT_FOR_GO + """
import gc, json
import jitkernel as jk
from jitkernel import _core

def rss_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))

KERNEL = jk.cuda_kernel("k", ["a"], ["out"], "out[0] = a[0];")
def pass_new_types(n):
    for i in range(n):
        cls = type(f"T{i}", (), {"payload": list(range(20))})
        try:
            KERNEL.source(inputs=[cls()], output_dtypes=[jk.float32])
        except jk.ArgumentTypeError:
            pass
    gc.collect()

pass_new_types(500)  # warm up (allocator pools, caches of fixed size)
before = rss_kib()
pass_new_types(20000)
print(json.dumps({"growth_kib": rss_kib() - before, "cached": getattr(_core, "_type_cache_size", lambda: None)()}))
"""


def test_many_short_lived_types_do_not_accumulate(tmp_path):
    [result] = run_together(MANY_TYPES, [dict(os.environ)], tmp_path)
    assert result["growth_kib"] < 10 * 1024, result  # 20,000 kept classes took ~50 MB
    assert result["cached"] is not None and result["cached"] < 100, result


# --- jk.Array.__dlpack__ called by a consumer with malformed arguments ------------------------------------------


@pytest.mark.parametrize("kwargs", [
    dict(dl_device=[2, 0]), dict(dl_device=(2,)), dict(dl_device=()), dict(dl_device=("2", 0)),
    dict(dl_device=(2, None)), dict(max_version=[1, 0]), dict(max_version=()), dict(max_version=("1", 0)),
    dict(stream=2**64), dict(stream=-2**70),
], ids=lambda kw: repr(kw))
def test_array_dlpack_rejects_malformed_arguments_with_standard_errors(kwargs):
    import ctypes

    memory = (ctypes.c_byte * 64)()
    arr = _core._array_view_for_tests(ctypes.addressof(memory), [4], jk.float32, 0, 0)
    with pytest.raises(Exception) as info:
        arr.__dlpack__(**kwargs)
    # What the DLPack protocol's consumers expect: TypeError / ValueError / BufferError, never std::bad_cast.
    assert isinstance(info.value, (TypeError, ValueError, BufferError)), repr(info.value)
    assert "__dlpack__" in str(info.value), repr(info.value)


def test_array_dlpack_accepts_large_device_ids_and_versions_as_mismatches():
    import ctypes

    memory = (ctypes.c_byte * 64)()
    arr = _core._array_view_for_tests(ctypes.addressof(memory), [4], jk.float32, 0, 0)
    with pytest.raises(BufferError):
        arr.__dlpack__(dl_device=(2, 2**70))
    arr.__dlpack__(max_version=(2**70, 0), stream=-1)  # a newer consumer: a versioned capsule


class _LyingLength(list):
    """A list whose len() claims far more items than it holds."""

    def __len__(self):
        return 2**62


@pytest.mark.parametrize("argument", ["input_names", "output_names"])
def test_names_whose_length_lies_are_read_by_their_items(argument):
    names = {"input_names": ["a"], "output_names": ["out"]}
    names[argument] = _LyingLength(names[argument])
    k = jk.cuda_kernel("lying_names", source="out[0] = a[0];", **names)
    assert k.entry_name(inputs=[np.zeros(2, np.float32)], output_dtypes=[np.float32]).startswith("lying_names_")


# --- an object that names a framework that is not loaded --------------------------------------------------------

SPOOF = """
import sys
import numpy as np
import jitkernel as jk
framework = sys.argv[1]
assert framework not in sys.modules

class Spoof:  # claims to come from `framework` (which this process never imported)
    shape, dtype = (4,), np.float32
    def __dlpack_device__(self):
        return (2, 0)
    def __dlpack__(self, stream=None, max_version=None):
        return None
Spoof.__module__ = framework

k = jk.cuda_kernel("spoof", ["a"], ["out"], "out[0] = a[0];")
try:
    k(inputs=[Spoof()], output_shapes=[(4,)], output_dtypes=[np.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))
    print("no error")
except jk.JitKernelError as e:
    print("jitkernel error:", type(e).__name__)
except Exception as e:
    print("other error:", type(e).__name__, e)
"""


@pytest.mark.parametrize("framework", ["torch", "cupy"])
def test_object_naming_a_framework_that_is_not_loaded(framework):
    # Its stream is not looked up in a framework that is not there (KeyError before): it is not that framework's.
    import subprocess
    proc = subprocess.run([sys.executable, "-c", SPOOF, framework], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("jitkernel error:"), proc.stdout + proc.stderr


# --- an XLA custom call whose attributes were changed ----------------------------------------------------------

def _xla_call(tag):
    kernel = _core.encode_kernel(f"hostile_{tag}", ["a"], ["o"], "o[0] = a[0];", "", True, 0, None, None)
    call = _core.encode_call(["a"], ["o"], [("array", jk.float32, (4,))], [(jk.float32, (4,))], None, (4, 1, 1),
                             (4, 1, 1), None, False, False, 0, True)
    text = _core.encode_record(kernel, call)
    return text.encode(), _core.xla_call_key(text)


@pytest.mark.parametrize("stage", ["instantiate", "initialize", "execute"])
def test_a_registered_xla_key_runs_only_its_own_call_text(stage):
    # Every stage resolves its call by the text, not by the key's word: a custom call pairing a registered key
    # with any other jk_call text (garbage, another call's, an edited copy) is an FFI error naming jk_key; it ran
    # the registered kernel before. The stand-in XLA has no device: a stage that resolved its call ends there.
    text, key = _xla_call(stage)
    resolved = None if stage == "instantiate" else "stand-in XLA: no device"
    assert _core._xla_run_stage(text, key, "instantiate") is None  # registers it
    assert _core._xla_run_stage(bytes(bytearray(text)), key, stage) == resolved  # a copy of its text: compared bytes
    other, _ = _xla_call(stage + "_other")
    for changed in [b"", b"garbage", other, text[:-1], text + b" ", text[:-1] + bytes([text[-1] ^ 1])]:
        message = _core._xla_run_stage(changed, key, stage)
        assert message is not None and f"{stage} stage: jk_key: does not match the jk_call attribute" in message, \
            (changed, message)
    assert _core._xla_run_stage(text, key, stage) == resolved  # the registered call is unharmed


def test_xla_call_text_that_is_not_utf8_is_an_ffi_error():
    # The call text may be any bytes; bytes that are not UTF-8 (a stray byte, a surrogate, a cut sequence, an
    # overlong form) are refused by the decoder, and the FFI error reaches Python as a str.
    text, _ = _xla_call("utf8")
    for raw in (b"\xff", b"\xed\xa0\x80", b"\xe2\x82", b"\xc0\xaf"):
        bad = text.replace(b"hostile_utf8", b"hostile_" + raw, 1)
        message = _core._xla_run_stage(bad, int.from_bytes(__import__("hashlib").sha256(bad).digest()[:8], "big"))
        assert isinstance(message, str) and "instantiate stage" in message and "invalid UTF-8" in message, message
