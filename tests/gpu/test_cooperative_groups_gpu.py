"""Cooperative groups on a GPU: kernels that use only this_grid() / this_thread_block() compile against jitkernel's
light definitions (no <cooperative_groups.h>); every value they read (ranks, sizes, 3-D indices and extents of grid
and block, on 1-D and 3-D launches with partial blocks) must equal a NumPy model of the CUDA semantics, and the same
kernel forced onto the real header must give identical results. A block-level sync (member and free function) is
checked through shared memory."""
import numpy as np
import pytest

import jitkernel as jk

pytestmark = pytest.mark.gpu

SHIM_MARK = "namespace cooperative_groups {"
HEADER_MARK = "#include <cooperative_groups.h>"
# Any name of the API outside the light subset selects the real header.
FORCE_HEADER = "auto t = cg::tiled_partition<32>(cg::this_thread_block()); (void)t;\n"

# One row of `out` per launched thread (at its grid rank), one column per value read.
FIELDS = [
    "g.thread_rank()", "g.size()", "g.num_threads()", "g.block_rank()", "g.num_blocks()",
    "g.block_index().x", "g.block_index().y", "g.block_index().z",
    "g.dim_blocks().x", "g.dim_blocks().y", "g.dim_blocks().z",
    "g.group_dim().x", "g.group_dim().y", "g.group_dim().z",
    "g.thread_index().x", "g.thread_index().y", "g.thread_index().z",
    "g.dim_threads().x", "g.dim_threads().y", "g.dim_threads().z",
    "b.thread_rank()", "b.size()", "b.num_threads()",
    "b.group_index().x", "b.group_index().y", "b.group_index().z",
    "b.thread_index().x", "b.thread_index().y", "b.thread_index().z",
    "b.group_dim().x", "b.group_dim().y", "b.group_dim().z",
    "b.dim_threads().x", "b.dim_threads().y", "b.dim_threads().z",
    "cg::thread_rank(g)", "cg::group_size(b)",
    "sizeof(g.thread_rank())", "sizeof(b.thread_rank())",
]

VALUES_SOURCE = (
    "auto g = cooperative_groups::this_grid();\n"
    "auto b = cg::this_thread_block();\n"
    "auto elem = g.thread_rank();\n"
    + "".join(f"out[elem * {len(FIELDS)} + {i}] = {f};\n" for i, f in enumerate(FIELDS))
)

# Each thread publishes its grid rank in shared memory, syncs the block, and reads its next neighbour's (in block
# rank order, wrapping); then the same again with the values read: right only if sync() waits for the whole block.
# (No this_grid() here: `sync` next to it would select the real header, which grid-wide sync needs.)
SYNC_SOURCE = """
__shared__ unsigned long long ranks[1024];
auto b = cg::this_thread_block();
const unsigned r = b.thread_rank();
const unsigned long long block_rank = (blockIdx.z * (unsigned long long)gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
const unsigned long long rank = block_rank * b.size() + r;
ranks[r] = rank;
b.sync();
unsigned long long a = ranks[(r + 1) % b.size()];
cg::sync(b);
ranks[r] = a + 1;
cooperative_groups::sync(b);
neighbour[rank] = ranks[(r + 1) % b.size()];
"""

LAUNCHES = [
    ((64, 6, 4), (8, 3, 2)),    # 3-D grid of 3-D blocks
    ((1000, 1, 1), (128, 1, 1)),  # 1-D, last block partly outside the grid
    ((5, 7, 3), (2, 4, 2)),     # 3-D, partial blocks in every dimension
]


