"""One batch of the fuzz test (tests/cpu/test_fuzz.py), run in a child process so that a crash or a hang ends only
this process and is reported with its input.

    python _fuzz_child.py TARGET --examples N --seed S --skip-through K --log LOG

Hypothesis draws N cases for TARGET (a group of public entry points, see ``TARGETS``) from the fixed seed S; each case
is a chain of calls described by literals and ``Make`` descriptions (tests/cpu/_fuzz_hostile.py), so its ``repr``
rebuilds it. Before each call the child appends ``{"i", "input"}`` to LOG and flushes it; after it, the outcome when
it is a failure (an exception that is not a ``jk.JitKernelError``, or a broken invariant), and at the end a line
``{"done": calls}``. A call that takes longer than ``--call-timeout`` ends the process (faulthandler, exit code 1,
"Timeout" on stderr). The parent reads LOG: the last input without an outcome is the one that crashed or hung, and
``--skip-through K`` reruns the same batch without the cases up to K (nothing is drawn in the test body, so the
cases are the same).

The children run with no visible CUDA GPU (the parent sets CUDA_VISIBLE_DEVICES to ""), so a call whose arguments
pass every check ends in CudaNotAvailableError wherever the suite runs, and no fake device pointer is ever launched.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import re
import shutil
import struct
import sys
import traceback
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel._precompiled import check_binary_arch, inspect_binary

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _fuzz_hostile import BUFFER_ADDRESS, CAPSULE_KINDS, RAISE, HostileError, Make, build  # noqa: E402

# ----------------------------------------------------------------------------------------------------------------
# Building blocks


def M(kind, *args):
    return Make(kind, *args)


def sometimes_bad(good, bad, bad_weight=1, good_weight=3):
    """Mostly ``good`` values (so the deeper checks are reached), sometimes ``bad`` ones."""
    return st.integers(0, bad_weight + good_weight - 1).flatmap(lambda i: bad if i < bad_weight else good)


BIG_INTS = [2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, 2**200,
            -1, -2**31 - 1, -2**63, -2**63 - 1, -2**64]
INT = st.one_of(st.integers(-2, 70), st.sampled_from(BIG_INTS))
NP_INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
NP_INT = st.sampled_from(NP_INT_TYPES).flatmap(
    lambda t: st.one_of(st.integers(0, 9), st.sampled_from([int(np.iinfo(t).min), int(np.iinfo(t).max)])).map(t))
JUNK = st.sampled_from([None, 1.5, float("nan"), float("inf"), 1j, "", "x", b"x", [], (), {}, Ellipsis, set(),
                        object, type, np.float32])
HOSTILE_INT = st.builds(M, st.just("index"), st.one_of(INT, st.sampled_from([RAISE, "x", None, 1.5])))
ANY_INT = st.one_of(INT, NP_INT, HOSTILE_INT, st.booleans(), st.floats(width=32), JUNK)

NAME_POOL = ["a", "b", "x", "n", "out", "y", "z", "T", "k", "int", "float", "__global__", "threadIdx", "blockIdx",
             "a_shape", "out_strides", "main", "_", "__x", "N", "k" * 300, "a b", "1a", "", "é", "a\x00b",
             "namespace", "template", "auto", "half", "uint", "thread_position_in_grid", "device", "kernel",
             "grid", "using", "elem_to_loc", "WARP_SIZE", "INFINITY", "assert", "inp"]
NAME = st.one_of(st.sampled_from(NAME_POOL), st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
                 st.text(max_size=5))
VALID_NAME = st.sampled_from(["a", "b", "c", "x", "inp", "out", "o2", "res", "val"])

DTYPES = list(jk._dtypes.ALL_DTYPES)
NP_DTYPE_OBJECTS = [np.dtype(">f4"), np.dtype("<f2"), np.dtype("i8"), np.dtype([("a", "f4")]), np.dtype("f4,f4"),
                    np.dtype("S3"), np.dtype("m8[s]"), np.dtype("O"), np.dtype("U2"), np.dtype("V4"),
                    np.dtype("c16"), np.dtype("g")]
DTYPE_NAMES = ["float32", "float16", "half", "bfloat16", "bool", "bool_", "int64", "uint8", "complex64", "flaot",
               "", "float32\x00", "F4", "<f4", "float128", "float", "double", "int", "complex128", "b1"]
DTYPE_LIKE = st.one_of(
    st.sampled_from(DTYPES), st.sampled_from(DTYPE_NAMES), st.sampled_from(NP_DTYPE_OBJECTS),
    st.sampled_from([np.float32, np.float16, np.int8, np.uint64, np.bool_, np.complex64, np.complex128, np.float64,
                     np.longdouble, np.object_, np.str_, np.void, np.datetime64, float, int, bool, complex]),
    st.builds(M, st.just("hostile"), st.fixed_dictionaries({"dtype": st.sampled_from(
        [RAISE, "float32", None, 5, np.dtype("f4"), np.dtype(">f4")])})),
    JUNK, INT)
VALID_DTYPE = st.one_of(st.sampled_from(DTYPES), st.sampled_from(["float32", "int32", "float16", "bfloat16"]),
                        st.sampled_from([np.float32, np.dtype("int64")]))

# NumPy arrays, built when the call is made: ndarray(dtype, shape, layout).
NP_ARRAY_DTYPES = ["float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                   "uint64", "bool", "complex64", "complex128", "object", "U1", "S2", ">f4", "<f2", "f4,i4",
                   "datetime64[s]", "longdouble", "bfloat16"]
SMALL_SHAPE = st.lists(st.integers(0, 5), max_size=4).map(tuple)
NDARRAY = st.builds(M, st.just("ndarray"), st.sampled_from(NP_ARRAY_DTYPES),
                    st.one_of(SMALL_SHAPE, st.sampled_from([(1,) * 33, (1,) * 64, (0, 2**40)])),
                    st.sampled_from(["c", "f", "strided", "readonly", "reversed", "broadcast"]))
VALID_NDARRAY = st.builds(M, st.just("ndarray"), st.sampled_from(["float32", "float16", "int32", "bfloat16"]),
                          st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.just("c"))
DEVICE_ARRAY = st.builds(M, st.just("device_array"), st.lists(st.integers(0, 4), max_size=3).map(tuple),
                         st.sampled_from(DTYPES), st.sampled_from([0, 0, 7, 2**64 - 1]))


def ndarray(dtype, shape, layout):
    if dtype == "bfloat16":
        import ml_dtypes

        dtype = ml_dtypes.bfloat16
    if shape == (0, 2**40):
        return np.empty(shape, dtype=np.float32)  # huge dims, no bytes
    if len(shape) > 4:
        layout = "c"  # strided over many dims would need 2**ndim times the memory
    if layout == "broadcast":
        return np.broadcast_to(np.zeros(shape[-1:] or (), dtype=dtype), shape)
    base = np.zeros(tuple(2 * d for d in shape) if layout == "strided" else shape, dtype=dtype,
                    order="F" if layout == "f" else "C")
    if layout == "strided":
        base = base[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "reversed" and shape:
        base = base[::-1]
    elif layout == "readonly":
        base.flags.writeable = False
    return base


SCALAR = st.one_of(
    st.booleans(), INT, st.floats(), st.complex_numbers(max_magnitude=10), NP_INT,
    st.sampled_from([np.float16(1), np.float32(1.5), np.float64(2), np.longdouble(1), np.complex64(1),
                     np.complex128(1j), np.bool_(True), np.datetime64(1, "s"), np.str_("x"), np.bytes_(b"x"),
                     np.void(b"ab")]))

DLPACK_DEVICES = [(1, 0), (2, 0), (2, 1), (2,), (), [2, 0], None, (2, 2**31), (2**31, 0), (-1, 0), (2, -1),
                  ("2", 0), (2.0, 0), (2, 0, 0), (True, 0), (3, 0), (10, 0), (2, 2**64), (2**64, 0), RAISE,
                  (np.int64(2), np.int32(0)), (2, None), "20", (M("index", 2), 0)]
HOSTILE_SHAPES = [("a",), (None,), (2**70,), (-1,), "abc", None, 5, [2, 3], (2.5,), (2**63,), (2**64,), RAISE,
                  (np.int64(3),), (2, 3), (), (0,), (1,) * 40, (M("index", 3),), (M("index", RAISE),),
                  M("lying", "tuple", [2, 3], 10**6), M("lying", "tuple", [2], -1), M("lying", "raising", [2], None),
                  (True, 2), {"a": 1}]
HOSTILE_STRIDES = [None, (4,), (0,), (-4,), (2**62,), "x", (4, 4, 4), (2**70,)]
ARRAY_INTERFACE = st.fixed_dictionaries(
    {"data": st.sampled_from([(BUFFER_ADDRESS, False), (BUFFER_ADDRESS, True), None, (BUFFER_ADDRESS,), ("x", False),
                              5, (2**70, False)]),
     "shape": st.sampled_from(HOSTILE_SHAPES),
     "typestr": st.sampled_from(["<f4", "|b1", "<f2", "|V4", "<c16", "x", "", 5, "<f4\x00", "<i8", ">f4", "|O",
                                 "<f16", "|u1"]),
     "version": st.sampled_from([3, 2, "3", None, 2**70])},
    optional={"strides": st.sampled_from(HOSTILE_STRIDES), "offset": st.sampled_from([0, 4, -4, 2**70]),
              "descr": st.sampled_from([[("", "<f4")], "x", None]), "mask": st.just(None)})
# __array_interface__ dicts whose data is in bounds (the call path may read host arrays).
SAFE_ARRAY_INTERFACE = st.fixed_dictionaries(
    {"data": st.sampled_from([(BUFFER_ADDRESS, False), (BUFFER_ADDRESS, True), None, ("x", False), 5]),
     "shape": st.one_of(st.lists(st.integers(0, 6), max_size=3).map(tuple), st.sampled_from([("a",), None, "x"])),
     "typestr": st.sampled_from(["<f4", "|b1", "<f2", "|V4", "<c16", "x", "", 5, "<i8", ">f4", "|O", "<f16", "|u1"]),
     "version": st.sampled_from([3, 2, "3", None])})
MODULES = ["fuzz", "fuzz", "fuzz", "jaxlib.xla_extension", "cupy", "torch", "numpy", "mlx.core"]


def hostile_array(array_interface=ARRAY_INTERFACE):
    return st.builds(M, st.just("hostile"), st.fixed_dictionaries({}, optional={
        "__dlpack_device__": st.sampled_from(DLPACK_DEVICES),
        "__dlpack__": st.sampled_from(list(CAPSULE_KINDS)),
        "shape": st.sampled_from(HOSTILE_SHAPES),
        "dtype": st.one_of(st.sampled_from(DTYPES), DTYPE_LIKE, st.just(RAISE)),
        "__array_interface__": st.one_of(array_interface, st.sampled_from([RAISE, None, 5, {}])),
        "__array__": st.sampled_from([RAISE, None, 5, "x"]),
        "__cuda_array_interface__": st.sampled_from([RAISE, None, {"shape": (2,), "typestr": "<f4"}]),
        "flags": st.sampled_from([RAISE, None, M("hostile", {"writeable": RAISE}),
                                  M("hostile", {"writeable": "no"})]),
        "__module__": st.sampled_from(MODULES),
    }))


# A DLPack producer (both methods, so jitkernel takes it for a device or host array), sometimes with the
# attributes read instead of exporting (shape, dtype).
HOSTILE_DLPACK = st.builds(M, st.just("hostile"), st.fixed_dictionaries(
    {"__dlpack_device__": st.sampled_from(DLPACK_DEVICES), "__dlpack__": st.sampled_from(list(CAPSULE_KINDS))},
    optional={"shape": st.sampled_from(HOSTILE_SHAPES), "dtype": st.one_of(st.sampled_from(DTYPES), DTYPE_LIKE),
              "__module__": st.sampled_from(MODULES)}))
HOSTILE_ARRAY = st.one_of(hostile_array(), HOSTILE_DLPACK, HOSTILE_DLPACK)
HOSTILE_ARRAY_SAFE = st.one_of(hostile_array(SAFE_ARRAY_INTERFACE), HOSTILE_DLPACK, HOSTILE_DLPACK)
# Lengths a lying sequence reports: ints a __len__ may return (a negative or huge one is Python's own error), or
# HostileError.
LYING_SEQ_LEN = st.sampled_from([0, 1, 5, 10**6, 2**40, 2**62, RAISE])


def seq_of(item, min_size=0, max_size=4):
    """A list, tuple, or a list/tuple that lies about its length."""
    return st.one_of(
        st.lists(item, min_size=min_size, max_size=max_size),
        st.lists(item, min_size=min_size, max_size=max_size).map(tuple),
        st.builds(M, st.just("lying"), st.sampled_from(["list", "tuple", "raising"]),
                  st.lists(item, max_size=3), LYING_SEQ_LEN))


def input_item(safe_data):
    hostile = HOSTILE_ARRAY_SAFE if safe_data else HOSTILE_ARRAY
    return st.one_of(NDARRAY, SCALAR, hostile, hostile, hostile, DEVICE_ARRAY, JUNK)


VALID_ITEM = st.one_of(VALID_NDARRAY, st.integers(-5, 5), st.floats(-2, 2, width=32), DEVICE_ARRAY)


def one_bad(good_items, n, bad_item):
    """n good items with one of them (or one more, when n == 0) replaced by a bad one."""
    def replace(items, i, bad):
        items = list(items)
        if items:
            items[i % len(items)] = bad
        else:
            items.append(bad)
        return items
    return st.builds(replace, st.lists(good_items, min_size=n, max_size=n), st.integers(0, 7), bad_item)


def inputs_arg(names, safe_data):
    """inputs= for a kernel with these input names (None: made without names): the right count of sensible arrays
    with one bad item, or anything; list or dict form."""
    n = len(names) if names else 2
    keys = list(names) if names else ["inp", "a"][:n]
    item = input_item(safe_data)
    good = st.lists(VALID_ITEM, min_size=n, max_size=n)
    if names is not None:
        good = st.one_of(good, good.map(tuple), good.map(lambda v: dict(zip(keys, v))))
    else:
        good = good.map(lambda v: dict(zip(keys, v)))
    with_one_bad = one_bad(VALID_ITEM, n, item)
    bad = st.one_of(
        with_one_bad, with_one_bad, with_one_bad.map(lambda v: dict(zip(keys + ["extra"], v))),
        seq_of(item, max_size=n + 1),
        st.dictionaries(st.one_of(st.sampled_from(keys), NAME, st.integers(0, 3), st.none()), item, max_size=n + 1),
        st.builds(M, st.just("lying"), st.just("raising_dict"), st.fixed_dictionaries({k: VALID_ITEM for k in keys}),
                  st.none()),
        JUNK)
    return sometimes_bad(good, bad, bad_weight=3, good_weight=1)


def per_output(names, good, bad):
    """output_shapes= / output_dtypes= / outputs= for these output names: list or dict form, right or wrong."""
    n = len(names)
    return sometimes_bad(
        st.one_of(st.lists(good, min_size=n, max_size=n), st.lists(good, min_size=n, max_size=n).map(tuple),
                  st.lists(good, min_size=n, max_size=n).map(lambda v: dict(zip(names, v)))),
        st.one_of(seq_of(st.one_of(good, bad), max_size=n + 1),
                  st.dictionaries(st.one_of(st.sampled_from(list(names)), NAME, st.integers(0, 2)), bad,
                                  max_size=n + 1), JUNK))


GOOD_SHAPE = st.lists(st.integers(0, 8), min_size=0, max_size=3).map(tuple)
BAD_SHAPE = st.one_of(seq_of(ANY_INT, max_size=3), st.sampled_from([(2**40, 2**40), (2**63,), (2**64,), (-1,),
                                                                     (1,) * 40, "12", 4, None]), JUNK)
DIM3_GOOD = st.tuples(st.integers(1, 64), st.integers(1, 4), st.integers(1, 4))
DIM3 = sometimes_bad(st.one_of(DIM3_GOOD, DIM3_GOOD.map(list)),
                     st.one_of(seq_of(ANY_INT, max_size=4), st.tuples(INT, INT, INT),
                               st.sampled_from([(2**31, 1, 1), (1, 2**32, 1), (2**31 - 1, 65535, 65535),
                                                (1025, 1, 1), (1, 1, 65)]), JUNK))
TEMPLATE_NAME = st.one_of(st.sampled_from(["T", "N", "U", "B", "a", "out", "1x", "", "T T", "int", "n"]), NAME)
TEMPLATE_VALUE = st.one_of(DTYPE_LIKE, ANY_INT, st.booleans(), st.just(np.True_), JUNK,
                           st.builds(M, st.just("hostile"), st.just({"dtype": RAISE})))
TEMPLATE = sometimes_bad(
    st.one_of(st.none(), st.just([("T", jk.float32)]), st.just({"T": "float16", "N": 3, "B": True})),
    st.one_of(st.lists(st.tuples(TEMPLATE_NAME, TEMPLATE_VALUE), max_size=3),
              st.dictionaries(TEMPLATE_NAME, TEMPLATE_VALUE, max_size=3),
              seq_of(st.one_of(st.tuples(TEMPLATE_NAME), st.tuples(TEMPLATE_NAME, TEMPLATE_VALUE, TEMPLATE_VALUE),
                               st.lists(st.one_of(TEMPLATE_NAME, TEMPLATE_VALUE), max_size=2), TEMPLATE_NAME, JUNK),
                     max_size=3), JUNK), bad_weight=2, good_weight=1)
INIT_VALUE = st.one_of(st.none(), st.floats(), INT, st.booleans(), NP_INT, SCALAR, JUNK, HOSTILE_INT,
                       st.sampled_from([2**1000, np.float16(1), np.longdouble(2)]))
STREAM_ANSWERS = [(0, 42), (0, 2**64), (0, 2**64 - 1), (0, 2**63), (0,), (), None, (0, "x"), (0, -1), (0, 2**70),
                  [0, 1], RAISE, (0, 1.5), (0, M("index", 2**64)), (0, M("index", RAISE)), (0, True), (0, 1, 2)]
STREAM = st.one_of(
    st.none(), INT, NP_INT, HOSTILE_INT, st.sampled_from([2**64, 2**64 - 1, 2**63, -1, 2**128, np.uint64(2**64 - 1)]),
    st.builds(M, st.just("hostile"), st.fixed_dictionaries({"__cuda_stream__": st.sampled_from(STREAM_ANSWERS)})),
    st.builds(M, st.just("hostile"), st.fixed_dictionaries(
        {"__cuda_stream__": st.sampled_from(STREAM_ANSWERS).map(lambda v: ("attr", v))})),
    st.builds(M, st.just("hostile"), st.fixed_dictionaries(
        {"__module__": st.just("torch.cuda.streams"), "cuda_stream": st.sampled_from([7, 2**64, -1, "x", RAISE])})),
    st.builds(M, st.just("hostile"), st.fixed_dictionaries(
        {"__module__": st.just("cupy.cuda.stream"), "ptr": st.sampled_from([7, 2**64, -1, "x", RAISE])})),
    JUNK, st.booleans(), st.floats())
OUTPUT_ITEM = st.one_of(DEVICE_ARRAY, NDARRAY, HOSTILE_ARRAY_SAFE, JUNK)
UNKNOWN_KWARGS = st.dictionaries(st.sampled_from(["bogus", "input", "output_shape", "grid_size", "name", "source",
                                                  "arch", "shared_memory", "dl_device", "x" * 100]),
                                 st.integers(0, 3), max_size=2)
POSITIONAL = st.lists(st.one_of(st.integers(), st.none(), st.just([])), max_size=2).map(tuple)

# ----------------------------------------------------------------------------------------------------------------
# Kernels the call, source and compile targets use (made once per process)

CUDA_KERNELS = {
    "K_ab": dict(name="k_ab", input_names=["a", "b"], output_names=["out"], ensure_row_contiguous=False,
                 source="out[0] = a[0] + b[0] + a_shape[0] + b_strides[0] + a_ndim;"),
    "K_x": dict(name="k_x", input_names=["x"], output_names=["y", "z"], source="y[0] = x[0]; z[0] = x[0];"),
    "K_nameless": dict(name="k_nameless", source="out[0] = inp[0] + a[0];"),
    "K_empty": dict(name="k_empty", input_names=[], output_names=["o"], source="o[0] = 1;", shared_memory=1024,
                    header="__device__ int helper() { return 1; }"),
}
METAL_KERNELS = {
    "M_ab": dict(name="m_ab", input_names=["a", "b"], output_names=["out"], ensure_row_contiguous=False,
                 source="uint i = thread_position_in_grid.x; out[i] = a[i] + b[0] + a_shape[0] + b_strides[0];"),
    "M_x": dict(name="m_x", input_names=["x"], output_names=["y", "z"], atomic_outputs=True,
                source="y[0] = x[0]; z[0] = x[0];", compile_options={"math_mode": "fast"}),
    "M_nameless": dict(name="m_nameless", source="out[0] = inp[0] + a[0];"),
}
KERNEL_NAMES = {"K_ab": (["a", "b"], ["out"]), "K_x": (["x"], ["y", "z"]), "K_nameless": (None, ["out"]),
                "K_empty": ([], ["o"]), "M_ab": (["a", "b"], ["out"]), "M_x": (["x"], ["y", "z"]),
                "M_nameless": (None, ["out"])}

# ----------------------------------------------------------------------------------------------------------------
# Source text pieces (factories) and sources for NVRTC (compile targets)

SOURCE_PIECES = ["out[0] = a[0];", "a_shape[0]", "a_strides[1]", "a_ndim", "x_shape", "thread_position_in_grid.x",
                 "threads_per_threadgroup", "#include <cooperative_groups.h>\n", "cooperative_groups::this_grid()",
                 "\x00", "*/", "/*", "//", "\n#line 1\n", "\\", "\"", "R\"(", "T", "N", "elem_to_loc(0, a_shape, "
                 "a_strides, a_ndim)", "atomic_fetch_add_explicit(", "}", "{", "#pragma once\n", "\n#error x\n",
                 "__syncthreads();", "simdgroup", "threadgroup_position_in_grid", "é", "\ud7ff", "\t", "\r\n"]
SOURCE_TEXT = st.one_of(st.lists(st.sampled_from(SOURCE_PIECES), max_size=5).map("".join), st.text(max_size=30),
                        st.just("x" * 5000))
COMPILE_BODIES = ["out[0] = a[0] + b[0];", "out[0] = (T)N;", "this is not C++", "out[0] = a[0]",
                  "#include \"does_not_exist.h\"\nout[0] = 0;", "#include <cooperative_groups.h>\nout[0] = 1;",
                  "out[0] = a_shape[0] + b_ndim;", "#error stop\n", "out[0] = missing_symbol;"]
COMPILE_CUDA_SOURCES = ['extern "C" __global__ void f(float* x) { x[0] = 1; }', "int main(", "",
                        '#include "nope.h"\n', '__global__ void g() {}', "\x00", "#include <cuda_fp16.h>\n"]
ARCHES = ["sm_90a", "sm_90", "sm_80", "sm_52", "sm_100a", "sm_120", "compute_90", "sm_4294967386", "sm_", "sm_-1",
          "sm_90a\x00", "SM_90", "sm_" + "9" * 25, "sm_7", "sm_35", "", "sm_89", "sm_103f", "lto_90"]
TARGETS_BIN = ["cubin", "ptx", "fatbin", "CUBIN", "", "ptx\x00", "elf"]

# ----------------------------------------------------------------------------------------------------------------
# Binaries for the precompiled target: mutations of real NVRTC output (cubin / PTX, and fatbins holding them)

BINARIES: dict = {}  # base name -> bytes (filled by setup_binaries)
PRECOMPILED_SOURCE = r"""
extern "C" __global__ void axpy(const float* x, float* y, long n, double alpha, bool flag) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (flag && i < n) y[i] = (float)(alpha * x[i]);
}
extern "C" __global__ void copy2(const float* x, float* a, float* b, unsigned short tag) {
  a[0] = x[0]; b[0] = x[0] + tag;
}
"""
# sm_N of a PTX .target: what inspect_binary reports must be that N (or an error), never another architecture.
PTX_TARGETS = [90, 100, 52, 2**32 + 90, 2**31 + 90, 4294967386, 2**64 + 90, 10**30 + 90, 0, 9]
ENTRY_NAMES = ["axpy", "copy2", "missing", "", "axpy\x00", "_Z4axpy", "a" * 1000]


def make_fatbin(images):
    """A fatbin holding ``images`` (kind, sm, payload): kind 1 PTX, 2 ELF, in the layout nvcc writes."""
    body = b""
    for kind, sm, payload in images:
        header = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(payload), 0, 0, 8, 1, sm, 0, 0, 0x11, 0, 0)
        body += header + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def setup_binaries():
    cubin = jk.compile_cuda(PRECOMPILED_SOURCE, arch="sm_90a", target="cubin")
    ptx = jk.compile_cuda(PRECOMPILED_SOURCE, arch="sm_90a", target="ptx")
    BINARIES.update(cubin=cubin, ptx=ptx, fatbin_cubin=make_fatbin([(2, 90, cubin)]),
                    fatbin_both=make_fatbin([(2, 90, cubin), (1, 90, ptx.rstrip(b"\0"))]))


INTERESTING = [0, 1, 2, 7, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63, 2**64 - 1, 64, 4096,
               65535, 0x10000]
ELF_HEADER_FIELDS = {"e_phoff": (0x20, 8), "e_shoff": (0x28, 8), "e_flags": (0x30, 4), "e_ehsize": (0x34, 2),
                     "e_phentsize": (0x36, 2), "e_phnum": (0x38, 2), "e_shentsize": (0x3A, 2), "e_shnum": (0x3C, 2),
                     "e_shstrndx": (0x3E, 2), "ei_class": (4, 1), "ei_data": (5, 1), "e_machine": (0x12, 2)}
SECTION_FIELDS = {"sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 8), "sh_offset": (0x18, 8),
                  "sh_size": (0x20, 8), "sh_link": (0x28, 4), "sh_info": (0x2C, 4), "sh_addralign": (0x30, 8),
                  "sh_entsize": (0x38, 8)}


def _elf_at(data: bytes) -> int:
    """Offset of the (first) ELF image in data, or -1."""
    return data.find(b"\x7fELF")


def _put(data: bytearray, pos: int, width: int, value: int):
    if 0 <= pos and pos + width <= len(data):
        data[pos:pos + width] = (value % (1 << (8 * width))).to_bytes(width, "little")


def mutate(base: str, ops) -> bytes:
    """``base`` (a BINARIES name) with the mutations ``ops`` applied in order (positions wrap around the size)."""
    if not BINARIES:
        setup_binaries()
    data = bytearray(BINARIES[base])
    for op in ops:
        kind, args = op[0], op[1:]
        n = max(len(data), 1)
        if kind == "flip":
            pos, mask = args
            if data:
                data[pos % n] ^= mask or 1
        elif kind == "set":
            pos, width, value = args
            _put(data, pos % n, width, value)
        elif kind == "truncate":
            del data[args[0] % n:]
        elif kind == "insert":
            pos, blob = args
            data[pos % n:pos % n] = blob
        elif kind == "repeat":  # a slice repeated: long tables, many sections, huge text
            pos, length, times = args
            chunk = bytes(data[pos % n:pos % n + length])
            data[pos % n:pos % n] = chunk * times
        elif kind in ("elf", "section"):
            elf = _elf_at(bytes(data))
            if elf < 0:
                continue
            if kind == "elf":
                field, value = args
                offset, width = ELF_HEADER_FIELDS[field]
                _put(data, elf + offset, width, value)
            else:
                index, field, value = args
                shoff = int.from_bytes(data[elf + 0x28:elf + 0x30], "little")
                shnum = int.from_bytes(data[elf + 0x3C:elf + 0x3E], "little") or 1
                offset, width = SECTION_FIELDS[field]
                _put(data, elf + shoff + (index % shnum) * 64 + offset, width, value)
        elif kind == "fatbin":  # a field of the fatbin header (0..15) or of the first image header (16..79)
            offset, width, value = args
            if data[:4] == b"\x50\xed\x55\xba":
                _put(data, offset, width, value)
        elif kind == "ptx":  # a textual edit of PTX
            pattern, replacement = args
            data = bytearray(re.sub(pattern.encode(), replacement.encode("utf-8", "surrogatepass"), bytes(data),
                                    count=1))
        if len(data) > 2 << 20:
            del data[2 << 20:]
    return bytes(data)


PTX_EDITS = st.one_of(
    st.tuples(st.just(r"\.target sm_\w+"), st.sampled_from([".target sm_4294967386", ".target sm_99999999999999999999",
                                                             ".target sm_", ".target sm_-1", ".target compute_90",
                                                             ".target sm_90a, texmode_independent", ".target"])),
    st.tuples(st.just(r"\.version \d+\.\d+"), st.sampled_from([".version 99.99", ".version 4294967296.1",
                                                               ".version 1", ".version -1.0", ".version 8.99999999999"])),
    st.tuples(st.just(r"\.address_size \d+"), st.sampled_from([".address_size 32", ".address_size 4294967360", ""])),
    st.tuples(st.just(r"\.entry axpy\("), st.sampled_from([".entry (", ".entry copy2(", ".entry axpy(\x00",
                                                           ".entry " + "a" * 5000 + "("])),
    st.tuples(st.just(r"\.param \.\w+ \w+"), st.sampled_from([".param .b8 x[4294967296]", ".param .u64",
                                                              ".param .align 4294967296 .b8 p[8]", ".param"])),
    st.tuples(st.just(r"\)"), st.sampled_from(["", "(", ")" * 100])),
    st.tuples(st.just(r"\n"), st.sampled_from(["\x00", "\n" * 1000, "\n.visible .entry x(\n", "\n// ",
                                               "\n/*"])))
BINARY_OP = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(0, 255)),
    st.tuples(st.just("set"), st.integers(0, 1 << 16), st.sampled_from([1, 2, 4, 8]), st.sampled_from(INTERESTING)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 16)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 16), st.binary(max_size=16)),
    st.tuples(st.just("repeat"), st.integers(0, 1 << 16), st.integers(1, 256), st.integers(2, 4096)),
    st.tuples(st.just("elf"), st.sampled_from(sorted(ELF_HEADER_FIELDS)), st.sampled_from(INTERESTING)),
    st.tuples(st.just("section"), st.integers(0, 64), st.sampled_from(sorted(SECTION_FIELDS)),
              st.sampled_from(INTERESTING)),
    st.tuples(st.just("fatbin"), st.integers(0, 79), st.sampled_from([1, 2, 4, 8]), st.sampled_from(INTERESTING)),
    PTX_EDITS.map(lambda e: ("ptx",) + e))
BINARY = st.builds(M, st.just("binary"), st.sampled_from(["cubin", "ptx", "fatbin_cubin", "fatbin_both"]),
                   st.lists(BINARY_OP, max_size=4))
BINARY_ARG = st.one_of(BINARY, BINARY, BINARY, st.sampled_from([b"", b"\x7fELF", "text", None, bytearray(b"x"),
                                                                memoryview(b"\x7fELF\x02\x01\x01")]))
SCALARS_ARG = st.one_of(st.lists(st.one_of(SCALAR, HOSTILE_INT, JUNK), max_size=4),
                        st.just([np.int64(4), np.float64(2.0), True]), seq_of(SCALAR), JUNK)

# ----------------------------------------------------------------------------------------------------------------
# Targets: each draws cases, a case is a tuple of steps (callable name, args, kwargs); ".name" calls a method of
# the previous step's result.


def call_kwargs(kernel, safe_data=True):
    in_names, out_names = KERNEL_NAMES[kernel]
    required = {"inputs": inputs_arg(in_names, safe_data),
                "output_shapes": per_output(out_names, GOOD_SHAPE, BAD_SHAPE),
                "output_dtypes": per_output(out_names, VALID_DTYPE, DTYPE_LIKE),
                "grid": DIM3, "threadgroup": DIM3}
    optional = {"template": TEMPLATE, "init_value": INIT_VALUE, "verbose": sometimes_bad(st.booleans(), JUNK),
                "stream": sometimes_bad(st.none(), STREAM, bad_weight=2, good_weight=1),
                "outputs": per_output(out_names, DEVICE_ARRAY, OUTPUT_ITEM)}
    return st.fixed_dictionaries(required, optional=optional)


def without_some(kwargs_strategy):
    """Drops a required keyword now and then, and adds unknown keywords or positional arguments now and then."""
    def change(d, drop, extra, positional):
        d = dict(d)
        if drop is not None and drop in d:
            del d[drop]
        d.update(extra)
        return positional, d
    return st.builds(change, kwargs_strategy,
                     sometimes_bad(st.none(), st.sampled_from(["inputs", "grid", "threadgroup", "output_shapes"]),
                                   good_weight=8),
                     sometimes_bad(st.just({}), UNKNOWN_KWARGS, good_weight=8),
                     sometimes_bad(st.just(()), POSITIONAL, good_weight=8))


def step(name, args=(), kwargs=None):
    return (name, tuple(args), dict(kwargs or {}))


def kernel_call_cases(kernels):
    return st.sampled_from(kernels).flatmap(
        lambda k: without_some(call_kwargs(k)).map(lambda pk: (step(k, pk[0], pk[1]),)))


def signature_cases(kernels, methods):
    def for_kernel(k):
        in_names, out_names = KERNEL_NAMES[k]
        kwargs = st.fixed_dictionaries({"inputs": inputs_arg(in_names, safe_data=False),
                                        "output_dtypes": per_output(out_names, VALID_DTYPE, DTYPE_LIKE)},
                                       optional={"template": TEMPLATE})
        return st.tuples(st.sampled_from(methods), kwargs).map(lambda mk: (step(f"{k}.{mk[0]}", (), mk[1]),))
    return st.sampled_from(kernels).flatmap(for_kernel)


def names_arg(good_names):
    return sometimes_bad(st.one_of(good_names, good_names.map(tuple), st.none()),
                         st.one_of(seq_of(st.one_of(NAME, JUNK, INT), max_size=3), JUNK, st.just("ab")))


@st.composite
def factory_cases(draw, metal):
    in_names = draw(names_arg(st.lists(VALID_NAME, max_size=3, unique=True)))
    out_names = draw(names_arg(st.lists(st.sampled_from(["out", "o2", "res"]), min_size=1, max_size=2,
                                        unique=True)))
    kwargs = {"name": draw(sometimes_bad(st.sampled_from(["k", "my_kernel", "k2"]), st.one_of(NAME, JUNK))),
              "input_names": in_names, "output_names": out_names,
              "source": draw(sometimes_bad(st.sampled_from(["out[0] = 1;", "res[0] = a[0];"]),
                                           st.one_of(SOURCE_TEXT, JUNK, st.none())))}
    optional = {"header": sometimes_bad(st.just(""), st.one_of(SOURCE_TEXT, JUNK)),
                "ensure_row_contiguous": sometimes_bad(st.booleans(), st.one_of(JUNK, INT))}
    if metal:
        optional["atomic_outputs"] = sometimes_bad(st.booleans(), st.one_of(JUNK, INT))
        optional["compile_options"] = sometimes_bad(
            st.one_of(st.none(), st.just({"math_mode": "fast"})),
            st.one_of(st.dictionaries(st.sampled_from(["math_mode", "fast_math", ""]),
                                      st.one_of(st.sampled_from(["safe", "relaxed", "fast", "Fast", ""]), JUNK),
                                      max_size=2), JUNK))
    else:
        optional["shared_memory"] = sometimes_bad(st.sampled_from([0, 1024, 49152]), ANY_INT)
    kwargs.update(draw(st.fixed_dictionaries({}, optional=optional)))
    steps = [step("jk.metal_kernel" if metal else "jk.cuda_kernel", (), kwargs)]
    # Then one query on the kernel, with arguments that fit the names when the names are plain lists.
    n_in = len(in_names) if isinstance(in_names, (list, tuple)) else 1
    n_out = len(out_names) if isinstance(out_names, (list, tuple)) else 1
    query = {"inputs": draw(st.lists(VALID_ITEM, min_size=n_in, max_size=n_in)),
             "output_dtypes": draw(st.lists(VALID_DTYPE, min_size=n_out, max_size=n_out))}
    if draw(st.booleans()) and isinstance(in_names, (list, tuple)) and isinstance(out_names, (list, tuple)) \
            and all(isinstance(n, str) for n in list(in_names) + list(out_names)):
        if draw(st.booleans()):
            query["inputs"] = dict(zip(in_names, query["inputs"]))
        if draw(st.booleans()):
            query["output_dtypes"] = dict(zip(out_names, query["output_dtypes"]))
    query["template"] = draw(TEMPLATE)
    if metal:
        method = draw(st.sampled_from(["source", "kernel_name", "buffers", "call"]))
        if method == "source":
            query["with_utils"] = draw(sometimes_bad(st.booleans(), JUNK))
    else:
        method = draw(st.sampled_from(["source", "entry_name", "call"]))
    if method == "call":
        outs = query["output_dtypes"]
        query["output_shapes"] = {k: (2,) for k in outs} if isinstance(outs, dict) else [(2,)] * len(outs)
        query.update(grid=(1, 1, 1), threadgroup=(1, 1, 1))
        steps.append(step(".__call__", (), query))
    else:
        steps.append(step("." + method, (), query))
    return tuple(steps)


@st.composite
def metal_old_form_cases(draw):
    """MLX's older MetalKernel(...) form with .template(...) and inputs as keywords."""
    kwargs = {"name": draw(sometimes_bad(st.just("old"), NAME)), "source": draw(sometimes_bad(
        st.just("out[0] = inp[0];"), st.one_of(SOURCE_TEXT, JUNK))),
              "grid": draw(DIM3), "threadgroup": draw(DIM3),
              "output_shapes": draw(sometimes_bad(st.just({"out": (2,)}), st.one_of(
                  st.dictionaries(NAME, BAD_SHAPE, max_size=2), JUNK))),
              "output_dtypes": draw(sometimes_bad(st.just({"out": jk.float32}), st.one_of(
                  st.dictionaries(NAME, DTYPE_LIKE, max_size=2), JUNK)))}
    template = draw(st.dictionaries(TEMPLATE_NAME, TEMPLATE_VALUE, max_size=2))
    inputs = draw(st.dictionaries(st.one_of(st.just("inp"), NAME), input_item(safe_data=True), max_size=2))
    method = draw(st.sampled_from([".__call__", ".source"]))
    return (step("jk.MetalKernel", (), kwargs), step(".template", (), template), step(method, (), inputs))


