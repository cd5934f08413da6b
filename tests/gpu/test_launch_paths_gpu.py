"""The fast paths of a call (issue 6): the tiled transpose behind ensure_row_contiguous for x.T-like views, torch
tensors read and returned through torch's DLPack exchange API (with the attribute / DLPack paths as fallbacks),
and the per-thread argument storage reused from call to call, including a call made while another converts."""
import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, need, to_numpy

pytestmark = pytest.mark.gpu

COPY = INDEX + "if (i < out_size[0]) out[i] = inp[i];"


def copy_kernel(name="rowcopy"):
    # out_size: the number of elements, a scalar input (read as out_size[0]).
    return jk.cuda_kernel(name, ["inp", "out_size"], ["out"], COPY)


def run_copy(kernel, view, shape, dtype):
    n = int(np.prod(shape))
    (out,) = kernel(inputs=[view, np.int64(n)], output_shapes=[shape], output_dtypes=[dtype],
                    grid=(max(n, 1), 1, 1), threadgroup=(256, 1, 1))
    return out


TRANSPOSE_SHAPES = [(37, 70), (70, 37), (1030, 2050), (1, 33), (33, 1), (3, 37, 70), (2, 64, 32)]


@pytest.mark.parametrize("dtype", ["uint8", "float16", "float32", "float64"])
@pytest.mark.parametrize("shape", TRANSPOSE_SHAPES)
def test_transposed_torch_inputs_are_copied_in_order(shape, dtype):
    torch = need("torch")
    rng = np.random.default_rng(len(shape) * 1000 + shape[-1])
    base = (rng.standard_normal(shape) * 100).astype(dtype)
    x = torch.from_numpy(base).cuda()
    view = x.transpose(-1, -2)  # x.T / x.mT: the source is contiguous along the output's second-last axis
    want = np.ascontiguousarray(np.swapaxes(base, -1, -2))
    out = run_copy(copy_kernel(), view, want.shape, getattr(jk, dtype))
    np.testing.assert_array_equal(to_numpy(out), want)


@pytest.mark.parametrize("view", ["T", "T_reversed_columns", "batch_transposed_sliced"])
def test_transposed_cupy_views_with_negative_and_batch_strides(view):
    cp = need("cupy")
    rng = np.random.default_rng(11)
    base = rng.standard_normal((4, 45, 77)).astype(np.float32)
    x = cp.asarray(base)
    if view == "T":
        got_view, want = x[1].T, base[1].T
    elif view == "T_reversed_columns":  # a negative stride on the strided axis
        got_view, want = x[2].T[:, ::-1], base[2].T[:, ::-1]
    else:  # a strided batch axis in front of the transposed pair
        got_view, want = x[::2].transpose(0, 2, 1), base[::2].transpose(0, 2, 1)
    want = np.ascontiguousarray(want)
    out = run_copy(copy_kernel(), got_view, want.shape, jk.float32)
    np.testing.assert_array_equal(to_numpy(out), want)


def test_transposed_complex_input():
    torch = need("torch")
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((19, 66)) + 1j * rng.standard_normal((19, 66))).astype(np.complex64)
    view = torch.from_numpy(base).cuda().T
    out = run_copy(copy_kernel(), view, (66, 19), jk.complex64)
    np.testing.assert_array_equal(to_numpy(out), np.ascontiguousarray(base.T))


ADD = INDEX + "if (i < n[0]) out[i] = a[i] + b[i];"


@pytest.mark.parametrize("provided", [False, True])
def test_torch_in_torch_out_on_the_current_stream(provided):
    torch = need("torch")
    kernel = jk.cuda_kernel("add_current", ["a", "b", "n"], ["out"], ADD)
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = torch.full((1000,), float("nan"), device="cuda") if provided else None
        result = kernel(inputs=[a, b, 1000], output_shapes=[(1000,)], output_dtypes=[jk.float32],
                        grid=(1000, 1, 1), threadgroup=(128, 1, 1), outputs=[out] if provided else None)[0]
        assert isinstance(result, torch.Tensor) and result.device == a.device
        if provided:
            assert result is out
        # Ordered on the current stream: a torch op queued after it sees the sum.
        check = result - (a + b)
    stream.synchronize()
    assert float(check.abs().max()) == 0.0


