"""torch.func over kernel calls on a GPU: ``vmap`` equals a loop of eager calls (the kernel runs once per batch
element, with that element's shapes), ``outputs=`` under vmap writes each element's slice, and ``grad`` / ``vjp`` /
``jacrev`` through ``kernel.vjp``, alone and composed with vmap, equal torch.autograd and torch's own softplus. The
graphs these programs record are checked without a GPU in tests/cpu/test_torch_func.py."""
import pytest

import jitkernel as jk
from _gpu_util import need
from test_torch_compile_gpu import SCALE, scale, softplus

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    mod = need("torch")
    mod._dynamo.reset()
    return mod


def test_vmap_equals_a_loop_of_eager_calls(torch):
    x = torch.randn(5, 1000, device="cuda")
    y = torch.func.vmap(lambda row: softplus(row, 2.0))(x)
    torch.testing.assert_close(y, torch.stack([softplus(row, 2.0) for row in x]))
    torch.testing.assert_close(y, torch.nn.functional.softplus(x, beta=2.0))


def test_vmap_batch_dim_1_unbatched_input_and_nested(torch):
    x = torch.randn(64, 3, device="cuda")  # each element a column: a strided view of x
    torch.testing.assert_close(torch.func.vmap(lambda c: scale(c, 3.0), in_dims=1)(x), x.T * 3)
    s = torch.randn(2, 4, 32, device="cuda")
    nested = torch.func.vmap(torch.func.vmap(lambda v: softplus(v)))(s)
    torch.testing.assert_close(nested, torch.nn.functional.softplus(s))
    # the element's own extent as a scalar input: each row scaled by its length
    torch.testing.assert_close(torch.func.vmap(lambda r: scale(r, r.shape[0]))(s[0]), s[0] * 32)


def test_vmap_empty_batch(torch):
    y = torch.func.vmap(lambda row: softplus(row))(torch.randn(0, 16, device="cuda"))
    assert y.shape == (0, 16) and y.device.type == "cuda"


def test_vmap_outputs_given_writes_each_slice(torch):
    def f(x, out):
        SCALE(inputs=[x, 2.0], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), outputs=[out])
        return out

    x = torch.randn(4, 300, device="cuda")
    out = torch.zeros_like(x)
    torch.func.vmap(f)(x, out)
    torch.testing.assert_close(out, x * 2)
    x_ref = x.clone()
    torch.func.vmap(f)(x, x)  # in place, slice by slice
    torch.testing.assert_close(x, x_ref * 2)


def test_vmap_outputs_given_with_strided_slices_is_refused(torch):
    def f(x, out):
        SCALE(inputs=[x, 2.0], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1), outputs=[out])
        return out

    with pytest.raises(jk.ArgumentError, match="row-contiguous"):  # as for any output
        torch.func.vmap(f, in_dims=(0, 1))(torch.randn(4, 300, device="cuda"), torch.zeros(300, 4, device="cuda"))


def test_grad_equals_autograd(torch):
    x = torch.randn(2048, device="cuda")
    loss = lambda x: (softplus(x, 2.0) ** 2).sum()  # noqa: E731
    g = torch.func.grad(loss)(x)
    xr = x.clone().requires_grad_()
    (g_autograd,) = torch.autograd.grad(loss(xr), xr)
    torch.testing.assert_close(g, g_autograd)
    (g_ref,) = torch.autograd.grad((torch.nn.functional.softplus(xr, beta=2.0) ** 2).sum(), xr)
    torch.testing.assert_close(g, g_ref, rtol=1e-5, atol=1e-6)


def test_vjp_and_jacrev(torch):
    x = torch.randn(16, device="cuda", dtype=torch.float64)
    y, pullback = torch.func.vjp(lambda x: softplus(x, 1.5), x)
    (g,) = pullback(torch.full_like(x, 3.0))
    torch.testing.assert_close(y, torch.nn.functional.softplus(x, beta=1.5))
    torch.testing.assert_close(g, 3 * torch.sigmoid(1.5 * x))
    jac = torch.func.jacrev(lambda x: softplus(x, 1.5))(x)
    torch.testing.assert_close(jac, torch.diag(torch.sigmoid(1.5 * x)))


def test_vmap_of_grad_and_grad_of_vmap_equal_loops(torch):
    x = torch.randn(6, 500, device="cuda")
    loss = lambda r: (softplus(r) ** 2).sum()  # noqa: E731
    per_row = torch.func.vmap(torch.func.grad(loss))(x)
    torch.testing.assert_close(per_row, torch.stack([torch.func.grad(loss)(r) for r in x]))
    whole = torch.func.grad(lambda x: torch.func.vmap(loss)(x).sum())(x)
    torch.testing.assert_close(whole, per_row)
    ref = 2 * torch.nn.functional.softplus(x) * torch.sigmoid(x)
    torch.testing.assert_close(whole, ref, rtol=1e-5, atol=1e-6)


def test_autograd_of_a_weight_under_vmap(torch):
    x = torch.randn(8, 256, device="cuda")
    w = torch.randn(256, device="cuda", requires_grad=True)
    y = torch.func.vmap(lambda row: softplus(row * w))(x)
    (g,) = torch.autograd.grad(y.sum(), w)
    torch.testing.assert_close(g, (torch.sigmoid(x * w.detach()) * x).sum(0), rtol=1e-5, atol=1e-5)


def test_compiled_vmap_equals_eager(torch):
    f = torch.func.vmap(lambda row: softplus(row, 2.0) * 3)
    x = torch.randn(4, 777, device="cuda")
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x), f(x))
