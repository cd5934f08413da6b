"""Which NVRTC options a compile gets (cpp/jitkernel/cuda/nvrtc/compile.cpp). The user's ``compile_options``
(tests/cpu/test_compile_user_options.py) are checked elsewhere; here ``--minimal`` (NVRTC 12.4+, a faster front
end that leaves out the CUDA runtime API, texture and surface declarations) exactly when the whole file needs none
of what it leaves out and includes only headers jitkernel's preamble uses. Observed through the macro NVRTC defines
under --minimal (``__CUDACC_RTC_MINIMAL__``): each kernel below fails to compile (``#error``) unless it got the
expected choice, so a wrong choice, in either direction, is a CompileError. Real NVRTC compiles, no GPU needed.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitkernel as jk

ARCH = "sm_90a"
F32 = np.zeros(8, np.float32)


def _nvrtc_has_minimal() -> bool:
    major, minor = (int(p) for p in jk.toolkit_info()["nvrtc_version"].split("."))
    return (major, minor) >= (12, 4)


pytestmark = pytest.mark.skipif(not _nvrtc_has_minimal(), reason="NVRTC older than 12.4 has no --minimal")

EXPECT_MINIMAL = "#ifndef __CUDACC_RTC_MINIMAL__\n#error expected --minimal\n#endif\n"
EXPECT_FULL = "#ifdef __CUDACC_RTC_MINIMAL__\n#error expected no --minimal\n#endif\n"


def compile_body(body, inputs=(F32,), output_dtypes=(np.float32,), header="", template=None):
    names = [f"in{i}" for i in range(len(inputs))]
    k = jk.cuda_kernel(name="opts", input_names=names, output_names=["out"], source=body, header=header)
    return k.compile(inputs=list(inputs), output_dtypes=list(output_dtypes), template=template, arch=ARCH)


@pytest.mark.parametrize("body", [
    "out[threadIdx.x] = in0[threadIdx.x];",
    "out[0] = cooperative_groups::this_grid().thread_rank();",  # jitkernel's light cooperative groups
    "// cudaStream_t and tex1Dfetch only in a comment\nout[0] = 1;",
    'printf("cudaMalloc %d\\n", 1); out[0] = 1;',  # ... or in a string
    "out[0] = cuda::std::numeric_limits<float>::max();",  # the preamble's cuda/std headers
])
def test_kernels_that_fit_get_minimal(body):
    assert compile_body(EXPECT_MINIMAL + body)[:4] == b"\x7fELF"


def test_preamble_headers_keep_minimal():
    f16 = np.zeros(8, np.float16)
    assert compile_body(EXPECT_MINIMAL + "out[0] = hexp(in0[0]);", inputs=[f16], output_dtypes=[np.float16])
    c64 = np.zeros(8, np.complex64)
    assert compile_body(EXPECT_MINIMAL + "out[0] = cuCmulf(in0[0], in0[1]);", inputs=[c64],
                        output_dtypes=[np.complex64])


@pytest.mark.parametrize("body", [
    "cudaStream_t s = 0; out[0] = s == 0;",
    "cudaError_t e = cudaSuccess; out[0] = (float)e;",
    "cudaTextureObject_t t = 0; out[0] = t == 0;",
    "out[0] = tex1Dfetch<float>(0ull, 0);",
    "int v = CUDA_R_32F; out[0] = v;",
    "int v = MAJOR_VERSION; out[0] = v;",
])
def test_runtime_api_names_get_the_full_builtins(body):
    assert compile_body(EXPECT_FULL + body)


def test_runtime_api_name_in_the_header_counts():
    header = "__device__ inline bool ok(cudaError_t e) { return e == cudaSuccess; }\n"
    assert compile_body(EXPECT_FULL + "out[0] = ok(cudaSuccess);", header=header)


def test_other_includes_get_the_full_builtins():
    # A header the preamble never includes may need what --minimal leaves out.
    assert compile_body(EXPECT_FULL + "out[0] = CHAR_BIT;", header="#include <cuda/std/climits>\n")


def test_standalone_sources_follow_the_same_rule():
    src = 'extern "C" __global__ void k(float* o) {\n%s  o[0] = 1;\n}\n'
    assert jk.compile_cuda(src % EXPECT_MINIMAL, arch=ARCH)[:4] == b"\x7fELF"
    full = 'extern "C" __global__ void k(float* o) {\n%s  cudaStream_t s = 0; o[0] = s == 0;\n}\n'
    assert jk.compile_cuda(full % EXPECT_FULL, arch=ARCH)[:4] == b"\x7fELF"



# The generator decides --minimal from the user's code (and the names it declares) alone, on the claim that the text
# it writes around that code (preamble, helpers, parameters, template lines) fits --minimal. Checked through the disk
# cache: the entry a kernel's compile stored is named by its key, which holds its options; the key of the whole
# generated file with the options a scan of that whole file chooses (what compile_cuda would use) must be the same.
def assert_whole_file_rule_agrees(k, inputs=(F32,), template=None):
    text = k.source(inputs=list(inputs), output_dtypes=[np.float32], template=template)
    key = jk._core._cache_compile_key(text, k.name + ".cu", ARCH, "cubin")
    assert os.path.isfile(os.path.join(jk._core._cache_active_directory(), "kernels", key + ".jkc"))


EVERY_PREAMBLE_PART = dict(
    inputs=[np.zeros((2, 4), np.float16), np.zeros(8, np.complex64), 2.0],
    header="__device__ inline float twice(float v) { return 2.0f * v; }\n",
    template=[("T", jk.float32), ("N", 3), ("B", True)],
    body=("int64_t i = threadIdx.x;\n"
          "float h = __half2float(in0[elem_to_loc<int64_t>(i, in0_shape, in0_strides, in0_ndim)]);\n"
          "cuFloatComplex c = cuCmulf(in1[i], in1[i]);\n"
          "float e = B ? cuda::std::numeric_limits<float>::epsilon() : 0.0f;\n"
          "out[i] = static_cast<T>(twice(__bfloat162float(__float2bfloat16(h)) + cuCrealf(c) + in2[0]) * N + e);"),
)


@pytest.mark.parametrize("case", [
    EVERY_PREAMBLE_PART,
    dict(body="out[threadIdx.x] = cooperative_groups::this_grid().thread_rank();"),  # the light cooperative groups
    dict(body="auto tile = cooperative_groups::tiled_partition<32>(cooperative_groups::this_thread_block());\n"
              "out[threadIdx.x] = tile.shfl_down(in0[threadIdx.x], 1);"),  # the real <cooperative_groups.h>
], ids=["every_preamble_part", "cooperative_groups_light", "cooperative_groups_header"])
def test_generated_text_fits_minimal(case):
    inputs, template = case.get("inputs", [F32]), case.get("template")
    names = [f"in{i}" for i in range(len(inputs))]
    k = jk.cuda_kernel(name="opts", input_names=names, output_names=["out"], source=EXPECT_MINIMAL + case["body"],
                       header=case.get("header", ""))
    assert k.compile(inputs=list(inputs), output_dtypes=[np.float32], template=template, arch=ARCH)[:4] == b"\x7fELF"
    assert_whole_file_rule_agrees(k, inputs, template)


@pytest.mark.parametrize("name, output", [("cudaScale", "out"), ("opts", "cudaOut"), ("opts", "texture")])
def test_declared_runtime_api_names_follow_the_whole_file_rule(name, output):
    # Names the generated lines declare for the user (here only there: the body does not use the output) count as they
    # do in a scan of the whole file.
    k = jk.cuda_kernel(name=name, input_names=["in0"], output_names=[output], source=EXPECT_FULL)
    assert k.compile(inputs=[F32], output_dtypes=[np.float32], arch=ARCH)[:4] == b"\x7fELF"
    assert_whole_file_rule_agrees(k)
