"""cuda_kernel on a GPU with the kernels of MLX's CUDA custom-kernel tests (basic copy,
scalar/bfloat16/template arguments with two outputs, strided inputs, a header helper,
cooperative groups and thread attributes), init_value, seed 003's example and the dict
form of the call, each checked against NumPy."""
import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, need, output_type, to_device, to_numpy

pytestmark = pytest.mark.gpu

# MLX's CUDA kernels index with cooperative groups; these sources keep that.
CG_ELEM = "auto elem = cooperative_groups::this_grid().thread_rank();\n"


def test_basic_copy():
    a = np.random.default_rng(7).standard_normal((2, 2)).astype(np.float32)
    kernel = jk.cuda_kernel("basic", ["a"], ["out1"], CG_ELEM + "out1[elem] = a[elem];")
    (out,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1),
                    output_shapes=[(2, 2)], output_dtypes=[jk.float32])
    assert isinstance(out, jk.Array)
    assert tuple(out.shape) == (2, 2)
    np.testing.assert_array_equal(out.numpy(), a)


ARGS_SOURCE = CG_ELEM + """
T tmp = a[0];
if (e) {
    out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
} else {
    out1[elem] = 1;
}
out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
"""


@pytest.mark.parametrize("e", [True, False])
@pytest.mark.parametrize("fw", ["torch", "jax"])
def test_args_scalar_bfloat16_templates_two_outputs(fw, e):
    rng = np.random.default_rng(7)
    a_np = rng.standard_normal((3, 6)).astype(np.float32)
    b_np = np.array([3, 4, 5], dtype=np.int32)
    a, b = to_device(fw, a_np), to_device(fw, b_np)
    c = to_device(fw, rng.standard_normal((2, 2)).astype(np.float32), bfloat16=True)
    c_np = to_numpy(c)  # the bfloat16 values, as float32
    d = 7.3  # a Python float: float32 in the kernel, read as d[0]
    kernel = jk.cuda_kernel("arg_test", ["a", "b", "c", "d"], ["out1", "out2"], ARGS_SOURCE)
    out1, out2 = kernel(inputs=[a, b, c, d], template=[("e", e), ("f", 3), ("T", jk.float16)],
                        grid=(6, 1, 1), threadgroup=(2, 1, 1),
                        output_shapes=[(3, 2), (3, 2)], output_dtypes=[jk.float32, jk.int32])
    assert isinstance(out1, output_type(fw)) and isinstance(out2, output_type(fw))
    f32 = np.float32
    a1_b2 = a_np.flat[1] + f32(b_np[2])
    want1 = (a1_b2 + c_np.flat[3] + f32(d) + f32(3)) if e else f32(1)
    want2 = np.trunc(a1_b2 + c_np.flat[1] - f32(d)).astype(np.int32)
    np.testing.assert_allclose(to_numpy(out1), np.full((3, 2), want1, np.float32), rtol=1e-6)
    got2 = to_numpy(out2)
    assert got2.dtype == np.int32
    np.testing.assert_array_equal(got2, np.full((3, 2), want2, np.int32))


STRIDED_SOURCE = CG_ELEM + """
auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
T tmp = inp[loc];
out[elem] = exp(tmp) * WARP_SIZE;
"""
CONTIGUOUS_SOURCE = CG_ELEM + """
T tmp = inp[elem];
out[elem] = exp(tmp) * WARP_SIZE;
"""


def strided_view(fw, x, view):
    """A non-row-contiguous view of the 2-D array `x` (a copy for NumPy inputs is fine)."""
    if view == "transposed_sliced":
        return x.T[::2]
    if view == "sliced":
        return x[::2, 1:]
    if fw == "torch":  # broadcast: a zero stride
        return x[:1].expand(4, x.shape[1])
    return need(fw).broadcast_to(x[:1], (4, x.shape[1]))


