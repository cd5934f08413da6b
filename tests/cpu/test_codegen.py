"""Code generation for cuda_kernel, through the public API and without a GPU.

Golden tests: ``kernel.source(...)`` for MLX's CUDA test kernels (and a few more) must equal the files in
``tests/cpu/golden/``; any change to the generator fails them. After an intended change, regenerate with
``JITKERNEL_UPDATE_GOLDEN=1 python -m pytest tests/cpu/test_codegen.py`` and review the diff. Every golden kernel is
also compiled for real by NVRTC (sm_90a cubin). The other tests check the rules the generated text follows:
whole-word detection of ``name_shape`` / ``name_strides`` / ``name_ndim``, template spellings, entry names, the dtype
table, headers included only when used, line mapping of compile errors, and every naming error.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import jitkernel as jk

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("JITKERNEL_UPDATE_GOLDEN") == "1"
ENTRY_RE = re.compile(r'extern "C" __global__ void (\w+)\(')


def entry_name(text: str) -> str:
    m = ENTRY_RE.search(text)
    assert m, "generated source has no extern \"C\" __global__ entry point"
    return m.group(1)


def signature(text: str) -> str:
    """The parameter list of the generated entry point."""
    start = ENTRY_RE.search(text).end()
    return text[start:text.index(") {", start)]


def prologue(text: str) -> str:
    """Lines between the signature and the user's body."""
    start = text.index(") {\n", ENTRY_RE.search(text).end()) + 4
    return text[start:text.index('#line 1 "source"', start)]


def preamble(text: str) -> str:
    """Everything before the user's header or, without one, before the entry point."""
    end = text.find('#line 1 "header"')
    return text[:end] if end >= 0 else text[:ENTRY_RE.search(text).start()]


def gen(source, inputs, output_dtypes, template=None, input_names=None, output_names=("out",), header="",
        name="k", **factory):
    names = input_names if input_names is not None else [f"in{i}" for i in range(len(inputs))]
    k = jk.cuda_kernel(name, list(names), list(output_names), source, header=header, **factory)
    return k.source(inputs=inputs, output_dtypes=list(output_dtypes), template=template)


# --------------------------------------------------------------------------- golden kernels
# MLX's CUDA test kernels (python/tests/test_fast.py, test_custom_kernel_*), verbatim, plus seed 003's example.
# (test_custom_kernel_mixed_dtypes is Metal-only in MLX; MLX_MIXED is its body written for CUDA.)

MLX_BASIC = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                out1[elem] = a[elem];
            """
MLX_ARGS = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                T tmp = a[0];
                if (e) {
                    out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
                } else {
                    out1[elem] = 1;
                }
                out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
            """
MLX_STRIDES = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
                T tmp = inp[loc];
                out[elem] = exp(tmp) * WARP_SIZE;
            """
MLX_STRIDES_CONTIG = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                T tmp = inp[elem];
                out[elem] = exp(tmp) * WARP_SIZE;
            """
MLX_HELPER_HEADER = """
            template <typename T>
            __device__ T do_exp(T x) {
                return exp(x);
            }
            """
MLX_HELPER = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                out1[elem] = do_exp(a[elem]);
            """
MLX_MIXED = """
                auto elem = blockIdx.x * blockDim.x + threadIdx.x;
                out[elem] = inp[elem] + inp[elem];
            """
SEED_EXP = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """


def _bf16(x):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _strided_input():
    a = np.random.default_rng(7).normal(size=(3, 6)).astype(np.float32)
    return np.tile(a[::2], (4, 1))


def _case_basic():
    return dict(name="basic", input_names=["a"], output_names=["out1"], source=MLX_BASIC), dict(
        inputs=[np.zeros((2, 2), np.float32)], output_dtypes=[jk.float32])


def _case_args():
    return dict(name="arg_test", input_names=["a", "b", "c", "d"], output_names=["out1", "out2"],
                source=MLX_ARGS), dict(
        inputs=[np.zeros((3, 6), np.float32), np.array([3, 4, 5], np.int32), _bf16(np.zeros((2, 2))), 7.3],
        output_dtypes=[jk.float32, jk.int32], template=[("e", True), ("f", 3), ("T", jk.float16)])


def _case_strides(contig):
    src = MLX_STRIDES_CONTIG if contig else MLX_STRIDES
    return dict(name=f"myexp{contig}", input_names=["inp"], output_names=["out"], source=src,
                ensure_row_contiguous=contig), dict(
        inputs=[_strided_input()], output_dtypes=[jk.float32], template=[("T", jk.float32)])