@st.composite
def compile_cases(draw):
    if draw(st.integers(0, 2)) == 0:
        kwargs = {"source": draw(sometimes_bad(st.sampled_from(COMPILE_CUDA_SOURCES), st.one_of(SOURCE_TEXT, JUNK))),
                  "arch": draw(sometimes_bad(st.sampled_from(ARCHES), st.one_of(st.text(max_size=8), JUNK))),
                  "target": draw(sometimes_bad(st.sampled_from(TARGETS_BIN), st.one_of(st.text(max_size=5), JUNK))),
                  "name": draw(sometimes_bad(st.sampled_from(["program.cu", "x.cu"]), st.one_of(
                      st.sampled_from(["", "a/b.cu", "/etc/passwd", "\x00", "x" * 5000, "../x.cu"]), JUNK)))}
        return (step("jk.compile_cuda", (), kwargs),)
    body = draw(st.sampled_from(COMPILE_BODIES))
    kwargs = {"inputs": draw(sometimes_bad(st.lists(VALID_ITEM, min_size=2, max_size=2), inputs_arg(["a", "b"], False),
                                           good_weight=4)),
              "output_dtypes": draw(sometimes_bad(st.lists(VALID_DTYPE, min_size=1, max_size=1),
                                                  per_output(["out"], VALID_DTYPE, DTYPE_LIKE))),
              "template": draw(sometimes_bad(st.just([("T", jk.float32), ("N", 3)]), TEMPLATE)),
              "arch": draw(sometimes_bad(st.sampled_from(["sm_90a", "sm_80"]), st.sampled_from(ARCHES))),
              "target": draw(sometimes_bad(st.sampled_from(["cubin", "ptx"]), st.sampled_from(TARGETS_BIN)))}
    factory = {"name": "kc", "input_names": ["a", "b"], "output_names": ["out"], "source": body,
               "ensure_row_contiguous": draw(st.booleans())}
    return (step("jk.cuda_kernel", (), factory), step(".compile", (), kwargs))