@pytest.mark.parametrize("view", ["transposed_sliced", "sliced", "broadcast"])
@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("fw", ["numpy", "torch", "cupy"])
def test_strided_inputs(fw, contiguous, view):
    base = np.random.default_rng(7).standard_normal((6, 10)).astype(np.float32)
    a = strided_view(fw, to_device(fw, base), view)
    want = np.exp(strided_view("numpy", base, view).astype(np.float64)) * 32
    kernel = jk.cuda_kernel(f"myexp{contiguous}", ["inp"], ["out"],
                            CONTIGUOUS_SOURCE if contiguous else STRIDED_SOURCE,
                            ensure_row_contiguous=contiguous)
    (out,) = kernel(inputs=[a], template=[("T", jk.float32)], grid=(want.size, 1, 1),
                    threadgroup=(256, 1, 1), output_shapes=[want.shape], output_dtypes=[jk.float32])
    assert isinstance(out, output_type(fw))
    np.testing.assert_allclose(to_numpy(out), want, rtol=1e-5)


SHAPE_SOURCE = """
if (blockIdx.x == 0 && threadIdx.x == 0) {
    meta[0] = inp_ndim;
    for (int d = 0; d < inp_ndim; ++d) {
        meta[1 + d] = inp_shape[d];
        meta[1 + inp_ndim + d] = inp_strides[d];
    }
}
"""


@pytest.mark.parametrize("contiguous", [True, False])
@pytest.mark.parametrize("fw", ["torch", "cupy"])
def test_shape_and_strides_passed(fw, contiguous):
    base = to_device(fw, np.zeros((6, 10), np.float32))
    a = base.T[::2]  # shape (5, 6), element strides (2, 10)
    kernel = jk.cuda_kernel("shape_probe", ["inp"], ["meta"], SHAPE_SOURCE,
                            ensure_row_contiguous=contiguous)
    (meta,) = kernel(inputs=[a], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                     output_shapes=[(5,)], output_dtypes=[jk.int64])
    strides = [6, 1] if contiguous else [2, 10]
    np.testing.assert_array_equal(to_numpy(meta), [2, 5, 6] + strides)


def test_eight_dims_with_elem_to_loc():
    torch = need("torch")
    base = (torch.arange(256, dtype=torch.float32, device="cuda") / 64).reshape((2,) * 8)
    a = base.permute(7, 6, 5, 4, 3, 2, 1, 0)[:, 1:]  # 8 dims, no two strides alike
    kernel = jk.cuda_kernel("myexp8d", ["inp"], ["out"], STRIDED_SOURCE,
                            ensure_row_contiguous=False)
    (out,) = kernel(inputs=[a], template=[("T", jk.float32)], grid=(a.numel(), 1, 1),
                    threadgroup=(32, 1, 1), output_shapes=[a.shape], output_dtypes=[jk.float32])
    want = np.exp(to_numpy(a).astype(np.float64)) * 32
    np.testing.assert_allclose(to_numpy(out), want, rtol=1e-5)


def test_header_helper():
    header = """
    template <typename T>
    __device__ T do_exp(T x) {
        return exp(x);
    }
    """
    a = np.random.default_rng(7).standard_normal((2, 2)).astype(np.float32)
    kernel = jk.cuda_kernel("helper", ["a"], ["out1"], CG_ELEM + "out1[elem] = do_exp(a[elem]);",
                            header=header)
    (out,) = kernel(inputs=[a], grid=(4, 1, 1), threadgroup=(2, 1, 1),
                    output_shapes=[(2, 2)], output_dtypes=[jk.float32])
    np.testing.assert_allclose(out.numpy(), np.exp(a.astype(np.float64)), rtol=1e-5)


@pytest.mark.parametrize("grid,threadgroup", [((2, 1, 1), (2, 1, 1)), ((96, 1, 1), (32, 1, 1))])
def test_block_dim_attribute(grid, threadgroup):
    kernel = jk.cuda_kernel("test_fun", ["a"], ["out"], "out[0] = blockDim.x;")
    (out,) = kernel(inputs=[np.zeros((1, 1), np.float32)], grid=grid, threadgroup=threadgroup,
                    output_shapes=[(1, 1)], output_dtypes=[jk.uint32])
    assert out.numpy().dtype == np.uint32
    assert out.numpy().item() == threadgroup[0]


