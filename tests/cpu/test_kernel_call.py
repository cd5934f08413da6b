"""Calling a cuda_kernel object: the keyword arguments are taken apart in C (the kernel type's call slot), so its
mistakes are checked here without a GPU: positional arguments, unknown and missing keywords, and that the object
stays a jitkernel.CudaKernel with its Python attributes."""
import numpy as np
import pytest

import jitkernel as jk

BODY = "out[0] = inp[0];"


@pytest.fixture(params=["named", "unnamed"])
def kernel(request):
    if request.param == "named":
        return jk.cuda_kernel("call_slot", ["inp"], ["out"], BODY)
    return jk.cuda_kernel("call_slot", source=BODY)


def test_positional_arguments_are_refused(kernel):
    with pytest.raises(TypeError, match="keyword arguments only"):
        kernel([np.ones(1, np.float32)])


def test_unknown_keyword_is_named(kernel):
    with pytest.raises(TypeError, match="unexpected keyword argument 'shared_memory'"):
        kernel(inputs=[np.ones(1, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1), shared_memory=1024)


@pytest.mark.parametrize("missing", ["inputs", "grid", "threadgroup"])
def test_missing_required_keyword_is_named(kernel, missing):
    args = dict(inputs=[np.ones(1, np.float32)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                output_shapes=[(1,)], output_dtypes=[jk.float32])
    del args[missing]
    with pytest.raises(TypeError, match=f"missing required keyword argument '{missing}'"):
        kernel(**args)


def test_keywords_built_at_run_time_are_matched():
    kernel = jk.cuda_kernel("call_slot", ["inp"], ["out"], BODY)
    # Non-interned keys (built at run time) still match; a bad grid then fails in conversion, before any GPU work.
    key = "".join(["thread", "group"])
    with pytest.raises(jk.ArgumentError, match="grid"):
        kernel(**{"inputs": [np.ones(1, np.float32)], "grid": (0, 1, 1), key: (1, 1, 1),
                  "output_shapes": [(1,)], "output_dtypes": [jk.float32]})


def test_the_kernel_object_keeps_its_attributes(kernel):
    assert isinstance(kernel, jk.CudaKernel)
    assert kernel.name == "call_slot"
    assert kernel.source_text == BODY
    assert "call_slot" in repr(kernel)