@st.composite
def precompiled_cases(draw):
    which = draw(st.integers(0, 4))
    if which == 0:
        return (step("inspect_binary", (draw(BINARY),)),)
    if which == 4:
        return (step("ptx_target_check", (draw(st.sampled_from(PTX_TARGETS)),)),)
    if which == 1:
        cc = draw(st.tuples(st.integers(0, 13), st.integers(0, 9)))
        return (step("check_binary_arch", (draw(BINARY), cc)),)
    kwargs = {"name": draw(sometimes_bad(st.sampled_from(ENTRY_NAMES), st.one_of(NAME, JUNK))),
              "compiled_source": draw(BINARY_ARG),
              "inputs": draw(sometimes_bad(st.lists(VALID_ITEM, min_size=1, max_size=1),
                                           st.one_of(seq_of(input_item(True)), JUNK))),
              "output_shapes": draw(per_output(["y"], GOOD_SHAPE, BAD_SHAPE)),
              "output_dtypes": draw(per_output(["y"], VALID_DTYPE, DTYPE_LIKE)),
              "scalars": draw(sometimes_bad(st.just([np.int64(4), np.float64(2.0), True]), SCALARS_ARG)),
              "grid": draw(DIM3), "threadgroup": draw(DIM3)}
    kwargs.update(draw(st.fixed_dictionaries({}, optional={
        "shared_memory": sometimes_bad(st.just(0), ANY_INT), "init_value": INIT_VALUE,
        "ensure_row_contiguous": sometimes_bad(st.booleans(), JUNK), "stream": STREAM,
        "outputs": per_output(["y"], DEVICE_ARRAY, OUTPUT_ITEM)})))
    return (step("jk.precompiled_cuda_kernel", (), kwargs),)


