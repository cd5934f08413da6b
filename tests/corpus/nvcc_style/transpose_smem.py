"""Matrix transpose through a padded 32x33 shared-memory tile, 2-D grid of 32x8 blocks (the classic CUDA sample shape)."""
import numpy as np

KERNEL = dict(
    name="transpose_smem",
    input_names=["a"],
    output_names=["t"],
    header="#define TILE 32\n#define ROWS_PER_PASS 8\n",
    source=r"""
  __shared__ float tile[TILE][TILE + 1];
  int rows = a_shape[0], cols = a_shape[1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS) {
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = a[(y + j) * cols + x];
  }
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS) {
    if (x < rows && y + j < cols) t[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
  }
""",
)


def case():
    a = np.random.default_rng(6).normal(size=(100, 75)).astype(np.float32)
    gx, gy = -(-75 // 32), -(-100 // 32)
    return dict(inputs=[a], grid=(gx * 32, gy * 8, 1), threadgroup=(32, 8, 1), output_shapes=[(75, 100)],
                output_dtypes=[np.float32], expected=[a.T.copy()], rtol=0, atol=0)
