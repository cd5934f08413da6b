"""y = a * x + y on float16 pairs: half2 loads, __floats2half2_rn, __hfma2, __low2float / __high2float checks."""
import numpy as np

KERNEL = dict(
    name="half2_axpy",
    input_names=["x", "y_in", "alpha"],
    output_names=["y"],
    source=r"""
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int n2 = x_shape[0] / 2;
  if (i >= n2) return;
  half2 a2 = __floats2half2_rn(alpha[0], alpha[0]);
  half2 xv = reinterpret_cast<const half2*>(x)[i];
  half2 yv = reinterpret_cast<const half2*>(y_in)[i];
  half2 r = __hfma2(a2, xv, yv);
  reinterpret_cast<half2*>(y)[i] = r;
  if (__low2float(r) != __half2float(__low2half(r))) __trap();
""",
)


def case():
    rng = np.random.default_rng(10)
    x = rng.normal(size=4096).astype(np.float16)
    y = rng.normal(size=4096).astype(np.float16)
    ref = 0.75 * x.astype(np.float32) + y.astype(np.float32)
    return dict(inputs=[x, y, 0.75], grid=(2048, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(4096,)],
                output_dtypes=[np.float16], expected=[ref], rtol=2e-3, atol=4e-3)
