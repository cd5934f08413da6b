"""torch.func over kernel calls, checked without a GPU: ``vmap`` (the ops' batching rule runs the kernel once per
batch element with the unbatched shapes, and stacks the outputs), ``grad`` / ``vjp`` / ``jacrev`` through a kernel's
backward, and their compositions. make_fx records the programs with fake tensors; running a recorded graph with each
kernel replaced by its torch reference checks the numbers against torch's own transforms. On a GPU:
tests/gpu/test_torch_func_gpu.py."""
import pytest

import jitkernel as jk
from jitkernel._frameworks import graph_records, torch_ops
from jitkernel._kernels import cuda_kernel as cuda_kernel_module

torch = pytest.importorskip("torch")
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

INDEX = "auto i = blockIdx.x * blockDim.x + threadIdx.x;\n"
EXP = jk.cuda_kernel(name="tf_exp", input_names=["inp", "s"], output_names=["out"],
                     source=INDEX + "if (i < inp_shape[0]) out[i] = exp(inp[i]) * s[0];")
ADD = jk.cuda_kernel(name="tf_add", input_names=["a", "b"], output_names=["c"],
                     source=INDEX + "if (i < a_shape[0]) c[i] = a[i] + b[i];")
SOFTPLUS = jk.cuda_kernel(name="tf_softplus", input_names=["x"], output_names=["y"],
                          source=INDEX + "if (i < x_shape[0]) y[i] = log1p(exp(x[i]));")
SIGMOID_MUL = jk.cuda_kernel(name="tf_sigmoid_mul", input_names=["x", "g"], output_names=["dx"],
                             source=INDEX + "if (i < x_shape[0]) dx[i] = g[i] / (1 + exp(-x[i]));")

# What each kernel computes, for running recorded graphs on the CPU.
REFERENCE = {
    "tf_exp": lambda inp, s: [torch.exp(inp) * s],
    "tf_add": lambda a, b: [a + b],
    "tf_softplus": lambda x: [torch.nn.functional.softplus(x)],
    "tf_sigmoid_mul": lambda x, g: [g * torch.sigmoid(x)],
}


def _launch(kernel, inputs, like):
    return kernel(inputs=inputs, output_shapes=[like.shape], output_dtypes=[like.dtype],
                  grid=(like.numel(), 1, 1), threadgroup=(256, 1, 1))[0]


@SOFTPLUS.vjp
def _softplus_vjp(primals, outputs, cotangents):
    return [_launch(SIGMOID_MUL, [primals[0], cotangents[0]], primals[0])]


def exp2(x):
    return _launch(EXP, [x, 2.0], x)


def softplus(x):
    return _launch(SOFTPLUS, [x], x)


def _launches(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and "jitkernel" in str(n.target)]


def _kernel_name(node):
    return cuda_kernel_module.kernel_for(node.args[0]).name


class _Reference(torch.fx.Interpreter):
    """Runs a recorded graph on CPU tensors, each kernel launch replaced by its torch reference."""

    def call_function(self, target, args, kwargs):
        if "jitkernel" not in str(target):
            return super().call_function(target, args, kwargs)
        spec, call, arrays, ints, floats = args[:5]
        inputs = _plan_inputs(spec, call, arrays, ints, floats)
        results = REFERENCE[cuda_kernel_module.kernel_for(spec).name](*inputs)
        if len(args) == 6:  # launch_into: write the given outputs
            for out, value in zip(args[5], results):
                out.copy_(value)
            return None
        return results


def _plan_inputs(spec, call, arrays, ints, floats):
    return torch_ops._plan(spec, call).inputs(list(arrays), list(ints), list(floats))


def _run(f, *args):
    """``f`` recorded with fake tensors, then run on ``args`` with the kernels' references."""
    gm = make_fx(f, tracing_mode="fake")(*args)
    return gm, _Reference(gm).run(*args)


# ---------------------------------------------------------------------------
# vmap


