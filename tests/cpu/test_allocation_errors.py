"""In-place calls (an input also passed in ``outputs=``) checked without a GPU: DLPack producers over one host buffer
pose as CUDA arrays sharing memory. A row-contiguous input may alias an output; a strided input that overlaps an
output is refused while ensure_row_contiguous=True (the kernel would read a copy of it, not the memory it writes),
before any CUDA work, for both kernel kinds. Calls that pass every check stop at the missing driver here.
"""
from __future__ import annotations

import pytest

import jitkernel as jk
from _api_call import expect, needs_no_gpu
from test_api_dlpack import Producer

ADD_ONE = "out[threadIdx.x] = x[threadIdx.x] + 1.0f;"


def on_device(shape, strides=None, share=None):
    """A float32 producer claiming CUDA device 0; `share` gives it another producer's memory."""
    p = Producer(shape=shape, device=(2, 0), strides=strides)
    if share is not None:
        p.buffer = share.buffer
    return p


def kernel(ensure_row_contiguous):
    return jk.cuda_kernel(name=f"add_one_inplace_{int(ensure_row_contiguous)}", input_names=["x"],
                          output_names=["out"], source=ADD_ONE, ensure_row_contiguous=ensure_row_contiguous)


def run(k, x, out):
    return k(inputs=[x], outputs=[out], grid=(6, 1, 1), threadgroup=(6, 1, 1))


def test_strided_input_aliasing_an_output_is_refused():
    out = on_device((2, 3))
    x = on_device((3, 2), strides=(1, 3), share=out)  # out.T over the same memory
    e = expect(jk.ArgumentError, "inputs", run, kernel(True), x, out,
               match=r"inputs\[0\] shares memory with outputs\[0\] but is not row-contiguous")
    assert "ensure_row_contiguous=False" in str(e)
    assert x.deleted == 1 and out.deleted == 1  # both exports released


def test_strided_input_overlapping_part_of_an_output_is_refused():
    out = on_device((6,))
    x = on_device((2,), strides=(2,), share=out)  # every other element of the first half
    expect(jk.ArgumentError, "inputs", run, kernel(True), x, out, match="shares memory")


@needs_no_gpu
@pytest.mark.parametrize("case", ["contiguous_alias", "strided_alias_read_in_place", "strided_disjoint"])
def test_accepted_in_place_calls_reach_the_launch(case):
    out = on_device((2, 3))
    if case == "contiguous_alias":  # the same memory as input and output: `const float*` / `float*`
        k, x = kernel(True), out
    elif case == "strided_alias_read_in_place":
        k, x = kernel(False), on_device((3, 2), strides=(1, 3), share=out)
    else:  # strided but in memory of its own: copied, no aliasing
        k, x = kernel(True), on_device((3, 2), strides=(1, 3))
    with pytest.raises(jk.CudaNotAvailableError):
        run(k, x, out)


@needs_no_gpu
def test_empty_strided_input_does_not_alias():
    out = on_device((2, 3))
    x = on_device((0, 2), strides=(1, 3), share=out)  # no elements: nothing read
    with pytest.raises(jk.CudaNotAvailableError):
        run(kernel(True), x, out)


def test_precompiled_kernel_refuses_a_strided_alias_too():
    out = on_device((2, 3))
    x = on_device((3, 2), strides=(1, 3), share=out)
    expect(jk.ArgumentError, "inputs", jk.precompiled_cuda_kernel, name="k", compiled_source=b"not a binary",
           inputs=[x], output_shapes=[(2, 3)], output_dtypes=[jk.float32], scalars=[], grid=(6, 1, 1),
           threadgroup=(6, 1, 1), ensure_row_contiguous=True, outputs=[out], match="shares memory")
