"""The norm and activation of bench_distributed.py's transformer block, three ways: jitkernel kernels (CUDA C bodies,
forward and backward, the backward attached with ``kernel.vjp``), the same algorithms as Triton kernels registered
with ``torch.library.triton_op`` + ``wrap_triton`` + ``register_autograd``, and plain torch ops.

The benchmark compares the ways, so they share one design: RMSNorm forward is one threadgroup (Triton program) per
row, computes in float32 and saves 1/rms per row (float32); its backward takes a group of rows per threadgroup,
writes dx and a float32 partial sum of dw per group, and the groups' partials are summed by the framework
(``sum_rows``); GELU (tanh approximation) forward and backward are elementwise, computing in float32. The jitkernel
kernels are framework-neutral (torch tensors and JAX arrays alike); ``sum_rows`` is the only framework-specific piece.
"""
import math
from types import SimpleNamespace

EPS = 1e-6
GELU_K0 = 0.7978845608028654  # sqrt(2 / pi)
GELU_K1 = 0.044715
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
DWP_GROUPS = 512  # target number of row groups of the norm's backward (about 4 per SM on an H100)

# File-scope helpers of the norm kernels: the epsilon and a sum over the threadgroup (NT threads, a multiple of 32).
NORM_HEADER = r"""
constexpr float EPS = 1e-6f;

// Sum of v over the threadgroup; every thread gets the total. `partial` holds one float per warp.
__device__ __forceinline__ float block_sum(float v, float* partial) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  float total = 0.f;
  for (int i = 0; i < (int)(blockDim.x >> 5); ++i) total += partial[i];
  __syncthreads();  // partial may be written again by the next call
  return total;
}
"""

# y = x * rstd * w per row of x (M x D); rstd = 1 / sqrt(mean(x^2) + EPS). One threadgroup of NT threads per row;
# each thread keeps PER vectors of VEC elements (16 bytes) of the row in registers.
RMS_FWD = r"""
constexpr int CH = D / VEC;
constexpr int PER = (CH + NT - 1) / NT;
__shared__ float partial[NT / 32];
const size_t row = blockIdx.x;
const T* xr = x + row * D;
T* yr = y + row * D;
float v[PER][VEC];
float ss = 0.f;
#pragma unroll
for (int k = 0; k < PER; ++k) {
  const int c = threadIdx.x + k * NT;
  if (c < CH) {
    const auto a = load_vector<VEC>(xr, c);
#pragma unroll
    for (int e = 0; e < VEC; ++e) { v[k][e] = static_cast<float>(a[e]); ss += v[k][e] * v[k][e]; }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[k][e] = 0.f;
  }
}
const float r = rsqrtf(block_sum(ss, partial) / D + EPS);
#pragma unroll
for (int k = 0; k < PER; ++k) {
  const int c = threadIdx.x + k * NT;
  if (c < CH) {
    const auto wv = load_vector<VEC>(w, c);
    AlignedVector<T, VEC> o;
#pragma unroll
    for (int e = 0; e < VEC; ++e) o[e] = T(v[k][e] * r * static_cast<float>(wv[e]));
    store_vector<VEC>(yr, c, o);
  }
}
if (threadIdx.x == 0) rstd[row] = r;
"""

