"""Arrays in and out on a GPU: NumPy, torch, CuPy and JAX inputs give outputs of the same
framework on the same device; jitkernel.Array's protocols; zero-copy device inputs; outputs=
written in place (and checked); dtype spellings; several GPUs and mixed devices."""
import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import FRAMEWORKS, INDEX, need, output_type, to_device, to_numpy

pytestmark = pytest.mark.gpu

N = 1000
AFFINE = "if (i < x_shape[0]) { out[i] = x[i] * 3 + y[i]; }\n"


def affine_kernel():
    return jk.cuda_kernel("affine", ["x", "y"], ["out"], INDEX + AFFINE)


def run_affine(x, y, dtype, **kw):
    (out,) = affine_kernel()(inputs=[x, y], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                             output_shapes=[(N,)], output_dtypes=[dtype], **kw)
    return out


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-50, 50, N).astype(np.float32), rng.integers(-50, 50, N).astype(np.float32)


def device_index(fw, a):
    """CUDA ordinal holding framework array `a` (None for NumPy / jitkernel host copies)."""
    if fw == "torch":
        return a.device.index
    if fw == "cupy":
        return a.device.id
    if fw == "jax":
        return next(iter(a.devices())).id
    return None


@pytest.mark.parametrize("fw", FRAMEWORKS)
def test_framework_in_same_framework_out(fw):
    x, y = inputs()
    dx, dy = to_device(fw, x), to_device(fw, y)
    out = run_affine(dx, dy, jk.float32)
    assert isinstance(out, output_type(fw))
    assert tuple(out.shape) == (N,)
    assert device_index(fw, out) == device_index(fw, dx)
    got = to_numpy(out)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x * 3 + y)


def test_jitkernel_array_protocols():
    x, y = inputs(1)
    out = run_affine(x, y, jk.float32)
    assert isinstance(out, jk.Array)
    assert tuple(out.shape) == (N,) and out.size == N and out.nbytes == 4 * N
    assert tuple(out.__dlpack_device__()) == (2, 0)  # (kDLCUDA, GPU 0)
    cai = out.__cuda_array_interface__
    assert tuple(cai["shape"]) == (N,) and np.dtype(cai["typestr"]) == np.float32
    assert cai["data"][0] != 0
    np.testing.assert_array_equal(np.asarray(out), x * 3 + y)
    np.testing.assert_array_equal(out.numpy(), x * 3 + y)
    # A jitkernel.Array is a valid input in turn; the result is one too.
    again = run_affine(out, y, jk.float32)
    assert isinstance(again, jk.Array)
    np.testing.assert_array_equal(again.numpy(), (x * 3 + y) * 3 + y)


@pytest.mark.parametrize("fw", ["torch", "cupy", "jax"])
def test_jitkernel_array_exports_zero_copy(fw):
    mod = need(fw)
    x, y = inputs(2)
    out = run_affine(x, y, jk.float32)
    ptr = out.__cuda_array_interface__["data"][0]
    if fw == "torch":
        view = mod.from_dlpack(out)
        assert view.data_ptr() == ptr and view.device.type == "cuda"
    elif fw == "cupy":
        view = mod.asarray(out)  # through __cuda_array_interface__
        assert view.data.ptr == ptr
    else:
        import jax.numpy as jnp

        view = jnp.from_dlpack(out)
    np.testing.assert_array_equal(to_numpy(view), x * 3 + y)


@pytest.mark.parametrize("fw", ["torch", "cupy"])
def test_device_inputs_are_zero_copy(fw):
    # The kernel writes through its (const) input pointer: visible only without a copy.
    x = to_device(fw, np.zeros(N, np.float32))
    kernel = jk.cuda_kernel("write_input", ["inp"], ["out"], INDEX + """
    if (i < inp_shape[0]) { const_cast<float*>(inp)[i] = i; out[i] = 1.0f; }""")
    kernel(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
           output_shapes=[(N,)], output_dtypes=[jk.float32])
    np.testing.assert_array_equal(to_numpy(x), np.arange(N, dtype=np.float32))


