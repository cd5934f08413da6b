"""Row softmax, one warp per row: -INFINITY, __expf, __shfl_xor_sync butterflies, a WARP_SIZE define of its own."""
import numpy as np

KERNEL = dict(
    name="softmax_rows",
    input_names=["x"],
    output_names=["y"],
    header=r"""
#define WARP_SIZE 32
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int m = WARP_SIZE / 2; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, m));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int m = WARP_SIZE / 2; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m);
  return v;
}
""",
    source=r"""
  int row = blockIdx.x;
  int lane = threadIdx.x;
  int cols = x_shape[1];
  const float* in = x + (size_t)row * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += WARP_SIZE) m = fmaxf(m, in[c]);
  m = warp_max(m);
  float s = 0.f;
  for (int c = lane; c < cols; c += WARP_SIZE) s += __expf(in[c] - m);
  s = warp_sum(s);
  for (int c = lane; c < cols; c += WARP_SIZE) y[(size_t)row * cols + c] = __expf(in[c] - m) / s;
""",
)


def case():
    x = np.random.default_rng(0).normal(size=(37, 200)).astype(np.float32) * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return dict(inputs=[x], grid=(37 * 32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[x.shape],
                output_dtypes=[np.float32], expected=[e / e.sum(axis=1, keepdims=True)], rtol=1e-4, atol=1e-6)