@st.composite
def array_dtype_cases(draw):
    which = draw(st.integers(0, 3))
    if which == 0:
        return (step("jk.dtype", (draw(DTYPE_LIKE),)),)
    if which == 1:
        return (step("dtype_ops", (draw(st.sampled_from(DTYPES)), draw(st.one_of(DTYPE_LIKE, SCALAR)))),)
    if which == 2:
        return (step("jk.Array", draw(POSITIONAL), draw(UNKNOWN_KWARGS)),)
    array = draw(DEVICE_ARRAY)
    op = draw(st.sampled_from(["__dlpack__", "__dlpack__", "__dlpack__", "__dlpack_device__", "numpy", "__array__",
                               "__cuda_array_interface__", "attributes", "np.asarray"]))
    kwargs = {}
    if op == "__dlpack__":
        kwargs = draw(st.fixed_dictionaries({}, optional={
            "stream": st.one_of(st.none(), INT, JUNK, HOSTILE_INT),
            "max_version": st.sampled_from([None, (1, 0), (0, 8), (2, 0), (1,), "x", (2**70, 0), (1, 0, 0)]),
            "dl_device": st.sampled_from([None, (2, 0), (1, 0), (2, 1), (2,), "x", (2, 2**70), (2**70, 0)]),
            "copy": st.one_of(st.none(), st.booleans(), JUNK)}))
    elif op == "__array__":
        kwargs = draw(st.fixed_dictionaries({}, optional={"dtype": st.one_of(st.none(), DTYPE_LIKE),
                                                          "copy": st.one_of(st.none(), st.booleans(), JUNK)}))
    return (step("array_op", (array, op), kwargs),)


