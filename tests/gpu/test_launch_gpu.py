"""Launch geometry and shared memory on a GPU: 3-D grids counted in threads, grids that are
not a multiple of the threadgroup, threadgroups clamped to the grid, dynamic shared memory
above 48 KiB (also one source launched with several amounts), and the device limits."""
import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX

pytestmark = pytest.mark.gpu

GRID_3D = """
const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
const unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
if (x < X && y < Y && z < Z) { out[(z * Y + y) * X + x] = x + 100 * y + 10000 * z; }
"""


@pytest.mark.parametrize("grid,threadgroup", [
    ((8, 4, 2), (4, 2, 2)),
    ((8, 4, 2), (8, 4, 2)),
    ((8, 4, 2), (2, 1, 1)),
    ((8, 4, 2), (16, 8, 4)),   # threadgroup larger than the grid: clamped
    ((33, 5, 3), (8, 4, 2)),   # not a multiple of the threadgroup in any dimension
    ((1000, 1, 1), (256, 1, 1)),
])
def test_3d_grid_covers_every_thread(grid, threadgroup):
    gx, gy, gz = grid
    kernel = jk.cuda_kernel("grid3d", ["dummy"], ["out"], GRID_3D)
    (out,) = kernel(inputs=[np.zeros(1, np.float32)], template=[("X", gx), ("Y", gy), ("Z", gz)],
                    grid=grid, threadgroup=threadgroup, output_shapes=[(gz, gy, gx)],
                    output_dtypes=[jk.int32], init_value=-1)
    z, y, x = np.indices((gz, gy, gx))
    np.testing.assert_array_equal(out.numpy(), x + 100 * y + 10000 * z)


LAUNCH_DIMS = """
if (threadIdx.x + threadIdx.y + threadIdx.z + blockIdx.x + blockIdx.y + blockIdx.z == 0) {
    dims[0] = blockDim.x; dims[1] = blockDim.y; dims[2] = blockDim.z;
    dims[3] = gridDim.x; dims[4] = gridDim.y; dims[5] = gridDim.z;
}
"""


@pytest.mark.parametrize("grid,threadgroup,block,blocks", [
    ((2, 1, 1), (2, 1, 1), (2, 1, 1), (1, 1, 1)),
    ((5, 1, 1), (256, 1, 1), (5, 1, 1), (1, 1, 1)),
    ((3, 2, 1), (32, 32, 1), (3, 2, 1), (1, 1, 1)),
    ((1000, 3, 1), (256, 2, 1), (256, 2, 1), (4, 2, 1)),
    ((7, 9, 5), (4, 4, 4), (4, 4, 4), (2, 3, 2)),
])
def test_block_and_grid_dims(grid, threadgroup, block, blocks):
    # grid counts threads: block = min(threadgroup, grid), blocks = ceil(grid / block).
    kernel = jk.cuda_kernel("launch_dims", ["dummy"], ["dims"], LAUNCH_DIMS)
    (dims,) = kernel(inputs=[np.zeros(1, np.float32)], grid=grid, threadgroup=threadgroup,
                     output_shapes=[(6,)], output_dtypes=[jk.uint32])
    np.testing.assert_array_equal(dims.numpy(), list(block) + list(blocks))


REVERSE_THROUGH_SHARED = """
// Each block stages its row in dynamic shared memory, writes it back reversed, then
// sums it with a tree reduction in the same buffer.
extern __shared__ float buf[];
const int row = blockIdx.x, tid = threadIdx.x;
for (int j = tid; j < L; j += blockDim.x) buf[j] = inp[row * L + j];
__syncthreads();
for (int j = tid; j < L; j += blockDim.x) reversed[row * L + j] = buf[L - 1 - j];
float acc = 0.0f;
for (int j = tid; j < L; j += blockDim.x) acc += buf[j];
__syncthreads();
buf[tid] = acc;
__syncthreads();
for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
}
if (tid == 0) total[row] = buf[0];
"""


