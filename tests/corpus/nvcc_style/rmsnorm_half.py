"""RMSNorm of float16 rows with a shared-memory block reduction: __half2float / __float2half, rsqrtf, a template T."""
import numpy as np

KERNEL = dict(
    name="rmsnorm_half",
    input_names=["x", "w", "eps"],
    output_names=["y"],
    source=r"""
  constexpr int BLOCK = 256;
  __shared__ float partial[BLOCK];
  int row = blockIdx.x;
  int n = x_shape[1];
  const __half* in = x + (size_t)row * n;
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += BLOCK) {
    float v = __half2float(in[i]);
    acc += v * v;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  float inv = rsqrtf(partial[0] / n + eps[0]);
  for (int i = threadIdx.x; i < n; i += BLOCK) {
    y[(size_t)row * n + i] = static_cast<T>(__half2float(in[i]) * inv * __half2float(w[i]));
  }
""",
)


def case():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 1000)).astype(np.float16)
    w = rng.uniform(0.5, 1.5, size=1000).astype(np.float16)
    xf = x.astype(np.float32)
    ref = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-5) * w.astype(np.float32)
    return dict(inputs=[x, w, 1e-5], template=[("T", np.float16)], grid=(12 * 256, 1, 1), threadgroup=(256, 1, 1),
                output_shapes=[x.shape], output_dtypes=[np.float16], expected=[ref], rtol=2e-3, atol=2e-3)