PROTOCOL_ENTRIES = ["K_ab.source", "K_ab.entry_name", "K_ab.compile", "K_ab", "K_nameless.source", "M_ab.source",
                    "M_ab.buffers", "M_ab", "jk.precompiled_cuda_kernel"]
CALL_ENTRIES = ("K_ab", "M_ab", "jk.precompiled_cuda_kernel")


@st.composite
def protocol_cases(draw):
    """One hostile protocol object (an input, an output or the stream) in an otherwise sensible call of every entry
    point that takes arrays."""
    entry = draw(st.sampled_from(PROTOCOL_ENTRIES))
    calls = entry in CALL_ENTRIES
    where = draw(st.sampled_from(["inputs", "inputs", "outputs", "stream"])) if calls else "inputs"
    if where == "stream":
        bad = draw(STREAM.filter(lambda v: v is not None))
    else:
        bad = draw(st.one_of(HOSTILE_DLPACK, HOSTILE_DLPACK, HOSTILE_ARRAY_SAFE if calls else HOSTILE_ARRAY))
    n_in = 1 if entry == "jk.precompiled_cuda_kernel" else 2
    inputs = draw(st.lists(VALID_ITEM, min_size=n_in, max_size=n_in))
    if where == "inputs":
        inputs[draw(st.integers(0, n_in - 1))] = bad
    if entry == "K_nameless.source":
        kwargs = {"inputs": dict(zip(["inp", "a"], inputs)), "output_dtypes": {"out": jk.float32}}
    else:
        kwargs = {"inputs": inputs, "output_dtypes": [jk.float32]}
    if calls:
        kwargs.update(output_shapes=[(2,)], grid=(2, 1, 1), threadgroup=(2, 1, 1))
        if where == "outputs":
            kwargs["outputs"] = [bad]
        elif where == "stream":
            kwargs["stream"] = bad
    if entry == "jk.precompiled_cuda_kernel":
        kwargs.update(name="axpy", compiled_source=M("binary", "cubin", []), scalars=[np.int64(4), np.float64(2.0),
                                                                                     True])
    return (step(entry, (), kwargs),)


