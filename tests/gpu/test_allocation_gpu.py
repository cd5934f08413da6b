"""Who allocates a call's outputs (docs/allocation.md), on a GPU: torch inputs get tensors from torch's caching
allocator (counted by torch.cuda.memory_allocated, reused after they are freed, ordered on the launch stream, taken
from a CUDA graph's pool while torch captures), CuPy inputs get arrays from CuPy's memory pool, jk.Array / NumPy
inputs keep jitkernel's pool; init_value fills the framework's outputs; and in-place calls (an input also passed in
outputs=) on torch, CuPy and jk.Array, with the strided-alias refusal of ensure_row_contiguous=True."""
import functools

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, StreamHandle, cupy_spin, need, to_numpy, torch_busy_then

pytestmark = pytest.mark.gpu

N = 1 << 20  # 4 MiB of float32: a multiple of torch's and CuPy's 512-byte rounding


@functools.lru_cache(maxsize=None)
def plus_one_kernel():
    return jk.cuda_kernel("alloc_plus_one", ["x"], ["out"],
                          INDEX + "if (i < x_shape[0]) { out[i] = x[i] + 1.0f; }")


@functools.lru_cache(maxsize=None)
def untouched_kernel():
    """Writes nothing: the outputs hold what init_value put there."""
    return jk.cuda_kernel("alloc_untouched", ["x"], ["out"], "")


def plus_one(x, n=N, **kw):
    (out,) = plus_one_kernel()(inputs=[x], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                               output_shapes=[(n,)], output_dtypes=[jk.float32], **kw)
    return out


def torch_zeros(n=N):
    torch = need("torch")
    x = torch.zeros(n, device="cuda")
    plus_one(x, n)  # compiled before the measured calls
    torch.cuda.synchronize()
    return torch, x


# --- torch: the caching allocator ------------------------------------------------------------------------------------

def test_torch_outputs_are_counted_and_reused_by_torch():
    torch, x = torch_zeros()
    before = torch.cuda.memory_allocated()
    out = plus_one(x)
    assert isinstance(out, torch.Tensor) and out.device == x.device and out.is_contiguous()
    assert torch.cuda.memory_allocated() - before == 4 * N
    torch.cuda.synchronize()
    assert torch.equal(out, torch.ones_like(x))
    del out
    assert torch.cuda.memory_allocated() == before
    reserved = torch.cuda.memory_reserved()
    again = plus_one(x)  # served from torch's cache: no new segment
    assert torch.cuda.memory_reserved() == reserved
    del again
    torch_op = torch.empty(N, device="cuda")  # a torch op takes the freed block back
    assert torch.cuda.memory_reserved() == reserved
    del torch_op


def test_torch_parameter_inputs_get_torch_outputs():
    torch, x = torch_zeros()
    before = torch.cuda.memory_allocated()
    out = plus_one(torch.nn.Parameter(x))
    assert type(out) is torch.Tensor and not out.requires_grad
    assert torch.cuda.memory_allocated() - before == 4 * N
    torch.cuda.synchronize()
    assert torch.equal(out, torch.ones_like(x))


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "uint16", "int64", "float16", "bfloat16", "float64"])
def test_torch_output_dtypes_and_init_value(dtype):
    torch, x = torch_zeros(64)
    (out,) = untouched_kernel()(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(4, 16)],
                                output_dtypes=[jk.dtype(dtype)], init_value=1)
    assert out.dtype == getattr(torch, dtype) and out.shape == (4, 16) and out.is_cuda
    torch.cuda.synchronize()
    readable = out.view(torch.int16) if dtype == "uint16" else out  # few ops take uint16
    np.testing.assert_array_equal(to_numpy(readable).astype(np.float64), np.ones((4, 16)))


def test_torch_out_of_memory_is_torchs_own_error():
    torch, x = torch_zeros(64)
    before = torch.cuda.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError):
        untouched_kernel()(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1 << 42,)],
                           output_dtypes=[jk.float32])
    assert torch.cuda.memory_allocated() == before


@pytest.mark.parametrize("form", ["torch_stream", "int", "cuda_stream_protocol"])
def test_torch_outputs_belong_to_the_launch_stream(form):
    """stream= other than torch's current one: the output is allocated under the launch stream, as a torch op run
    under `with torch.cuda.stream(s)` would be, so its memory is ordered on the stream that writes it."""
    torch, x = torch_zeros()
    n = N + 4096  # a size no other block of the test has
    x = torch.zeros(n, device="cuda")
    s = torch.cuda.Stream()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # no free blocks left on s by earlier tests
    stream = {"torch_stream": s, "int": s.cuda_stream, "cuda_stream_protocol": StreamHandle(s.cuda_stream)}[form]
    torch_busy_then(s, lambda: x.fill_(41.0))
    out = plus_one(x, n, stream=stream)  # torch's current stream is the default one here
    assert torch.cuda.current_stream() == torch.cuda.default_stream()  # left as it was
    torch.cuda.current_stream().wait_stream(s)  # the output used on another stream, ordered by the user
    y = out * 2
    torch.cuda.synchronize()
    assert torch.equal(y, torch.full_like(x, 84.0))
    ptr = out.data_ptr()
    del out, y
    torch.cuda.synchronize()
    elsewhere = torch.empty(n, device="cuda")  # the default stream does not get s's block
    with torch.cuda.stream(s):
        on_s = torch.empty(n, device="cuda")
    assert on_s.data_ptr() == ptr and elsewhere.data_ptr() != ptr


