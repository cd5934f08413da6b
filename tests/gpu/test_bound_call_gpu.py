"""kernel.bind(...) on a GPU (issue 27): a bound call computes what the kernel's call computes in every framework
(outputs allocated and given, scalars passed per call, template and init_value bound), takes the stream of the
inputs' framework at each call, refuses a changed array without launching (outputs= left untouched), runs from
several threads, and under torch.compile is either a graph break that runs eagerly or an error (fullgraph), never a
launch on fake tensors; autograd over a kernel with a vjp is refused."""
import threading

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import FRAMEWORKS, INDEX, need, to_device, to_numpy

pytestmark = pytest.mark.gpu

N = 4096
TOL = 1e-6  # absolute, beside rtol: the GPU fuses a * x + y into one rounding, NumPy rounds twice
GEO = dict(grid=(N, 1, 1), threadgroup=(256, 1, 1))
AXPY = jk.cuda_kernel(name="bound_axpy", input_names=["a", "x", "y"], output_names=["out"],
                      source=INDEX + "if (i < x_shape[0]) out[i] = T(a[0]) * x[i] + y[i];")
HALF = jk.cuda_kernel(name="bound_half", input_names=["x"], output_names=["out"],
                      source=INDEX + "if (i < x_shape[0] / 2) out[i] = x[i];")


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def _torch_axpy(seed, **bind):
    """torch, the host data, its tensors, and AXPY bound on them (outputs allocated unless `bind` says)."""
    torch = need("torch")
    xh, yh = _data(seed)
    x, y = torch.from_numpy(xh).cuda(), torch.from_numpy(yh).cuda()
    layout = {} if "outputs" in bind else dict(output_shapes=[(N,)], output_dtypes=[jk.float32])
    bound = AXPY.bind(inputs=[1.0, x, y], template=[("T", jk.float32)], **layout, **GEO, **bind)
    return torch, (xh, yh), (x, y), bound


@pytest.mark.parametrize("fw", [f for f in FRAMEWORKS if f != "jax"] + ["jk.Array"])
def test_bound_call_equals_the_kernels_call(fw):
    xh, yh = _data()
    if fw == "jk.Array":
        up = jk.cuda_kernel(name="bound_up", input_names=["x"], output_names=["o"], source=INDEX + "o[i] = x[i];")
        x, y = (up(inputs=[h], output_shapes=[(N,)], output_dtypes=[jk.float32], **GEO)[0] for h in (xh, yh))
    else:
        x, y = to_device(fw, xh), to_device(fw, yh)
    tmpl = [("T", jk.float32)]
    bound = AXPY.bind(inputs=[2.0, x, y], output_shapes=[(N,)], output_dtypes=[jk.float32], template=tmpl, **GEO)
    for a in (2.0, -0.5, 3.0):
        want = AXPY(inputs=[a, x, y], output_shapes=[(N,)], output_dtypes=[jk.float32], template=tmpl, **GEO)[0]
        got = bound(a, x, y)[0]
        assert type(got) is type(want)
        np.testing.assert_allclose(to_numpy(got), a * xh + yh, rtol=1e-6, atol=TOL)
    if fw == "numpy":
        return  # outputs= takes device arrays
    out = AXPY(inputs=[1.0, x, y], output_shapes=[(N,)], output_dtypes=[jk.float32], template=tmpl, **GEO)[0]
    given = AXPY.bind(inputs=[1.0, x, y], outputs=[out], template=tmpl, **GEO)
    assert given(4.0, x, y, outputs=[out])[0] is out
    np.testing.assert_allclose(to_numpy(out), 4.0 * xh + yh, rtol=1e-6, atol=TOL)