def test_torch_inputs_that_require_grad_and_parameters():
    torch = need("torch")
    kernel = jk.cuda_kernel("add_grad", ["a", "b", "n"], ["out"], ADD)
    a = torch.randn(300, device="cuda", requires_grad=True)
    b = torch.nn.Parameter(torch.randn(300, device="cuda"))
    (out,) = kernel(inputs=[a, b, 300], output_shapes=[(300,)], output_dtypes=[jk.float32],
                    grid=(300, 1, 1), threadgroup=(128, 1, 1))
    np.testing.assert_array_equal(to_numpy(out), to_numpy(a) + to_numpy(b))


def test_torch_negative_bit_is_still_refused():
    torch = need("torch")
    kernel = jk.cuda_kernel("add_neg", ["a", "b", "n"], ["out"], ADD)
    z = torch.randn(8, dtype=torch.complex64, device="cuda")
    neg = z.conj().imag
    assert neg.is_neg()
    with pytest.raises(jk.ArgumentError, match="negative bit"):
        kernel(inputs=[neg, neg, 8], output_shapes=[(8,)], output_dtypes=[jk.float32],
               grid=(8, 1, 1), threadgroup=(8, 1, 1))


def test_reused_argument_storage_across_different_calls():
    torch = need("torch")
    rng = np.random.default_rng(3)
    add = jk.cuda_kernel("add_reuse", ["a", "b", "n"], ["out"], ADD)
    two = jk.cuda_kernel("two_out", ["x"], ["p", "q"], INDEX + "if (i < x_shape[0]) { p[i] = x[i] * 2; q[i] = -x[i]; }")
    for step in range(6):
        n = int(rng.integers(1, 3000))
        a_np, b_np = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        a, b = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
        if step % 2:
            out = torch.empty(n, device="cuda")
            (got,) = add(inputs=[a, b, n], grid=(n, 1, 1), threadgroup=(64, 1, 1), outputs=[out])
            assert got is out
        else:
            (got,) = add(inputs=[a_np, b_np, n], output_shapes=[(n,)], output_dtypes=[jk.float32],
                         grid=(n, 1, 1), threadgroup=(64, 1, 1))
        np.testing.assert_array_equal(to_numpy(got), a_np + b_np)
        p, q = two(inputs=[a], output_shapes=[(n,), (n,)], output_dtypes=[jk.float32, jk.float32],
                   grid=(n, 1, 1), threadgroup=(64, 1, 1))
        np.testing.assert_array_equal(to_numpy(p), a_np * 2)
        np.testing.assert_array_equal(to_numpy(q), -a_np)


class KernelInExport:
    """An array whose DLPack export runs another jitkernel kernel: a call nested inside a call's conversion."""

    def __init__(self, tensor, inner):
        self.tensor, self.inner = tensor, inner
        self.inner_result = None

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, stream=None, max_version=None):
        n = self.tensor.numel()
        self.inner_result = self.inner(inputs=[self.tensor, self.tensor, n], output_shapes=[(n,)],
                                       output_dtypes=[jk.float32], grid=(n, 1, 1), threadgroup=(64, 1, 1))[0]
        if max_version is None:
            return self.tensor.__dlpack__(stream=stream)
        return self.tensor.__dlpack__(stream=stream, max_version=max_version)


def test_a_call_nested_in_another_calls_conversion():
    torch = need("torch")
    outer = jk.cuda_kernel("add_outer", ["a", "b", "n"], ["out"], ADD)
    inner = jk.cuda_kernel("add_inner", ["a", "b", "n"], ["out"], ADD)
    a_np = np.arange(500, dtype=np.float32)
    a = torch.from_numpy(a_np).cuda()
    wrapped = KernelInExport(a, inner)
    (got,) = outer(inputs=[a, wrapped, 500], output_shapes=[(500,)], output_dtypes=[jk.float32],
                   grid=(500, 1, 1), threadgroup=(64, 1, 1))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(to_numpy(got), a_np * 2)
    np.testing.assert_array_equal(to_numpy(wrapped.inner_result), a_np * 2)
