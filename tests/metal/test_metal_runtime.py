"""The Metal runtime on an Apple GPU (cpp/jitkernel/metal/): results against NumPy, every way an array reaches a
kernel (zero-copy, copied, made row-contiguous, strided, small / 0-d / scalar), outputs (new, outputs=, init_value,
atomic, bfloat16, empty, outliving everything else) and the errors raised before and after compiling. Skipped where
jitkernel has no Metal backend or no Metal device, i.e. everywhere but macOS: these tests have not run yet (see
docs/metal.md), which is why they exist.
"""
from __future__ import annotations

import gc
import mmap

import numpy as np
import pytest

import jitkernel as jk

pytestmark = pytest.mark.skipif(not jk.metal_available(), reason="needs jitkernel's Metal backend and a Metal GPU")

EXP = """
    uint elem = thread_position_in_grid.x;
    if (elem < inp_size) {
        out[elem] = metal::exp(static_cast<float>(inp[elem]));
    }
"""
EXP_STRIDED = """
    uint elem = thread_position_in_grid.x;
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    out[elem] = metal::exp(static_cast<float>(inp[loc]));
"""


def exp_kernel(strided: bool = False, **options):
    body = EXP_STRIDED if strided else EXP.replace("inp_size", "uint(threads_per_grid.x)")
    return jk.metal_kernel(name="exp_strided" if strided else "exp", input_names=["inp"], output_names=["out"],
                           source=body, ensure_row_contiguous=not strided, **options)


def run_exp(kernel, a, **kwargs):
    (out,) = kernel(inputs=[a], grid=(a.size, 1, 1), threadgroup=(256, 1, 1), output_shapes=[a.shape],
                    output_dtypes=[jk.float32], **kwargs)
    return out


def page_aligned(n: int, dtype=np.float32, offset_bytes: int = 0) -> np.ndarray:
    """n elements starting `offset_bytes` after a page boundary (an anonymous mapping is page-aligned)."""
    itemsize = np.dtype(dtype).itemsize
    memory = mmap.mmap(-1, n * itemsize + offset_bytes + mmap.PAGESIZE)
    return np.frombuffer(memory, dtype=np.uint8, count=n * itemsize, offset=offset_bytes).view(dtype)


