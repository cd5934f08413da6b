"""Inclusive prefix sum of int32 rows: a Hillis-Steele scan in shared memory, one block of 512 threads per row."""
import numpy as np

KERNEL = dict(
    name="prefix_sum",
    input_names=["x"],
    output_names=["y"],
    source=r"""
  __shared__ int buf[2][512];
  int row = blockIdx.x, t = threadIdx.x;
  int n = x_shape[1];
  int cur = 0;
  buf[cur][t] = t < n ? x[row * n + t] : 0;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    int v = buf[cur][t];
    if (t >= off) v += buf[cur][t - off];
    buf[cur ^ 1][t] = v;
    cur ^= 1;
    __syncthreads();
  }
  if (t < n) y[row * n + t] = buf[cur][t];
""",
)


def case():
    x = np.random.default_rng(3).integers(-100, 100, size=(9, 500)).astype(np.int32)
    return dict(inputs=[x], grid=(9 * 512, 1, 1), threadgroup=(512, 1, 1), output_shapes=[x.shape],
                output_dtypes=[np.int32], expected=[np.cumsum(x, axis=1, dtype=np.int32)], rtol=0, atol=0)