def test_vmap_launches_once_per_element_with_unbatched_shapes():
    x = torch.randn(3, 8)
    gm, y = _run(torch.func.vmap(exp2), x)
    nodes = _launches(gm)
    assert len(nodes) == 3 and all(n.target is torch.ops.jitkernel.launch.default for n in nodes)
    for n in nodes:
        assert n.args[3] == [8, 1, 1, 256, 1, 1, 8]  # grid, threadgroup and the output's shape of one element
        assert n.args[2][0].meta["val"].shape == (8,)
    (stack,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.stack.default]
    assert stack.meta["val"].shape == (3, 8)
    torch.testing.assert_close(y, torch.exp(x) * 2)


def test_vmap_other_batch_dim_and_unbatched_input():
    a, b = torch.randn(8, 4), torch.randn(8)
    gm, c = _run(torch.func.vmap(lambda a, b: _launch(ADD, [a, b], a), in_dims=(1, None)), a, b)
    assert len(_launches(gm)) == 4
    torch.testing.assert_close(c, a.T + b)


def test_nested_vmap_launches_per_element_of_both():
    x = torch.randn(2, 3, 8)
    gm, y = _run(torch.func.vmap(torch.func.vmap(exp2)), x)
    assert len(_launches(gm)) == 6
    torch.testing.assert_close(y, torch.exp(x) * 2)


def test_vmap_over_an_empty_batch_launches_nothing():
    gm, y = _run(torch.func.vmap(exp2), torch.randn(0, 8))
    assert _launches(gm) == [] and y.shape == (0, 8)


def test_vmap_dict_form_and_scalar_from_the_element_shape():
    def f(x):
        return EXP(inputs={"inp": x, "s": x.shape[0]}, output_shapes={"out": x.shape},
                   output_dtypes={"out": x.dtype}, grid=(x.numel(), 1, 1), threadgroup=(32, 1, 1))["out"]

    x = torch.randn(2, 5)
    gm, y = _run(torch.func.vmap(f), x)
    (first, _) = _launches(gm)
    assert graph_records.decode(first.args[1]).dict_form and first.args[3][-1] == 5  # the element's extent
    torch.testing.assert_close(y, torch.exp(x) * 5)


def test_vmap_outputs_given_each_element_writes_its_slice():
    def f(x, y):
        EXP(inputs=[x, 3.0], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), outputs=[y])
        return y

    x, y = torch.randn(3, 8), torch.zeros(3, 8)
    gm = make_fx(torch.func.vmap(f), tracing_mode="fake")(x, y)
    nodes = _launches(gm)
    assert len(nodes) == 3 and all(n.target is torch.ops.jitkernel.launch_into.default for n in nodes)
    assert all(n.args[5][0].meta["val"].shape == (8,) for n in nodes)
    _Reference(gm).run(x, y)
    torch.testing.assert_close(y, torch.exp(x) * 3)  # written in place, slice by slice


def test_vmap_outputs_given_without_a_batch_dim_is_refused():
    def f(x, y):
        EXP(inputs=[x, 3.0], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), outputs=[y])
        return y

    with pytest.raises(jk.ArgumentError, match="outputs.*must be batched"):
        make_fx(torch.func.vmap(f, in_dims=(0, None)), tracing_mode="fake")(torch.randn(3, 8), torch.zeros(8))


def test_eager_vmap_reaches_the_op():
    # The call slot hands a BatchedTensor (an exact torch.Tensor without memory) to the traced path; the op then
    # refuses host tensors as it does for any traced call (no GPU here).
    with pytest.raises(jk.ArgumentTypeError, match="runs on CUDA tensors"):
        torch.func.vmap(exp2)(torch.randn(3, 8))


def _graphs_of(f, *args, **options):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lambda *args: tuple(torch.zeros(()) for _ in gm.graph.find_nodes(op="output")[0].args[0])

    torch.compile(f, backend=backend, **options)(*args)
    return graphs


@pytest.mark.parametrize("fn, op", [(exp2, "launch"), (softplus, "launch_vjp")])
def test_compile_records_vmap_in_one_graph(fn, op):
    (gm,) = _graphs_of(torch.func.vmap(fn), torch.randn(3, 8), fullgraph=True)
    (node,) = _launches(gm)  # one op on the batched tensor; AOTAutograd applies the batching rule
    assert node.target is getattr(torch.ops.jitkernel, op) and node.args[3][-1] == 8  # the element's extent


