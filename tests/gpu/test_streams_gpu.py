"""Stream ordering on a GPU. Each test keeps a non-blocking stream busy, then writes the
kernel's input on it: a launch on any other stream runs early, reads the old input and
fails the check. Covers stream=None following torch's and CuPy's current stream, stream=
as an int handle, a torch or CuPy stream and a `__cuda_stream__` object, and capturing a
launch in a CUDA graph that is then replayed with new data."""
import functools

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, StreamHandle, cupy_spin, need, torch_busy_then

pytestmark = pytest.mark.gpu

N = 1 << 20


@functools.lru_cache(maxsize=None)
def plus_one_kernel():
    return jk.cuda_kernel("plus_one", ["inp"], ["out"],
                          INDEX + "if (i < inp_shape[0]) { out[i] = inp[i] + 1.0f; }")


def plus_one(x, **kw):
    (out,) = plus_one_kernel()(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                               output_shapes=[(N,)], output_dtypes=[jk.float32], **kw)
    return out


def torch_setup():
    """torch, a zeroed input with the kernel already compiled, and a non-blocking stream."""
    torch = need("torch")
    x = torch.zeros(N, device="cuda")
    plus_one(x)  # compile now, so the launches under test are quick
    torch.cuda.synchronize()
    return torch, x, torch.cuda.Stream()


def test_stream_none_follows_torch_current_stream():
    torch, x, s = torch_setup()
    with torch.cuda.stream(s):
        torch_busy_then(s, lambda: x.fill_(41.0))
        out = plus_one(x)
        y = out * 2  # consumer on the same stream
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full_like(x, 42.0))
    assert torch.equal(y, torch.full_like(x, 84.0))


@pytest.mark.parametrize("form", ["int", "torch_stream", "cuda_stream_protocol"])
def test_explicit_stream_torch(form):
    torch, x, s = torch_setup()
    stream = {"int": s.cuda_stream, "torch_stream": s,
              "cuda_stream_protocol": StreamHandle(s.cuda_stream)}[form]
    torch_busy_then(s, lambda: x.fill_(41.0))
    out = plus_one(x, stream=stream)  # torch's current stream is the default one here
    with torch.cuda.stream(s):
        y = out * 2
    torch.cuda.synchronize()
    assert torch.equal(out, torch.full_like(x, 42.0))
    assert torch.equal(y, torch.full_like(x, 84.0))


@pytest.mark.parametrize("outputs_given", [False, True])
def test_explicit_stream_waits_for_torch_current_stream(outputs_given):
    # The producer is torch's current stream and stream= another one: the launch must wait for
    # the producer (each tensor's __dlpack__(stream=) would order it; the call orders it once).
    torch, x, s = torch_setup()
    y = torch.full_like(x, -1.0)
    cur = torch.cuda.current_stream()
    torch_busy_then(cur, lambda: x.fill_(41.0))
    if outputs_given:
        plus_one_kernel()(inputs=[x], outputs=[y], grid=(N, 1, 1), threadgroup=(256, 1, 1), stream=s)
    else:
        y = plus_one(x, stream=s)
    s.synchronize()  # only the launch stream: it must have waited for the fill
    assert torch.equal(y, torch.full_like(x, 42.0))


@pytest.mark.parametrize("form", ["int", "torch_stream"])
def test_explicit_stream_that_is_torch_current(form):
    torch, x, s = torch_setup()
    y = torch.full_like(x, -1.0)
    with torch.cuda.stream(s):
        torch_busy_then(s, lambda: x.fill_(41.0))
        plus_one_kernel()(inputs=[x], outputs=[y], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                          stream=s.cuda_stream if form == "int" else s)
    s.synchronize()
    assert torch.equal(y, torch.full_like(x, 42.0))


@pytest.mark.parametrize("how", ["current", "explicit"])
def test_cupy_streams(how):
    cp = need("cupy")
    x = cp.zeros(N, cp.float32)
    plus_one(x)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        cupy_spin()
        x.fill(41.0)
        if how == "current":
            out = plus_one(x)
    if how == "explicit":
        out = plus_one(x, stream=s)
    with s:
        y = out * 2
    cp.cuda.Device().synchronize()
    assert isinstance(out, cp.ndarray)
    np.testing.assert_array_equal(out.get(), np.full(N, 42.0, np.float32))
    np.testing.assert_array_equal(y.get(), np.full(N, 84.0, np.float32))


def test_cuda_graph_capture_and_replay():
    torch = need("torch")
    n = 4096
    kernel = jk.cuda_kernel("graph_affine", ["inp", "scale"], ["out"],
                            INDEX + "if (i < inp_shape[0]) { out[i] = inp[i] * scale[0] + 1.0f; }")
    x = torch.zeros(n, device="cuda")
    out = torch.full((n,), -1.0, device="cuda")

    def launch():
        return kernel(inputs=[x, 2.0], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                      output_shapes=[(n,)], output_dtypes=[jk.float32], outputs=[out])

    side = torch.cuda.Stream()  # warm up (compile) off the capture, as torch asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        launch()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    assert torch.equal(out, torch.ones(n, device="cuda"))

    x.fill_(5.0)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        assert launch()[0] is out
    torch.cuda.synchronize()
    assert torch.equal(out, torch.ones(n, device="cuda")), "the launch ran during capture"

    for seed in range(3):
        data = torch.randn(n, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        x.copy_(data)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, data * 2 + 1, rtol=0, atol=1e-6)
