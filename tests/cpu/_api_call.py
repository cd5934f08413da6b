"""Helpers of the argument-error tests (test_api_errors.py, test_api_dlpack.py): ``expect`` checks an error's class
and that it names the argument, ``call`` / ``accepted`` run one kernel call with some arguments replaced.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitkernel as jk

NO_GPU = not jk.cuda_available()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="the call would launch on the GPU")


def expect(exc_type, argument, fn, *args, match=None, **kwargs):
    """Calls fn and checks the error's class, that it names `argument` first, and optionally `match`."""
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    e = info.value
    assert type(e) is exc_type, f"{type(e).__name__}: {e}"
    assert str(e).startswith(f"{argument}: "), str(e)
    assert e.argument == argument
    if match:
        assert re.search(match, str(e)), str(e)
    return e


KERNEL = jk.cuda_kernel(name="scale", input_names=["a", "n"], output_names=["out"],
                        source="out[threadIdx.x] = a[threadIdx.x] * n[0];")
A = np.arange(4, dtype=np.float32)


def call(**overrides):
    kwargs = dict(inputs=[A, 3], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                  threadgroup=(4, 1, 1))
    kwargs.update(overrides)
    return KERNEL(**kwargs)


def accepted(**overrides):
    """The arguments pass every check: the call runs on a GPU, or stops at the missing driver."""
    try:
        return call(**overrides)
    except jk.CudaNotAvailableError:
        assert NO_GPU
        return None
