"""One body, several ops: `if constexpr` on template int/bool values, a dtype template T, and #if / #ifdef on macros
of the header and on __CUDA_ARCH__."""
import numpy as np

KERNEL = dict(
    name="constexpr_dispatch",
    input_names=["x"],
    output_names=["y"],
    header="#define USE_FAST_EXP 1\n",
    source=r"""
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= x_shape[0]) return;
  float v = static_cast<float>(x[i]);
  float r;
  if constexpr (OP == 0) {
#if USE_FAST_EXP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    r = __expf(v);
#else
    r = expf(v);
#endif
  } else if constexpr (OP == 1) {
    r = v > 0.f ? v : 0.f;
  } else {
    r = 1.f / (1.f + expf(-v));
  }
  if constexpr (NEGATE) r = -r;
#ifdef USE_FAST_EXP
  y[i] = static_cast<T>(r);
#endif
""",
)


def case():
    x = np.random.default_rng(12).normal(size=3000).astype(np.float32)
    ref = -(1 / (1 + np.exp(-x)))
    return dict(inputs=[x], template=[("OP", 2), ("NEGATE", True), ("T", np.float32)], grid=(3000, 1, 1),
                threadgroup=(128, 1, 1), output_shapes=[(3000,)], output_dtypes=[np.float32], expected=[ref],
                rtol=1e-5, atol=1e-6)
