"""Every argument error of the public API that can be checked without a GPU (the DLPack consumer and producer are
in test_api_dlpack.py).

Each case asserts the exception class and that the message names the argument: ``str(e)`` starts with
``"<argument>: "`` and ``e.argument`` is that name. Calls that pass every check reach the launch, which without a
GPU raises CudaNotAvailableError; those tests are skipped on a GPU machine where the fake device pointers would be
launched.
"""
from __future__ import annotations

import collections

import numpy as np
import pytest

import jitkernel as jk
from _api_call import A, KERNEL, NO_GPU, accepted, call, expect, needs_no_gpu


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
    (dict(outputs=np.zeros(4)), jk.ArgumentTypeError, "outputs", "a list of arrays, one per output"),
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


def test_misspelt_factory_keyword_names_it_and_the_likely_one():
    # Python's own TypeError would not be a jitkernel error and would name no argument.
    with pytest.raises(jk.ArgumentTypeError, match=r"^sorce: cuda_kernel\(\) got an unexpected keyword argument "
                                                   r"'sorce'; did you mean 'source'\?") as e:
        jk.cuda_kernel(name="k", input_names=["a"], output_names=["o"], sorce="o[0] = a[0];")
    assert e.value.argument == "sorce"
    with pytest.raises(jk.ArgumentTypeError, match=r"^atomic_output: metal_kernel\(\) got an unexpected keyword "
                                                   r"argument 'atomic_output'; did you mean 'atomic_outputs'\?"):
        jk.metal_kernel(name="k", source="", atomic_output=True)
    with pytest.raises(jk.ArgumentTypeError, match=r"^zzz: cuda_kernel\(\) got an unexpected keyword argument "
                                                   r"'zzz' \(its keywords: name, input_names"):
        jk.cuda_kernel(name="k", source="", zzz=1)


def test_one_name_as_a_str_is_refused_and_any_sequence_of_names_is_taken():
    # A str is a sequence of one-letter names; the type checkers refuse it too (call_types.Names).
    with pytest.raises(jk.ArgumentTypeError, match=r"^input_names: expected a list of names such as \['ab'\], "
                                                   r"got the str 'ab'"):
        jk.cuda_kernel(name="k", input_names="ab", output_names=["o"], source="o[0] = a[0];")
    with pytest.raises(jk.ArgumentTypeError, match=r"^output_names: expected a list of names"):
        jk.metal_kernel(name="k", input_names=["a"], output_names="o", source="o[0] = a[0];")
    kernel = jk.cuda_kernel(name="k", input_names=collections.UserList(["a"]), output_names=("o",), source="")
    assert kernel.input_names == ("a",) and kernel.output_names == ("o",)


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


def test_numpy_takes_jitkernel_dtypes():
    # NumPy reads a `.dtype` attribute wherever it takes a dtype: NumPy-side code can use jk dtypes as they are.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for d in [jk.bool_, jk.int8, jk.int16, jk.int32, jk.int64, jk.uint8, jk.uint16, jk.uint32, jk.uint64, jk.float16,
              jk.float32, jk.float64, jk.complex64]:
        assert np.dtype(d) == np.dtype(d.name) and np.zeros(2, d).dtype == np.dtype(d.name)
        assert jk.dtype(np.dtype(d)) is d  # and back
    assert np.array(0, jk.bfloat16).dtype == np.dtype(ml_dtypes.bfloat16)


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