@pytest.mark.parametrize("fw", ["torch", "cupy"])
def test_inputs_with_offset(fw):
    # Contiguous slices that start inside their allocation must be read from their start.
    x, y = inputs(3)
    bx = to_device(fw, np.concatenate([np.full(7, 1e6, np.float32), x]))
    by = to_device(fw, np.concatenate([np.full(3, -1e6, np.float32), y, np.zeros(4, np.float32)]))
    out = run_affine(bx[7:], by[3:3 + N], jk.float32)
    np.testing.assert_array_equal(to_numpy(out), x * 3 + y)


@pytest.mark.parametrize("fw", ["torch", "cupy"])
def test_outputs_written_in_place(fw):
    x, y = inputs(4)
    dx, dy = to_device(fw, x), to_device(fw, y)
    buffer = to_device(fw, np.full(N + 10, -5.0, np.float32))
    target = buffer[4:4 + N]  # contiguous, starting inside its allocation
    ptr = target.data_ptr() if fw == "torch" else target.data.ptr
    result = affine_kernel()(inputs=[dx, dy], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                             output_shapes=[(N,)], output_dtypes=[jk.float32], outputs=[target])
    assert len(result) == 1 and result[0] is target
    assert (target.data_ptr() if fw == "torch" else target.data.ptr) == ptr
    want = np.full(N + 10, -5.0, np.float32)
    want[4:4 + N] = x * 3 + y
    np.testing.assert_array_equal(to_numpy(buffer), want)


@pytest.mark.parametrize("case", ["shape", "dtype", "strided", "count", "host"])
@pytest.mark.parametrize("fw", ["torch", "cupy"])
def test_outputs_mismatch_is_an_error(fw, case):
    x, y = inputs(5)
    dx, dy = to_device(fw, x), to_device(fw, y)
    bad = {
        "shape": lambda: [to_device(fw, np.zeros(N + 1, np.float32))],
        "dtype": lambda: [to_device(fw, np.zeros(N, np.float64))],
        "strided": lambda: [to_device(fw, np.zeros(2 * N, np.float32))[::2]],
        "count": lambda: [to_device(fw, np.zeros(N, np.float32))] * 2,
        "host": lambda: [np.zeros(N, np.float32)],
    }[case]()
    errors = (jk.ArgumentError, jk.ArgumentTypeError) if case == "host" else jk.ArgumentError
    with pytest.raises(errors, match="^outputs"):
        run_affine(dx, dy, jk.float32, outputs=bad)


def test_output_dtype_spellings():
    torch = need("torch")
    x, y = inputs(6)
    dx, dy = to_device("torch", x), to_device("torch", y)
    for spelling in [jk.float16, np.float16, np.dtype("float16"), "float16", torch.float16]:
        out = run_affine(dx, dy, spelling)
        assert out.dtype == torch.float16, spelling
        np.testing.assert_array_equal(to_numpy(out), (x * 3 + y).astype(np.float16))


def test_second_gpu():
    torch = need("torch")
    if torch.cuda.device_count() < 2 or jk.device_count() < 2:
        pytest.skip("needs two GPUs")
    x, y = inputs(7)
    dx, dy = torch.from_numpy(x).to("cuda:1"), torch.from_numpy(y).to("cuda:1")
    out = run_affine(dx, dy, jk.float32)
    assert out.device == torch.device("cuda:1")
    np.testing.assert_array_equal(to_numpy(out), x * 3 + y)
    target = torch.empty(N, device="cuda:1")
    assert run_affine(dx, dy, jk.float32, outputs=[target]) is target  # run_affine unpacks the one output
    np.testing.assert_array_equal(to_numpy(target), x * 3 + y)


def test_mixed_devices_are_an_error():
    torch = need("torch")
    if torch.cuda.device_count() < 2 or jk.device_count() < 2:
        pytest.skip("needs two GPUs")
    x, y = inputs(8)
    with pytest.raises(jk.ArgumentError, match="^inputs"):
        run_affine(torch.from_numpy(x).to("cuda:0"), torch.from_numpy(y).to("cuda:1"), jk.float32)