# dx = rstd * (g - x * rstd^2 * mean(g * x)) with g = dy * w, per row; dwp[group] = sum over the group's rows of
# dy * x * rstd (float32). Threadgroup b takes rows b*RPB ... b*RPB + RPB - 1 (fewer in the last group).
RMS_BWD = r"""
constexpr int CH = D / VEC;
constexpr int PER = (CH + NT - 1) / NT;
__shared__ float partial[NT / 32];
const int rows = (int)x_shape[0];
const int first = blockIdx.x * RPB;
float wf[PER][VEC], acc[PER][VEC];
#pragma unroll
for (int k = 0; k < PER; ++k) {
  const int c = threadIdx.x + k * NT;
  if (c < CH) {
    const auto wv = load_vector<VEC>(w, c);
#pragma unroll
    for (int e = 0; e < VEC; ++e) wf[k][e] = static_cast<float>(wv[e]);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) wf[k][e] = 0.f;
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e) acc[k][e] = 0.f;
}
for (int i = 0; i < RPB; ++i) {
  const int row = first + i;
  if (row >= rows) break;  // the same for the whole threadgroup
  const size_t off = (size_t)row * D;
  const float r = rstd[row];
  float xv[PER][VEC], g[PER][VEC];
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int c = threadIdx.x + k * NT;
    if (c < CH) {
      const auto a = load_vector<VEC>(x + off, c);
      const auto b = load_vector<VEC>(dy + off, c);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        xv[k][e] = static_cast<float>(a[e]);
        const float d = static_cast<float>(b[e]);
        g[k][e] = d * wf[k][e];
        s += g[k][e] * xv[k][e];
        acc[k][e] += d * xv[k][e] * r;
      }
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) { xv[k][e] = 0.f; g[k][e] = 0.f; }
    }
  }
  const float c2 = r * r * block_sum(s, partial) / D;
#pragma unroll
  for (int k = 0; k < PER; ++k) {
    const int c = threadIdx.x + k * NT;
    if (c < CH) {
      AlignedVector<T, VEC> o;
#pragma unroll
      for (int e = 0; e < VEC; ++e) o[e] = T(r * (g[k][e] - xv[k][e] * c2));
      store_vector<VEC>(dx + off, c, o);
    }
  }
}
#pragma unroll
for (int k = 0; k < PER; ++k) {
  const int c = threadIdx.x + k * NT;
  if (c < CH) {
    AlignedVector<float, VEC> o;
#pragma unroll
    for (int e = 0; e < VEC; ++e) o[e] = acc[k][e];
    store_vector<VEC>(dwp + (size_t)blockIdx.x * D, c, o);
  }
}
"""

GELU_HEADER = r"""
constexpr float K0 = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float K1 = 0.044715f;
"""

# y = 0.5 h (1 + tanh(K0 (h + K1 h^3))) over N elements, VEC per thread.
GELU_FWD = r"""
const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
if (i * VEC < (size_t)N) {
  const auto a = load_vector<VEC>(h, (uint32_t)i, N, T(0));
  AlignedVector<T, VEC> o;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    const float v = static_cast<float>(a[e]);
    o[e] = T(0.5f * v * (1.f + tanhf(K0 * (v + K1 * v * v * v))));
  }
  store_vector<VEC>(y, (uint32_t)i, o, N);
}
"""

# dh = dy * (0.5 (1 + t) + 0.5 h (1 - t^2) K0 (1 + 3 K1 h^2)), t = tanh(K0 (h + K1 h^3)).
GELU_BWD = r"""
const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
if (i * VEC < (size_t)N) {
  const auto a = load_vector<VEC>(h, (uint32_t)i, N, T(0));
  const auto b = load_vector<VEC>(dy, (uint32_t)i, N, T(0));
  AlignedVector<T, VEC> o;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    const float v = static_cast<float>(a[e]);
    const float t = tanhf(K0 * (v + K1 * v * v * v));
    const float d = 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * K0 * (1.f + 3.f * K1 * v * v);
    o[e] = T(static_cast<float>(b[e]) * d);
  }
  store_vector<VEC>(dh, (uint32_t)i, o, N);
}
"""