def test_torch_explicit_stream_equal_to_the_current_one():
    torch, x = torch_zeros()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch_busy_then(s, lambda: x.fill_(41.0))
        out = plus_one(x, stream=s)
        y = out * 2
    torch.cuda.synchronize()
    assert torch.equal(y, torch.full_like(x, 84.0))


def test_torch_capture_allocates_from_the_graph_pool_and_replays():
    torch = need("torch")
    n = 4096
    x = torch.zeros(n, device="cuda")
    side = torch.cuda.Stream()  # warm up (compile) off the capture, as torch asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        plus_one(x, n)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = plus_one(x, n)
    assert isinstance(out, torch.Tensor)
    segments = [s for s in torch.cuda.memory_snapshot()
                if s["address"] <= out.data_ptr() < s["address"] + s["total_size"]]
    assert len(segments) == 1
    if "segment_pool_id" in segments[0]:
        assert tuple(segments[0]["segment_pool_id"]) == tuple(graph.pool())
    for seed in range(3):
        data = torch.randn(n, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        x.copy_(data)  # the input changed in place, then the graph replayed
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out, data + 1, rtol=0, atol=0)


# --- CuPy: its memory pool -------------------------------------------------------------------------------------------

def cupy_zeros(n=N):
    cp = need("cupy")
    x = cp.zeros(n, cp.float32)
    plus_one(x, n)
    cp.cuda.Device().synchronize()
    return cp, x


def test_cupy_outputs_come_from_cupys_pool():
    cp, x = cupy_zeros()
    pool = cp.get_default_memory_pool()
    before = pool.used_bytes()
    out = plus_one(x)
    assert isinstance(out, cp.ndarray) and out.flags.c_contiguous
    assert pool.used_bytes() - before == 4 * N
    np.testing.assert_array_equal(out.get(), np.ones(N, np.float32))
    del out
    assert pool.used_bytes() == before


def test_cupy_init_value_and_explicit_stream():
    cp, x = cupy_zeros()
    s = cp.cuda.Stream(non_blocking=True)
    (out,) = untouched_kernel()(inputs=[x], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(3, 5)],
                                output_dtypes=[jk.int32], init_value=7, stream=s)
    assert isinstance(out, cp.ndarray) and out.dtype == np.int32
    s.synchronize()
    np.testing.assert_array_equal(out.get(), np.full((3, 5), 7, np.int32))
    with s:  # written on s: a consumer on s sees it
        cupy_spin()
        x.fill(41.0)
    out = plus_one(x, stream=s)
    cp.cuda.Device().synchronize()
    np.testing.assert_array_equal((out * 2).get(), np.full(N, 84.0, np.float32))


def test_jk_array_and_numpy_inputs_keep_jitkernels_pool():
    out = plus_one(np.zeros(N, np.float32))
    assert isinstance(out, jk.Array)
    again = plus_one(out)
    assert isinstance(again, jk.Array)
    np.testing.assert_array_equal(again.numpy(), np.full(N, 2.0, np.float32))


# --- In-place: an input that is also an output ----------------------------------------------------------------------

def framework_ones(name, n):
    if name == "torch":
        return need("torch").ones(n, device="cuda")
    if name == "cupy":
        cp = need("cupy")
        return cp.ones(n, cp.float32)
    return plus_one(np.zeros(n, np.float32), n)  # a jk.Array


@pytest.mark.parametrize("name", ["torch", "cupy", "jk"])
def test_in_place_call(name):
    n = 10_000
    x = framework_ones(name, n)
    result = plus_one(x, n, outputs=[x])  # reads `const float* x` and writes `float* out`: the same memory
    assert result is x
    (again,) = plus_one_kernel()(inputs=[x], outputs=[x], grid=(n, 1, 1), threadgroup=(256, 1, 1))
    assert again is x
    np.testing.assert_array_equal(to_numpy(x), np.full(n, 3.0, np.float32))


def test_in_place_source_has_const_input_and_mutable_output():
    text = plus_one_kernel().source(inputs=[np.zeros(4, np.float32)], output_dtypes=[jk.float32])
    assert "const float* x" in text and "float* out" in text and "__restrict__" not in text


@pytest.mark.parametrize("name", ["torch", "cupy"])
def test_strided_alias_is_refused_then_read_in_place_when_asked(name):
    n = 64
    if name == "torch":
        torch = need("torch")
        x = torch.arange(n * n, dtype=torch.float32, device="cuda").reshape(n, n)
    else:
        cp = need("cupy")
        x = cp.arange(n * n, dtype=cp.float32).reshape(n, n)
    want = to_numpy(x).copy()
    body = INDEX + "if (i < {n}) {{ size_t d = i * {n} + i; out[d] = x[elem_to_loc((int64_t)d, x_shape, x_strides, x_ndim)] + 1.0f; }}"
    strict = jk.cuda_kernel("alloc_diag_strict", ["x"], ["out"], body.format(n=n))
    with pytest.raises(jk.ArgumentError, match=r"inputs\[0\] shares memory with outputs\[0\]"):
        strict(inputs=[x.T], outputs=[x], grid=(n, 1, 1), threadgroup=(64, 1, 1))
    np.testing.assert_array_equal(to_numpy(x), want)  # nothing ran
    lax = jk.cuda_kernel("alloc_diag_lax", ["x"], ["out"], body.format(n=n), ensure_row_contiguous=False)
    lax(inputs=[x.T], outputs=[x], grid=(n, 1, 1), threadgroup=(64, 1, 1))  # the diagonal, read where it is written
    want[np.arange(n), np.arange(n)] += 1.0
    np.testing.assert_array_equal(to_numpy(x), want)
