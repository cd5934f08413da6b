"""precompiled_cuda_kernel traced on a GPU: inside torch.compile(fullgraph=True), static and dynamic (the size and
an int scalar symbolic; one graph for several sizes), with outputs= (launch_into), run by the op's C++
implementation (the CUDA key) and by its Python one (torch_ops._launch, called directly), and inside jax.jit
(the XLA custom call, with a by-value scalar fixed at trace time); each checked against the eager call."""
import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import need, to_numpy

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void axpb(const float* x, const float* b, float* y, float* total, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = a * x[i] + b[0];
    atomicAdd(total, x[i]);
  }
}
"""


@pytest.fixture(scope="module")
def cubin():
    return jk.compile_cuda(SOURCE, arch=jk.device_info(0)["arch"])


def axpb(cubin, x, b, a=1.5, outputs=None, init_value=0.0):
    n = x.shape[0]
    return jk.precompiled_cuda_kernel(name="axpb", compiled_source=cubin, inputs=[x, b],
                                      output_shapes=[(n,), (1,)], output_dtypes=[x.dtype, x.dtype],
                                      scalars=[n, a], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                                      init_value=init_value, outputs=outputs)


def expected(x, b, a=1.5):
    x, b = to_numpy(x).astype(np.float64), to_numpy(b).astype(np.float64)
    return (a * x + b[0]).astype(np.float32), np.array([x.sum()], np.float32)


def check(got, x, b, a=1.5):
    y, total = expected(x, b, a)
    np.testing.assert_allclose(to_numpy(got[0]), y, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(got[1]), total, rtol=1e-4)


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_fullgraph(cubin, dynamic):
    torch = need("torch")
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, b: axpb(cubin, x, b), fullgraph=True, dynamic=dynamic)
    b = torch.tensor([0.25], device="cuda")
    for n in (1000, 1000, 4097, 77):
        x = torch.randn(n, device="cuda")
        got = compiled(x, b)
        assert all(isinstance(t, torch.Tensor) and t.is_cuda for t in got)
        check(got, x, b)
        eager = axpb(cubin, x, b)
        torch.testing.assert_close(got[0], eager[0])


def test_torch_compile_dynamic_compiles_once(cubin):
    torch = need("torch")
    torch._dynamo.reset()
    from torch._dynamo.testing import CompileCounter

    counter = CompileCounter()
    compiled = torch.compile(lambda x, b: axpb(cubin, x, b), backend=counter, fullgraph=True, dynamic=True)
    b = torch.tensor([1.0], device="cuda")
    for n in (100, 200, 300):
        x = torch.randn(n, device="cuda")
        check(compiled(x, b), x, b)
    assert counter.frame_count == 1


def test_torch_compile_outputs_into(cubin):
    torch = need("torch")
    torch._dynamo.reset()

    def f(x, b, y, total):
        axpb(cubin, x, b, outputs=[y, total])
        return y * 2

    compiled = torch.compile(f, fullgraph=True)
    x, b = torch.randn(513, device="cuda"), torch.tensor([-1.0], device="cuda")
    y, total = torch.empty(513, device="cuda"), torch.empty(1, device="cuda")
    doubled = compiled(x, b, y, total)
    check([y, total], x, b)
    torch.testing.assert_close(doubled, y * 2)


def _graph_strings(cubin, torch, x, b):
    """The op's arguments for this call, as make_fx records them."""
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(lambda x, b: axpb(cubin, x, b)[0], tracing_mode="fake")(x, b)
    (node,) = [n for n in graph.graph.nodes if n.op == "call_function" and "jitkernel" in str(n.target)]
    return node.args[0], node.args[1], list(node.args[3]), list(node.args[4])


def test_both_op_implementations_run_it(cubin):
    torch = need("torch")
    from jitkernel._frameworks import torch_ops

    x, b = torch.randn(300, device="cuda"), torch.tensor([2.0], device="cuda")
    kernel, call, ints, floats = _graph_strings(cubin, torch, x, b)
    via_cpp = torch.ops.jitkernel.launch.default(kernel, call, [x, b], ints, floats)  # the CUDA key: op_call.cpp
    via_python = torch_ops._launch(kernel, call, [x, b], ints, floats)  # _Plan
    check(via_cpp, x, b)
    check(via_python, x, b)


def test_cpp_op_refuses_a_wrong_entry_name(cubin):
    torch = need("torch")
    x, b = torch.randn(8, device="cuda"), torch.tensor([2.0], device="cuda")
    kernel, call, ints, floats = _graph_strings(cubin, torch, x, b)
    bad = kernel.replace('"name":"axpb"', '"name":"axpc"')
    with pytest.raises(RuntimeError, match=r"jitkernel.ArgumentError: name: no entry point 'axpc'"):
        torch.ops.jitkernel.launch.default(bad, call, [x, b], ints, floats)


def test_jax_jit(cubin):
    jax = need("jax")
    jnp = jax.numpy
    b = jnp.asarray([0.5], jnp.float32)
    for n in (1000, 77):
        x = jnp.asarray(np.random.default_rng(n).standard_normal(n), jnp.float32)
        got = jax.jit(lambda x, b: axpb(cubin, x, b, a=-3.0))(x, b)
        check(got, x, b, a=-3.0)
        eager = axpb(cubin, x, b, a=-3.0)
        np.testing.assert_allclose(to_numpy(got[0]), to_numpy(eager[0]), rtol=1e-6)


def test_jax_jit_inside_a_larger_program(cubin):
    jax = need("jax")
    jnp = jax.numpy

    @jax.jit
    def f(x, b):
        y, total = axpb(cubin, x * 2, b)
        return jnp.sum(y) + total[0]

    x, b = jnp.arange(256, dtype=jnp.float32), jnp.asarray([1.0], jnp.float32)
    y, total = expected(np.arange(256, dtype=np.float32) * 2, np.array([1.0], np.float32))
    np.testing.assert_allclose(float(f(x, b)), float(y.sum() + total[0]), rtol=1e-5)
