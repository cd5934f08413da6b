"""Quantized GEMV with 4-bit weights (8 per uint32, MLX's affine layout: w = scale * q + bias per group of 64),
one warp per output row, a warp-shuffle reduction in a header helper, float16 activations and output."""
import numpy as np

GROUP = 64

KERNEL = dict(
    name="qgemv_int4",
    input_names=["w", "scales", "biases", "x"],
    output_names=["y"],
    header=r"""
template <typename T>
__device__ inline T warp_reduce_sum(T v) {
#pragma unroll
  for (int m = 16; m >= 1; m >>= 1) v += __shfl_xor_sync(0xffffffff, v, m);
  return v;
}
""",
    source=r"""
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int lane = threadIdx.x;
  int K = x_shape[0];
  if (row >= w_shape[0]) return;
  int words = K / 8;
  const uint32_t* wr = w + (size_t)row * words;
  float acc = 0.f;
  for (int wi = lane; wi < words; wi += 32) {
    uint32_t packed = wr[wi];
    int g = (wi * 8) / GROUP_SIZE;
    float s = __half2float(scales[row * (K / GROUP_SIZE) + g]);
    float b = __half2float(biases[row * (K / GROUP_SIZE) + g]);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float q = float((packed >> (4 * j)) & 0xf);
      acc += (s * q + b) * __half2float(x[wi * 8 + j]);
    }
  }
  acc = warp_reduce_sum(acc);
  if (lane == 0) y[row] = __float2half(acc);
""",
)


def case():
    rng = np.random.default_rng(7)
    n, k = 96, 512
    q = rng.integers(0, 16, size=(n, k)).astype(np.uint32)
    packed = np.zeros((n, k // 8), np.uint32)
    for j in range(8):
        packed |= q[:, j::8] << np.uint32(4 * j)
    scales = rng.uniform(0.01, 0.05, size=(n, k // GROUP)).astype(np.float16)
    biases = rng.uniform(-0.2, 0.0, size=(n, k // GROUP)).astype(np.float16)
    x = rng.normal(size=k).astype(np.float16)
    wf = q * np.repeat(scales.astype(np.float32), GROUP, axis=1) + np.repeat(biases.astype(np.float32), GROUP, axis=1)
    ref = wf @ x.astype(np.float32)
    return dict(inputs=[packed, scales, biases, x], template=[("GROUP_SIZE", GROUP)], grid=(32, n, 1),
                threadgroup=(32, 4, 1), output_shapes=[(n,)], output_dtypes=[np.float16], expected=[ref],
                rtol=1e-2, atol=2e-2)