CACHE_DAMAGE = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 20), st.integers(0, 200)),
    st.tuples(st.just("flip"), st.integers(0, 20), st.integers(0, 5000)),
    st.tuples(st.just("claim_size"), st.integers(0, 20), st.sampled_from([6 << 30, 2**63, 2**64 - 1, 0, 1])),
    st.tuples(st.just("empty"), st.integers(0, 20)),
    st.tuples(st.just("directory"), st.integers(0, 20)),
    st.tuples(st.just("fifo"), st.integers(0, 20)),
    st.tuples(st.just("symlink_out"), st.integers(0, 20)),
    st.tuples(st.just("swap"), st.integers(0, 20), st.integers(0, 20)),
    st.tuples(st.just("foreign_file"), st.sampled_from(["kernels", "records", ".", "other"]),
              st.sampled_from(["x.jkc", "notes.txt", "0" * 64 + ".jkc", ".hidden", "x.jkc.tmp"])),
    st.tuples(st.just("foreign_link"), st.sampled_from(["kernels", "records", "."]),
              st.sampled_from(["l.jkc", "0" * 64 + ".jkc"])))
CACHE_ENV = st.sampled_from([None, None, None, "0", "1", "512M", "2G", "1", "100", "-1", "9" * 30, "1e3", "",
                             "12Q", "0x10", " 64K", "18446744073709551616", "4096"])


