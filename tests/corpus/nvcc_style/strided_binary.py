"""a + b for strided (non-contiguous) inputs: MLX's multi-stride elem_to_loc giving both locations at once, read with a
structured binding; ensure_row_contiguous=False keeps the strides."""
import numpy as np

KERNEL = dict(
    name="strided_binary",
    input_names=["a", "b"],
    output_names=["out"],
    ensure_row_contiguous=False,
    source=r"""
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t n = 1;
  for (int d = 0; d < a_ndim; ++d) n *= a_shape[d];
  if (i >= n) return;
  auto [la, lb] = elem_to_loc(i, a_shape.data(), a_strides.data(), b_strides.data(), a_ndim);
  out[i] = a[la] + b[lb];
""",
)


def case():
    rng = np.random.default_rng(13)
    a = rng.normal(size=(6, 40, 5)).astype(np.float32).transpose(2, 0, 1)
    b = rng.normal(size=(5, 12, 40)).astype(np.float32)[:, ::2, :]
    return dict(inputs=[a, b], grid=(1200, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(5, 6, 40)],
                output_dtypes=[np.float32], expected=[a + b], rtol=0, atol=0)
