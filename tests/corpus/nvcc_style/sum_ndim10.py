"""Gather of a 10-dimensional strided array (MAX_NDIM is 10, as in MLX) with elem_to_loc_nd<10>, into a contiguous
output."""
import numpy as np

KERNEL = dict(
    name="sum_ndim10",
    input_names=["a"],
    output_names=["out"],
    ensure_row_contiguous=False,
    source=r"""
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= 1024) return;
  static_assert(MAX_NDIM == 10, "MLX's MAX_NDIM");
  out[i] = 2.0f * a[elem_to_loc_nd<10>(i, a_shape.data(), a_strides.data())];
""",
)


def case():
    a = np.random.default_rng(17).normal(size=(2,) * 10).astype(np.float32).transpose(9, 3, 1, 7, 0, 2, 8, 4, 6, 5)
    return dict(inputs=[a], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(2,) * 10],
                output_dtypes=[np.float32], expected=[2 * a], rtol=0, atol=0)