def test_shared_memory_100_kib():
    rows, length = 8, 25600  # 25600 floats = 100 KiB of shared memory per block
    x = np.random.default_rng(0).integers(-8, 9, (rows, length)).astype(np.float32)
    kernel = jk.cuda_kernel("smem_reverse", ["inp"], ["reversed", "total"],
                            REVERSE_THROUGH_SHARED, shared_memory=4 * length)
    reversed_, total = kernel(inputs=[x], template=[("L", length)], grid=(rows * 256, 1, 1),
                              threadgroup=(256, 1, 1), output_shapes=[x.shape, (rows,)],
                              output_dtypes=[jk.float32, jk.float32])
    np.testing.assert_array_equal(reversed_.numpy(), x[:, ::-1])
    np.testing.assert_array_equal(total.numpy(), x.sum(axis=1))  # small integers: exact


FILL_SHARED = """
// Fills all `words` 32-bit words of dynamic shared memory, then reads them back reversed.
extern __shared__ unsigned int words_buf[];
const unsigned n = words[0];
for (unsigned j = threadIdx.x; j < n; j += blockDim.x) words_buf[j] = j * 2654435761u + blockIdx.x;
__syncthreads();
for (unsigned j = threadIdx.x; j < n; j += blockDim.x) {
    out[blockIdx.x * n + j] = words_buf[n - 1 - j];
}
"""


def test_one_source_several_shared_memory_amounts():
    # The same source (so the same compiled function) launched with growing and shrinking
    # amounts: the function's shared memory limit must follow each launch.
    blocks = 3
    for kib in [64, 160, 8, 200, 100, 48]:
        nbytes = kib * 1024
        n = nbytes // 4
        kernel = jk.cuda_kernel("smem_fill", ["words"], ["out"], FILL_SHARED, shared_memory=nbytes)
        (out,) = kernel(inputs=[n], grid=(blocks * 128, 1, 1), threadgroup=(128, 1, 1),
                        output_shapes=[(blocks, n)], output_dtypes=[jk.uint32])
        j = np.arange(n, dtype=np.uint64)[::-1]
        want = (j[None, :] * 2654435761 + np.arange(blocks, dtype=np.uint64)[:, None]) % 2 ** 32
        np.testing.assert_array_equal(out.numpy(), want.astype(np.uint32), err_msg=f"{kib} KiB")


def test_shared_memory_over_device_maximum():
    with pytest.raises(jk.ArgumentError, match="^shared_memory"):
        kernel = jk.cuda_kernel("smem_too_much", ["words"], ["out"], FILL_SHARED,
                                shared_memory=1 << 20)
        kernel(inputs=[16], grid=(128, 1, 1), threadgroup=(128, 1, 1),
               output_shapes=[(16,)], output_dtypes=[jk.uint32])


@pytest.mark.parametrize("argument,grid,threadgroup", [
    ("threadgroup", (4096, 1, 1), (2048, 1, 1)),  # over 1024 threads per block
    ("threadgroup", (32, 32, 2), (32, 32, 2)),   # 2048 threads in total
    ("threadgroup", (1, 1, 128), (1, 1, 128)),   # block z over 64
    ("grid", (1, 2 * 65536, 1), (1, 1, 1)),      # over 65535 blocks in y
    ("grid", (1, 1, 70000), (1, 1, 1)),          # over 65535 blocks in z
])
def test_launch_over_device_limits(argument, grid, threadgroup):
    kernel = jk.cuda_kernel("limits", ["dummy"], ["out"], INDEX + "if (i == 0) out[0] = 1.0f;")
    with pytest.raises(jk.ArgumentError, match=f"^{argument}:"):
        kernel(inputs=[np.zeros(1, np.float32)], grid=grid, threadgroup=threadgroup,
               output_shapes=[(1,)], output_dtypes=[jk.float32])
