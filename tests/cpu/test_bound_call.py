"""kernel.bind(...) and jk.BoundCall on a machine without a GPU, through the mock driver (tests/cpu/_mock_driver.py:
launches do nothing, device memory is host memory): a bound call returns what the kernel's call returns, checks
every array against what it was bound for (an ArgumentError naming the input, never a launch on other sizes),
keeps no reference to the example arrays, may be called from several threads, and refuses traced arrays, Metal
kernels and the dict form. Kernels do not run, so only what the host side makes is checked."""
import pytest

import jitkernel as jk
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name

PRELUDE = """
    import gc, threading, weakref
    import numpy as np, jitkernel as jk
    k = jk.cuda_kernel(name="axpy", input_names=["a", "x"], output_names=["y"],
                       source="uint32_t i = threadIdx.x; if (i < x_shape[0]) y[i] = a[0] * x[i];")
    geo = dict(grid=(8, 1, 1), threadgroup=(8, 1, 1))
    def device(n, dtype=np.float32):  # a jk.Array of n elements
        return k(inputs=[1.0, np.arange(n, dtype=dtype)], output_shapes=[(n,)], output_dtypes=[dtype], **geo)[0]
    def error(call):
        try:
            call()
        except (jk.ArgumentError, jk.ArgumentTypeError) as e:
            return type(e).__name__ + ": " + str(e)
        raise AssertionError("no error")
"""