def geometry(grid, threadgroup):
    """Blocks per dimension and threads per block of a launch (grid counts threads, as in MLX)."""
    block = [min(t, g) for t, g in zip(threadgroup, grid)]
    blocks = [-(-g // b) for g, b in zip(grid, block)]
    return blocks, block


def model(grid, threadgroup):
    """The expected FIELDS for every launched thread, rows ordered by grid rank."""
    (gx, gy, gz), (bx, by, bz) = geometry(grid, threadgroup)
    block_size = bx * by * bz
    num_blocks = gx * gy * gz
    rows = np.zeros((num_blocks * block_size, len(FIELDS)), np.uint64)
    for kz in range(gz):
        for ky in range(gy):
            for kx in range(gx):
                block_rank = (kz * gy + ky) * gx + kx
                for tz in range(bz):
                    for ty in range(by):
                        for tx in range(bx):
                            thread_rank = (tz * by + ty) * bx + tx
                            rank = block_rank * block_size + thread_rank
                            rows[rank] = [
                                rank, num_blocks * block_size, num_blocks * block_size, block_rank, num_blocks,
                                kx, ky, kz, gx, gy, gz, gx, gy, gz,
                                kx * bx + tx, ky * by + ty, kz * bz + tz, gx * bx, gy * by, gz * bz,
                                thread_rank, block_size, block_size,
                                kx, ky, kz, tx, ty, tz, bx, by, bz, bx, by, bz,
                                rank, block_size, 8, 4,
                            ]
    return rows


def run_values(source, grid, threadgroup):
    blocks, block = geometry(grid, threadgroup)
    n = int(np.prod(blocks)) * int(np.prod(block))
    kernel = jk.cuda_kernel("cg_values", [], ["out"], source)
    (out,) = kernel(inputs=[], grid=grid, threadgroup=threadgroup,
                    output_shapes=[(n, len(FIELDS))], output_dtypes=[jk.uint64])
    assert isinstance(out, jk.Array)
    return kernel.source(inputs=[], output_dtypes=[jk.uint64]), out.numpy()


@pytest.mark.parametrize("grid, threadgroup", LAUNCHES)
def test_grid_and_block_values_match_the_model(grid, threadgroup):
    text, got = run_values(VALUES_SOURCE, grid, threadgroup)
    assert SHIM_MARK in text and HEADER_MARK not in text
    want = model(grid, threadgroup)
    for i, field in enumerate(FIELDS):
        np.testing.assert_array_equal(got[:, i], want[:, i], err_msg=field)


@pytest.mark.parametrize("grid, threadgroup", LAUNCHES)
def test_light_definitions_and_real_header_agree(grid, threadgroup):
    light_text, light = run_values(VALUES_SOURCE, grid, threadgroup)
    real_text, real = run_values(FORCE_HEADER + VALUES_SOURCE, grid, threadgroup)
    assert SHIM_MARK in light_text and HEADER_MARK in real_text and SHIM_MARK not in real_text
    np.testing.assert_array_equal(light, real)


@pytest.mark.parametrize("force", [False, True], ids=["shim", "header"])
@pytest.mark.parametrize("grid, threadgroup", LAUNCHES)
def test_block_sync(grid, threadgroup, force):
    blocks, block = geometry(grid, threadgroup)
    block_size = int(np.prod(block))
    n = int(np.prod(blocks)) * block_size
    source = (FORCE_HEADER if force else "") + SYNC_SOURCE
    kernel = jk.cuda_kernel("cg_sync", [], ["neighbour"], source)
    assert (HEADER_MARK if force else SHIM_MARK) in kernel.source(inputs=[], output_dtypes=[jk.uint64])
    (out,) = kernel(inputs=[], grid=grid, threadgroup=threadgroup, output_shapes=[(n,)], output_dtypes=[jk.uint64])
    rank = np.arange(n, dtype=np.uint64)
    first = rank - rank % block_size  # grid rank of thread 0 of the same block

    def next_in_block(r):
        return first + (r - first + 1) % block_size

    # a = rank of the next thread; the value read back is a+1 written by the next thread, i.e. rank two ahead + 1
    want = next_in_block(next_in_block(rank)) + 1
    np.testing.assert_array_equal(out.numpy(), want)


def test_mlx_style_elementwise_kernel():
    # Seed 003's body on the light definitions, against NumPy.
    a = np.random.default_rng(3).standard_normal((16, 16)).astype(np.float32)
    source = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """
    kernel = jk.cuda_kernel("myexp", ["inp"], ["out"], source)
    assert SHIM_MARK in kernel.source(inputs=[a], output_dtypes=[jk.float32], template=[("T", jk.float32)])
    (out,) = kernel(inputs=[a], template=[("T", jk.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                    output_shapes=[a.shape], output_dtypes=[a.dtype])
    np.testing.assert_allclose(out.numpy(), np.exp(a), rtol=1e-6)
