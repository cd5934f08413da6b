"""A real kernel on a GPU: row softmax with one block per row, reducing the row's maximum and
sum through warp shuffles and dynamic shared memory, checked against NumPy for float32 and
float16 rows of several lengths (shorter and longer than a block, not multiples of a warp)."""
import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import need, output_type, to_device, to_numpy

pytestmark = pytest.mark.gpu

SOFTMAX = """
extern __shared__ float partial[];  // one value per warp
const int ncols = inp_shape[1];
const auto* x = inp + (size_t)blockIdx.x * ncols;
auto* y = out + (size_t)blockIdx.x * ncols;
const int lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
const int nwarps = blockDim.x / WARP_SIZE;

float m = -__int_as_float(0x7f800000);  // -inf
for (int j = threadIdx.x; j < ncols; j += blockDim.x) m = fmaxf(m, static_cast<float>(x[j]));
for (int o = WARP_SIZE / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
if (lane == 0) partial[warp] = m;
__syncthreads();
m = partial[0];
for (int w = 1; w < nwarps; ++w) m = fmaxf(m, partial[w]);
__syncthreads();

float s = 0.0f;
for (int j = threadIdx.x; j < ncols; j += blockDim.x) s += expf(static_cast<float>(x[j]) - m);
for (int o = WARP_SIZE / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
if (lane == 0) partial[warp] = s;
__syncthreads();
s = 0.0f;
for (int w = 0; w < nwarps; ++w) s += partial[w];
const float inv = 1.0f / s;
for (int j = threadIdx.x; j < ncols; j += blockDim.x) {
    y[j] = expf(static_cast<float>(x[j]) - m) * inv;
}
"""

BLOCK = 128  # threads per row: a multiple of the warp size


def softmax(x, fw="numpy"):
    kernel = jk.cuda_kernel("row_softmax", ["inp"], ["out"], SOFTMAX,
                            shared_memory=4 * (BLOCK // 32))
    (out,) = kernel(inputs=[x], grid=(x.shape[0] * BLOCK, 1, 1), threadgroup=(BLOCK, 1, 1),
                    output_shapes=[x.shape], output_dtypes=[x.dtype])
    assert isinstance(out, output_type(fw))
    return to_numpy(out)


def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


TOLERANCE = {np.float32: dict(rtol=1e-5, atol=1e-7), np.float16: dict(rtol=2e-3, atol=1e-4)}


@pytest.mark.parametrize("ncols", [1, 31, 32, 33, 100, 1000, 4097])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["float32", "float16"])
def test_row_softmax(dtype, ncols):
    x = (np.random.default_rng(ncols).standard_normal((37, ncols)) * 3).astype(dtype)
    got = softmax(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), reference(x), **TOLERANCE[dtype])
    sum_rtol = 2e-3 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got.astype(np.float64).sum(axis=1), 1.0, rtol=sum_rtol)


def test_row_softmax_torch():
    torch = need("torch")
    x = (np.random.default_rng(9).standard_normal((64, 777)) * 3).astype(np.float32)
    got = softmax(to_device("torch", x), fw="torch")
    np.testing.assert_allclose(got, reference(x), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(torch.from_numpy(got), torch.softmax(torch.from_numpy(x), dim=1))
