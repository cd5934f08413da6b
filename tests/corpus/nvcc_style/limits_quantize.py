"""Symmetric int8 quantization with saturation: Limits<int8_t> for the range, HUGE_VALF / isinf for infinite inputs,
NAN mapped to 0, rintf rounding."""
import numpy as np

KERNEL = dict(
    name="limits_quantize",
    input_names=["x", "inv_scale"],
    output_names=["q"],
    source=r"""
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= x_shape[0]) return;
  float v = x[i];
  float r;
  if (isnan(v)) r = 0.f;
  else if (isinf(v)) r = v == HUGE_VALF ? Limits<int8_t>::max() : Limits<int8_t>::min();
  else r = fminf(fmaxf(rintf(v * inv_scale[0]), (float)Limits<int8_t>::min()), (float)Limits<int8_t>::max());
  q[i] = static_cast<int8_t>(r);
""",
)


def case():
    x = np.random.default_rng(14).normal(scale=3.0, size=1000).astype(np.float32)
    x[:4] = [np.inf, -np.inf, np.nan, 1e30]
    ref = np.clip(np.rint(np.nan_to_num(x, nan=0.0, posinf=1e9, neginf=-1e9) * 20.0), -128, 127).astype(np.int8)
    return dict(inputs=[x, 20.0], grid=(1000, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(1000,)],
                output_dtypes=[np.int8], expected=[ref], rtol=0, atol=0)