def _run(mock_driver, tmp_path, body):
    proc = run_with_mock(mock_driver, PRELUDE + body + "\n    print('OK')\n", tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


def test_bound_call_returns_what_the_call_returns(mock_driver, tmp_path):
    _run(mock_driver, tmp_path, """
    x = device(8)
    bound = k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    assert isinstance(bound, jk.BoundCall) and bound.kernel is k
    assert type(bound).__flags__ & (1 << 11), "Py_TPFLAGS_HAVE_VECTORCALL not set"
    for scalar in (3.0, -1.5):  # scalars are passed per call: their value may change, not their dtype
        outs = bound(scalar, x)
        assert isinstance(outs, list) and len(outs) == 1 and outs[0].shape == (8,) and str(outs[0].dtype) == "float32"
    y = device(8)
    given = k.bind(inputs=[2.0, x], outputs=[y], **geo)
    assert given(1.0, x, outputs=[y])[0] is y
    assert given(1.0, x, outputs=(y,))[0] is y
    h = np.arange(8, dtype=np.float32)  # NumPy inputs are copied to the device as in kernel(...)
    from_host = k.bind(inputs=[2.0, h], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    assert from_host(2.0, h)[0].shape == (8,)
    assert from_host(*[2.0, h])[0].shape == (8,)
    """)


def test_every_change_is_an_error_naming_the_input(mock_driver, tmp_path):
    _run(mock_driver, tmp_path, """
    x = device(8)
    bound = k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    cases = [
        (lambda: bound(2.0, device(16)), "input 1 ('x'): shape (16,) but the bound call was made for (8,)"),
        (lambda: bound(2.0, device(8, np.float64)),
         "input 1 ('x'): dtype float64 but the bound call was made for float32"),
        (lambda: bound(2.0, np.arange(8, dtype=np.float32)), "input 1 ('x'): a numpy.ndarray but the bound call"),
        (lambda: bound(2, x),
         "input 0 ('a'): a scalar of dtype int32 but the bound call was made for a scalar of dtype float32"),
        (lambda: bound(x, x), "input 0 ('a'): an array"),
        (lambda: bound(2.0, 3.0), "input 1 ('x'): a scalar but the bound call was made for an array"),
        (lambda: bound(2.0), "expected 2 inputs"),
        (lambda: bound(2.0, x, x), "expected 2 inputs"),
        (lambda: bound(2.0, x, grid=(8, 1, 1)), "ArgumentTypeError: grid"),
        (lambda: bound(2.0, x, outputs=[device(8)]), "bound without outputs="),
    ]
    for call, words in cases:
        message = error(call)
        assert words in message, (words, message)
    h = np.arange(16, dtype=np.float32)
    host = k.bind(inputs=[2.0, h[:8]], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    message = error(lambda: host(2.0, h[::2]))
    assert "input 1 ('x'): strides (2,) but the bound call was made for strides (1,)" in message, message
    y = device(8)
    given = k.bind(inputs=[2.0, x], outputs=[y], **geo)
    assert "bound with outputs=" in error(lambda: given(2.0, x))
    message = error(lambda: given(2.0, x, outputs=[device(4)]))
    assert "output 0 ('y'): shape (4,) but the bound call was made for (8,)" in message, message
    assert "expected 1 array" in error(lambda: given(2.0, x, outputs=[y, y]))
    assert "outputs" in error(lambda: given(2.0, x, outputs=y))
    """)


def test_bind_checks_the_call_once(mock_driver, tmp_path):
    _run(mock_driver, tmp_path, """
    x = device(8)
    assert "output_shapes" in error(lambda: k.bind(inputs=[2.0, x], **geo))
    assert "grid" in error(lambda: k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32],
                                          grid=(8, 0, 1), threadgroup=(8, 1, 1)))
    assert "list in input_names order" in error(lambda: k.bind(inputs={"a": 2.0, "x": x}, output_shapes=[(8,)],
                                                              output_dtypes=[jk.float32], **geo))
    assert "expected 2 inputs" in error(lambda: k.bind(inputs=[x], output_shapes=[(8,)], output_dtypes=[jk.float32],
                                                       **geo))
    """)


def test_bound_call_keeps_no_example_array(mock_driver, tmp_path):
    _run(mock_driver, tmp_path, """
    h = np.arange(8, dtype=np.float32)
    ref = weakref.ref(h)
    y = device(8)
    bound = k.bind(inputs=[2.0, h], outputs=[y], **geo)
    del h
    gc.collect()
    assert ref() is None, "bind() kept the example input"
    y_refs = __import__("sys").getrefcount(y)
    bound(2.0, np.arange(8, dtype=np.float32), outputs=[y])
    assert __import__("sys").getrefcount(y) == y_refs, "a call kept its outputs= array"
    """)


def test_bound_call_from_several_threads(mock_driver, tmp_path):
    _run(mock_driver, tmp_path, """
    x = device(8)
    bound = k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    failures = []
    def work(n):
        try:
            mine = device(8)
            for i in range(200):
                assert bound(float(i), mine)[0].shape == (8,)
                if i % 50 == 0:  # an error on one thread leaves the others' calls alone
                    assert "shape (16,)" in error(lambda: bound(1.0, device(16)))
        except BaseException as e:
            failures.append(repr(e))
    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert not failures, failures
    """)


def test_traced_arrays_point_at_the_kernels_call(mock_driver, tmp_path):
    pytest.importorskip("torch")
    _run(mock_driver, tmp_path, """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    x = device(8)
    bound = k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    with FakeTensorMode() as mode:
        fake = torch.empty(8)
        for call in (lambda: bound(2.0, fake),
                     lambda: k.bind(inputs=[2.0, fake], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)):
            message = error(call)
            assert "eagerly only" in message and "call the kernel itself" in message, message
    """)


def test_torch_compile_breaks_the_graph_or_refuses(mock_driver, tmp_path):
    pytest.importorskip("torch")
    _run(mock_driver, tmp_path, """
    import torch
    x = torch.arange(8, dtype=torch.float32)  # host memory: copied to the device, as in kernel(...)
    bound = k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    def fn(x):
        return x + 1, bound(2.0, x)[0]
    # A graph break: the bound call runs eagerly, on the real tensor.
    assert torch.compile(fn, backend="eager")(x)[1].shape == (8,)
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(x)
    except Exception as e:  # Dynamo cannot trace a bound call: an error, never a launch on fake tensors
        assert "BoundCall" in str(e), str(e)
    else:
        raise AssertionError("fullgraph traced a bound call")
    """)


def test_jax_tracers_point_at_the_kernels_call(mock_driver, tmp_path):
    pytest.importorskip("jax")
    _run(mock_driver, tmp_path, """
    import jax, jax.numpy as jnp
    x = device(8)
    bound = k.bind(inputs=[2.0, x], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    message = error(lambda: jax.jit(lambda t: bound(2.0, t)[0])(jnp.ones(8, jnp.float32)))
    assert "eagerly only" in message and "jax.jit" in message, message
    """)


def test_metal_kernels_have_no_bound_call():
    m = jk.metal_kernel(name="m", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    with pytest.raises(jk.ArgumentError, match="bind.. is for CUDA kernels"):
        m.bind(inputs=[1.0], output_shapes=[(1,)], output_dtypes=[jk.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1))


def test_no_bound_call_inside_a_precompile_session():
    k = jk.cuda_kernel(name="c", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    jk._core._calls_to_python(True)  # what a precompile session sets: its calls compile instead of launching
    try:
        with pytest.raises(jk.ArgumentError, match="precompile session"):
            k.bind(inputs=[1.0], output_shapes=[(1,)], output_dtypes=[jk.float32], grid=(1, 1, 1),
                   threadgroup=(1, 1, 1))
    finally:
        jk._core._calls_to_python(False)
