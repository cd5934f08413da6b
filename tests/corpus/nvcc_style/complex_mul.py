"""Complex multiply-conjugate of complex64 arrays through MLX's complex_t (cuda::std::complex): inputs arrive as
cuComplex and are reinterpreted, as MLX kernels do."""
import numpy as np

KERNEL = dict(
    name="complex_mul",
    input_names=["a", "b"],
    output_names=["c"],
    source=r"""
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a_shape[0]) return;
  complex64_t x = reinterpret_cast<const complex64_t*>(a)[i];
  complex64_t y = reinterpret_cast<const complex64_t*>(b)[i];
  reinterpret_cast<complex64_t*>(c)[i] = x * cuda::std::conj(y);
""",
)


def case():
    rng = np.random.default_rng(18)
    a = (rng.normal(size=500) + 1j * rng.normal(size=500)).astype(np.complex64)
    b = (rng.normal(size=500) + 1j * rng.normal(size=500)).astype(np.complex64)
    return dict(inputs=[a, b], grid=(500, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(500,)],
                output_dtypes=[np.complex64], expected=[a * np.conj(b)], rtol=1e-5, atol=1e-5)