# ---------------------------------------------------------------------------
# grad and vjp through kernel.vjp


def test_grad_runs_the_kernels_backward():
    x = torch.randn(8)
    gm, g = _run(torch.func.grad(lambda x: softplus(x).sum()), x)
    assert [_kernel_name(n) for n in _launches(gm)] == ["tf_softplus", "tf_sigmoid_mul"]
    torch.testing.assert_close(g, torch.func.grad(lambda x: torch.nn.functional.softplus(x).sum())(x))


def test_grad_matches_the_autograd_graph():
    # torch.autograd.grad through the op's own formula records the same kernels, and gives the same numbers.
    def autograd_grad(x):
        x = x.detach().requires_grad_()
        return torch.autograd.grad((softplus(x) ** 2).sum(), x)[0]

    x = torch.randn(8)
    gm_func, g_func = _run(torch.func.grad(lambda x: (softplus(x) ** 2).sum()), x)
    gm_autograd, g_autograd = _run(autograd_grad, x)
    names = ["tf_softplus", "tf_sigmoid_mul"]
    assert [_kernel_name(n) for n in _launches(gm_func)] == [_kernel_name(n) for n in _launches(gm_autograd)] == names
    torch.testing.assert_close(g_func, g_autograd)
    torch.testing.assert_close(g_func, 2 * torch.nn.functional.softplus(x) * torch.sigmoid(x))


def test_vjp_and_jacrev():
    x = torch.randn(5)
    gm, (y, g) = _run(lambda x, v: (lambda out: (out[0], out[1](v)[0]))(torch.func.vjp(softplus, x)), x,
                      torch.full((5,), 3.0))
    torch.testing.assert_close(y, torch.nn.functional.softplus(x))
    torch.testing.assert_close(g, 3 * torch.sigmoid(x))
    _, jac = _run(torch.func.jacrev(softplus), x)
    torch.testing.assert_close(jac, torch.diag(torch.sigmoid(x)))


@pytest.mark.parametrize("order", ["vmap(grad)", "grad(vmap)"])
def test_vmap_and_grad_compose(order):
    loss = lambda x: (softplus(x) ** 2).sum()  # noqa: E731
    if order == "vmap(grad)":
        f, expected = torch.func.vmap(torch.func.grad(loss)), lambda x: torch.func.vmap(torch.func.grad(
            lambda x: (torch.nn.functional.softplus(x) ** 2).sum()))(x)
    else:
        f, expected = torch.func.grad(lambda x: torch.func.vmap(loss)(x).sum()), lambda x: torch.func.grad(
            lambda x: (torch.nn.functional.softplus(x) ** 2).sum())(x)
    x = torch.randn(3, 6)
    gm, g = _run(f, x)
    names = [_kernel_name(n) for n in _launches(gm)]
    assert names.count("tf_softplus") == 3 and names.count("tf_sigmoid_mul") == 3  # forward and backward per row
    torch.testing.assert_close(g, expected(x))


def test_autograd_under_vmap_of_a_weight_that_requires_grad():
    # Plain torch.autograd outside, vmap inside: the call takes the torch.func-ready formula too.
    def f(x, w):
        w = w.detach().requires_grad_()
        y = torch.func.vmap(lambda row: softplus(row * w))(x)
        return torch.autograd.grad(y.sum(), w)[0]

    x, w = torch.randn(4, 6), torch.randn(6)
    gm, g = _run(f, x, w)
    assert [_kernel_name(n) for n in _launches(gm)].count("tf_sigmoid_mul") == 4
    torch.testing.assert_close(g, (torch.sigmoid(x * w) * x).sum(0))


def test_grad_through_a_kernel_without_backward_is_outside_autograd():
    # As eagerly: its outputs do not depend on the inputs for autograd, so grad through it is zero.
    g = make_fx(torch.func.grad(lambda x: exp2(x).sum() + x.sum()), tracing_mode="fake")(torch.randn(4))
    assert len(_launches(g)) == 1
    _, value = _run(torch.func.grad(lambda x: exp2(x).sum() + x.sum()), torch.randn(4))
    torch.testing.assert_close(value, torch.ones(4))


