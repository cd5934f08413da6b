"""precompiled_cuda_kernel on a GPU: PTX and cubins from NVRTC and from nvcc (and an nvcc fatbin) running a kernel
with `long` and `double` scalar parameters, a 2-D grid, two outputs and init_value; one binary with two entry
points; the same entry name in two binaries; the wrong architecture and PTX newer than the driver rejected
cleanly; names not in the binary; torch in -> torch out; outputs=, streams, strided inputs, >48 KiB shared
memory, scalar inputs as 0-d arrays."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import need, to_numpy
from jitkernel._kernels.precompiled import inspect_binary

pytestmark = pytest.mark.gpu

AFFINE = r"""
extern "C" __global__ void affine2d(const float* x, float* y, double* z, long rows, long cols, double alpha,
                                    long big, bool add_one) {
  long c = blockIdx.x * (long)blockDim.x + threadIdx.x;
  long r = blockIdx.y * (long)blockDim.y + threadIdx.y;
  if (r < rows && c < cols) {
    long i = r * cols + c;
    y[i] = (float)(alpha * x[i]) + (float)(big >> 40) + (add_one ? 1.0f : 0.0f);
    z[i] += (double)x[i] * (double)(r + 1);
  }
}
"""
ROWS, COLS = 37, 53  # not multiples of the threadgroup
ALPHA = 0.1  # not representable in float32: a double parameter read as float would show


def device_arch():
    return jk.device_info(0)["arch"]


def driver_max_ptx():
    """Highest PTX ISA version the installed driver JIT-compiles (CUDA 13.x: 9.x, 12.x: 8.x)."""
    version = ctypes.c_int()
    ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version))
    major, minor = version.value // 1000, (version.value % 1000) // 10
    if major >= 13:
        return (9 + major - 13, minor)
    return (8, {6: 5, 7: 6, 8: 7, 9: 8}.get(minor, minor))


NVCC = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def nvcc(tmp_path, source, *flags):
    if not os.path.exists(NVCC):
        pytest.skip("nvcc not installed")
    src = tmp_path / "k.cu"
    src.write_text(source)
    out = tmp_path / "k.bin"
    result = subprocess.run([NVCC, *flags, str(src), "-o", str(out)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"nvcc failed: {result.stderr}")
    return out.read_bytes()


def binary(kind, tmp_path, source=AFFINE):
    arch = device_arch()
    if kind == "nvrtc-cubin":
        return jk.compile_cuda(source, arch=arch, target="cubin")
    if kind == "nvrtc-ptx":
        return jk.compile_cuda(source, arch=arch, target="ptx")
    if kind == "nvcc-cubin":
        return nvcc(tmp_path, source, "-cubin", f"-arch={arch}")
    if kind == "nvcc-ptx":
        return nvcc(tmp_path, source, "-ptx", f"-arch={arch}")
    if kind == "nvcc-fatbin":
        virtual = arch.replace("sm_", "compute_")
        return nvcc(tmp_path, source, "-fatbin", "-gencode", f"arch={virtual},code=[{arch},{virtual}]",
                    "-gencode", "arch=compute_80,code=sm_80")
    raise AssertionError(kind)


def run_affine(data, x, **kw):
    return jk.precompiled_cuda_kernel(
        name="affine2d", compiled_source=data, inputs=[x], output_shapes=[(ROWS, COLS), (ROWS, COLS)],
        output_dtypes=[np.float32, np.float64],
        scalars=[np.int64(ROWS), np.int64(COLS), np.float64(ALPHA), np.int64(3 << 40), True],
        grid=(COLS, ROWS, 1), threadgroup=(16, 8, 1), init_value=3.0, **kw)


def expected_affine(x):
    r = np.arange(ROWS, dtype=np.float64)[:, None]
    y = (ALPHA * x.astype(np.float64)).astype(np.float32) + np.float32(3) + np.float32(1)
    z = 3.0 + x.astype(np.float64) * (r + 1)
    return y, z


def check_affine(outs, x):
    y, z = (to_numpy(o) for o in outs)
    ey, ez = expected_affine(x)
    assert y.dtype == np.float32 and z.dtype == np.float64
    np.testing.assert_allclose(y, ey, rtol=1e-6)
    np.testing.assert_allclose(z, ez, rtol=1e-12)


@pytest.mark.parametrize("kind", ["nvrtc-cubin", "nvrtc-ptx", "nvcc-cubin", "nvcc-ptx", "nvcc-fatbin"])
def test_long_double_scalars_2d_grid_two_outputs_init_value(kind, tmp_path):
    data = binary(kind, tmp_path)
    x = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)
    if kind.endswith("ptx") and inspect_binary(data)["ptx_version"] > driver_max_ptx():
        # PTX from a toolkit newer than the driver: a clear error suggesting a cubin, not a crash.
        with pytest.raises(jk.ArgumentError) as info:
            run_affine(data, x)
        message = str(info.value)
        assert info.value.argument == "compiled_source"
        assert "newer than the installed driver" in message and "cubin" in message
        return
    outs = run_affine(data, x)
    assert all(isinstance(o, jk.Array) for o in outs)
    check_affine(outs, x)
    check_affine(run_affine(data, x), x)  # second call: cached module and function


def test_ptx_without_trailing_nul(tmp_path):
    data = binary("nvcc-ptx", tmp_path).rstrip(b"\0")
    x = np.ones((ROWS, COLS), np.float32)
    check_affine(run_affine(data, x), x)


def test_torch_in_torch_out_and_outputs(tmp_path):
    torch = need("torch")
    data = binary("nvrtc-cubin", tmp_path)
    xh = np.random.default_rng(1).standard_normal((ROWS, COLS)).astype(np.float32)
    x = torch.from_numpy(xh).cuda()
    outs = run_affine(data, x)
    assert all(isinstance(o, torch.Tensor) and o.is_cuda for o in outs)
    check_affine(outs, xh)
    y = torch.empty((ROWS, COLS), dtype=torch.float32, device="cuda")
    z = torch.zeros((ROWS, COLS), dtype=torch.float64, device="cuda")
    got = run_affine(data, x, outputs=[y, z])
    assert got[0] is y and got[1] is z
    check_affine([y, z], xh)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        outs = run_affine(data, x, stream=stream)
    stream.synchronize()
    check_affine(outs, xh)


TWO_ENTRIES = r"""
extern "C" __global__ void add_scalar(const float* x, float* y, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + v;
}
__global__ void mul_scalar(const float* x, float* y, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * v;
}
"""
MUL_NAME = "_Z10mul_scalarPKfPffi"


def run_1d(data, name, x, *scalars):
    (y,) = jk.precompiled_cuda_kernel(name=name, compiled_source=data, inputs=[x], output_shapes=[x.shape],
                                      output_dtypes=[np.float32], scalars=list(scalars), grid=(x.size, 1, 1),
                                      threadgroup=(128, 1, 1))
    return to_numpy(y)


@pytest.mark.parametrize("kind", ["nvrtc-cubin", "nvcc-cubin", "nvcc-fatbin"])
def test_two_entry_points_in_one_binary(kind, tmp_path):
    data = binary(kind, tmp_path, TWO_ENTRIES)
    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(run_1d(data, "add_scalar", x, 2.5, 1000), x + 2.5)
    np.testing.assert_array_equal(run_1d(data, MUL_NAME, x, 3.0, 1000), x * 3)
    with pytest.raises(jk.ArgumentError) as info:
        run_1d(data, "mul_scalar", x, 3.0, 1000)
    assert info.value.argument == "name"
    assert "add_scalar" in str(info.value) and MUL_NAME in str(info.value)


def test_same_name_in_two_binaries_gives_different_results(tmp_path):
    src = 'extern "C" __global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = %s; }'
    plus = jk.compile_cuda(src % "x[i] + 1.0f", arch=device_arch())
    times = jk.compile_cuda(src % "x[i] * 2.0f", arch=device_arch())
    x = np.arange(64, dtype=np.float32)
    for _ in range(2):  # alternate: each call must run its own binary's code
        np.testing.assert_array_equal(run_1d(plus, "k", x, 64), x + 1)
        np.testing.assert_array_equal(run_1d(times, "k", x, 64), x * 2)


def test_cubin_for_the_wrong_architecture_is_rejected():
    info = jk.device_info(0)
    wrong = "sm_80" if info["compute_capability"][0] != 8 else "sm_90"
    data = jk.compile_cuda(TWO_ENTRIES, arch=wrong)
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(jk.ArgumentError) as e:
        run_1d(data, "add_scalar", x, 1.0, 8)
    message = str(e.value)
    assert e.value.argument == "compiled_source"
    assert f"cubin built for {wrong}" in message and info["name"] in message
    # The library keeps working after the rejection.
    good = jk.compile_cuda(TWO_ENTRIES, arch=device_arch())
    np.testing.assert_array_equal(run_1d(good, "add_scalar", x, 1.0, 8), x + 1)


def test_fatbin_without_an_image_for_the_device_is_rejected(tmp_path):
    wrong = "80" if jk.device_info(0)["compute_capability"][0] != 8 else "90"
    data = nvcc(tmp_path, TWO_ENTRIES, "-fatbin", "-gencode", f"arch=compute_{wrong},code=sm_{wrong}")
    with pytest.raises(jk.ArgumentError) as e:
        run_1d(data, "add_scalar", np.zeros(8, np.float32), 1.0, 8)
    assert e.value.argument == "compiled_source"
    assert f"cubin for sm_{wrong}" in str(e.value) and "can run none of them" in str(e.value)


def test_parameter_mismatch_is_caught_before_launch(tmp_path):
    data = binary("nvrtc-cubin", tmp_path, TWO_ENTRIES)
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(jk.ArgumentError) as e:
        run_1d(data, "add_scalar", x, np.float64(1.0), 8)
    assert e.value.argument == "scalars" and "parameter 2" in str(e.value)
    with pytest.raises(jk.ArgumentError) as e:
        run_1d(data, "add_scalar", x, 1.0)
    assert e.value.argument == "scalars" and "takes 4 parameters" in str(e.value)


def test_scalar_inputs_are_passed_as_device_pointers():
    src = 'extern "C" __global__ void scale(const float* x, const float* s, float* y) { y[threadIdx.x] = x[threadIdx.x] * s[0]; }'
    data = jk.compile_cuda(src, arch=device_arch())
    x = np.arange(32, dtype=np.float32)
    (y,) = jk.precompiled_cuda_kernel(name="scale", compiled_source=data, inputs=[x, 1.5], output_shapes=[(32,)],
                                      output_dtypes=[np.float32], scalars=[], grid=(32, 1, 1),
                                      threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(to_numpy(y), x * 1.5)


def test_ensure_row_contiguous():
    torch = need("torch")
    src = 'extern "C" __global__ void copy(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x]; }'
    data = jk.compile_cuda(src, arch=device_arch())
    base = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    xt = base.t()  # (3, 2), not contiguous

    def call(flag):
        (y,) = jk.precompiled_cuda_kernel(name="copy", compiled_source=data, inputs=[xt], output_shapes=[(6,)],
                                          output_dtypes=[np.float32], scalars=[], grid=(6, 1, 1),
                                          threadgroup=(6, 1, 1), ensure_row_contiguous=flag)
        return to_numpy(y)

    np.testing.assert_array_equal(call(True), [0, 3, 1, 4, 2, 5])   # a row-contiguous copy
    np.testing.assert_array_equal(call(False), [0, 1, 2, 3, 4, 5])  # the tensor's memory as it is


def test_dynamic_shared_memory_above_48k():
    src = r"""
    extern "C" __global__ void reverse(const float* x, float* y, int n) {
      extern __shared__ float tile[];
      for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = x[i];
      __syncthreads();
      for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = tile[n - 1 - i];
    }"""
    data = jk.compile_cuda(src, arch=device_arch())
    n = 16384  # 64 KiB of floats
    x = np.arange(n, dtype=np.float32)
    (y,) = jk.precompiled_cuda_kernel(name="reverse", compiled_source=data, inputs=[x], output_shapes=[(n,)],
                                      output_dtypes=[np.float32], scalars=[n], grid=(256, 1, 1),
                                      threadgroup=(256, 1, 1), shared_memory=n * 4)
    np.testing.assert_array_equal(to_numpy(y), x[::-1])


def test_binaries_with_colliding_64_bit_hashes_run_their_own_code():
    # Same size, same 64-bit hash_bytes, same entry name and parameters, different constant stored: each call must
    # run its own binary, through the parsed-binary, function and loaded-module caches alike.
    from _hash_collision import colliding_ptx

    body = (".visible .entry k(\n.param .u64 o\n)\n{\n.reg .b64 %rd<3>;\n.reg .f32 %f<2>;\n"
            "ld.param.u64 %rd1, [o];\ncvta.to.global.u64 %rd2, %rd1;\nmov.f32 %f1, {};\n"
            "st.global.f32 [%rd2], %f1;\nret;\n}}\n")
    one, two = colliding_ptx(body.replace("{}", "0f3F800000").replace("}}", "}"),  # 1.0f
                             body.replace("{}", "0f40000000").replace("}}", "}"))  # 2.0f
    if (8, 0) > driver_max_ptx():
        pytest.skip("the driver does not JIT-compile PTX 8.0")

    def store(binary):
        out, = jk.precompiled_cuda_kernel(name="k", compiled_source=binary, inputs=[], output_shapes=[(1,)],
                                          output_dtypes=[np.float32], scalars=[], grid=(1, 1, 1),
                                          threadgroup=(1, 1, 1))
        return to_numpy(out)[0]

    for _ in range(2):
        assert store(one) == 1.0
        assert store(two) == 2.0
