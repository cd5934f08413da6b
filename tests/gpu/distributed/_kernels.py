"""Kernels with a backward, and small models built on them, shared by the multi-GPU torch tests
(tests/gpu/test_distributed_torch_gpu.py, tests/gpu/test_many_ranks_gpu.py and the torchrun scripts of this folder).

- ``rms_norm(hidden, weight)``: RMSNorm over the last dim (any number of rows), forward and backward kernels; the
  backward kernel gives dx and x * rstd, from which the vjp sums the weight's gradient with torch ops.
- ``gelu(x)``: GELU, tanh approximation, forward and backward kernels over any number of elements.
- ``rms_norm_ref`` / ``gelu_ref``: the same math in torch ops (the one-process reference).
- ``Model(kernels=...)``: blocks ``x + fc3(gelu(fc2(rms_norm(fc1(x)))))`` and a linear head; ``kernels=False`` is
  its plain-torch twin. ``MLP(act)``: fc1 -> act -> fc2, the tensor-parallel example.

All float32; every kernel computes its own bounds from the shapes it is given (they may be local shards).
"""
from __future__ import annotations

import torch

import jitkernel as jk

EPS = 1e-6
DIM, HIDDEN, OUT, SEQ = 32, 64, 4, 4  # the models' sizes and the tokens per sample of the test batches
THREADS = 128

_INDEX = "const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"
_GELU = "const float k = 0.7978845608028654f, c = 0.044715f;  // sqrt(2/pi)\n"

GELU_FWD = jk.cuda_kernel(name="dist_gelu_fwd", input_names=["act_in", "n"], output_names=["act_out"], source=(
    _INDEX + _GELU + """
    if (i < (size_t)n[0]) {
        const float v = act_in[i];
        act_out[i] = 0.5f * v * (1.0f + tanhf(k * (v + c * v * v * v)));
    }"""))
GELU_BWD = jk.cuda_kernel(name="dist_gelu_bwd", input_names=["act_in", "dy", "n"], output_names=["dx"], source=(
    _INDEX + _GELU + """
    if (i < (size_t)n[0]) {
        const float v = act_in[i];
        const float t = tanhf(k * (v + c * v * v * v));
        dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * k * (1.0f + 3.0f * c * v * v));
    }"""))

# One thread per row of `cols` values.
_ROW = (f"#define EPS {EPS!r}f\n"
        "const size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\nconst int C = cols[0];\n")
RMS_FWD = jk.cuda_kernel(
    name="dist_rms_norm_fwd", input_names=["norm_in", "norm_weight", "rows", "cols"], output_names=["norm_out"],
    source=_ROW + """
    if (r < (size_t)rows[0]) {
        const float* x = norm_in + r * C;
        float ss = 0.0f;
        for (int j = 0; j < C; ++j) ss += x[j] * x[j];
        const float s = rsqrtf(ss / C + EPS);
        for (int j = 0; j < C; ++j) norm_out[r * C + j] = x[j] * s * norm_weight[j];
    }""")
RMS_BWD = jk.cuda_kernel(
    name="dist_rms_norm_bwd", input_names=["norm_in", "norm_weight", "dy", "rows", "cols"],
    output_names=["dx", "x_hat"], source=_ROW + """
    if (r < (size_t)rows[0]) {
        const float* x = norm_in + r * C;
        const float* g = dy + r * C;
        float ss = 0.0f, gx = 0.0f;
        for (int j = 0; j < C; ++j) { ss += x[j] * x[j]; gx += g[j] * norm_weight[j] * x[j]; }
        const float s = rsqrtf(ss / C + EPS);
        const float m = s * s * s * gx / C;  // d rstd / dx, summed against the row's gradient
        for (int j = 0; j < C; ++j) {
            dx[r * C + j] = s * g[j] * norm_weight[j] - m * x[j];
            x_hat[r * C + j] = x[j] * s;
        }
    }""")


def _launch(kernel, inputs, like, count, outputs=1):
    """``kernel`` over ``count`` threads with ``outputs`` outputs shaped like ``like``."""
    return kernel(inputs=inputs, output_shapes=[like.shape] * outputs, output_dtypes=[like.dtype] * outputs,
                  grid=(count, 1, 1), threadgroup=(THREADS, 1, 1))


def gelu(x):
    """GELU (tanh approximation) by the kernels; differentiable."""
    return _launch(GELU_FWD, [x, x.numel()], x, x.numel())[0]


def rms_norm(hidden, weight):
    """RMSNorm of ``hidden`` over its last dim, times ``weight`` (shape: the last dim); differentiable."""
    cols = hidden.shape[-1]
    rows = hidden.numel() // cols
    return _launch(RMS_FWD, [hidden, weight, rows, cols], hidden, rows)[0]


@GELU_FWD.vjp
def _gelu_vjp(primals, outputs, cotangents):
    x, n = primals
    return [_launch(GELU_BWD, [x, cotangents[0], n], x, n)[0], None]


@RMS_FWD.vjp
def _rms_norm_vjp(primals, outputs, cotangents):
    x, weight, rows, cols = primals
    dy = cotangents[0]
    dx, x_hat = _launch(RMS_BWD, [x, weight, dy, rows, cols], x, rows, outputs=2)
    dweight = (dy * x_hat).reshape(-1, cols).sum(0)
    return [dx, dweight, None, None]


def gelu_ref(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def rms_norm_ref(hidden, weight):
    return hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS) * weight


class Block(torch.nn.Module):
    """x + fc3(gelu(fc2(rms_norm(fc1(x))))), by the kernels or (kernels=False) by torch ops."""

    def __init__(self, kernels: bool):
        super().__init__()
        self.kernels = kernels
        self.fc1 = torch.nn.Linear(DIM, HIDDEN)
        self.norm_weight = torch.nn.Parameter(1 + 0.1 * torch.randn(HIDDEN))
        self.fc2 = torch.nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = torch.nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        norm, act = (rms_norm, gelu) if self.kernels else (rms_norm_ref, gelu_ref)
        return x + self.fc3(act(self.fc2(norm(self.fc1(x), self.norm_weight))))


class Model(torch.nn.Module):
    def __init__(self, kernels: bool, depth: int = 2):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(kernels) for _ in range(depth))
        self.head = torch.nn.Linear(DIM, OUT)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class MLP(torch.nn.Module):
    """fc1 -> act -> fc2: column-parallel fc1 and row-parallel fc2 in the tensor-parallel test."""

    def __init__(self, act):
        super().__init__()
        self.act = act
        self.fc1 = torch.nn.Linear(DIM, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def twins(make_kernels, make_ref, seed: int = 0):
    """(module by ``make_kernels()``, its plain-torch twin by ``make_ref()`` with the same parameters), on the CPU."""
    torch.manual_seed(seed)
    model = make_kernels()
    twin = make_ref()
    twin.load_state_dict(model.state_dict())
    return model, twin


def batch(step: int, samples: int, device, out: int = OUT):
    """The global batch of a step: inputs (samples, SEQ, DIM) and targets (samples, SEQ, out), the same on every
    rank (drawn on the CPU from the step's seed)."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(samples, SEQ, DIM, generator=g)
    target = torch.randn(samples, SEQ, out, generator=g)
    return x.to(device), target.to(device)
