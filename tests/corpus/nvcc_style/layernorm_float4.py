"""LayerNorm with float4 vector loads and stores (reinterpret_cast), warp reductions via __shfl_down_sync + __shfl_sync."""
import numpy as np

KERNEL = dict(
    name="layernorm_float4",
    input_names=["x", "gamma", "beta"],
    output_names=["y"],
    header=r"""
__device__ float warp_allreduce(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return __shfl_sync(0xffffffffu, v, 0);
}
""",
    source=r"""
  // One warp per row; the row length is a multiple of 4.
  int row = blockIdx.x, lane = threadIdx.x;
  int n4 = D / 4;
  const float4* in = reinterpret_cast<const float4*>(x + (size_t)row * D);
  float s = 0.f;
  for (int i = lane; i < n4; i += 32) { float4 v = in[i]; s += v.x + v.y + v.z + v.w; }
  float mean = warp_allreduce(s) / D;
  float q = 0.f;
  for (int i = lane; i < n4; i += 32) {
    float4 v = in[i];
    q += (v.x - mean) * (v.x - mean) + (v.y - mean) * (v.y - mean) + (v.z - mean) * (v.z - mean) +
         (v.w - mean) * (v.w - mean);
  }
  float rstd = rsqrtf(warp_allreduce(q) / D + 1e-5f);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
  float4* out = reinterpret_cast<float4*>(y + (size_t)row * D);
  for (int i = lane; i < n4; i += 32) {
    float4 v = in[i], g = g4[i], b = b4[i];
    out[i] = make_float4((v.x - mean) * rstd * g.x + b.x, (v.y - mean) * rstd * g.y + b.y,
                         (v.z - mean) * rstd * g.z + b.z, (v.w - mean) * rstd * g.w + b.w);
  }
""",
)


def case():
    rng = np.random.default_rng(2)
    x = rng.normal(2.0, 3.0, size=(20, 512)).astype(np.float32)
    g = rng.normal(size=512).astype(np.float32)
    b = rng.normal(size=512).astype(np.float32)
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b
    return dict(inputs=[x, g, b], template=[("D", 512)], grid=(20 * 32, 1, 1), threadgroup=(32, 1, 1),
                output_shapes=[x.shape], output_dtypes=[np.float32], expected=[ref], rtol=1e-4, atol=1e-4)
