"""GELU (tanh form) on bfloat16: __bfloat162float / __float2bfloat16, tanhf, M_PI from <math.h> as nvcc gives it."""
import numpy as np

KERNEL = dict(
    name="bf16_gelu",
    input_names=["x"],
    output_names=["y"],
    header=r"""
__device__ __forceinline__ float gelu_tanh(float v) {
  const float k = sqrtf(2.0f / (float)M_PI);
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}
""",
    source=r"""
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < x_shape[0]) y[i] = __float2bfloat16(gelu_tanh(__bfloat162float(x[i])));
""",
)


def case():
    import ml_dtypes
    x = np.random.default_rng(11).normal(size=5000).astype(ml_dtypes.bfloat16)
    xf = x.astype(np.float32)
    ref = 0.5 * xf * (1 + np.tanh(np.sqrt(2 / np.pi) * (xf + 0.044715 * xf ** 3)))
    return dict(inputs=[x], grid=(5000, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(5000,)],
                output_dtypes=["bfloat16"], expected=[ref], rtol=1.6e-2, atol=1e-2)
