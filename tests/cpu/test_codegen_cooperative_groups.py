"""Code generation for cuda_kernel, without a GPU: cooperative groups. The choice between jitkernel's light
definitions and the real <cooperative_groups.h> (with the API's exact return types on both), CCCL only when used,
and where the header and the body go in the generated text.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from _codegen_text import ENTRY_RE, F32, SEED_EXP, compile_or_skip, gen, preamble


# --------------------------------------------------------------------------- cooperative groups
# <cooperative_groups.h> costs NVRTC ~2.5 s; kernels that use only this_grid() / this_thread_block() get jitkernel's
# light definitions instead ("shim"), anything else the real header ("header").

SHIM_MARK = "namespace cooperative_groups {"
HEADER_MARK = "#include <cooperative_groups.h>"


def cg_path(source, header=""):
    pre = preamble(gen(source, F32, [jk.float32], header=header))
    shim, real = SHIM_MARK in pre, HEADER_MARK in pre
    assert not (shim and real)
    if shim or real:
        assert "namespace cg = cooperative_groups;" in pre
    else:
        assert "namespace cg" not in pre
    return "shim" if shim else "header" if real else "none"


FORCE_HEADER = "auto t = cg::tiled_partition<32>(cg::this_thread_block()); (void)t;\n"

CG_PATHS = [
    # not used at all
    ("out[0] = 0; // cooperative_groups::this_grid() would be slow", "none"),
    ("int cg = 3; out[0] = cg;", "none"),
    ('const char* s = "cg::tiled_partition"; out[0] = 0;', "none"),
    # the supported subset
    ("auto e = cooperative_groups::this_grid().thread_rank(); out[e] = 0;", "shim"),
    ("auto e = cooperative_groups :: this_grid ( ) . thread_rank ( ); out[e] = 0;", "shim"),
    ("auto e = ::cooperative_groups::this_grid().thread_rank(); out[e] = 0;", "shim"),
    ("auto b = cg::this_thread_block(); out[b.thread_rank()] = 0;", "shim"),
    ("auto b = cg::this_thread_block(); b.sync(); cg::sync(b); out[b.size()] = b.group_index().x;", "shim"),
    ("cg::thread_block b = cg::this_thread_block(); out[0] = b.num_threads() + b.dim_threads().y"
     " + b.group_dim().z + b.thread_index().x;", "shim"),
    ("cg::grid_group g = cg::this_grid(); out[0] = g.size() + g.num_threads() + g.block_rank() + g.num_blocks()"
     " + g.block_index().x + g.dim_blocks().y + g.group_dim().z + g.dim_threads().x + g.thread_index().y;", "shim"),
    ("out[cg::grid_group::thread_rank()] = cg::thread_block::size();", "shim"),
    ("out[cg::thread_rank(cg::this_grid())] = cg::group_size(cg::this_thread_block());", "shim"),
    ("auto g = cg::this_grid(); out[g.thread_rank()] = 0; // g.sync(); cg::reduce(...)", "shim"),
    ("int plus_one = 1; auto e = cg::this_grid().thread_rank(); out[e] = plus_one;", "shim"),
    # anything else: the real header
    (FORCE_HEADER + "out[0] = 0;", "header"),
    ("auto g = cg::this_grid(); g.sync(); out[0] = 0;", "header"),
    ("auto g = cooperative_groups::this_grid(); cooperative_groups::sync(g); out[0] = 0;", "header"),
    ("auto b = cg::this_thread_block(); b.sync(); out[cg::this_grid().thread_rank()] = 0;", "header"),
    ("auto w = cg::tiled_partition<32>(cg::this_thread_block());"
     " out[0] = cg::reduce(w, 1, cg::plus<int>());", "header"),
    ("cg::thread_block_tile<32> w = cg::tiled_partition<32>(cg::this_thread_block()); out[0] = w.shfl_down(1, 1);",
     "header"),
    ("auto c = cg::coalesced_threads(); out[0] = c.thread_rank();", "header"),
    ("out[0] = cg::this_grid().is_valid();", "header"),
    ("cg::thread_group g = cg::this_thread_block(); out[0] = g.thread_rank();", "header"),
    ("out[0] = cg::this_cluster().block_rank();", "header"),
    ("out[0] = cg::details::cta::thread_rank();", "header"),
    ("auto g = cg::this_grid(); auto t = g.barrier_arrive(); g.barrier_wait(static_cast<decltype(t)&&>(t));"
     " out[0] = 0;", "header"),
    ("out[0] = cg::grid_group::is_valid();", "header"),
    ("using namespace cooperative_groups; out[this_grid().thread_rank()] = 0;", "header"),
    ("namespace cgx = cooperative_groups; out[cgx::this_grid().thread_rank()] = 0;", "header"),
    ("out[cg::this_grid().thread_rank()] = cuda::std::numeric_limits<float>::max();", "header"),
    ("out[cg::this_grid().thread_rank()] = 0; NV_IF_TARGET(NV_PROVIDES_SM_90, (out[0] = 1;));", "header"),
]


@pytest.mark.parametrize("source, path", CG_PATHS)
def test_cooperative_groups_shim_or_header(source, path):
    assert cg_path(source) == path


@pytest.mark.parametrize("source", [src for src, path in CG_PATHS if path == "shim"])
def test_shim_sources_compile(source):
    k = jk.cuda_kernel("cg_shim", ["in0"], ["out"], source)
    assert compile_or_skip(k, dict(inputs=F32, output_dtypes=[jk.float32]))[:4] == b"\x7fELF"


def test_cooperative_groups_decision_reads_the_header_too():
    body = "out[cg::this_grid().thread_rank()] = helper();"
    assert cg_path(body, header="__device__ float helper() { return 1; }") == "shim"
    assert cg_path(body, header="__device__ float helper() { cg::this_grid().sync(); return 1; }") == "header"
    assert cg_path(body, header="#include <cooperative_groups/reduce.h>\n__device__ float helper() { return 1; }"
                   ) == "header"
    assert cg_path(body, header="#include <cuda/std/limits>\n__device__ float helper() { return 1; }") == "header"


@pytest.mark.parametrize("include", ["# /* a comment */ include <my_helpers.cuh>",
                                     "%:include <my_helpers.cuh>",
                                     "#inc\\\nlude <my_helpers.cuh>",
                                     "#include_next <my_helpers.cuh>"])
def test_cooperative_groups_decision_sees_every_spelling_of_include(include):
    # The compiler takes each of these as an #include (as the cache key's scan does), so each may bring in the real
    # header, which the light definitions would then clash with.
    body = "out[cg::this_grid().thread_rank()] = helper();"
    assert cg_path(body, header=include + "\n__device__ float helper() { return 1; }") == "header"


# Every supported call, with the exact type the CUDA API gives it (static_assert on decltype). Compiled against the
# shim and, with FORCE_HEADER added, against the real header: both must accept the same types.
TYPE_HEADER = """
template <class A, class B> struct same_type { static constexpr bool value = false; };
template <class A> struct same_type<A, A> { static constexpr bool value = true; };
#define EXPECT_TYPE(expr, T) static_assert(same_type<decltype(expr), T>::value, #expr)
"""
GRID_TYPES = """
auto g = cg::this_grid();
EXPECT_TYPE(g, cg::grid_group);
EXPECT_TYPE(cooperative_groups::this_grid(), cooperative_groups::grid_group);
EXPECT_TYPE(g.thread_rank(), unsigned long long);
EXPECT_TYPE(cg::grid_group::thread_rank(), unsigned long long);
EXPECT_TYPE(g.size(), unsigned long long);
EXPECT_TYPE(g.num_threads(), unsigned long long);
EXPECT_TYPE(g.block_rank(), unsigned long long);
EXPECT_TYPE(g.num_blocks(), unsigned long long);
EXPECT_TYPE(g.block_index(), dim3);
EXPECT_TYPE(g.dim_blocks(), dim3);
EXPECT_TYPE(g.group_dim(), dim3);
EXPECT_TYPE(g.dim_threads(), dim3);
EXPECT_TYPE(g.thread_index(), dim3);
EXPECT_TYPE(cg::thread_rank(g), unsigned long long);
EXPECT_TYPE(cg::group_size(g), unsigned long long);
auto elem = g.thread_rank();
out[elem] = 0;
"""
BLOCK_TYPES = """
auto b = cg::this_thread_block();
EXPECT_TYPE(b, cg::thread_block);
EXPECT_TYPE(b.thread_rank(), unsigned int);
EXPECT_TYPE(cg::thread_block::thread_rank(), unsigned int);
EXPECT_TYPE(b.size(), unsigned int);
EXPECT_TYPE(b.num_threads(), unsigned int);
EXPECT_TYPE(b.group_index(), dim3);
EXPECT_TYPE(b.thread_index(), dim3);
EXPECT_TYPE(b.group_dim(), dim3);
EXPECT_TYPE(b.dim_threads(), dim3);
EXPECT_TYPE(b.sync(), void);
EXPECT_TYPE(cg::sync(b), void);
EXPECT_TYPE(cg::thread_rank(b), unsigned int);
EXPECT_TYPE(cg::group_size(b), unsigned int);
b.sync();
cg::sync(b);
out[b.thread_rank()] = 0;
"""


@pytest.mark.parametrize("source, path", [
    (GRID_TYPES, "shim"),
    (BLOCK_TYPES, "shim"),  # apart: block sync next to this_grid() selects the real header
    (FORCE_HEADER + GRID_TYPES.replace("auto elem", "auto g_elem").replace("out[elem]", "out[g_elem]")
     + BLOCK_TYPES, "header"),
], ids=["grid-shim", "block-shim", "both-header"])
def test_cooperative_groups_types_match_the_cuda_api(source, path):
    assert cg_path(source, header=TYPE_HEADER) == path
    k = jk.cuda_kernel("cg_types", ["inp"], ["out"], source, header=TYPE_HEADER)
    cubin = compile_or_skip(k, dict(inputs=F32, output_dtypes=[jk.float32]))
    assert cubin[:4] == b"\x7fELF"


def test_type_check_mechanism_catches_a_wrong_type():
    # The test above only means something if a wrong type fails: unsigned int is not grid thread_rank's type.
    k = jk.cuda_kernel("cg_types", ["inp"], ["out"], "EXPECT_TYPE(cg::this_grid().thread_rank(), unsigned int);",
                       header=TYPE_HEADER)
    with pytest.raises(jk.CompileError, match="static assertion failed"):
        compile_or_skip(k, dict(inputs=F32, output_dtypes=[jk.float32]))


def test_shim_kernel_has_no_cccl_and_both_paths_compile():
    # Seed 003's kernel: the light path includes no CCCL header; forcing the real header still compiles.
    # (The compile-time gain is measured by benchmarks/python/bench_launch.py, not asserted here.)
    body = SEED_EXP + FORCE_HEADER
    call = dict(inputs=[np.zeros((16, 16), np.float16)], output_dtypes=[np.float16], template=[("T", jk.float32)])
    light = jk.cuda_kernel("myexp", ["inp"], ["out"], SEED_EXP)
    heavy = jk.cuda_kernel("myexp", ["inp"], ["out"], body)
    text = light.source(**call)
    assert SHIM_MARK in text and HEADER_MARK not in text and "#include <cuda/" not in text
    assert HEADER_MARK in heavy.source(**call)
    for kernel in (light, heavy):
        cubin = compile_or_skip(kernel, call)
        assert cubin[:4] == b"\x7fELF"


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