# ---------------------------------------------------------------------------
# Eagerly: the call slot hands torch.func's wrappers to the ops; here the ops' CPU implementation is each kernel's
# torch reference (registered for the test only), so that whole eager programs run without a GPU.


@pytest.fixture
def cpu_ops():
    def launch(spec, call, arrays, ints, floats):
        inputs = _plan_inputs(spec, call, arrays, ints, floats)
        return [r.clone() for r in REFERENCE[cuda_kernel_module.kernel_for(spec).name](*inputs)]

    def launch_into(spec, call, arrays, ints, floats, outputs):
        for out, value in zip(outputs, launch(spec, call, arrays, ints, floats)):
            out.copy_(value)

    lib = torch.library.Library("jitkernel", "IMPL")
    for name, fn in (("launch", launch), ("launch_vjp", launch), ("launch_into", launch_into)):
        lib.impl(name, fn, "CPU")
    yield
    lib._destroy()


def test_eager_vmap_and_outputs_given(cpu_ops):
    x = torch.randn(3, 8)
    torch.testing.assert_close(torch.func.vmap(exp2)(x), torch.stack([torch.exp(r) * 2 for r in x]))
    out = torch.zeros(3, 8)
    torch.func.vmap(lambda r, o: EXP(inputs=[r, 1.0], grid=(8, 1, 1), threadgroup=(8, 1, 1), outputs=[o]))(x, out)
    torch.testing.assert_close(out, torch.exp(x))


def test_eager_grad_vjp_jacrev_and_vmap_compositions(cpu_ops):
    x = torch.randn(3, 8)
    loss = lambda v: (softplus(v) ** 2).sum()  # noqa: E731
    ref_loss = lambda v: (torch.nn.functional.softplus(v) ** 2).sum()  # noqa: E731
    torch.testing.assert_close(torch.func.grad(loss)(x[0]), torch.func.grad(ref_loss)(x[0]))
    torch.testing.assert_close(torch.func.vmap(torch.func.grad(loss))(x),
                               torch.stack([torch.func.grad(ref_loss)(r) for r in x]))
    torch.testing.assert_close(torch.func.grad(lambda v: torch.func.vmap(loss)(v).sum())(x),
                               torch.func.grad(ref_loss)(x))
    torch.testing.assert_close(torch.func.jacrev(softplus)(x[0]), torch.diag(torch.sigmoid(x[0])))


def test_cpu_ops_fixture_leaves_nothing_registered():
    with pytest.raises(jk.ArgumentTypeError, match="runs on CUDA tensors"):
        torch.ops.jitkernel.launch(EXP._spec, _record_of_exp2(), [torch.randn(4)], [4, 1, 1, 256, 1, 1, 4], [2.0])


def _record_of_exp2():
    gm = make_fx(exp2, tracing_mode="fake")(torch.randn(4))
    return _launches(gm)[0].args[1]


# TorchDynamo also traces this file's CPU stand-in for the op (its lru_cache-wrapped plan lookup): harmless here.
@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`")
def test_compiled_grad_through_a_kernel_with_backward_is_never_a_wrong_gradient(cpu_ops):
    # Inside torch.compile the op's formula would be reached, which torch.func cannot use (pytorch/pytorch#168393):
    # the trace stops at a clear error; where TorchDynamo then runs the function eagerly, the gradient is right.
    loss = torch.func.grad(lambda x: (softplus(x) ** 2).sum())
    x = torch.randn(8)
    expected = 2 * torch.nn.functional.softplus(x) * torch.sigmoid(x)
    with pytest.raises(Exception, match="torch.func.grad / vjp inside torch.compile"):
        torch.compile(loss, backend="eager", fullgraph=True)(x)
    for backend in ("eager", lambda gm, example_inputs: gm):
        torch._dynamo.reset()
        try:
            got = torch.compile(loss, backend=backend)(x)
        except jk.ArgumentTypeError as e:
            assert "torch.func.grad / vjp inside torch.compile" in str(e)
        else:
            torch.testing.assert_close(got, expected)
    torch._dynamo.reset()