def _case_helper():
    return dict(name="helper", input_names=["a"], output_names=["out1"], header=MLX_HELPER_HEADER,
                source=MLX_HELPER), dict(inputs=[np.zeros((2, 2), np.float32)], output_dtypes=[jk.float32])


def _case_attributes():
    return dict(name="test_fun", input_names=["a"], output_names=["out"], source="out[0] = blockDim.x;"), dict(
        inputs=[np.zeros((1, 1), np.float32)], output_dtypes=[jk.uint32])


def _case_mixed(dtype):
    return dict(name="mixed_dtypes", input_names=["inp"], output_names=["out"], source=MLX_MIXED), dict(
        inputs=[np.full((32,), 1.5, dtype)], output_dtypes=[dtype])


def _case_seed_exp():
    return dict(name="myexp", input_names=["inp"], output_names=["out"], source=SEED_EXP), dict(
        inputs=[np.zeros((16, 16), np.float16)], output_dtypes=[np.float16], template=[("T", jk.float32)])


def _case_all_dtypes():
    dtypes = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
              np.float16, None, np.float32, np.float64, np.complex64]
    inputs = [_bf16(np.zeros(3)) if d is None else np.zeros(3, d) for d in dtypes]
    names = [f"x{i}" for i in range(len(inputs))]
    return dict(name="all_dtypes", input_names=names, output_names=["out"],
                source="out[0] = x11[0] + float(x4[0]) - inf;"), dict(inputs=inputs, output_dtypes=[jk.float32])


def _case_scalars_and_shapes():
    # A 0-d array and scalars of every Python kind; shape/strides/ndim of each are used.
    src = """
    out[0] = z[0] + s_b[0] + s_i[0] + s_l[0] + s_f[0];
    out[1] = z_ndim + z_shape.size() + s_f_ndim + s_f_shape[0] + s_f_strides[0];
    """
    return dict(name="scalars", input_names=["z", "s_b", "s_i", "s_l", "s_f"], output_names=["out"],
                source=src), dict(inputs=[np.array(2.0, np.float32), True, 3, 2 ** 40, 0.5],
                                  output_dtypes=[jk.float64], template={"N": -4, "BIG": 2 ** 40, "B": False})


GOLDEN_CASES = {
    "mlx_basic": _case_basic,
    "mlx_args": _case_args,
    "mlx_strides_contiguous": lambda: _case_strides(True),
    "mlx_strides_noncontiguous": lambda: _case_strides(False),
    "mlx_helper": _case_helper,
    "mlx_attributes": _case_attributes,
    "mlx_mixed_float16": lambda: _case_mixed(np.float16),
    "mlx_mixed_float32": lambda: _case_mixed(np.float32),
    "seed_exp": _case_seed_exp,
    "all_dtypes": _case_all_dtypes,
    "scalars_and_shapes": _case_scalars_and_shapes,
}


def build(case):
    factory, call = GOLDEN_CASES[case]()
    factory = dict(factory)
    k = jk.cuda_kernel(factory.pop("name"), factory.pop("input_names"), factory.pop("output_names"),
                       factory.pop("source"), **factory)
    return k, call


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden(case):
    k, call = build(case)
    text = k.source(**call)
    path = GOLDEN / f"{case}.cu"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing; create it with JITKERNEL_UPDATE_GOLDEN=1"
    expected = path.read_text()
    assert text == expected, (f"generated source for {case} differs from {path}; if the change is intended, "
                              "regenerate with JITKERNEL_UPDATE_GOLDEN=1 and review the diff")


def test_golden_files_all_have_a_case():
    stale = {p.stem for p in GOLDEN.glob("*.cu")} - set(GOLDEN_CASES)
    assert not stale, f"golden files without a test case: {sorted(stale)}"


def test_source_is_deterministic():
    k, call = build("mlx_args")
    assert k.source(**call) == k.source(**call)
    k2, call2 = build("mlx_args")
    assert k2.source(**call2) == k.source(**call)


# --------------------------------------------------------------------------- real NVRTC compiles

def _compile_or_skip(k, call, **kw):
    try:
        return k.compile(**call, arch="sm_90a", **kw)
    except jk.CudaNotAvailableError as e:  # no NVRTC on this machine
        pytest.skip(f"NVRTC not available: {e}")


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_kernels_compile_to_cubin(case):
    k, call = build(case)
    cubin = _compile_or_skip(k, call)
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"
    assert entry_name(k.source(**call)).encode() in cubin


