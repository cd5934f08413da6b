"""Kernels pickle (made again from the factory's arguments, with the backward by reference), so they go to spawned
workers; a child forked after its parent initialized CUDA gets a clear CudaNotAvailableError instead of a broken
driver (checked through the mock driver of benchmarks/host_only, which needs no GPU)."""
import copy
import os
import pickle

import numpy as np
import pytest

import jitkernel as jk
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name

A = np.arange(8, dtype=np.float32)


def backward(primals, outputs, cotangents):  # pickles by reference (a module-level function)
    return [cotangents[0]]


def _same(a, b):
    assert type(a) is type(b) and a is not b
    assert (a.name, a.input_names, a.output_names, a.source_text, a.header) == (
        b.name, b.input_names, b.output_names, b.source_text, b.header)
    assert a.source(inputs=[A], output_dtypes=[np.float32]) == b.source(inputs=[A], output_dtypes=[np.float32])


def test_cuda_kernel_pickles_and_copies():
    k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0] * C;",
                       shared_memory=64, compile_options={"defines": {"C": "2"}, "line_info": False})
    k.vjp(backward)
    for other in (pickle.loads(pickle.dumps(k)), copy.deepcopy(k), copy.copy(k)):
        _same(k, other)
        assert other.shared_memory == 64 and other.compile_options == k.compile_options
        assert other._vjp is backward and other._has_vjp
    k2 = pickle.loads(pickle.dumps(jk.cuda_kernel(name="n", source="y[0] = x[0];")))  # made without names
    assert k2.source(inputs={"x": A}, output_dtypes={"y": np.float32})


def test_metal_kernel_pickles():
    k = jk.metal_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                        atomic_outputs=False)
    _same(k, pickle.loads(pickle.dumps(k)))


def test_a_lambda_backward_is_a_pickling_error():
    k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    k.vjp(lambda p, o, c: [c[0]])
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(k)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_forked_child_gets_a_clear_error(mock_driver, tmp_path):  # noqa: F811
    proc = run_with_mock(mock_driver, """
        import os, warnings, numpy as np, jitkernel as jk
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12 warns about fork in threaded processes
        k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
        call = lambda: k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[jk.float32],
                         grid=(1, 1, 1), threadgroup=(1, 1, 1))
        call()  # the driver is loaded in this process
        pid = os.fork()
        if pid == 0:
            ok = not jk.cuda_available()
            try:
                call()
                ok = False
            except jk.CudaNotAvailableError as e:
                ok = ok and "forked" in str(e) and "spawn" in str(e)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, "the forked child did not get the error"
        call()  # the parent is unaffected
        print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_fork_before_cuda_is_fine(mock_driver, tmp_path):  # noqa: F811
    proc = run_with_mock(mock_driver, """
        import os, numpy as np, jitkernel as jk
        pid = os.fork()
        if pid == 0:
            k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
            out = k(inputs=[np.ones(4, np.float32)], output_shapes=[(4,)], output_dtypes=[jk.float32],
                    grid=(1, 1, 1), threadgroup=(1, 1, 1))
            os._exit(0 if out[0].shape == (4,) else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0
        print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr


def _source_in_worker(kernel):
    return kernel.source(inputs=[np.arange(8, dtype=np.float32)], output_dtypes=[np.float32])


def test_kernel_goes_to_a_spawned_worker():
    import multiprocessing

    k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0] * 3;")
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_source_in_worker, (k,)) == _source_in_worker(k)
