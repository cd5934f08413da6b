"""Calls from several Python threads on a GPU: first calls of one signature racing each other (each may compile,
one plan wins, every caller gets correct results), and the first call's compile running without the GIL so other
threads keep going meanwhile."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX
from _threads import run_while_spinning

pytestmark = pytest.mark.gpu

N = 4096


def launch(kernel, x, dtype=jk.float32):
    (out,) = kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[dtype], grid=(x.size, 1, 1),
                    threadgroup=(256, 1, 1))
    return out.numpy()


def test_concurrent_first_calls_of_one_signature():
    kernel = jk.cuda_kernel("threads_first_call", ["inp"], ["out"],
                            INDEX + "if (i < inp_shape[0]) { out[i] = inp[i] * 2 + 1; }")
    x32 = np.arange(N, dtype=np.float32)
    x64 = np.arange(N, dtype=np.float64)
    start = threading.Barrier(6)

    def run(k):
        x, dtype = (x32, jk.float32) if k % 2 == 0 else (x64, jk.float64)
        start.wait()  # all threads hit the uncompiled signatures together
        return k, launch(kernel, x, dtype)

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(run, range(6)))
    for k, got in results:
        want = (x32 if k % 2 == 0 else x64) * 2 + 1
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(launch(kernel, x32), x32 * 2 + 1)  # the cached plan afterwards


def test_first_call_compiles_without_the_gil():
    # cooperative_groups pulls in the slow CCCL headers: the first call compiles for a while.
    kernel = jk.cuda_kernel("threads_gil_free", ["inp"], ["out"], """
        auto elem = cooperative_groups::this_grid().thread_rank();
        if (elem < inp_shape[0]) { out[elem] = inp[elem] + 3.0f; }
    """)
    x = np.arange(N, dtype=np.float32)
    out, seconds, longest_pause = run_while_spinning(lambda: launch(kernel, x))
    np.testing.assert_array_equal(out, x + 3)
    assert longest_pause < 0.5 * seconds, (longest_pause, seconds)
