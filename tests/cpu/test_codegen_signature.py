"""Code generation for cuda_kernel, without a GPU: the rules of the generated signature. Whole-word detection of
``name_shape`` / ``name_strides`` / ``name_ndim``, scalars by value, template spellings and order, entry names, the
dtype table, type headers included only when used, and every naming error.
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

import jitkernel as jk
from _codegen_text import F32, bf16, entry_name, gen, preamble, prologue, signature


# --------------------------------------------------------------------------- parameters

def test_array_inputs_and_outputs():
    text = gen("out[0] = a[0] + b[0];", [np.zeros(3, np.float32), np.zeros((), np.int64)],
               [jk.float64, jk.uint8], input_names=["a", "b"], output_names=["o1", "o2"])
    params = [p.strip() for p in signature(text).split(",")]
    assert params == ["const float* a", "const int64_t* b", "double* o1", "uint8_t* o2"]


@pytest.mark.parametrize("value, ctype", [(True, "bool"), (False, "bool"), (7, "int32_t"), (-(2 ** 31), "int32_t"),
                                          (2 ** 31, "int64_t"), (-(2 ** 40), "int64_t"), (7.5, "float")])
def test_python_scalars_travel_by_value(value, ctype):
    text = gen("out[0] = s[0];", [value], [jk.float32], input_names=["s"])
    assert signature(text).split(",")[0].strip() == f"const __grid_constant__ {ctype} s__value"
    assert f"  [[maybe_unused]] const {ctype}* s = &s__value;\n" in prologue(text)


@pytest.mark.parametrize("use", ["shape", "strides", "ndim"])
def test_shape_strides_ndim_only_when_used(use):
    decl = {"shape": "const __grid_constant__ jitkernel::Shape inp_shape",
            "strides": "const __grid_constant__ jitkernel::Strides inp_strides",
            "ndim": "const int inp_ndim"}
    text = gen(f"out[0] = inp_{use};", F32, [jk.float32], input_names=["inp"])
    sig = signature(text)
    assert decl[use] in sig
    for other in set(decl) - {use}:
        assert f"inp_{other}" not in sig


def test_shape_params_follow_their_input_in_mlx_order():
    text = gen("out[0] = b_ndim + a_strides[0] + a_shape[0] + a_ndim;", [np.zeros((2, 3), np.float32)] * 2,
               [jk.float32], input_names=["a", "b"])
    names = [p.split()[-1] for p in signature(text).split(",")]
    assert names == ["a", "a_shape", "a_strides", "a_ndim", "b", "b_ndim", "out"]


@pytest.mark.parametrize("source", [
    "int inp_shape2 = 1; out[0] = inp_shape2;",
    "int myinp_shape = 1; out[0] = myinp_shape;",
    "int inp_shapes = 1; out[0] = inp_shapes;",
    "out[0] = 1; // inp_shape inp_strides inp_ndim are not used",
    "/* inp_shape */ const char* s = \"inp_strides\"; out[0] = 1;",
])
def test_shape_detection_is_whole_word_outside_comments_and_strings(source):
    sig = signature(gen(source, F32, [jk.float32], input_names=["inp"]))
    assert sig.strip() == "const float* inp,\n    float* out"


def test_shape_detection_reads_identifiers_across_line_splices():
    # The compiler removes backslash-newlines before it reads identifiers; so does the scan (the cache key's lexer).
    sig = signature(gen("int n = inp_sh\\\nape[0]; out[0] = n;", F32, [jk.float32], input_names=["inp"]))
    assert "inp_shape" in sig


def test_scan_of_many_unclosed_include_lines_is_linear():
    # An #include whose header name never closes used to make the scan look for the closing character in the
    # rest of the text, once per line: 160k such lines took ~40x as long as as much ordinary text.
    def seconds(header):
        best = float("inf")
        for _ in range(2):
            start = time.process_time()  # CPU time: a busy machine slows both texts' wall time unevenly
            gen("out[0] = 0;", [], [jk.float32], header=header)
            best = min(best, time.process_time() - start)
        return best

    lines = 160_000
    hostile, plain = seconds("#include <a\n" * lines), seconds("int ab_c;\n" * lines)
    assert hostile < 5 * plain + 1.0, (hostile, plain)


def test_shape_used_in_header_macro_counts():
    header = "#define LOC(i) elem_to_loc(i, inp_shape.data(), inp_strides.data(), inp_ndim)\n"
    sig = signature(gen("out[0] = inp[LOC(0)];", F32, [jk.float32], input_names=["inp"], header=header))
    assert "inp_shape" in sig and "inp_strides" in sig and "inp_ndim" in sig


def test_shape_of_zero_dim_array_and_scalar():
    text = gen("out[0] = z_shape[0] + z_ndim + s_shape[0] + s_strides[0] + s_ndim;",
               [np.array(1.0, np.float32), 2.0], [jk.float32], input_names=["z", "s"])
    sig = signature(text)
    assert "jitkernel::Shape z_shape" in sig and "const int z_ndim" in sig
    assert "s_shape" not in sig and "s_ndim" not in sig  # scalars: compile-time constants instead
    assert "const jitkernel::Shape s_shape = {};" in prologue(text)
    assert "constexpr int s_ndim = 0;" in prologue(text)


def test_more_than_10_dims_is_an_error_only_when_shape_or_strides_are_used():
    # MAX_NDIM is 10, as in MLX.
    eleven = np.zeros((1,) * 11, np.float32)
    for use in ("inp_shape[0]", "inp_strides[0]"):
        with pytest.raises(jk.ArgumentError, match=r"^inputs: .*'inp'.*11 dimensions.*at most 10"):
            gen(f"out[0] = {use};", [eleven], [jk.float32], input_names=["inp"])
    assert "const int inp_ndim" in signature(gen("out[0] = inp_ndim;", [eleven], [jk.float32], input_names=["inp"]))
    gen("out[0] = inp[0];", [eleven], [jk.float32], input_names=["inp"])
    gen("out[0] = inp_shape[0];", [np.zeros((1,) * 10, np.float32)], [jk.float32], input_names=["inp"])
    assert "#define MAX_NDIM 10\n" in gen("out[0] = inp[0];", [eleven], [jk.float32], input_names=["inp"])


# --------------------------------------------------------------------------- templates

@pytest.mark.parametrize("value, line", [
    (3, "[[maybe_unused]] constexpr int N = 3;"),
    (-5, "[[maybe_unused]] constexpr int N = -5;"),
    (2 ** 31 - 1, "[[maybe_unused]] constexpr int N = 2147483647;"),
    (-(2 ** 31), "[[maybe_unused]] constexpr int N = (-2147483647 - 1);"),
    (2 ** 31, "[[maybe_unused]] constexpr long long N = 2147483648LL;"),
    (-(2 ** 63), "[[maybe_unused]] constexpr long long N = (-9223372036854775807LL - 1);"),
    (True, "[[maybe_unused]] constexpr bool N = true;"),
    (False, "[[maybe_unused]] constexpr bool N = false;"),
    (jk.float32, "using N = float;"),
    (np.float16, "using N = __half;"),
    (np.dtype("int64"), "using N = int64_t;"),
    ("bfloat16", "using N = __nv_bfloat16;"),
    (jk.complex64, "using N = cuComplex;"),
])
def test_template_spellings(value, line):
    text = gen("out[0] = 0;", F32, [jk.float32], template=[("N", value)])
    assert prologue(text) == f"  {line}\n"


def test_template_dict_and_list_forms_agree():
    a = gen("out[0] = A + B;", F32, [jk.float32], template=[("A", 1), ("B", 2)])
    b = gen("out[0] = A + B;", F32, [jk.float32], template={"A": 1, "B": 2})
    assert a == b


def test_templates_come_first_then_scalars():
    text = gen("out[0] = s[0] + N;", [1.5], [jk.float32], input_names=["s"], template=[("N", 2), ("T", jk.float32)])
    assert prologue(text) == ("  [[maybe_unused]] constexpr int N = 2;\n  using T = float;\n"
                              "  [[maybe_unused]] const float* s = &s__value;\n")


# --------------------------------------------------------------------------- entry names

def test_entry_name_is_name_plus_hex_digest():
    name = entry_name(gen("out[0] = 1;", F32, [jk.float32], name="my_kernel"))
    assert re.fullmatch(r"my_kernel_[0-9a-f]{16}", name)


@pytest.mark.parametrize("values", [(3, -3), (0, -0 - 1), (True, 1), (jk.float32, jk.float16), (2 ** 40, -(2 ** 40))])
def test_template_values_give_distinct_valid_entry_names(values):
    names = [entry_name(gen("out[0] = 0;", F32, [jk.float32], template=[("N", v)])) for v in values]
    assert len(set(names)) == 2
    for n in names:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)


def test_same_name_different_source_gives_different_entries():
    a = entry_name(gen("out[0] = inp[0] * 2.0f;", F32, [jk.float32], input_names=["inp"], name="dup_name"))
    b = entry_name(gen("out[0] = inp[0] + 100.0f;", F32, [jk.float32], input_names=["inp"], name="dup_name"))
    assert a != b and a.startswith("dup_name_") and b.startswith("dup_name_")


def test_header_and_signature_change_the_entry_name():
    base = entry_name(gen("out[0] = 0;", F32, [jk.float32]))
    assert entry_name(gen("out[0] = 0;", F32, [jk.float32], header="// v2")) != base
    assert entry_name(gen("out[0] = 0;", [np.zeros(4, np.float64)], [jk.float32])) != base
    assert entry_name(gen("out[0] = 0;", F32, [jk.float64])) != base
    assert entry_name(gen("out[0] = 0;", F32, [jk.float32])) == base


def test_one_variant_per_signature():
    k = jk.cuda_kernel("v", ["inp"], ["out"], "out[0] = inp[0];")
    names = {entry_name(k.source(inputs=[np.zeros(2, d)], output_dtypes=[d]))
             for d in (np.float16, np.float32, np.float64, np.int32)}
    assert len(names) == 4


# --------------------------------------------------------------------------- dtypes and headers

DTYPE_SPELLINGS = [
    (np.bool_, "bool"), (np.int8, "int8_t"), (np.int16, "int16_t"), (np.int32, "int32_t"), (np.int64, "int64_t"),
    (np.uint8, "uint8_t"), (np.uint16, "uint16_t"), (np.uint32, "uint32_t"), (np.uint64, "uint64_t"),
    (np.float16, "__half"), ("bfloat16", "__nv_bfloat16"), (np.float32, "float"), (np.float64, "double"),
    (np.complex64, "cuComplex"),
]


@pytest.mark.parametrize("dtype, ctype", DTYPE_SPELLINGS)
def test_dtype_table_spellings(dtype, ctype):
    arr = bf16(np.zeros(2)) if dtype == "bfloat16" else np.zeros(2, dtype)
    sig = signature(gen("out[0] = x[0];", [arr], [dtype], input_names=["x"], output_names=["y"]))
    assert sig == f"\n    const {ctype}* x,\n    {ctype}* y"


@pytest.mark.parametrize("dtype, header", [(np.float16, "cuda_fp16.h"), ("bfloat16", "cuda_bf16.h"),
                                           (np.complex64, "cuComplex.h")])
def test_type_headers_follow_the_signature(dtype, header):
    assert f"#include <{header}>" in preamble(gen("out[0] = 0;", F32, [dtype]))
    assert f"#include <{header}>" in preamble(gen("out[0] = 0;", F32, [jk.float32], template=[("T", dtype)]))
    assert f"#include <{header}>" not in preamble(gen("out[0] = 0;", F32, [jk.float32]))


@pytest.mark.parametrize("source, header", [
    ("__half h = __float2half(1.0f); out[0] = __half2float(h);", "cuda_fp16.h"),
    ("out[0] = __half2float(hexp(__float2half(inp[0])));", "cuda_fp16.h"),
    ("half2 h; out[0] = 0;", "cuda_fp16.h"),
    ("__nv_bfloat16 b = __float2bfloat16(1.0f); out[0] = b;", "cuda_bf16.h"),
    ("cuComplex c = make_cuComplex(1, 2); out[0] = cuCrealf(c);", "cuComplex.h"),
])
def test_type_headers_follow_names_in_the_source(source, header):
    assert f"#include <{header}>" in preamble(gen(source, F32, [jk.float32], input_names=["inp"]))


def test_minimal_kernel_includes_nothing():
    pre = preamble(gen("int half_n = 2; out[0] = inp[0] * half_n;", F32, [jk.float32], input_names=["inp"]))
    assert "#include" not in pre
    for name in ("WARP_SIZE", "elem_to_loc", "struct DimArray", "inf", "int64_t"):
        assert name in pre  # light helpers are always there


# --------------------------------------------------------------------------- naming errors

@pytest.mark.parametrize("bad", ["class", "int", "threadIdx", "blockDim", "int32_t", "WARP_SIZE", "cg",
                                 "cooperative_groups", "jitkernel", "a__b", "__x", "_Upper"])
def test_reserved_names_are_rejected(bad):
    with pytest.raises(jk.ArgumentError, match=rf"^input_names: .*'{bad}'.*reserved"):
        jk.cuda_kernel("k", [bad], ["out"], "")
    with pytest.raises(jk.ArgumentError, match=rf"^output_names: .*'{bad}'.*reserved"):
        jk.cuda_kernel("k", ["a"], [bad], "")


@pytest.mark.parametrize("bad", ["1x", "my-input", "a b", "", "x.y", "é"])
def test_non_identifier_names_are_rejected(bad):
    with pytest.raises(jk.ArgumentError, match=r"^input_names: .*not a C identifier"):
        jk.cuda_kernel("k", [bad], ["out"], "")
    with pytest.raises(jk.ArgumentError, match=r"^output_names: .*not a C identifier"):
        jk.cuda_kernel("k", ["a"], [bad], "")


@pytest.mark.parametrize("bad", ["1k", "my-kernel", "", "k k"])
def test_kernel_name_must_be_an_identifier(bad):
    with pytest.raises(jk.ArgumentError, match=r"^name: .*not a C identifier"):
        jk.cuda_kernel(bad, ["a"], ["out"], "")


@pytest.mark.parametrize("inputs, outputs, argument", [
    (["a", "a"], ["out"], "input_names"),
    (["a"], ["a"], "output_names"),
    (["a"], ["o", "o"], "output_names"),
])
def test_duplicate_names_are_rejected(inputs, outputs, argument):
    with pytest.raises(jk.ArgumentError, match=rf"^{argument}: .*given twice"):
        jk.cuda_kernel("k", inputs, outputs, "")


def test_name_colliding_with_generated_shape_is_rejected():
    with pytest.raises(jk.ArgumentError, match=r"^input_names: .*'a_shape'.*input 'a'"):
        jk.cuda_kernel("k", ["a", "a_shape"], ["out"], "out[0] = a_shape[0];")
    with pytest.raises(jk.ArgumentError, match=r"^output_names: .*'a_ndim'.*input 'a'"):
        jk.cuda_kernel("k", ["a"], ["a_ndim"], "a_ndim[0] = 1;")
    jk.cuda_kernel("k", ["a", "a_shape"], ["out"], "out[0] = a[0];")  # fine while a_shape is not generated


def test_no_outputs_is_rejected():
    with pytest.raises(jk.ArgumentError, match=r"^output_names"):
        jk.cuda_kernel("k", ["a"], [], "")


@pytest.mark.parametrize("template, match", [
    ([("N", 1), ("N", 2)], r"'N'.*twice"),
    ([("inp", 1)], r"'inp'.*input"),
    ([("out", 1)], r"'out'.*output"),
    ([("inp_ndim", 1)], r"'inp_ndim'.*input 'inp'"),
    ([("class", 1)], r"'class'.*reserved"),
    ([("2N", 1)], r"'2N'.*not a C identifier"),
    ([("WARP_SIZE", 32)], r"'WARP_SIZE'.*reserved"),
])
def test_bad_template_names_are_rejected(template, match):
    with pytest.raises(jk.ArgumentError, match=r"^template: .*" + match):
        gen("out[0] = inp_ndim;", F32, [jk.float32], input_names=["inp"], template=template)


def test_wrong_counts_are_rejected():
    with pytest.raises(jk.ArgumentError, match=r"^inputs"):
        gen("", F32 * 2, [jk.float32], input_names=["a"])
    with pytest.raises(jk.ArgumentError, match=r"^output_dtypes"):
        gen("", F32, [jk.float32, jk.float32])
