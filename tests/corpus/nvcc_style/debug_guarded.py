"""printf and assert as nvcc kernels use them: a debug printf behind #ifdef and a NaN guard, assert on an invariant
that holds; the kernel itself is a clamp."""
import numpy as np

KERNEL = dict(
    name="debug_guarded",
    input_names=["x", "lo", "hi"],
    output_names=["y"],
    source=r"""
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef KERNEL_DEBUG
  if (i == 0) printf("debug: n=%d\n", (int)x_shape[0]);
#endif
  if (i >= x_shape[0]) return;
  assert(lo[0] <= hi[0]);
  float v = x[i];
  if (v != v) printf("NaN at %d\n", i);
  y[i] = fminf(fmaxf(v, lo[0]), hi[0]);
""",
)


def case():
    x = np.random.default_rng(16).normal(size=777).astype(np.float32)
    return dict(inputs=[x, -0.5, 0.5], grid=(777, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(777,)],
                output_dtypes=[np.float32], expected=[np.clip(x, -0.5, 0.5)], rtol=0, atol=0)
