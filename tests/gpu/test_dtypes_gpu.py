"""Element types and call signatures on a GPU: every dtype in and out, bfloat16 from torch
and JAX, complex64, Python scalars by value, template values, and one kernel called with
many signatures (each compiled variant must be the right one), checked against NumPy."""
import functools

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, output_type, to_device, to_numpy

pytestmark = pytest.mark.gpu

N = 1000


@functools.lru_cache(maxsize=None)
def twice_kernel():
    """One kernel object shared by every test here, called with many signatures."""
    return jk.cuda_kernel("twice", ["inp"], ["out"],
                          INDEX + "if (i < inp_shape[0]) { out[i] = inp[i] + inp[i]; }\n")


def sample(dtype, n=N, seed=0):
    """Random values of `dtype` whose doubling stays in range (bool: any)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min // 2, info.max // 2, n, dtype=dtype, endpoint=True)
    return (rng.standard_normal(n) * 100).astype(dtype)


def twice(x):
    (out,) = twice_kernel()(inputs=[x], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                            output_shapes=[(N,)], output_dtypes=[x.dtype])
    return out


ALL_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
              np.int64, np.uint64, np.float16, np.float32, np.float64]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_in_and_out(dtype):
    x = sample(dtype)
    got = twice(x).numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, x + x)


def test_one_kernel_many_signatures_interleaved():
    # Each call must find its own compiled variant, also when signatures alternate.
    order = [np.float32, np.float16, np.int32, np.float32, np.float64, np.uint8, np.float16,
             np.int64, np.float32]
    for k, dtype in enumerate(order):
        x = sample(dtype, seed=k)
        np.testing.assert_array_equal(twice(x).numpy(), x + x, err_msg=np.dtype(dtype).name)


@pytest.mark.parametrize("fw", ["torch", "jax"])
def test_bfloat16(fw):
    x32 = np.random.default_rng(3).standard_normal((8, 125)).astype(np.float32)
    x = to_device(fw, x32, bfloat16=True)
    kernel = jk.cuda_kernel("bf16_affine", ["inp"], ["out", "as_float"], INDEX + """
    if (i < inp_shape[0] * inp_shape[1]) {
        const float v = static_cast<float>(inp[i]);
        out[i] = v * 2.0f + 1.0f;
        as_float[i] = v;
    }""")
    out, as_float = kernel(inputs=[x], grid=(N, 1, 1), threadgroup=(128, 1, 1),
                           output_shapes=[x.shape, x.shape],
                           output_dtypes=[jk.bfloat16, jk.float32])
    assert isinstance(out, output_type(fw))
    assert "bfloat16" in str(out.dtype)
    exact = to_numpy(x)  # the bfloat16 inputs, widened
    np.testing.assert_array_equal(to_numpy(as_float), exact)
    np.testing.assert_allclose(to_numpy(out), exact * 2 + 1, rtol=2.0 ** -8, atol=1e-6)


@pytest.mark.parametrize("fw", ["numpy", "torch", "cupy", "jax"])
def test_float16_frameworks(fw):
    x16 = (np.random.default_rng(4).standard_normal(N) * 10).astype(np.float16)
    x = to_device(fw, x16)
    got = to_numpy(twice(x))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, x16 + x16)


@pytest.mark.parametrize("fw", ["numpy", "torch", "cupy"])
def test_complex64(fw):
    rng = np.random.default_rng(5)
    z = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64)
    kernel = jk.cuda_kernel("complex_ops", ["inp"], ["scaled", "conjugate"], INDEX + """
    if (i < inp_shape[0]) {
        scaled[i] = cuCmulf(inp[i], make_cuComplex(2.0f, 3.0f));
        conjugate[i] = make_cuComplex(inp[i].x, -inp[i].y);
    }""")
    scaled, conjugate = kernel(inputs=[to_device(fw, z)], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                               output_shapes=[(N,), (N,)], output_dtypes=[jk.complex64] * 2)
    got_scaled, got_conj = to_numpy(scaled), to_numpy(conjugate)
    assert got_scaled.dtype == np.complex64
    np.testing.assert_allclose(got_scaled, z.astype(np.complex128) * (2 + 3j), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got_conj, np.conj(z))


@pytest.mark.parametrize("value,dtype", [
    (True, np.bool_), (False, np.bool_),
    (7, np.int32), (-(2 ** 31), np.int32), (2 ** 31 - 1, np.int32),
    (2 ** 31, np.int64), (-(2 ** 40) - 3, np.int64), (2 ** 62 + 1, np.int64),
    (1.5, np.float32), (7.3, np.float32), (-1e30, np.float32),
])
def test_python_scalar_inputs(value, dtype):
    # bool -> bool, int -> int32 (int64 out of range), float -> float32; read as s[0].
    kernel = jk.cuda_kernel("scalar_probe", ["s"], ["value", "size"],
                            "value[0] = s[0];\nsize[0] = sizeof(s[0]);\n")
    got, size = kernel(inputs=[value], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                       output_shapes=[(1,), (1,)], output_dtypes=[dtype, jk.int32])
    assert size.numpy()[0] == np.dtype(dtype).itemsize
    assert got.numpy()[0] == np.array(value).astype(dtype)


@pytest.mark.parametrize("fw", ["numpy", "torch", "cupy", "jax"])
def test_scalars_with_arrays(fw):
    x32 = np.random.default_rng(6).standard_normal(N).astype(np.float32)
    kernel = jk.cuda_kernel("axpb", ["x", "a", "b", "neg"], ["out"], INDEX + """
    if (i < x_shape[0]) { out[i] = (neg[0] ? -1.0f : 1.0f) * (x[i] * a[0] + b[0]); }""")
    (out,) = kernel(inputs=[to_device(fw, x32), 2.5, 3, True], grid=(N, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[(N,)], output_dtypes=[jk.float32])
    assert isinstance(out, output_type(fw))
    np.testing.assert_allclose(to_numpy(out), -(x32 * np.float32(2.5) + 3), rtol=1e-6, atol=1e-6)


def test_template_values_select_variants():
    kernel = jk.cuda_kernel("templated", ["inp"], ["out"], INDEX + """
    if (i < inp_shape[0]) { out[i] = static_cast<T>(B ? inp[i] * K : inp[i] - K); }""")
    x = np.arange(N, dtype=np.float32) - 500
    cases = [(3, True, jk.float32, np.float32), (-2, True, "float64", np.float64),
             (5, False, np.int32, np.int32), (0, False, np.dtype("int64"), np.int64),
             (-7, False, jk.float32, np.float32)]
    for _ in range(2):  # twice: cached variants must still be told apart
        for k, b, t, np_t in cases:
            (out,) = kernel(inputs=[x], template=[("K", k), ("B", b), ("T", t)], grid=(N, 1, 1),
                            threadgroup=(256, 1, 1), output_shapes=[(N,)], output_dtypes=[t])
            want = (x * k if b else x - k).astype(np_t)
            np.testing.assert_array_equal(out.numpy(), want, err_msg=f"K={k} B={b} T={t}")


def test_same_name_different_source():
    x = np.arange(32, dtype=np.float32)

    def run(source):
        kernel = jk.cuda_kernel("dup_name", ["inp"], ["out"], INDEX + source)
        (out,) = kernel(inputs=[x], grid=(32, 1, 1), threadgroup=(32, 1, 1),
                        output_shapes=[(32,)], output_dtypes=[jk.float32])
        return out

    doubled, shifted = run("out[i] = inp[i] * 2.0f;"), run("out[i] = inp[i] + 100.0f;")
    np.testing.assert_array_equal(doubled.numpy(), x * 2)
    np.testing.assert_array_equal(shifted.numpy(), x + 100)


def test_zero_dim_array_input():
    x = np.arange(N, dtype=np.float32)
    scale = np.array(4.0, dtype=np.float32)  # 0-d: still a pointer, scale[0]
    kernel = jk.cuda_kernel("scale0d", ["x", "scale"], ["out"],
                            INDEX + "if (i < x_shape[0]) { out[i] = x[i] * scale[0]; }")
    (out,) = kernel(inputs=[x, scale], grid=(N, 1, 1), threadgroup=(256, 1, 1),
                    output_shapes=[(N,)], output_dtypes=[jk.float32])
    np.testing.assert_array_equal(out.numpy(), x * 4)
