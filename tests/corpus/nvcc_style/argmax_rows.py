"""Row argmax, one warp per row: (value, index) pairs reduced with __shfl_down_sync, -FLT_MAX and INT_MAX as sentinels."""
import numpy as np

KERNEL = dict(
    name="argmax_rows",
    input_names=["x"],
    output_names=["idx"],
    source=r"""
  int row = blockIdx.x, lane = threadIdx.x, n = x_shape[1];
  float best = -FLT_MAX;
  int best_i = INT_MAX;
  for (int c = lane; c < n; c += 32) {
    float v = x[row * n + c];
    if (v > best) { best = v; best_i = c; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_down_sync(0xffffffff, best, o);
    int oi = __shfl_down_sync(0xffffffff, best_i, o);
    if (ov > best || (ov == best && oi < best_i)) { best = ov; best_i = oi; }
  }
  if (lane == 0) idx[row] = best_i;
""",
)


def case():
    x = np.random.default_rng(4).normal(size=(50, 333)).astype(np.float32)
    return dict(inputs=[x], grid=(50 * 32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(50,)],
                output_dtypes=[np.int32], expected=[x.argmax(axis=1).astype(np.int32)], rtol=0, atol=0)