@st.composite
def cache_cases(draw):
    return (step("cache_case", (draw(st.tuples(CACHE_ENV, st.sampled_from([None, None, "0", "1", "no", ""]))),
                                draw(st.lists(CACHE_DAMAGE, max_size=3)),
                                draw(st.sampled_from(["compile0", "compile1", "compile2", "info", "clear",
                                                      "clear_then_compile"])))),)


TARGETS = {
    "factory": lambda: factory_cases(False),
    "source": lambda: signature_cases(["K_ab", "K_x", "K_nameless", "K_empty"], ["source", "entry_name"]),
    "call": lambda: kernel_call_cases(["K_ab", "K_x", "K_nameless", "K_empty"]),
    "protocols": protocol_cases,
    "compile": compile_cases,
    "metal": lambda: st.one_of(factory_cases(True), signature_cases(["M_ab", "M_x", "M_nameless"],
                                                                    ["source", "kernel_name", "buffers"]),
                               kernel_call_cases(["M_ab", "M_x", "M_nameless"]), metal_old_form_cases()),
    "precompiled": precompiled_cases,
    "arrays_dtypes": array_dtype_cases,
    "cache": cache_cases,
}

# ----------------------------------------------------------------------------------------------------------------
# Running a case


class Invariant(Exception):
    """A call returned, but broke a promise (a foreign file deleted, a stale binary returned, ...)."""


# Exceptions the Python protocols that jk.Array implements prescribe (DLPack: BufferError; NumPy's __array__:
# ValueError for copy=False; attribute protocols: AttributeError so that hasattr() works), allowed from those
# methods only.
PROTOCOL_EXCEPTIONS = {"__dlpack__": (BufferError, TypeError, ValueError), "__array__": (TypeError, ValueError),
                       "np.asarray": (TypeError, ValueError),
                       "__cuda_array_interface__": (AttributeError,), "jk.Array": (TypeError,)}


def dtype_ops(d, other):
    d == other, d != other, hash(d), repr(d), str(d), d.name, d.itemsize, d.cuda_type, d.dlpack  # noqa: B018
    return jk.dtype(d)


def ptx_target_check(sm):
    if not BINARIES:
        setup_binaries()
    ptx = re.sub(rb"\.target sm_\w+", f".target sm_{sm}".encode(), BINARIES["ptx"], count=1)
    arch = inspect_binary(ptx)["arch"]
    if arch != f"sm_{sm}":
        raise Invariant(f"PTX with .target sm_{sm} was read as {arch!r}")


def array_op(arr, op, **kwargs):
    if op == "attributes":
        return (arr.shape, arr.dtype, arr.device, arr.ndim, arr.size, arr.nbytes, repr(arr))
    if op == "np.asarray":
        return np.asarray(arr)
    if op == "__cuda_array_interface__":
        return arr.__cuda_array_interface__
    return getattr(arr, op)(**kwargs)


