"""The kernels of bench_autotune.py, written as users write them: an RMSNorm and a row softmax (one row per block,
BLOCK threads) and a GEMV (ROWS rows per block, one warp per row), as jitkernel bodies with their configuration
spaces, and the same three as Triton kernels under @triton.autotune over a comparable space (Triton optional)."""
from __future__ import annotations

import jitkernel as jk

BLOCK_REDUCE = """
__device__ float warp_sum(float v) { for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o); return v; }
__device__ float warp_max(float v) { for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o)); return v; }
template <int B, bool MAX> __device__ float block_reduce(float v, float* part) {
  v = MAX ? warp_max(v) : warp_sum(v);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < (B + 31) / 32 ? part[threadIdx.x] : (MAX ? -INFINITY : 0.f);
    t = MAX ? warp_max(t) : warp_sum(t);
    if (threadIdx.x == 0) part[0] = t;
  }
  __syncthreads();
  float r = part[0];
  __syncthreads();
  return r;
}
"""

RMSNORM = jk.cuda_kernel(name="bench_rmsnorm", input_names=["x", "w", "eps"], output_names=["y"], header=BLOCK_REDUCE,
                         source="""
  __shared__ float part[32];
  const int n = x_shape[1];
  const float* xr = x + (size_t)blockIdx.x * n;
  float ss = 0.f;
  for (int j = threadIdx.x; j < n; j += BLOCK) { float v = xr[j]; ss += v * v; }
  const float r = rsqrtf(block_reduce<BLOCK, false>(ss, part) / n + eps[0]);
  for (int j = threadIdx.x; j < n; j += BLOCK) y[(size_t)blockIdx.x * n + j] = xr[j] * r * w[j];
""")

SOFTMAX = jk.cuda_kernel(name="bench_softmax", input_names=["x"], output_names=["y"], header=BLOCK_REDUCE, source="""
  __shared__ float part[32];
  const int n = x_shape[1];
  const float* xr = x + (size_t)blockIdx.x * n;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < n; j += BLOCK) m = fmaxf(m, xr[j]);
  m = block_reduce<BLOCK, true>(m, part);
  float s = 0.f;
  for (int j = threadIdx.x; j < n; j += BLOCK) s += __expf(xr[j] - m);
  const float inv = 1.f / block_reduce<BLOCK, false>(s, part);
  for (int j = threadIdx.x; j < n; j += BLOCK) y[(size_t)blockIdx.x * n + j] = __expf(xr[j] - m) * inv;
""")

GEMV = jk.cuda_kernel(name="bench_gemv", input_names=["a", "x"], output_names=["y"], source="""
  const int k = a_shape[1];
  const int row = blockIdx.x * ROWS + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= a_shape[0]) return;
  const float* ar = a + (size_t)row * k;
  float acc = 0.f;
  for (int j = lane; j < k; j += 32) acc += ar[j] * x[j];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffff, acc, o);
  if (lane == 0) y[row] = acc;
""")


def row_grid(shapes, cfg):
    """One block per row: grid in threads (blocks * threads per block)."""
    return (shapes[0][0] * cfg.threadgroup[0], 1, 1)


def gemv_grid(shapes, cfg):
    rows = dict(cfg.template)["ROWS"]
    return (-(-shapes[0][0] // rows) * cfg.threadgroup[0], 1, 1)


def block_space():
    return [jk.Config(template={"BLOCK": b}, threadgroup=(b, 1, 1)) for b in (64, 128, 256, 512, 1024)]


def gemv_space():
    return [jk.Config(template={"ROWS": r}, threadgroup=(32 * r, 1, 1)) for r in (1, 2, 4, 8, 16, 32)]


# The naive fixed launch a user writes first: 256 threads per block.
NAIVE = {"rmsnorm": jk.Config(template={"BLOCK": 256}, threadgroup=(256, 1, 1)),
         "softmax": jk.Config(template={"BLOCK": 256}, threadgroup=(256, 1, 1)),
         "gemv": jk.Config(template={"ROWS": 8}, threadgroup=(256, 1, 1))}


def triton_kernels():
    """name -> (autotuned Triton kernel, number of configs), or None without Triton."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None
    warps = [triton.Config({}, num_warps=w) for w in (2, 4, 8, 16, 32)]

    @triton.autotune(configs=warps, key=["N"])
    @triton.jit
    def rmsnorm(X, W, Y, N, eps, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(X + row * N + cols, mask=mask, other=0.0)
        r = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
        tl.store(Y + row * N + cols, x * r * tl.load(W + cols, mask=mask), mask=mask)

    @triton.autotune(configs=warps, key=["N"])
    @triton.jit
    def softmax(X, Y, N, BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(X + row * N + cols, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, 0))
        tl.store(Y + row * N + cols, e / tl.sum(e, 0), mask=mask)

    gemv_configs = [triton.Config({"BLOCK_M": m, "BLOCK_K": kk}, num_warps=4) for m in (2, 4, 8, 16)
                    for kk in (128, 256, 512)]

    @triton.autotune(configs=gemv_configs, key=["M", "K"])
    @triton.jit
    def gemv(A, X, Y, M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        acc = tl.zeros((BLOCK_M,), tl.float32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + tl.arange(0, BLOCK_K)
            a = tl.load(A + rows[:, None] * K + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < K),
                        other=0.0)
            acc += tl.sum(a * tl.load(X + cols, mask=cols < K, other=0.0)[None, :], 1)
        tl.store(Y + rows, acc, mask=rows < M)

    return {"rmsnorm": (rmsnorm, len(warps)), "softmax": (softmax, len(warps)), "gemv": (gemv, len(gemv_configs)),
            "triton": triton}
