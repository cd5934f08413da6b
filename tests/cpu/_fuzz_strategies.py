"""Hypothesis strategies for the fuzz test's arguments (tests/cpu/_fuzz_child.py runs them): ints, names, dtypes,
arrays, hostile protocol objects, shapes, templates and streams, and the kernels the call, source and compile targets
use. Arguments are literals and ``Make`` descriptions (tests/cpu/_fuzz_hostile.py), built when the call is made.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import jitkernel as jk
from _fuzz_hostile import BUFFER_ADDRESS, CAPSULE_KINDS, RAISE, Make

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