COOPERATIVE_SOURCE = """
auto grid = cooperative_groups::this_grid();
auto block = cg::this_thread_block();
auto warp = cg::tiled_partition<32>(block);
const unsigned r = grid.thread_rank();
const unsigned leader = warp.shfl(r, 0);  // every lane of the warp takes part
if (r < n[0]) {
    grid_rank[r] = r;
    block_rank[r] = block.thread_rank();
    lane[r] = warp.thread_rank();
    warp_leader[r] = leader;
}
"""


def test_cooperative_groups():
    n = 1000
    kernel = jk.cuda_kernel("coop", ["n"], ["grid_rank", "block_rank", "lane", "warp_leader"],
                            COOPERATIVE_SOURCE)
    outs = kernel(inputs=[n], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                  output_shapes=[(n,)] * 4, output_dtypes=[jk.uint32] * 4)
    r = np.arange(n, dtype=np.uint32)
    for got, want in zip(outs, [r, r % 128, r % 32, r - r % 32]):
        np.testing.assert_array_equal(to_numpy(got), want)


@pytest.mark.parametrize("dtype,init", [(np.float32, 3.5), (np.float16, -0.25),
                                        (np.int32, -7), (np.uint8, 200), (np.float64, 1e300)])
def test_init_value(dtype, init):
    n = 1000
    x = (np.arange(n) % 100).astype(dtype)
    source = INDEX + "if (i < inp_shape[0] && i % 2 == 0) { evens[i] = inp[i]; }\n"
    kernel = jk.cuda_kernel("partial_writer", ["inp"], ["evens", "untouched"], source)
    evens, untouched = kernel(inputs=[x], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                              output_shapes=[(n,), (3, 5)], output_dtypes=[dtype, dtype],
                              init_value=init)
    want = np.full(n, init, dtype)
    want[::2] = x[::2]
    np.testing.assert_array_equal(evens.numpy(), want)
    np.testing.assert_array_equal(untouched.numpy(), np.full((3, 5), init, dtype))


SEED_003_SOURCE = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """


def test_seed_003_example(capfd):
    # Seed 003's example as written for MLX, with jitkernel and a NumPy float16 array.
    def exp_elementwise(a):
        kernel = jk.cuda_kernel(
            name="myexp",
            input_names=["inp"],
            output_names=["out"],
            source=SEED_003_SOURCE,
        )
        outputs = kernel(
            inputs=[a],
            template=[("T", jk.float32)],
            grid=(a.size, 1, 1),
            threadgroup=(256, 1, 1),
            output_shapes=[a.shape],
            output_dtypes=[a.dtype],
            verbose=True,
        )
        return outputs[0]

    a = np.random.default_rng(0).normal(size=(16, 16)).astype(np.float16)
    b = exp_elementwise(a)
    got = b.numpy()
    assert got.dtype == np.float16 and got.shape == (16, 16)
    np.testing.assert_allclose(got.astype(np.float32), np.exp(a.astype(np.float32)), rtol=1e-3)

    # verbose=True printed exactly the text kernel.source() returns.
    printed = capfd.readouterr()
    kernel = jk.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                            source=SEED_003_SOURCE)
    text = kernel.source(inputs=[a], output_dtypes=[a.dtype], template=[("T", jk.float32)])
    assert "T tmp = inp[elem];" in text
    assert text in printed.out + printed.err


def test_dict_form():
    a = np.random.default_rng(1).normal(size=(4, 16)).astype(np.float32)
    kernel = jk.cuda_kernel(name="myexp_dict", source=SEED_003_SOURCE)
    outputs = kernel(inputs={"inp": a}, template={"T": jk.float32}, grid=(a.size, 1, 1),
                     threadgroup=(256, 1, 1), output_shapes={"out": a.shape},
                     output_dtypes={"out": a.dtype})
    assert isinstance(outputs, dict) and set(outputs) == {"out"}
    np.testing.assert_allclose(outputs["out"].numpy(), np.exp(a.astype(np.float64)), rtol=1e-5)