def test_compile_error_points_at_user_lines():
    header = "__device__ float twice(float x) {\n  return 2 * x;\n}\n__device__ int broken() { return nope_h; }\n"
    source = "float y = inp[0];\nout[0] = twice(y) + nope_s;\n"
    k = jk.cuda_kernel("bad", ["inp"], ["out"], source, header=header)
    call = dict(inputs=[np.zeros(4, np.float32)], output_dtypes=[jk.float32])
    with pytest.raises(jk.CompileError) as info:
        _compile_or_skip(k, call)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert re.search(r"source line 2: error: identifier \"nope_s\" is undefined", err.log), err.log
    assert re.search(r"header line 4: error: identifier \"nope_h\" is undefined", err.log), err.log
    assert err.source == k.source(**call)
    # the library keeps working after a failed compile
    good = jk.cuda_kernel("good", ["inp"], ["out"], "out[0] = inp[0];")
    assert _compile_or_skip(good, call)[:4] == b"\x7fELF"


# --------------------------------------------------------------------------- parameters

F32 = [np.zeros(4, np.float32)]


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
    assert f"  const {ctype}* s = &s__value;\n" in prologue(text)


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


def test_more_than_8_dims_is_an_error_only_when_shape_or_strides_are_used():
    nine = np.zeros((1,) * 9, np.float32)
    for use in ("inp_shape[0]", "inp_strides[0]"):
        with pytest.raises(jk.ArgumentError, match=r"^inputs: .*'inp'.*9 dimensions.*at most 8"):
            gen(f"out[0] = {use};", [nine], [jk.float32], input_names=["inp"])
    assert "const int inp_ndim" in signature(gen("out[0] = inp_ndim;", [nine], [jk.float32], input_names=["inp"]))
    gen("out[0] = inp[0];", [nine], [jk.float32], input_names=["inp"])
    gen("out[0] = inp_shape[0];", [np.zeros((1,) * 8, np.float32)], [jk.float32], input_names=["inp"])


# --------------------------------------------------------------------------- templates

@pytest.mark.parametrize("value, line", [
    (3, "constexpr int N = 3;"),
    (-5, "constexpr int N = -5;"),
    (2 ** 31 - 1, "constexpr int N = 2147483647;"),
    (-(2 ** 31), "constexpr int N = (-2147483647 - 1);"),
    (2 ** 31, "constexpr long long N = 2147483648LL;"),
    (-(2 ** 63), "constexpr long long N = (-9223372036854775807LL - 1);"),
    (True, "constexpr bool N = true;"),
    (False, "constexpr bool N = false;"),
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
    assert prologue(text) == ("  constexpr int N = 2;\n  using T = float;\n"
                              "  const float* s = &s__value;\n")


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
    arr = _bf16(np.zeros(2)) if dtype == "bfloat16" else np.zeros(2, dtype)
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


@pytest.mark.parametrize("source, included", [
    ("auto e = cooperative_groups::this_grid().thread_rank(); out[e] = 0;", True),
    ("auto b = cg::this_thread_block(); out[b.thread_rank()] = 0;", True),
    ("out[0] = 0; // cooperative_groups::this_grid() would be slow", False),
    ("int cg = 3; out[0] = cg;", False),
])
def test_cooperative_groups_only_when_used(source, included):
    pre = preamble(gen(source, F32, [jk.float32]))
    assert ("#include <cooperative_groups.h>" in pre) == included
    assert ("namespace cg = cooperative_groups;" in pre) == included


def test_cccl_only_when_cuda_namespace_used():
    assert "#include <cuda/std/limits>" in preamble(
        gen("out[0] = cuda::std::numeric_limits<float>::max();", F32, [jk.float32]))
    assert "cuda/std" not in gen("out[0] = 1;", F32, [jk.float32])


def test_header_goes_at_file_scope_after_the_preamble():
    text = gen("out[0] = helper();", F32, [jk.float32], header="__device__ float helper() { return 1; }")
    h = text.index('#line 1 "header"\n__device__ float helper()')
    assert text.index("namespace jitkernel") < h < ENTRY_RE.search(text).start()


def test_body_is_last_and_marked_for_line_mapping():
    text = gen("out[0] = 1;\n", F32, [jk.float32])
    assert text.endswith('#line 1 "source"\nout[0] = 1;\n}\n')


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
