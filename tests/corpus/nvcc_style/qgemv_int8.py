"""Quantized GEMV with int8 weights and one float scale per row: MLX's load_vector / AlignedVector for 4-wide loads,
a block of 128 threads per row reduced through shared memory, bfloat16 output (__float2bfloat16)."""
import numpy as np

KERNEL = dict(
    name="qgemv_int8",
    input_names=["w", "scale", "x"],
    output_names=["y"],
    source=r"""
  constexpr int N_READS = 4;
  __shared__ float warp_sums[4];
  int row = blockIdx.x, K = x_shape[0];
  const int8_t* wr = w + (size_t)row * K;
  float acc = 0.f;
  for (int v = threadIdx.x; v * N_READS < K; v += blockDim.x) {
    AlignedVector<int8_t, N_READS> q = load_vector<N_READS>(wr, v);
    auto xv = load_vector<N_READS>(x, v);
#pragma unroll
    for (int j = 0; j < N_READS; ++j) acc += float(q[j]) * xv[j];
  }
  for (int m = 16; m > 0; m >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, m);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = warp_sums[0] + warp_sums[1] + warp_sums[2] + warp_sums[3];
    y[row] = __float2bfloat16(total * scale[row]);
  }
""",
)


def case():
    rng = np.random.default_rng(8)
    n, k = 64, 1024
    w = rng.integers(-127, 128, size=(n, k)).astype(np.int8)
    scale = rng.uniform(0.001, 0.01, size=n).astype(np.float32)
    x = rng.normal(size=k).astype(np.float32)
    ref = (w.astype(np.float64) @ x.astype(np.float64)) * scale
    return dict(inputs=[w, scale, x], grid=(n * 128, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(n,)],
                output_dtypes=["bfloat16"], expected=[ref], rtol=1e-2, atol=1e-2)
