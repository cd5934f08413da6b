"""Kernels written for nvcc / MLX's cuda_kernel / CuPy's RawKernel compile unchanged (tests/corpus/nvcc_style): each
corpus kernel compiles with NVRTC for sm_90a, no GPU needed. Also what nvcc gives implicitly (math macros, limits,
CUDART_* constants) and MLX's device utilities, each only when the code mentions it."""
import sys
from pathlib import Path

import numpy as np
import pytest

import jitkernel as jk

sys.path.insert(0, str(Path(__file__).parents[1] / "corpus" / "nvcc_style"))
import _load  # noqa: E402

ARCH = "sm_90a"
F32 = np.zeros(64, np.float32)


def test_corpus_has_at_least_15_kernels():
    assert len(_load.names()) >= 15


@pytest.mark.parametrize("name", _load.names())
def test_corpus_kernel_compiles_unchanged(name):
    kernel, case = _load.kernel_and_case(name)
    cubin = kernel.compile(inputs=case["inputs"], output_dtypes=case["output_dtypes"], template=case.get("template"),
                           arch=ARCH)
    assert cubin[:4] == b"\x7fELF"
    assert len(case["expected"]) == len(case["output_dtypes"])


def compile_body(body, header="", inputs=(F32,)):
    k = jk.cuda_kernel(name="compat", input_names=[f"in{i}" for i in range(len(inputs))], output_names=["out"],
                       source=body, header=header)
    return k, k.compile(inputs=list(inputs), output_dtypes=[np.float32], arch=ARCH)


def source_of(k, inputs=(F32,)):
    return k.source(inputs=list(inputs), output_dtypes=[np.float32])


@pytest.mark.parametrize("expr", [
    "-INFINITY", "NAN", "HUGE_VALF", "(float)HUGE_VAL", "(float)M_PI", "(float)M_SQRT1_2", "FLT_MAX", "FLT_MIN",
    "FLT_EPSILON", "(float)DBL_MAX", "INT_MAX", "INT_MIN", "(float)UINT_MAX", "(float)LLONG_MIN", "INT32_MAX",
    "(float)UINT64_MAX", "CHAR_BIT", "CUDART_INF_F", "CUDART_NAN_F", "CUDART_PI_F", "(float)CUDART_INF",
])
def test_nvcc_implicit_macros(expr):
    compile_body(f"out[0] = {expr};")


def test_macro_values_are_the_c_ones():
    # Compile-time checks in the kernel: a wrong value fails the compile.
    compile_body("static_assert(-INFINITY < -FLT_MAX && FLT_MAX == 3.40282346638528859811704183484516925e+38F);\n"
                 "static_assert(INT_MIN == -2147483647 - 1 && INT_MAX == 2147483647 && UINT32_MAX == 4294967295u);\n"
                 "static_assert(LLONG_MAX == 9223372036854775807LL && CHAR_BIT == 8 && DBL_MANT_DIG == 53);\n"
                 "static_assert(M_PI > 3.14159265358 && M_PI < 3.14159265359 && !(NAN == NAN));\n"
                 "constexpr float m = -INFINITY; out[0] = m;")


def test_macros_only_when_mentioned():
    k, _ = compile_body("out[0] = 1.0f;")
    text = source_of(k)
    for name in ("INFINITY", "FLT_MAX", "M_PI", "math_constants.h", "AlignedVector", "Limits", "elem_to_loc_nd",
                 "complex_t", "cuda/std"):
        assert name not in text, name
    k, _ = compile_body("out[0] = -INFINITY;")
    text = source_of(k)
    assert "#define INFINITY" in text and "#define NAN" not in text and "math_constants.h" not in text


def test_user_definitions_win():
    # A header that defines the macro (guarded or not) or its own AlignedVector / load_vector keeps its own.
    header = ("#ifndef M_PI\n#define M_PI 3.14159265358979323846\n#endif\n#define INFINITY (1.0f / 0.0f)\n"
              "template <typename T, int N> struct alignas(sizeof(T) * N) AlignedVector { T val[N]; };\n"
              "__device__ inline float load_vector(const float* p) { return p[1]; }\n")
    k, _ = compile_body("AlignedVector<float, 4> v; v.val[0] = load_vector(in0);\n"
                        "out[0] = v.val[0] + M_PI + INFINITY;", header=header)
    text = source_of(k)
    assert "#define M_PI 3.14" not in text.split('#line 1 "header"')[0]
    assert "#define INFINITY" not in text.split('#line 1 "header"')[0]
    assert "struct alignas(sizeof(T) * N) AlignedVector" not in text.split('#line 1 "header"')[0]


def test_printf_assert_warp_intrinsics_half_bf16():
    compile_body('if (in0[0] < 0) printf("%f\\n", in0[0]); assert(in0[1] >= 0); __syncwarp();\n'
                 "float v = __shfl_xor_sync(0xffffffffu, in0[threadIdx.x], 1) + __shfl_up_sync(~0u, 1.f, 1)\n"
                 "  + __shfl_down_sync(~0u, 1.f, 1) + __shfl_sync(~0u, 1.f, 0) + __ldg(in0);\n"
                 "v += __half2float(__hadd(__float2half(v), __float2half(1.f))) + __bfloat162float(__float2bfloat16(v));\n"
                 "out[threadIdx.x] = v;")


def test_mlx_limits_values():
    compile_body("static_assert(Limits<int8_t>::min() == -128 && Limits<int8_t>::max() == 127);\n"
                 "static_assert(Limits<uint16_t>::max() == 65535 && Limits<int64_t>::min() < 0);\n"
                 "static_assert(Limits<float>::max() == INFINITY && Limits<float>::finite_max() == FLT_MAX);\n"
                 "static_assert(Limits<float>::finite_min() == -FLT_MAX && Limits<double>::min() == -HUGE_VAL);\n"
                 "static_assert(Limits<bool>::max() && !Limits<bool>::min());\n"
                 "out[0] = __half2float(Limits<__half>::finite_max()) + __bfloat162float(Limits<__nv_bfloat16>::min());")


def test_mlx_locations_light_and_with_cuda_std():
    body = ("int s[3] = {2, 3, 4}; int64_t x[3] = {12, 4, 1}, y[3] = {1, 2, 6};\n"
            "auto [p, q] = elem_to_loc(int64_t(23), s, x, y, 3);\n"
            "out[0] = p + q + elem_to_loc_nd<3>(int64_t(23), s, x);\n")
    k, _ = compile_body(body)
    assert "cuda/std" not in source_of(k)
    k, _ = compile_body(body + "out[1] = cuda::std::get<1>(elem_to_loc_nd<3>(int64_t(5), s, x, y, x));")
    assert "cuda::std::tuple<IdxT, IdxT>" in source_of(k)


def test_max_ndim_is_10():
    k, _ = compile_body("static_assert(MAX_NDIM == 10); out[0] = in0_shape[9] + in0_strides[9];",
                        inputs=(np.zeros((1,) * 10, np.float32),))
    assert "#define MAX_NDIM 10\n" in source_of(k, (np.zeros((1,) * 10, np.float32),))
