"""Metal code generation for metal_kernel, through the public API, without MLX and without a Mac.

The rules MLX 0.32.4's generator follows (kernel names, address spaces, buffer order, attributes, templates, header
placement), the deliberate differences from MLX (docs/metal_codegen_differences.md), the buffer layout the runtime
binds (``kernel.buffers``), the metal_utils preamble, compile-log mapping, and every naming and argument error of
the generator. test_metal_codegen_mlx.py compares whole texts with MLX itself.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

from _metal_cases import ATTRIBUTES, SPECS, all_metal_cases, metal_source

METAL_UTILS = Path(__file__).resolve().parents[2] / "metal_utils"
METAL_TYPES = {"bool": "bool", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
               "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
               "float16": "float16_t", "bfloat16": "bfloat16_t", "float32": "float", "complex64": "complex64_t"}
PARAM_RE = re.compile(r"^  (.*?) (\w+) \[\[(buffer\((\d+)\)|\w+)\]\](,|\) \{)$", re.M)


def kernel(source="out[0] = 1;", input_names=("a",), output_names=("out",), **factory):
    return jk.metal_kernel("k", list(input_names), list(output_names), source, **factory)


def gen(source, inputs, output_dtypes=(jk.float32,), template=None, input_names=None, output_names=("out",),
        **factory):
    names = input_names if input_names is not None else [f"in{i}" for i in range(len(inputs))]
    k = jk.metal_kernel("k", list(names), list(output_names), source, **factory)
    return k.source(inputs=inputs, output_dtypes=list(output_dtypes), template=template)


def params(text: str) -> list:
    """(declaration, name, attribute) of each parameter line of the generated signature."""
    return [(m.group(1), m.group(2), m.group(3)) for m in PARAM_RE.finditer(text)]


def zeros(shape, dtype=np.float32):
    return np.zeros(shape, dtype)


# --------------------------------------------------------------------------- the whole text
def test_whole_text_of_a_templated_kernel():
    src = "uint i = thread_position_in_grid.x;\nout[i] = T(inp[i]) * N + inp_shape[0];"
    text = gen(src, [zeros((4, 4), np.float16)], [jk.float32], template=[("T", jk.float32), ("N", -2)],
               input_names=["inp"], header="// helpers\n")
    name = "custom_kernel_k__float__2_float16_t_float"  # the template part "_float__2": '-' becomes '_'

    assert text == (
        "// helpers\n"
        "template <typename T, int N>\n"
        f"[[kernel]] void {name}(\n"
        "  const device float16_t* inp [[buffer(0)]],\n"
        "  const constant int* inp_shape [[buffer(1)]],\n"
        "  device float* out [[buffer(2)]],\n"
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"
        f"{src}\n"
        "}\n"
        "\n"
        f'template [[host_name("{name}")]] [[kernel]] decltype({name}<float, -2>) {name}<float, -2>;\n')


def test_whole_text_without_template_or_attributes():
    text = gen("out[0] = a;", [zeros(())], [jk.int32], input_names=["a"])
    assert text == ("[[kernel]] void custom_kernel_k_floats_int32_t(\n"
                    "  const constant float& a [[buffer(0)]],\n"
                    "  device int32_t* out [[buffer(1)]]) {\n"
                    "out[0] = a;\n"
                    "}\n")


# --------------------------------------------------------------------------- kernel names
@pytest.mark.parametrize("dtype", list(METAL_TYPES))
def test_dtype_spellings(dtype):
    jd = jk.dtype(dtype)
    text = gen("out[0] = T(0);", [np.broadcast_to(np.zeros((), dtype=_np(dtype)), (9,))], [jd],
               template=[("T", jd)])
    t = METAL_TYPES[dtype]
    assert f"const device {t}* in0 [[buffer(0)]]" in text
    assert f"device {t}* out [[buffer(1)]]" in text
    assert f"void custom_kernel_k__{t}_{t}_{t}(" in text
    assert f"<{t}>;" in text


def _np(dtype):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype("bool" if dtype == "bool" else dtype)


@pytest.mark.parametrize("shape, suffix, space, ref", [
    ((), "s", "constant", "&"), ((0,), "c", "constant", "*"), ((1,), "c", "constant", "*"),
    ((7,), "c", "constant", "*"), ((2, 3), "c", "constant", "*"), ((1,) * 9, "c", "constant", "*"),
    ((8,), "", "device", "*"), ((2, 4), "", "device", "*"), ((3, 0, 5), "c", "constant", "*"),
    ((1024, 1024), "", "device", "*"),
])
def test_address_space_and_name_suffix_by_size(shape, suffix, space, ref):
    text = gen("out[0] = 1;", [np.broadcast_to(np.float32(0), shape)], input_names=["a"])
    assert f"  const {space} float{ref} a [[buffer(0)]],\n" in text
    assert f"void custom_kernel_k_float{suffix}_float(" in text


@pytest.mark.parametrize("value, dtype, suffix", [
    (1.5, "float", "s"), (3, "int32_t", "s"), (2**40, "int64_t", "s"), (True, "bool", "s"),
    (np.float16(1), "float16_t", "s"), (np.uint8(3), "uint8_t", "s"),
])
def test_python_and_numpy_scalars_are_0d(value, dtype, suffix):
    text = gen("out[0] = s;", [value], input_names=["s"])
    assert f"  const constant {dtype}& s [[buffer(0)]],\n" in text
    assert f"custom_kernel_k_{dtype}{suffix}_float(" in text


@pytest.mark.parametrize("template, part", [
    ([("N", 3)], "__3"), ([("N", -3)], "___3"), ([("N", 0)], "__0"), ([("B", True)], "__1"),
    ([("B", False)], "__0"), ([("N", -(2**31))], "___2147483648"), ([("N", 2**31 - 1)], "__2147483647"),
    ([("T", jk.float16), ("N", -1), ("B", True)], "__float16_t__1_1"),
    ({"T": jk.bfloat16, "U": jk.complex64}, "__bfloat16_t_complex64_t"),
])
def test_template_part_of_the_kernel_name(template, part):
    k = kernel()
    assert k.kernel_name(inputs=[zeros((16,))], output_dtypes=[jk.float32], template=template) == \
        f"custom_kernel_k{part}_float_float"


def test_template_values_and_parameter_kinds():
    text = gen("out[0] = 1;", [zeros((16,))], template=[("T", jk.uint16), ("N", -7), ("B", False), ("C", True)])
    assert text.startswith("template <typename T, int N, bool B, bool C>\n[[kernel]] void ")
    assert text.endswith("<uint16_t, -7, 0, 1>;\n")
    assert "\ntemplate [[host_name(\"custom_kernel_k__uint16_t__7_0_1_float_float\")]] [[kernel]] decltype(" in text


def test_empty_template_list_is_no_template():
    assert gen("out[0] = 1;", [zeros((16,))], template=[]) == gen("out[0] = 1;", [zeros((16,))])


def test_kernel_name_ignores_the_source_and_the_runtime_needs_the_text():
    # MLX's name depends on the name, template values and dtypes only: two bodies share it, so a runtime must key
    # its library cache on the whole text (jitkernel's does).
    a = jk.metal_kernel("k", ["a"], ["out"], "out[0] = 1;")
    b = jk.metal_kernel("k", ["a"], ["out"], "out[0] = 2;")
    kw = dict(inputs=[zeros((16,))], output_dtypes=[jk.float32])
    assert a.kernel_name(**kw) == b.kernel_name(**kw)
    assert a.source(**kw) != b.source(**kw)


# --------------------------------------------------------------------------- buffers and attributes
def test_shape_strides_ndim_buffers_follow_their_input():
    text = gen("out[0] = a_ndim + b_shape[0] + b_strides[1] + a_shape[0];",
               [zeros((4, 5)), zeros((2, 3, 4), np.int32), zeros((16,))], input_names=["a", "b", "c"])
    assert params(text) == [
        ("const device float*", "a", "buffer(0)"), ("const constant int*", "a_shape", "buffer(1)"),
        ("const constant int&", "a_ndim", "buffer(2)"), ("const device int32_t*", "b", "buffer(3)"),
        ("const constant int*", "b_shape", "buffer(4)"), ("const constant int64_t*", "b_strides", "buffer(5)"),
        ("const device float*", "c", "buffer(6)"), ("device float*", "out", "buffer(7)"),
    ]


def test_buffers_describe_the_signature():
    k = jk.metal_kernel("k", ["a", "s", "b"], ["o1", "o2"],
                        "o1[thread_position_in_grid.x] = a_strides[0] + s + b_shape[0] + b_ndim;")
    kw = dict(inputs=[zeros((3, 3)), 2.0, zeros((4,), np.int64)], output_dtypes=[jk.float32, jk.int32])
    assert k.buffers(**kw) == [
        (0, "input", 0, "device", "buffer"), (1, "input_strides", 0, "constant", "bytes"),
        (2, "input", 1, "constant", "buffer"), (3, "input", 2, "constant", "buffer"),
        (4, "input_shape", 2, "constant", "bytes"), (5, "input_ndim", 2, "constant", "bytes"),
        (6, "output", 0, "device", "buffer"), (7, "output", 1, "device", "buffer"),
    ]
    # ... and the generated text declares exactly these buffers, in this order.
    declared = [(int(m[2][7:-1]), m[1]) for m in params(k.source(**kw)) if m[2].startswith("buffer(")]
    assert declared == [(0, "a"), (1, "a_strides"), (2, "s"), (3, "b"), (4, "b_shape"), (5, "b_ndim"), (6, "o1"),
                        (7, "o2")]


def test_attributes_in_mlx_order_whatever_the_body_order():
    body = "out[0] = threads_per_threadgroup.x + grid_origin.x + thread_index_in_simdgroup + grid_size.y;"
    names = [p[1] for p in params(gen(body, [zeros((16,))])) if not p[2].startswith("buffer(")]
    assert names == ["grid_origin", "grid_size", "thread_index_in_simdgroup", "threads_per_threadgroup"]


@pytest.mark.parametrize("attr, type_", ATTRIBUTES)
def test_each_attribute(attr, type_):
    text = gen(f"out[0] = {attr};", [zeros((16,))])
    assert text.count(f"  {type_} {attr} [[{attr}]]") == 1
    assert len([p for p in params(text) if not p[2].startswith("buffer(")]) == 1


def test_atomic_outputs():
    text = gen("out0[0] = 1;", [zeros((16,))], [jk.float32, jk.int32], output_names=["out0", "out1"],
               atomic_outputs=True)
    assert "  device atomic<float>* out0 [[buffer(1)]],\n  device atomic<int32_t>* out1 [[buffer(2)]]) {\n" in text


def test_header_verbatim_before_everything():
    for header in ["#define K 3\n", "inline int f() { return 1; }", "\n\n// x\n"]:
        text = gen("out[0] = K;", [zeros((16,))], header=header, template=[("N", 1)])
        assert text.startswith(header + "template <int N>\n")
        assert text.count(header) == 1


def test_body_verbatim():
    body = "\r\n\t// comment\r\n  out[0] = 1; \\\n  \n"
    text = gen(body, [zeros((16,))])
    assert ") {\n" + body + "\n}\n" in text


# --------------------------------------------------------------------------- deliberate differences from MLX
def test_several_outputs_with_shape_buffers_and_no_attribute_are_well_formed():
    text = gen("out0[0] = in0_shape[0];", [zeros((16,))], [jk.float32, jk.float32, jk.int32],
               output_names=["out0", "out1", "out2"])
    assert text.count(") {\n") == 1
    assert "  device int32_t* out2 [[buffer(4)]]) {\n" in text


@pytest.mark.parametrize("body, absent", [
    ("float data_shape = 1; out[0] = a[0] + data_shape;", "a_shape"),
    ("int xa_strides = 1; out[0] = xa_strides;", "a_strides"),
    ("int ba_ndim = 1; out[0] = ba_ndim;", "a_ndim"),
    ("out[0] = dispatch_threads_per_threadgroup.x;", "uint3 threads_per_threadgroup"),
    ("out[0] = dispatch_simdgroups_per_threadgroup;", "uint simdgroups_per_threadgroup"),
    ("out[0] = dispatch_quadgroups_per_threadgroup;", "uint quadgroups_per_threadgroup"),
    ("uint my_grid_size = 1; out[0] = my_grid_size;", "grid_size"),
])
def test_whole_identifiers_only(body, absent):
    signature = gen(body, [zeros((16,))], input_names=["a"]).split(") {\n")[0]
    assert absent not in signature


def test_names_in_comments_count_as_in_mlx():
    text = gen("// uses a_shape and thread_position_in_grid\nout[0] = 1;", [zeros((16,))], input_names=["a"])
    assert "a_shape [[buffer(1)]]" in text and "uint3 thread_position_in_grid" in text


def test_header_mentions_do_not_count():
    text = gen("out[0] = 1;", [zeros((16,))], input_names=["a"], header="// a_shape grid_size\n")
    assert [p[1] for p in params(text)] == ["a", "out"]


@pytest.mark.parametrize("used", ["a_shape[0]", "a_strides[0]", "a_ndim"])
@pytest.mark.parametrize("value", [np.float32(1), np.zeros((), np.int8), 1.5, 7])
def test_0d_input_with_shape_is_an_error(used, value):
    with pytest.raises(jk.ArgumentError, match=rf"inputs: input 'a' is 0-d .*'{used.split('[')[0]}'"):
        gen(f"out[0] = {used};", [value], input_names=["a"])


def test_0d_shape_in_a_comment_only_is_fine():
    text = gen("// not a_shape\nout[0] = a;", [np.float32(1)], input_names=["a"])
    assert "a_shape" not in text.split(") {\n")[0]


def test_float64_is_refused():
    with pytest.raises(jk.ArgumentError, match="inputs: input 'a' is float64"):
        gen("out[0] = 1;", [np.zeros(16)], input_names=["a"])
    with pytest.raises(jk.ArgumentError, match="output_dtypes: output 'out' is float64"):
        gen("out[0] = 1;", [zeros(16)], [jk.float64])
    with pytest.raises(jk.ArgumentError, match="float64"):
        gen("out[0] = 1;", [np.float64(1)])
    assert "double" in gen("out[0] = 1;", [zeros(16)], template=[("T", jk.float64)])


def test_shape_over_int32_when_used():
    big = np.broadcast_to(np.float32(0), (2**31,))
    with pytest.raises(jk.ArgumentError, match="32-bit"):
        gen("out[0] = a_shape[0];", [big], input_names=["a"])
    assert "const device float* a" in gen("out[0] = a[0];", [big], input_names=["a"])


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize("args, argument, message", [
    (("1k", ["a"], ["out"]), "name", "not a C identifier"),
    (("k", ["a-b"], ["out"]), "input_names", "not a C identifier"),
    (("k", ["a"], ["float"]), "output_names", "C\\+\\+ keyword"),
    (("k", ["device"], ["out"]), "input_names", "Metal keyword"),
    (("k", ["uint"], ["out"]), "input_names", "as a type"),
    (("k", ["a"], ["float16_t"]), "output_names", "as a type"),
    (("k", ["thread_position_in_grid"], ["out"]), "input_names", "Metal attribute"),
    (("k", ["a", "a"], ["out"]), "input_names", "given twice"),
    (("k", ["a"], ["a"]), "output_names", "given twice"),
    (("k", ["a"], []), "output_names", "at least one output"),
    (("k", ["a", "a_shape"], ["out"], "out[0] = a_shape[0];"), "input_names", "collides"),
    (("k", ["a"], ["a_ndim"], "out[0] = a_ndim;"), "output_names", "collides"),
])
def test_factory_name_errors(args, argument, message):
    name, ins, outs, *src = args
    with pytest.raises(jk.ArgumentError, match=rf"^{argument}: .*{message}"):
        jk.metal_kernel(name, ins, outs, src[0] if src else "out[0] = 1;")


@pytest.mark.parametrize("template, message", [
    ([("1N", 1)], "not a C identifier"), ([("int", 1)], "C\\+\\+ keyword"), ([("N", 1), ("N", 2)], "twice"),
    ([("a", 1)], "same name as a kernel input"), ([("out", 1)], "same name as a kernel output"),
    ([("a_shape", 1)], "collides"), ([("N", 2**31)], "does not fit in a Metal int"),
    ([("N", -(2**31) - 1)], "does not fit"), ([("grid_size", 1)], "Metal attribute"),
])
def test_template_errors(template, message):
    k = kernel("out[0] = a_shape[0];")
    with pytest.raises(jk.ArgumentError, match=f"^template: .*{message}"):
        k.source(inputs=[zeros((16,))], output_dtypes=[jk.float32], template=template)


@pytest.mark.parametrize("inputs, output_dtypes, argument", [
    ([], [jk.float32], "inputs"), ([zeros(4), zeros(4)], [jk.float32], "inputs"),
    ([zeros(4)], [], "output_dtypes"), ([zeros(4)], [jk.float32, jk.float32], "output_dtypes"),
    ([object()], [jk.float32], "inputs"), ([zeros(4)], ["float128"], "output_dtypes"),
])
def test_count_and_type_errors(inputs, output_dtypes, argument):
    with pytest.raises((jk.ArgumentError, jk.ArgumentTypeError), match=f"^{argument}: "):
        kernel().source(inputs=inputs, output_dtypes=output_dtypes)


# --------------------------------------------------------------------------- metal_utils and the full text
def test_full_text_is_the_utils_then_mlx_text():
    k = kernel("out[0] = elem_to_loc(0, a_shape, a_strides, a_ndim);")
    kw = dict(inputs=[zeros((3, 4))], output_dtypes=[jk.float32])
    assert k.source(**kw, with_utils=True) == _core.metal_utils_source() + k.source(**kw)


def test_metal_utils_are_the_headers_in_order():
    order = ["types.h", "complex.h", "limits.h", "indexing.h", "simd.h"]
    assert sorted(p.name for p in METAL_UTILS.glob("*.h")) == sorted(order)
    text = _core.metal_utils_source()
    pos = [text.index((METAL_UTILS / name).read_text()) for name in order]
    assert pos == sorted(pos)
    assert "#pragma once" not in text and '#include "' not in text
    for name in ["elem_to_loc", "elem_to_loc_1", "elem_to_loc_2", "elem_to_loc_3", "elem_to_loc_2_nd",
                 "elem_to_loc_3_nd", "ceildiv", "struct Limits", "float16_t", "bfloat16_t", "complex64_t",
                 "JK_SIMD_SHUFFLE_64(uint64_t)", "JK_SIMD_SHUFFLE_64(int64_t)", "inline T simd_shuffle_down(T",
                 "simd_shuffle_and_fill_up(complex64_t", "simd_shuffle(bool"]:
        assert name in text, name


def test_compile_log_points_into_user_code():
    k = jk.metal_kernel("k", ["a"], ["out"], "uint i = 0;\nout[i] = oops;\n", header="int h() { return x; }\n")
    kw = dict(inputs=[zeros(16)], output_dtypes=[jk.float32], template=None)
    full = k.source(**kw, with_utils=True)
    lines = full.split("\n")
    body_line = lines.index("out[i] = oops;") + 1
    header_line = lines.index("int h() { return x; }") + 1
    log = (f"program_source:{body_line}:10: error: use of undeclared identifier 'oops'\n"
           f"program_source:{header_line}:21: error: use of undeclared identifier 'x'\n"
           f"program_source:{body_line - 2}:3: note: in the generated signature\n"
           "1 error generated.")
    impl = k._impl
    mapped = _core.map_metal_compile_log(impl, kw["inputs"], kw["output_dtypes"], None, log)
    assert mapped.split("\n") == ["source line 2:10: error: use of undeclared identifier 'oops'",
                                  "header line 1:21: error: use of undeclared identifier 'x'",
                                  f"program_source:{body_line - 2}:3: note: in the generated signature",
                                  "1 error generated."]


# --------------------------------------------------------------------------- the shared cases
def test_every_case_generates():
    cases = all_metal_cases()
    assert len(cases) >= 150
    for cid, k, kw in cases:
        text = metal_source(k, kw)
        assert text.startswith(_core.metal_utils_source()), cid
        assert "[[kernel]] void custom_kernel_" in text, cid


@pytest.mark.parametrize("spec", [s for s in SPECS if s["error"]], ids=[s["id"] for s in SPECS if s["error"]])
def test_refused_cases(spec):
    from _metal_cases import call_kwargs, make_kernel

    with pytest.raises(jk.ArgumentError, match=spec["error"]):
        metal_source(make_kernel(spec), call_kwargs(spec))