def test_init_value_is_bound():
    torch = need("torch")
    x = torch.ones(N, device="cuda")
    bound = HALF.bind(inputs=[x], output_shapes=[(N,)], output_dtypes=[jk.float32], init_value=7.0, **GEO)
    for _ in range(2):
        got = bound(x)[0].cpu().numpy()
        assert (got[: N // 2] == 1).all() and (got[N // 2:] == 7).all()


def test_a_changed_array_is_refused_before_any_launch():
    torch = need("torch")
    out = torch.full((N,), float("nan"), device="cuda")
    torch, _, (x, y), bound = _torch_axpy(1, outputs=[out])
    bigger = torch.zeros(2 * N, device="cuda")
    for bad, words in (([1.0, bigger, y], "input 1 ('x'): shape (8192,)"),
                       ([1.0, x, y.double()], "input 2 ('y'): dtype float64"),
                       ([1.0, x, x.cpu()], "input 2 ('y')"),  # host memory (or refused by the conversion)
                       ([1.0, torch.zeros(2 * N, device="cuda")[::2], y], "input 1 ('x'): strides (2,)")):
        with pytest.raises((jk.ArgumentError, jk.ArgumentTypeError), match=words.replace("(", r"\(").replace(")", r"\)")):
            bound(*bad, outputs=[out])
    torch.cuda.synchronize()
    assert torch.isnan(out).all(), "a refused call wrote its output"


def test_bound_call_takes_the_current_stream_at_each_call():
    torch, (xh, yh), (x, y), bound = _torch_axpy(2)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(50_000_000)  # the side stream is busy: a launch elsewhere would finish first
        y.add_(1.0)
        got = bound(1.0, x, y)[0]
        got_host = got.to("cpu", non_blocking=False)
    np.testing.assert_allclose(got_host.numpy(), xh + yh + 1.0, rtol=1e-6, atol=TOL)
    explicit = _torch_axpy(2, stream=side)[3]
    out = explicit(1.0, x, y)[0]
    side.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), xh + yh + 1.0, rtol=1e-6, atol=TOL)


def test_bound_call_from_several_threads():
    torch, (xh, yh), (x, y), bound = _torch_axpy(3)
    failures = []

    def work(a):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                stream.wait_stream(torch.cuda.default_stream())
                for _ in range(50):
                    got = bound(float(a), x, y)[0]
                np.testing.assert_allclose(got.cpu().numpy(), a * xh + yh, rtol=1e-6, atol=TOL)
        except BaseException as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(a,)) for a in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_torch_compile_never_traces_a_bound_call():
    torch, (xh, yh), (x, y), bound = _torch_axpy(4)

    def fn(x, y):
        return bound(2.0, x, y)[0] + 1.0

    torch._dynamo.reset()
    got = torch.compile(fn)(x, y)  # a graph break: the bound call runs eagerly on the real tensors
    np.testing.assert_allclose(got.cpu().numpy(), 2.0 * xh + yh + 1.0, rtol=1e-6, atol=TOL)
    torch._dynamo.reset()
    with pytest.raises(Exception):  # fullgraph cannot break the graph: an error, never a launch on fake tensors
        torch.compile(fn, fullgraph=True)(x, y)


def test_autograd_over_a_vjp_kernel_is_refused():
    torch = need("torch")
    k = jk.cuda_kernel(name="bound_vjp", input_names=["x"], output_names=["y"],
                       source=INDEX + "if (i < x_shape[0]) y[i] = x[i];")

    @k.vjp
    def _backward(primals, outputs, cotangents):
        return [cotangents[0]]

    x = torch.ones(N, device="cuda", requires_grad=True)
    with pytest.raises(jk.ArgumentError, match="autograd"):
        k.bind(inputs=[x], output_shapes=[(N,)], output_dtypes=[jk.float32], **GEO)
    with torch.no_grad():
        bound = k.bind(inputs=[x], output_shapes=[(N,)], output_dtypes=[jk.float32], **GEO)
    with pytest.raises(jk.ArgumentError, match="autograd"):
        bound(x)
    with torch.no_grad():
        assert bound(x)[0].shape == (N,)