class CacheFuzz:
    """The cache target's state: a private cache folder (made by the parent), refilled before each case from a
    snapshot of the entries of ``SOURCES`` (so a case is reproducible on its own), the binaries a fresh compile of
    each source gives, and a file outside the folder that must survive whatever happens."""

    SOURCES = ['extern "C" __global__ void c0(float* x) { x[0] = 0; }',
               'extern "C" __global__ void c1(int* x) { x[0] = 1; }',
               '#include <cuda_fp16.h>\nextern "C" __global__ void c2(__half* x) { x[0] = __float2half(2.f); }']

    def __init__(self):
        self.folder = os.environ["JITKERNEL_CACHE_DIR"]
        self.outside = self.folder + "-outside"
        self.pristine = self.folder + "-pristine"
        os.makedirs(self.outside, exist_ok=True)
        self.victim = os.path.join(self.outside, "precious.txt")
        self._set_env((None, "0"))
        self.fresh = [jk.compile_cuda(s) for s in self.SOURCES]
        self._set_env((None, None))
        for s in self.SOURCES:
            jk.compile_cuda(s)
        shutil.copytree(self.folder, self.pristine, symlinks=True)
        self.foreign = []

    def reset(self):
        shutil.rmtree(self.folder)
        shutil.copytree(self.pristine, self.folder, symlinks=True)
        os.chmod(self.folder, 0o700)
        with open(self.victim, "w") as f:
            f.write("not jitkernel's")
        self.foreign = []

    @staticmethod
    def _set_env(env):
        """env: (JITKERNEL_CACHE_MAX_BYTES, JITKERNEL_CACHE), None for unset; the core re-reads them."""
        for name, value in zip(("JITKERNEL_CACHE_MAX_BYTES", "JITKERNEL_CACHE"), env):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        jk._core._cache_reset()

    def entries(self):
        found = []
        for sub in ("kernels", "records"):
            d = os.path.join(self.folder, sub)
            if os.path.isdir(d):
                found += [os.path.join(d, n) for n in sorted(os.listdir(d))]
        return found

    def damage(self, op):
        kind = op[0]
        if kind in ("foreign_file", "foreign_link"):
            where = os.path.join(self.folder, op[1])
            os.makedirs(where, exist_ok=True)
            path = os.path.join(where, op[2])
            if os.path.lexists(path) or os.path.isdir(path):
                return
            if kind == "foreign_file":
                with open(path, "wb") as f:
                    f.write(b"user data, not a cache entry\n")
                self.foreign.append(path)
            else:
                os.symlink(self.victim, path)
            return
        entries = [e for e in self.entries() if os.path.isfile(e) and not os.path.islink(e)
                   and e not in self.foreign]
        if not entries:
            return
        path = entries[op[1] % len(entries)]
        if kind == "truncate":
            os.truncate(path, min(op[2], os.path.getsize(path)))
        elif kind == "flip":
            with open(path, "r+b") as f:
                data = bytearray(f.read())
                if data:
                    data[op[2] % len(data)] ^= 0x40
                    f.seek(0)
                    f.write(data)
        elif kind == "claim_size":  # a valid-looking header whose payload size is op[2]
            with open(path, "r+b") as f:
                f.seek(48)
                f.write(struct.pack("<Q", op[2]))
        elif kind == "empty":
            open(path, "wb").close()
        elif kind in ("directory", "fifo", "symlink_out"):
            os.unlink(path)
            if kind == "directory":
                os.mkdir(path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                os.symlink(self.victim, path)
        elif kind == "swap":
            other = entries[op[2] % len(entries)]
            if other != path:
                tmp = path + ".swap"
                os.rename(path, tmp)
                os.rename(other, path)
                os.rename(tmp, other)

    def check_outside(self):
        if not os.path.isfile(self.victim):
            raise Invariant("a file outside the cache folder (a symlink's target) was deleted")
        with open(self.victim) as f:
            if f.read() != "not jitkernel's":
                raise Invariant("a file outside the cache folder (a symlink's target) was overwritten")
        gone = [p for p in self.foreign if not os.path.isfile(p)]
        if gone:
            raise Invariant(f"files that are not cache entries were deleted: {gone}")

    def run(self, env, damage, action):
        self.reset()
        self._set_env(env)
        for op in damage:
            self.damage(op)
        if action.startswith("compile"):
            i = int(action[-1])
            if jk.compile_cuda(self.SOURCES[i]) != self.fresh[i]:
                raise Invariant(f"compile_cuda(SOURCES[{i}]) returned a binary a fresh compile does not give")
        elif action == "info":
            jk.cache_info()
        else:
            jk.clear_cache()
            self.check_outside()
            self.foreign = []
            if action == "clear_then_compile" and jk.compile_cuda(self.SOURCES[0]) != self.fresh[0]:
                raise Invariant("compile_cuda after clear_cache returned a binary a fresh compile does not give")
        self.check_outside()


_CACHE = None


def cache_case(env, damage, action):
    global _CACHE
    if _CACHE is None:
        _CACHE = CacheFuzz()
    _CACHE.run(env, damage, action)


def resolver():
    names = {"jk.cuda_kernel": jk.cuda_kernel, "jk.metal_kernel": jk.metal_kernel, "jk.MetalKernel": jk.MetalKernel,
             "jk.compile_cuda": jk.compile_cuda, "jk.precompiled_cuda_kernel": jk.precompiled_cuda_kernel,
             "jk.dtype": jk.dtype, "jk.Array": jk.Array, "inspect_binary": inspect_binary,
             "check_binary_arch": check_binary_arch,
             "ptx_target_check": ptx_target_check, "dtype_ops": dtype_ops, "array_op": array_op,
             "cache_case": cache_case}
    kernels = {}

    def get(name):
        if name in names:
            return names[name]
        kernel_name, _, method = name.partition(".")
        if kernel_name not in kernels:
            spec = CUDA_KERNELS.get(kernel_name)
            kernels[kernel_name] = jk.cuda_kernel(**spec) if spec else jk.metal_kernel(**METAL_KERNELS[kernel_name])
        k = kernels[kernel_name]
        return getattr(k, method) if method else k
    return get


_BUILD_EXTRA = {"ndarray": ndarray, "binary": mutate}


def build_all(value):
    if isinstance(value, Make) and value.kind in _BUILD_EXTRA:
        return _BUILD_EXTRA[value.kind](*value.args)
    if isinstance(value, Make):
        return build(Make(value.kind, *[build_all(a) for a in value.args]))
    if type(value) is list:
        return [build_all(v) for v in value]
    if type(value) is tuple:
        return tuple(build_all(v) for v in value)
    if type(value) is dict:
        return {k: build_all(v) for k, v in value.items()}
    return value


def describe(steps) -> str:
    text = ""
    for name, args, kwargs in steps:
        parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        text += f"{name}({', '.join(parts)})"
    return text


class HarnessError(Exception):
    """Building a case's arguments failed: a bug of this file, which ends the child (and fails the test)."""


def run_steps(steps, get):
    obj = None
    for name, args, kwargs in steps:
        fn = getattr(obj, name[1:]) if name.startswith(".") else get(name)
        try:
            args, kwargs = build_all(args), build_all(kwargs)
        except Exception as e:
            raise HarnessError(f"building the arguments of {name} failed: {e!r}") from e
        obj = fn(*args, **kwargs)
    return obj


def allowed(exc: BaseException, steps) -> bool:
    if isinstance(exc, (jk.JitKernelError, HostileError)):
        return True  # HostileError: the input's own code failed, and jitkernel let the error through
    last = steps[-1]
    op = last[1][1] if last[0] == "array_op" else last[0]
    return isinstance(exc, PROTOCOL_EXCEPTIONS.get(op, ()))


# ----------------------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--examples", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--skip-through", type=int, default=-1)
    parser.add_argument("--log", required=True)
    parser.add_argument("--call-timeout", type=float, default=10.0)
    args = parser.parse_args()

    warnings.simplefilter("ignore")  # CacheWarning and friends are not failures
    faulthandler.enable()  # a crash prints the Python stack to stderr
    log = open(args.log, "a", buffering=1)
    get = resolver()
    state = {"index": -1, "calls": 0, "propagated": 0}

    @settings(max_examples=args.examples, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False, print_blob=False)
    @seed(args.seed)
    @given(TARGETS[args.target]())
    def fuzz(steps):
        state["index"] += 1
        i = state["index"]
        if i <= args.skip_through:
            return
        log.write(json.dumps({"i": i, "input": describe(steps)[:4000]}) + "\n")
        log.flush()
        state["calls"] += 1
        faulthandler.dump_traceback_later(args.call_timeout, exit=True)
        try:
            run_steps(steps, get)
        except BaseException as e:  # noqa: BLE001 - everything is recorded, nothing escapes to Hypothesis
            faulthandler.cancel_dump_traceback_later()
            if isinstance(e, (KeyboardInterrupt, HarnessError)):
                raise
            if allowed(e, steps):
                if isinstance(e, HostileError):
                    state["propagated"] += 1
                return
            kind = "invariant" if isinstance(e, Invariant) else "exception"
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            log.write(json.dumps({"i": i, "failure": {
                "kind": kind, "type": f"{type(e).__module__}.{type(e).__qualname__}",
                "message": str(e)[:1000], "entry": steps[-1][0], "traceback": "".join(tb[-4:])[-3000:]}}) + "\n")
            log.flush()
        finally:
            faulthandler.cancel_dump_traceback_later()

    fuzz()
    log.write(json.dumps({"done": state["calls"], "propagated": state["propagated"]}) + "\n")
    log.close()


if __name__ == "__main__":
    main()