def test_seed_example_float16():
    kernel = jk.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source="""
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    """)
    a = np.random.default_rng(0).normal(size=(4, 16)).astype(np.float16)
    (b,) = kernel(inputs=[a], template=[("T", jk.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                  output_shapes=[a.shape], output_dtypes=[a.dtype])
    assert isinstance(b, np.ndarray) and b.dtype == np.float16 and b.shape == a.shape
    np.testing.assert_allclose(b.astype(np.float32), np.exp(a.astype(np.float32)), rtol=2e-3)


@pytest.mark.parametrize("offset_bytes", [0, 4], ids=["page_aligned_no_copy", "unaligned_copied"])
def test_inputs_with_and_without_copy(offset_bytes):
    a = page_aligned(10_000, offset_bytes=offset_bytes)
    a[:] = np.linspace(-3, 3, a.size, dtype=np.float32)
    np.testing.assert_allclose(run_exp(exp_kernel(), a), np.exp(a), rtol=1e-5)


def test_non_contiguous_input_made_row_contiguous():
    base = np.random.default_rng(1).normal(size=(64, 48)).astype(np.float32)
    a = base[::2, ::-3]  # negative and non-unit strides
    np.testing.assert_allclose(run_exp(exp_kernel(), a), np.exp(a), rtol=1e-5)


@pytest.mark.parametrize("view", ["rows", "reversed", "transposed", "broadcast"])
def test_strided_input_read_through_shape_and_strides(view):
    base = np.random.default_rng(2).normal(size=(32, 24)).astype(np.float32)
    a = {"rows": base[::2], "reversed": base[:, ::-1], "transposed": base.T,
         "broadcast": np.broadcast_to(base[0], (32, 24))}[view]
    np.testing.assert_allclose(run_exp(exp_kernel(strided=True), a), np.exp(a), rtol=1e-5)


def test_shape_strides_ndim_values():
    kernel = jk.metal_kernel(name="layout", input_names=["a"], output_names=["out"], ensure_row_contiguous=False,
                             source="""
        for (int d = 0; d < a_ndim; ++d) {
            out[d] = a_shape[d];
            out[a_ndim + d] = int(a_strides[d]);
        }
        out[2 * a_ndim] = a_ndim;
    """)
    a = np.zeros((5, 6, 7), np.float32)[:, ::2, 1:]
    (out,) = kernel(inputs=[a], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(7,)],
                    output_dtypes=[jk.int32])
    expected_strides = [s // a.itemsize for s in a.strides]
    assert out.tolist() == [*a.shape, *expected_strides, 3]


def test_small_zero_d_and_scalar_inputs():
    kernel = jk.metal_kernel(name="mix", input_names=["small", "zero_d", "f", "i"], output_names=["out"], source="""
        uint e = thread_position_in_grid.x;
        out[e] = small[e % 3] * zero_d + f + float(i);
    """)
    small = np.array([1, 2, 3], np.float32)  # fewer than 8 elements: `constant` address space
    zero_d = np.array(2.0, np.float32)
    (out,) = kernel(inputs=[small, zero_d, 0.5, 10], grid=(6, 1, 1), threadgroup=(32, 1, 1),
                    output_shapes=[(6,)], output_dtypes=[jk.float32])
    np.testing.assert_array_equal(out, np.tile(small, 2) * 2 + 0.5 + 10)


def test_atomic_sum_with_init_value():
    kernel = jk.metal_kernel(name="total", input_names=["x"], output_names=["out"], atomic_outputs=True, source="""
        atomic_fetch_add_explicit(&out[0], x[thread_position_in_grid.x], memory_order_relaxed);
    """)
    x = np.arange(1000, dtype=np.int32)
    (out,) = kernel(inputs=[x], grid=(x.size, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(1,)],
                    output_dtypes=[jk.int32], init_value=7)
    assert int(out[0]) == int(x.sum()) + 7


@pytest.mark.parametrize("offset_bytes", [0, 8], ids=["page_aligned", "unaligned"])
def test_outputs_written_in_place(offset_bytes):
    kernel = jk.metal_kernel(name="add_one", input_names=["x"], output_names=["y"], source="""
        uint e = thread_position_in_grid.x;
        y[e] += x[e];
    """)
    x = np.ones(5000, np.float32)
    y = page_aligned(5000, offset_bytes=offset_bytes)
    y[:] = 2.0
    (result,) = kernel(inputs=[x], grid=(x.size, 1, 1), threadgroup=(256, 1, 1), outputs=[y])
    assert result is y
    np.testing.assert_array_equal(y, 3.0)


def test_read_only_output_is_refused():
    y = np.zeros(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(jk.ArgumentError, match="read-only"):
        run_exp(exp_kernel(), np.zeros(4, np.float32), outputs=[y])


def test_bfloat16_output():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    kernel = jk.metal_kernel(name="to_bf16", input_names=["x"], output_names=["y"], source="""
        y[thread_position_in_grid.x] = bfloat16_t(x[thread_position_in_grid.x]);
    """)
    x = np.array([1.0, -2.5, 3.0, 0.125], np.float32)
    (y,) = kernel(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                  output_dtypes=[jk.bfloat16])
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), x)


def test_outputs_outlive_kernel_and_inputs():
    kernel = exp_kernel()
    a = np.full(4096, 1.0, np.float32)
    out = run_exp(kernel, a)
    del kernel, a
    gc.collect()
    np.testing.assert_allclose(out, np.e, rtol=1e-6)
    view = out[10:20]
    del out
    gc.collect()
    np.testing.assert_allclose(view, np.e, rtol=1e-6)  # the view keeps the Metal buffer alive


def test_empty_output():
    kernel = jk.metal_kernel(name="nothing", input_names=["x"], output_names=["y"], source="")
    (y,) = kernel(inputs=[np.zeros(3, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                  output_shapes=[(0, 4)], output_dtypes=[jk.float32])
    assert y.shape == (0, 4)


@pytest.mark.parametrize("mode", ["safe", "relaxed", "fast"])
def test_math_modes(mode):
    a = np.linspace(-2, 2, 300, dtype=np.float32)
    np.testing.assert_allclose(run_exp(exp_kernel(compile_options={"math_mode": mode}), a), np.exp(a), rtol=1e-4)


def test_threadgroup_over_the_limit():
    with pytest.raises(jk.ArgumentError, match="threadgroup"):
        exp_kernel()(inputs=[np.zeros(8192, np.float32)], grid=(8192, 1, 1), threadgroup=(4096, 1, 1),
                     output_shapes=[(8192,)], output_dtypes=[jk.float32])


def test_compile_error_points_into_the_source():
    kernel = jk.metal_kernel(name="broken", input_names=["x"], output_names=["y"], source="""
        uint e = thread_position_in_grid.x;
        y[e] = x[e] + undefined_name;
    """)
    with pytest.raises(jk.CompileError) as info:
        kernel(inputs=[np.zeros(4, np.float32)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
               output_dtypes=[jk.float32])
    assert "undefined_name" in info.value.log
    assert "source line 3" in info.value.log


def test_float64_is_refused():
    with pytest.raises(jk.ArgumentError, match="float64"):
        run_exp(exp_kernel(), np.zeros(4, np.float64))
