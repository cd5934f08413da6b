"""Top-K values of each row, one thread per row keeping a sorted register array; K a template int, Limits<float>."""
import numpy as np

KERNEL = dict(
    name="topk_rows",
    input_names=["x"],
    output_names=["vals"],
    source=r"""
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  int rows = x_shape[0], n = x_shape[1];
  if (row >= rows) return;
  float top[K];
#pragma unroll
  for (int j = 0; j < K; ++j) top[j] = Limits<float>::min();  // -inf
  for (int c = 0; c < n; ++c) {
    float v = x[row * n + c];
    if (v <= top[K - 1]) continue;
    int j = K - 1;
    while (j > 0 && top[j - 1] < v) { top[j] = top[j - 1]; --j; }
    top[j] = v;
  }
  for (int j = 0; j < K; ++j) vals[row * K + j] = top[j];
""",
)


def case():
    x = np.random.default_rng(5).normal(size=(70, 129)).astype(np.float32)
    ref = -np.sort(-x, axis=1)[:, :5]
    return dict(inputs=[x], template=[("K", 5)], grid=(70, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(70, 5)],
                output_dtypes=[np.float32], expected=[ref], rtol=0, atol=0)
