"""MLX-style elementwise op with N_READS-wide vector loads and stores (load_vector / store_vector with a size, so the
tail past a length that is not a multiple of N_READS is neither read nor written)."""
import numpy as np

KERNEL = dict(
    name="vector_scale_tail",
    input_names=["x", "s"],
    output_names=["y"],
    source=r"""
  uint32_t index = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t size = x_shape[0];
  if ((int64_t)index * N_READS >= size) return;
  auto v = load_vector<N_READS>(x, index, size, T(0));
  AlignedVector<T, N_READS> r;
#pragma unroll
  for (int j = 0; j < N_READS; ++j) r[j] = v[j] * s[0] + T(1);
  store_vector<N_READS>(y, index, r, size);
""",
)


def case():
    x = np.random.default_rng(15).normal(size=1003).astype(np.float32)
    return dict(inputs=[x, 3.0], template=[("T", np.float32), ("N_READS", 4)], grid=(251, 1, 1),
                threadgroup=(64, 1, 1), output_shapes=[(1003,)], output_dtypes=[np.float32],
                expected=[x * 3.0 + 1], rtol=1e-6, atol=1e-6)
