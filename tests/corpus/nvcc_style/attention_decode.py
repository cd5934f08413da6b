"""Attention decode: one query per head against a KV cache [H, T, D], one block of D threads per head. Scores in
shared memory, a max / sum softmax with -INFINITY, CUDART_INF_F for the masked positions past `length`."""
import numpy as np

KERNEL = dict(
    name="attention_decode",
    input_names=["q", "k", "v", "length"],
    output_names=["o"],
    source=r"""
  // D threads per block (D <= 128); T cache slots, the first length[0] valid.
  __shared__ float scores[1024];
  __shared__ float red[128];
  int h = blockIdx.x, d = threadIdx.x;
  int T = k_shape[1];
  const float* qh = q + h * D;
  const float* kh = k + (size_t)h * T * D;
  const float* vh = v + (size_t)h * T * D;
  float scale = rsqrtf((float)D);
  for (int t = d; t < T; t += D) {
    float s = 0.f;
    for (int j = 0; j < D; ++j) s += qh[j] * kh[t * D + j];
    scores[t] = t < length[0] ? s * scale : -CUDART_INF_F;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int t = d; t < T; t += D) m = fmaxf(m, scores[t]);
  red[d] = m;
  __syncthreads();
  for (int st = D / 2; st > 0; st >>= 1) {
    if (d < st) red[d] = fmaxf(red[d], red[d + st]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int t = d; t < T; t += D) { float e = expf(scores[t] - m); scores[t] = e; sum += e; }
  red[d] = sum;
  __syncthreads();
  for (int st = D / 2; st > 0; st >>= 1) {
    if (d < st) red[d] += red[d + st];
    __syncthreads();
  }
  float inv = 1.f / red[0];
  float acc = 0.f;
  for (int t = 0; t < T; ++t) acc += scores[t] * vh[t * D + d];
  o[h * D + d] = acc * inv;
""",
)


def case():
    rng = np.random.default_rng(9)
    H, T, D, L = 8, 300, 64, 257
    q = rng.normal(size=(H, D)).astype(np.float32)
    k = rng.normal(size=(H, T, D)).astype(np.float32)
    v = rng.normal(size=(H, T, D)).astype(np.float32)
    s = np.einsum("hd,htd->ht", q, k)[:, :L] / np.sqrt(D)
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    ref = np.einsum("ht,htd->hd", p, v[:, :L])
    return dict(inputs=[q, k, v, L], template=[("D", D)], grid=(H * D, 1, 1), threadgroup=(D, 1, 1),
                output_shapes=[(H, D)], output_dtypes=[np.float32], expected=[ref], rtol=1e-4, atol=1e-5)
