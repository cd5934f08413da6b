"""The whole call path on a machine without a GPU, through benchmarks/host_only/mock_libcuda.c (a stand-in driver
whose launches do nothing and whose device memory is host memory): both ways CPython calls a kernel (vectorcall
with keywords written out, tp_call with **kwargs), keyword errors on each, outputs allocated and given, and the
first pool allocation made while a helper thread warms the pool. Kernels do not run, so no result is checked
beyond what the host side makes (shapes, dtypes, copies of the inputs)."""
import pytest

from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name


def test_calls_through_vectorcall_and_kwargs(mock_driver, tmp_path):
    proc = run_with_mock(mock_driver, """
        import numpy as np, jitkernel as jk
        assert jk.cuda_available()
        k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"],
                           source="uint32_t i = threadIdx.x; if (i < a_shape[0]) b[i] = a[i];")
        a = np.arange(8, dtype=np.float32)
        geo = dict(grid=(8, 1, 1), threadgroup=(8, 1, 1))
        x = k(inputs=[a], output_shapes=[(8,)], output_dtypes=[jk.float32], grid=(8, 1, 1), threadgroup=(8, 1, 1))[0]
        y = k(inputs=[a], output_shapes=[(8,)], output_dtypes=[np.float32], **geo)[0]
        assert x.shape == y.shape == (8,) and str(x.dtype) == "float32"
        z = k(inputs=[x], outputs=[y], **geo)[0]
        assert z is y
        w = k(inputs={"a": x}, output_shapes={"b": (2, 4)}, output_dtypes={"b": jk.float16}, **geo)["b"]
        assert w.shape == (2, 4) and str(w.dtype) == "float16"
        for call, word in ((lambda: k(inputs=[a], output_shapes=[(8,)], output_dtypes=[jk.float32], grid=(8, 1, 1),
                                      threadgroup=(8, 1, 1), gird=1), "gird"),
                           (lambda: k(inputs=[a], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo, gird=1),
                            "gird"),
                           (lambda: k([a], grid=(8, 1, 1), threadgroup=(8, 1, 1)), "positional"),
                           (lambda: k(inputs=[a], output_shapes=[(8,)], output_dtypes=[jk.float32]), "grid"),
                           (lambda: k(inputs=[a], output_shapes=[(8,)], output_dtypes=[jk.float32], grid=(8, 0, 1),
                                      threadgroup=(8, 1, 1)), "grid")):
            try:
                call()
            except (jk.ArgumentError, jk.ArgumentTypeError) as e:
                assert word in str(e), (word, str(e))
            else:
                raise AssertionError(f"no error for {word}")
        print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr


def test_kernel_type_takes_vectorcall(mock_driver, tmp_path):
    proc = run_with_mock(mock_driver, """
        import jitkernel as jk
        k = jk.cuda_kernel(name="f", input_names=["a"], output_names=["b"], source="")
        assert type(k).__flags__ & (1 << 11), "Py_TPFLAGS_HAVE_VECTORCALL not set"
        class Plain(type(k)):
            pass
        p = Plain("p", ["a"], ["b"], "", "", True, 0)
        try:
            p(inputs=[1], grid=(1, 1, 1), threadgroup=(1, 1, 1), bogus=1)
        except jk.ArgumentTypeError as e:
            assert "bogus" in str(e)
        class Mine(type(k)):
            def __call__(self, **kw):
                return "mine"
        m = Mine("g", ["a"], ["b"], "", "", True, 0)
        assert m(inputs=[1]) == "mine"  # a subclass's own __call__ wins over the C call
        print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr
