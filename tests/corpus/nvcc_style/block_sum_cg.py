"""Block sums with cooperative_groups::this_thread_block() (block.sync(), thread_rank()), __syncwarp between the warp
steps of the tail and atomicAdd of each block's sum into one total."""
import numpy as np

KERNEL = dict(
    name="block_sum_cg",
    input_names=["x"],
    output_names=["total"],
    source=r"""
  auto block = cooperative_groups::this_thread_block();
  __shared__ float s[256];
  unsigned t = block.thread_rank();
  size_t i = blockIdx.x * 256 + t;
  s[t] = i < x_shape[0] ? x[i] : 0.f;
  block.sync();
  for (int st = 128; st > 32; st >>= 1) {
    if (t < st) s[t] += s[t + st];
    block.sync();
  }
  if (t < 32) {
    float v = s[t] + s[t + 32];
    __syncwarp();
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (t == 0) atomicAdd(total, v);
  }
""",
)


def case():
    x = np.random.default_rng(19).uniform(size=10000).astype(np.float32)
    return dict(inputs=[x], grid=(40 * 256, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(1,)],
                output_dtypes=[np.float32], init_value=0.0, expected=[np.array([x.sum(dtype=np.float64)])],
                rtol=1e-4, atol=1e-3)