def norm_geometry(d: int, itemsize: int):
    """(VEC, NT) of the norm kernels for rows of d elements: 16-byte vectors, one vector per thread where the row
    allows (NT a multiple of 32, at most 1024)."""
    vec = 16 // itemsize
    if d % vec:
        raise ValueError(f"the norm kernels need the model width ({d}) to be a multiple of {vec}")
    chunks = d // vec
    return vec, min(1024, max(32, -(-chunks // 32) * 32))


def rows_per_group(m: int) -> int:
    """Rows per threadgroup (Triton program) of the norm's backward: about DWP_GROUPS groups."""
    return max(1, -(-m // DWP_GROUPS))


# --- jitkernel --------------------------------------------------------------------------------------------

def jitkernel_ops(dtype_name: str, sum_rows):
    """``rmsnorm(x, w)`` (x: rows x d) and ``gelu(h)`` as jitkernel kernels with backward, for arrays of dtype
    ``dtype_name`` ("float32", "bfloat16"). ``sum_rows(dwp, like)`` sums the float32 (groups x d) partials over
    groups into ``like``'s dtype, in the framework of the arrays (torch or jnp). Works on torch tensors (eager,
    autograd, torch.compile) and JAX arrays (jax.jit, shard_map, jax.grad) alike."""
    import jitkernel as jk

    t = jk.dtype(dtype_name)
    itemsize = ITEMSIZE[dtype_name]
    vec_e = 16 // itemsize
    k = SimpleNamespace()
    k.rms_fwd = jk.cuda_kernel(name="bench_rmsnorm_fwd", input_names=["x", "w"], output_names=["y", "rstd"],
                               source=RMS_FWD, header=NORM_HEADER)
    k.rms_bwd = jk.cuda_kernel(name="bench_rmsnorm_bwd", input_names=["x", "w", "rstd", "dy"],
                               output_names=["dx", "dwp"], source=RMS_BWD, header=NORM_HEADER)
    k.gelu_fwd = jk.cuda_kernel(name="bench_gelu_fwd", input_names=["h"], output_names=["y"], source=GELU_FWD,
                                header=GELU_HEADER)
    k.gelu_bwd = jk.cuda_kernel(name="bench_gelu_bwd", input_names=["h", "dy"], output_names=["dh"],
                                source=GELU_BWD, header=GELU_HEADER)

    def rms_fwd_call(x, w):
        m, d = x.shape
        vec, nt = norm_geometry(d, itemsize)
        return dict(inputs=[x, w], output_shapes=[(m, d), (m,)], output_dtypes=[t, jk.float32],
                    grid=(m * nt, 1, 1), threadgroup=(nt, 1, 1),
                    template=[("T", t), ("D", d), ("VEC", vec), ("NT", nt)])

    def rms_bwd_call(x, w, rstd, dy):
        m, d = x.shape
        vec, nt = norm_geometry(d, itemsize)
        rpb = rows_per_group(m)
        groups = -(-m // rpb)
        return dict(inputs=[x, w, rstd, dy], output_shapes=[(m, d), (groups, d)], output_dtypes=[t, jk.float32],
                    grid=(groups * nt, 1, 1), threadgroup=(nt, 1, 1),
                    template=[("T", t), ("D", d), ("VEC", vec), ("NT", nt), ("RPB", rpb)])

    def gelu_call(arrays):
        shape = tuple(arrays[0].shape)
        n = math.prod(shape)
        if n >= 2 ** 31:
            raise ValueError("the GELU kernels index with 32-bit vector offsets: at most 2^31 - 1 elements")
        return dict(inputs=arrays, output_shapes=[shape], output_dtypes=[t], grid=(-(-n // vec_e), 1, 1),
                    threadgroup=(256, 1, 1), template=[("T", t), ("N", n), ("VEC", vec_e)])

    @k.rms_fwd.vjp
    def _rms_vjp(primals, outputs, cotangents):
        x, w = primals
        dx, dwp = k.rms_bwd(**rms_bwd_call(x, w, outputs[1], cotangents[0]))
        return [dx, sum_rows(dwp, w)]

    @k.gelu_fwd.vjp
    def _gelu_vjp(primals, outputs, cotangents):
        return [k.gelu_bwd(**gelu_call([primals[0], cotangents[0]]))[0]]

    def rmsnorm(x, w):
        return k.rms_fwd(**rms_fwd_call(x, w))[0]

    def gelu(h):
        return k.gelu_fwd(**gelu_call([h]))[0]

    k.calls = SimpleNamespace(rms_fwd=rms_fwd_call, rms_bwd=rms_bwd_call, gelu=gelu_call)
    return SimpleNamespace(rmsnorm=rmsnorm, gelu=gelu, kernels=k)


def compile_jitkernel(dtype_name: str, m: int, d: int, hidden: int, arch: str = "sm_90a") -> dict:
    """Compiles the four jitkernel kernels for the block's shapes (no GPU needed); {kernel name: cubin bytes}.
    NumPy stand-ins give the signatures (ml_dtypes for bfloat16)."""
    import numpy as np

    if dtype_name == "bfloat16":
        import ml_dtypes
        np_dtype = ml_dtypes.bfloat16
    else:
        np_dtype = np.dtype(dtype_name)
    ops = jitkernel_ops(dtype_name, lambda dwp, like: None)
    k = ops.kernels
    x, w = np.zeros((m, d), np_dtype), np.zeros((d,), np_dtype)
    h = np.zeros((m, hidden), np_dtype)
    rstd = np.zeros((m,), np.float32)
    out = {}
    for name, kernel, call in (("rms_fwd", k.rms_fwd, k.calls.rms_fwd(x, w)),
                               ("rms_bwd", k.rms_bwd, k.calls.rms_bwd(x, w, rstd, x)),
                               ("gelu_fwd", k.gelu_fwd, k.calls.gelu([h])),
                               ("gelu_bwd", k.gelu_bwd, k.calls.gelu([h, h]))):
        out[name] = kernel.compile(**call, arch=arch, target="cubin")
    return out


# --- Triton -----------------------------------------------------------------------------------------------

_triton_ops = None


def _triton_kernels():
    """The four Triton kernels (norm forward and backward, GELU forward and backward), in the order
    (rms_fwd, rms_bwd, gelu_fwd, gelu_bwd)."""
    import triton
    import triton.language as tl

    @triton.jit
    def rms_fwd_kernel(x_ptr, w_ptr, y_ptr, rstd_ptr, D, EPS_: tl.constexpr, BLOCK_D: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK_D)
        mask = cols < D
        x = tl.load(x_ptr + row * D + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + EPS_)
        tl.store(y_ptr + row * D + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(rstd_ptr + row, r)

    @triton.jit
    def rms_bwd_kernel(x_ptr, w_ptr, rstd_ptr, dy_ptr, dx_ptr, dwp_ptr, M, D, RPB: tl.constexpr,
                       BLOCK_D: tl.constexpr):
        group = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK_D)
        cmask = cols < D
        w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)
        acc = tl.zeros([BLOCK_D], dtype=tl.float32)
        for i in range(RPB):
            row = group * RPB + i
            mask = cmask & (row < M)
            x = tl.load(x_ptr + row * D + cols, mask=mask, other=0.0).to(tl.float32)
            dy = tl.load(dy_ptr + row * D + cols, mask=mask, other=0.0).to(tl.float32)
            r = tl.load(rstd_ptr + row, mask=row < M, other=0.0)
            g = dy * w
            c2 = r * r * tl.sum(g * x, axis=0) / D
            tl.store(dx_ptr + row * D + cols, (r * (g - x * c2)).to(dx_ptr.dtype.element_ty), mask=mask)
            acc += dy * x * r
        tl.store(dwp_ptr + group * D + cols, acc, mask=cmask)

    @triton.jit
    def gelu_fwd_kernel(h_ptr, y_ptr, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < N
        v = tl.load(h_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        t = 2.0 * tl.sigmoid(2.0 * (0.7978845608028654 * (v + 0.044715 * v * v * v))) - 1.0
        tl.store(y_ptr + offs, (0.5 * v * (1.0 + t)).to(y_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def gelu_bwd_kernel(h_ptr, dy_ptr, dh_ptr, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < N
        v = tl.load(h_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        t = 2.0 * tl.sigmoid(2.0 * (0.7978845608028654 * (v + 0.044715 * v * v * v))) - 1.0
        d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * v * v)
        tl.store(dh_ptr + offs, (dy * d).to(dh_ptr.dtype.element_ty), mask=mask)

    return rms_fwd_kernel, rms_bwd_kernel, gelu_fwd_kernel, gelu_bwd_kernel


def _triton_library_ops(kernels):
    """The kernels as torch.library ops under ``jkbench_dist`` (``triton_op`` + ``wrap_triton``), their backward
    registered with ``register_autograd``; (rmsnorm_fwd, gelu_fwd), the two ops autograd differentiates."""
    import torch
    import triton
    from torch.library import triton_op, wrap_triton

    rms_fwd_kernel, rms_bwd_kernel, gelu_fwd_kernel, gelu_bwd_kernel = kernels

    @triton_op("jkbench_dist::rmsnorm_fwd", mutates_args=())
    def rmsnorm_fwd(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m, d = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty((m,), dtype=torch.float32, device=x.device)
        block_d = triton.next_power_of_2(d)
        wrap_triton(rms_fwd_kernel)[(m,)](x, w, y, rstd, d, EPS_=EPS, BLOCK_D=block_d)
        return y, rstd

    @triton_op("jkbench_dist::rmsnorm_bwd", mutates_args=())
    def rmsnorm_bwd(x: torch.Tensor, w: torch.Tensor, rstd: torch.Tensor,
                    dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m, d = x.shape
        rpb = rows_per_group(m)
        groups = -(-m // rpb)
        dx = torch.empty_like(x)
        dwp = torch.empty((groups, d), dtype=torch.float32, device=x.device)
        block_d = triton.next_power_of_2(d)
        wrap_triton(rms_bwd_kernel)[(groups,)](x, w, rstd, dy, dx, dwp, m, d, RPB=rpb, BLOCK_D=block_d)
        return dx, dwp

    @triton_op("jkbench_dist::gelu_fwd", mutates_args=())
    def gelu_fwd(h: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(h)
        n = h.numel()
        wrap_triton(gelu_fwd_kernel)[(triton.cdiv(n, 1024),)](h, y, n, BLOCK=1024)
        return y

    @triton_op("jkbench_dist::gelu_bwd", mutates_args=())
    def gelu_bwd(h: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        dh = torch.empty_like(h)
        n = h.numel()
        wrap_triton(gelu_bwd_kernel)[(triton.cdiv(n, 1024),)](h, dy, dh, n, BLOCK=1024)
        return dh

    def rms_setup(ctx, inputs, output):
        x, w = inputs
        ctx.save_for_backward(x, w, output[1])

    def rms_backward(ctx, dy, _drstd):
        x, w, rstd = ctx.saved_tensors
        dx, dwp = rmsnorm_bwd(x, w, rstd, dy.contiguous())
        return dx, dwp.sum(0).to(w.dtype)

    def gelu_setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def gelu_backward(ctx, dy):
        (h,) = ctx.saved_tensors
        return gelu_bwd(h, dy.contiguous())

    rmsnorm_fwd.register_autograd(rms_backward, setup_context=rms_setup)
    gelu_fwd.register_autograd(gelu_backward, setup_context=gelu_setup)
    return rmsnorm_fwd, gelu_fwd


def triton_ops():
    """``rmsnorm(x, w)`` and ``gelu(h)`` as Triton kernels inside torch.library ops (``triton_op`` + ``wrap_triton``)
    with ``register_autograd`` backward; registered once per process under the namespace ``jkbench_dist``."""
    global _triton_ops
    if _triton_ops is not None:
        return _triton_ops
    import triton

    rmsnorm_fwd, gelu_fwd = _triton_library_ops(_triton_kernels())

    def rmsnorm(x, w):
        return rmsnorm_fwd(x.contiguous(), w)[0]

    def gelu(h):
        return gelu_fwd(h.contiguous())

    _triton_ops = SimpleNamespace(rmsnorm=rmsnorm, gelu=gelu, version=triton.__version__)
    return _triton_ops


# --- plain torch ------------------------------------------------------------------------------------------

def torch_ops():
    """The same functions in plain torch ops (what inductor fuses by itself under torch.compile)."""
    import torch
    import torch.nn.functional as F

    def rmsnorm(x, w):
        xf = x.float()
        r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
        return (xf * r * w.float()).to(x.dtype)

    def gelu(h):
        return F.gelu(h, approximate="tanh")

    return SimpleNamespace(rmsnorm=rmsnorm, gelu=gelu)


def torch_sum_rows(dwp, like):
    """The jitkernel norm backward's partials summed over groups, for torch tensors."""
    return dwp.sum(0).to(like.dtype)


def jax_sum_rows(dwp, like):
    """The same for JAX arrays."""
    return dwp.sum(0).astype(like.dtype)
