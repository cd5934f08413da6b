"""jitkernel kernels inside the torch programs users run, on a GPU: torch.compile (fullgraph, dynamic shapes,
reduce-overhead CUDA graphs), outputs= and in-place calls, torch.export reloaded in a new process, and gradients
through kernel.vjp (gradcheck eagerly, and the same gradients compiled). DDP and the other multi-GPU programs are in
test_distributed_torch_gpu.py."""
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, need

pytestmark = pytest.mark.gpu

# Every element of x, whatever its rank: i < x.numel().
IN_X = INDEX + "size_t n = 1;\nfor (int d = 0; d < x_ndim; ++d) n *= x_shape[d];\nif (i < n) "

SOFTPLUS = jk.cuda_kernel(
    name="softplus_fwd", input_names=["x", "beta"], output_names=["y"],
    source=IN_X + "{ T b = beta[0]; T v = x[i] * b; y[i] = v > T(20) ? x[i] : log1p(exp(v)) / b; }")
SOFTPLUS_BWD = jk.cuda_kernel(
    name="softplus_bwd", input_names=["x", "dy", "beta"], output_names=["dx"],
    source=IN_X + "{ T v = x[i] * T(beta[0]); dx[i] = dy[i] / (T(1) + exp(-v)); }")
SCALE = jk.cuda_kernel(name="scale", input_names=["x", "s"], output_names=["y"], source=IN_X + "y[i] = x[i] * s[0];")


@SOFTPLUS.vjp
def _softplus_vjp(primals, outputs, cotangents):
    x, beta = primals
    return [_launch(SOFTPLUS_BWD, [x, cotangents[0], beta], x)[0], None]


def _launch(kernel, inputs, like):
    import torch

    t = jk.float64 if like.dtype == torch.float64 else jk.float32
    return kernel(inputs=inputs, output_shapes=[like.shape], output_dtypes=[like.dtype], grid=(like.numel(), 1, 1),
                  threadgroup=(256, 1, 1), template=[("T", t)])


def softplus(x, beta=1.0):
    return _launch(SOFTPLUS, [x, beta], x)[0]


def scale(x, s):
    return SCALE(inputs=[x, s], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
                 threadgroup=(256, 1, 1))[0]


@pytest.fixture
def torch():
    mod = need("torch")
    mod._dynamo.reset()
    return mod


def test_fullgraph_no_break_and_equal_to_eager(torch):
    x = torch.randn(1000, device="cuda")
    f = lambda x: softplus(x, 2.0) * 3  # noqa: E731
    explain = torch._dynamo.explain(f)(x)
    assert explain.graph_break_count == 0 and explain.graph_count == 1
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x), f(x))
    torch.testing.assert_close(compiled(x), torch.nn.functional.softplus(x, beta=2.0) * 3)


def test_every_element_of_a_2d_input_eager_and_compiled(torch):
    x = torch.randn(32, 64, device="cuda", requires_grad=True)
    f = lambda x: softplus(x, 2.0)  # noqa: E731
    for fn in (f, torch.compile(f, fullgraph=True)):
        y = fn(x)
        torch.testing.assert_close(y, torch.nn.functional.softplus(x.detach(), beta=2.0))
        (g,) = torch.autograd.grad(y.sum(), x)
        torch.testing.assert_close(g, torch.sigmoid(2.0 * x.detach()))
    torch.testing.assert_close(scale(x.detach(), 0.5), x.detach() * 0.5)


def test_dynamic_shapes_one_graph_many_sizes(torch):
    frames = []
    compiled = torch.compile(lambda x: scale(x, x.shape[0]), fullgraph=True, dynamic=True,
                             backend=lambda gm, ex: (frames.append(gm), gm)[1])
    for n in (7, 100, 4097):
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(compiled(x), x * n)
    assert len(frames) == 1


def test_reduce_overhead_cuda_graphs_equal_eager(torch):
    compiled = torch.compile(lambda x: softplus(scale(x, 0.5)) + 1, mode="reduce-overhead", fullgraph=True)
    for step in range(5):
        x = torch.randn(4096, device="cuda") + step
        expected = torch.nn.functional.softplus(x * 0.5) + 1
        torch.testing.assert_close(compiled(x).clone(), expected)


def test_outputs_given_and_in_place_inside_compile(torch):
    def f(x, y):
        SCALE(inputs=[x, 2.0], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), outputs=[y])
        SCALE(inputs=[x, 3.0], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), outputs=[x])  # in place
        return x + y

    x = torch.randn(300, device="cuda")
    y = torch.empty_like(x)
    x_ref = x.clone()
    out = torch.compile(f, fullgraph=True)(x, y)
    torch.testing.assert_close(y, x_ref * 2)
    torch.testing.assert_close(x, x_ref * 3)  # the caller's tensor was written in place
    torch.testing.assert_close(out, x_ref * 5)


def test_eager_in_place_input_also_output(torch):
    x = torch.arange(64, dtype=torch.float32, device="cuda")
    (y,) = SCALE(inputs=[x, 2.0], grid=(64, 1, 1), threadgroup=(64, 1, 1), outputs=[x])
    assert y is x
    torch.testing.assert_close(x, torch.arange(64, dtype=torch.float32, device="cuda") * 2)


def test_gradcheck_eager_float64(torch):
    x = torch.randn(64, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: softplus(x, 1.5), (x,))
    y = softplus(x, 1.5)
    assert y.requires_grad and y.grad_fn is not None


def test_grads_compiled_equal_eager(torch):
    x = torch.randn(2048, device="cuda", requires_grad=True)
    f = lambda x: (softplus(x, 2.0) ** 2).sum()  # noqa: E731
    (g_eager,) = torch.autograd.grad(f(x), x)
    (g_compiled,) = torch.autograd.grad(torch.compile(f, fullgraph=True)(x), x)
    torch.testing.assert_close(g_compiled, g_eager)
    (g_ref,) = torch.autograd.grad((torch.nn.functional.softplus(x, beta=2.0) ** 2).sum(), x)
    torch.testing.assert_close(g_eager, g_ref, rtol=1e-5, atol=1e-6)


def test_kernel_without_vjp(torch):
    x = torch.randn(16, device="cuda", requires_grad=True)
    assert not scale(x, 2.0).requires_grad  # eagerly: outputs outside autograd, as before
    y = torch.compile(lambda x: scale(x, 2.0) * 1, fullgraph=True)(x)
    assert not y.requires_grad  # compiled: the same
    torch.testing.assert_close(y, x.detach() * 2)


def test_export_runs_in_a_new_process(torch, tmp_path):
    class M(torch.nn.Module):
        def forward(self, x):
            return softplus(scale(x, 2.0))

    n = torch.export.Dim("n")
    x = torch.randn(100, device="cuda")
    ep = torch.export.export(M(), (x,), dynamic_shapes={"x": {0: n}})
    path = tmp_path / "m.pt2"
    torch.export.save(ep, path)
    code = (f"import jitkernel, torch\n"
            f"ep = torch.export.load({str(path)!r})\n"
            f"x = torch.linspace(-3, 3, 333, device='cuda')\n"
            f"y = ep.module()(x)\n"
            f"torch.testing.assert_close(y, torch.nn.functional.softplus(x * 2))\n"
            f"print('ok', y.shape[0])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ok 333" in proc.stdout


def test_capture_with_allocation_replays(torch):
    x = torch.randn(512, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        scale(x, 2.0)  # warm up: compile and load outside the capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = scale(x, 2.0)
    x.copy_(torch.arange(512, dtype=torch.float32, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), np.arange(512) * 2.0)
