"""Checked mode on a GPU (docs/checked.md): off-by-one reads and writes in 1-D, 2-D and strided inputs, a negative
index, a write past an ``outputs=`` array and a ``*p`` dereference each raise KernelBoundsError with the right array,
index, extent, line, block and thread; an unwritten float output raises UnwrittenOutputError (an integer one shows
the documented pattern); correct kernels give identical results checked and unchecked; the context stays usable
after a violation; torch.compile raises from the compiled call; a launch captured into a CUDA graph raises at
jk.synchronize(); jax.jit raises at the result (or, when XLA captured the call, at jk.synchronize())."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import need

pytestmark = pytest.mark.gpu

TG = 128
CHECKED = {"checked": True}
INDEX = "const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"  # body line 1


def kernel(source, inputs=("x",), outputs=("y",), checked=True, **kw):
    return jk.cuda_kernel(name="ck", input_names=list(inputs), output_names=list(outputs), source=source,
                          compile_options={"checked": checked}, **kw)


def launch(k, inputs, n, shape=None, dtype=np.float32, **kw):
    return k(inputs=inputs, output_shapes=[shape or (n,)], output_dtypes=[dtype], grid=(n, 1, 1),
             threadgroup=(TG, 1, 1), **kw)


def thread_of(e):
    """The flat thread index of the reported thread (1-D launches of TG threads per block)."""
    return e.block[0] * TG + e.thread[0]


def assert_report(e, array, index, extent, line, is_output):
    assert (e.array, e.index, e.extent, e.line, e.is_output, e.kernel) == (array, index, extent, line, is_output,
                                                                             "ck"), str(e)
    expected = (f"{array}[{index}] out of bounds (extent {extent}) at body line {line}, block "
                f"({e.block[0]},{e.block[1]},{e.block[2]}) thread ({e.thread[0]},{e.thread[1]},{e.thread[2]}) "
                f"in kernel 'ck' ({'an output' if is_output else 'an input'})")
    assert str(e) == expected


N = 1000
X = np.arange(N, dtype=np.float32)


def test_off_by_one_read_1d():
    k = kernel(INDEX + "if (i < N)\n  y[i] = x[i + 1];\n")
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(k, [X], N, template=[("N", N)])
    e = info.value
    assert_report(e, "x", N, N, 3, False)
    assert thread_of(e) == N - 1 and e.block[1:] == (0, 0) and e.thread[1:] == (0, 0)


def test_off_by_one_write_1d():
    k = kernel(INDEX + "if (i < N) y[i + 1] = x[i];\n")
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(k, [X], N, template=[("N", N)])
    assert_report(info.value, "y", N, N, 2, True)
    assert thread_of(info.value) == N - 1


def test_missing_guard_reports_a_thread_past_the_end():
    k = kernel(INDEX + "y[i] = x[i];\n")  # the grid is rounded up to whole blocks, no guard
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(k, [X], 1024)
    e = info.value
    assert e.line == 2 and e.extent == N and N <= e.index < 1024 and e.array in ("x", "y")
    assert thread_of(e) == e.index


def test_negative_index():
    k = kernel(INDEX + "if (i < N) {\n  float left = x[i - 1];\n  y[i] = left;\n}\n")
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(k, [X], N, template=[("N", N)])
    e = info.value
    assert_report(e, "x", -1, N, 3, False)
    assert e.block == (0, 0, 0) and e.thread == (0, 0, 0)


def test_2d_off_by_one():
    rows, cols = 30, 40
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    src = ("const int c = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "const int r = blockIdx.y * blockDim.y + threadIdx.y;\n"
           "if (r < x_shape[0] && c < x_shape[1])\n"
           "  y[r * x_shape[1] + c] = x[(r + 1) * x_shape[1] + c];\n")
    k = kernel(src)
    with pytest.raises(jk.KernelBoundsError) as info:
        k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32], grid=(cols, rows, 1),
          threadgroup=(16, 8, 1))
    e = info.value
    r = e.block[1] * 8 + e.thread[1]
    c = e.block[0] * 16 + e.thread[0]
    assert (e.array, e.extent, e.line, r) == ("x", rows * cols, 4, rows - 1), str(e)
    assert e.index == rows * cols + c


def test_strided_inputs():
    torch = need("torch")
    base = torch.arange(64 * 32, dtype=torch.float32, device="cuda").reshape(64, 32)
    x = base[:, ::2]  # 64 x 16, strides (32, 2)
    n = x.numel()
    src = INDEX + "if (i < N) y[i] = x[i + 1];\n"
    # made contiguous first (the default): the extent is the element count
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(kernel(src), [x], n, dtype=jk.float32, template=[("N", n)])
    assert_report(info.value, "x", n, n, 2, False)
    # passed as it is: the valid offsets are those its shape and strides reach
    src = INDEX + "if (i < N) y[i] = x[elem_to_loc(i, x_shape, x_strides, x_ndim) + 2];\n"
    k = kernel(src, ensure_row_contiguous=False)
    reach = 63 * 32 + 15 * 2 + 1
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(k, [x], n, dtype=jk.float32, template=[("N", n)])
    e = info.value
    assert (e.array, e.extent, e.line) == ("x", reach, 2) and e.index == reach + 1  # the last element + 2
    exact = kernel(src.replace(" + 2]", "]"), ensure_row_contiguous=False)
    out = launch(exact, [x], n, dtype=jk.float32, template=[("N", n)])[0]
    torch.testing.assert_close(out, x.reshape(-1))


def test_write_past_a_provided_output():
    (out,) = launch(kernel(INDEX + "if (i < N) y[i] = 0;\n"), [X], N, template=[("N", N)])
    small = kernel(INDEX + "if (i < N) y[i] = x[i];\n")
    with pytest.raises(jk.KernelBoundsError) as info:
        # y is N elements, x 2N: the kernel writes past the caller's array
        x2 = np.arange(2 * N, dtype=np.float32)
        small(inputs=[x2], outputs=[out], grid=(2 * N, 1, 1), threadgroup=(TG, 1, 1), template=[("N", 2 * N)])
    e = info.value
    assert (e.array, e.extent, e.line, e.is_output) == ("y", N, 2, True) and N <= e.index < 2 * N
    assert np.array_equal(out.numpy(), np.arange(N, dtype=np.float32))  # in-bounds writes happened


def test_dereference_has_no_line():
    k = kernel(INDEX + "if (i == 0) y[0] = *(x + N);\n")
    with pytest.raises(jk.KernelBoundsError) as info:
        launch(k, [X], N, template=[("N", N)])
    e = info.value
    assert (e.array, e.index, e.extent, e.line) == ("x", N, N, None)
    assert "at an unknown body line" in str(e)


def test_unwritten_float_output():
    k = kernel(INDEX + "if (i < N && i != 517) y[i] = x[i];\n")
    with pytest.raises(jk.UnwrittenOutputError) as info:
        launch(k, [X], N, template=[("N", N)])
    e = info.value
    assert (e.output, e.index, e.kernel) == ("y", 517, "ck")
    assert str(e).startswith("y[517] was never written by kernel 'ck'")
    # init_value fills the output: nothing is poisoned, nothing raised
    (out,) = launch(k, [X], N, template=[("N", N)], init_value=-1.0)
    assert out.numpy()[517] == -1.0


def test_unwritten_output_through_torch():
    torch = need("torch")
    k = kernel(INDEX + "if (i < N && i != 3) y[i] = x[i];\n")
    x = torch.arange(N, dtype=torch.float16, device="cuda")
    with pytest.raises(jk.UnwrittenOutputError) as info:
        launch(k, [x], N, dtype=jk.float16, template=[("N", N)])
    assert (info.value.output, info.value.index) == ("y", 3)


def test_unwritten_integer_output_shows_the_pattern():
    k = kernel(INDEX + "if (i < N && i != 9) y[i] = i;\n")
    (out,) = launch(k, [X], N, dtype=np.int32, template=[("N", N)])
    got = out.numpy()
    assert got[9] == np.frombuffer(b"\xa5" * 4, np.int32)[0] == -1515870811
    assert got[8] == 8 and got[10] == 10


def test_poison_is_a_nan_per_dtype():
    k = kernel(INDEX + "if (i < 0) y[i] = 0;\n")  # writes nothing
    for dtype in (np.float32, np.float64, np.float16, jk.bfloat16):
        with pytest.raises(jk.UnwrittenOutputError) as info:
            launch(k, [X], 4, shape=(4,), dtype=dtype)
        assert info.value.index == 0
    unchecked = kernel(INDEX + "if (i < 0) y[i] = 0;\n", checked=False)
    launch(unchecked, [X], 4, shape=(4,))  # unchecked: no poison, no error


CORRECT = {
    "elementwise": (INDEX + "if (i < N) y[i] = x[i] * s[0] + x[N - 1 - i];\n", lambda x: x * 2.5 + x[::-1]),
    "reduction": (INDEX + "float v = i < N ? x[i] : 0.f;\nfor (int o = 16; o > 0; o /= 2) "
                          "v += __shfl_down_sync(0xffffffff, v, o);\nif ((threadIdx.x & 31) == 0) "
                          "atomicAdd(&y[0], v);\n", None),
    "pointer walk": (INDEX + "if (i == 0) { float acc = 0; for (auto p = x; p < x + N; ++p) acc += *p; "
                             "y[0] = acc; }\n", None),
}


@pytest.mark.parametrize("case", sorted(CORRECT))
def test_correct_kernels_give_identical_results(case):
    src, _ = CORRECT[case]
    results = []
    for checked in (False, True):
        k = jk.cuda_kernel(name="ok", input_names=["x", "s"], output_names=["y"], source=src,
                           compile_options={"checked": checked})
        shape = (N,) if case == "elementwise" else (1,)
        (out,) = k(inputs=[X, np.float32(2.5)], output_shapes=[shape], output_dtypes=[np.float32],
                   grid=(1024, 1, 1), threadgroup=(TG, 1, 1), template=[("N", N)], init_value=None
                   if case == "elementwise" else 0.0)
        results.append(out.numpy())
    if case == "elementwise":
        assert np.array_equal(results[0], results[1])
        assert np.array_equal(results[1], X * np.float32(2.5) + X[::-1])
    else:
        assert results[0] == results[1] == X.sum()


def test_the_context_stays_usable_after_a_violation():
    bad = kernel(INDEX + "if (i < N) y[i] = x[i + 1];\n")
    for _ in range(2):  # the same kernel twice: the slot is reset between launches
        with pytest.raises(jk.KernelBoundsError):
            launch(bad, [X], N, template=[("N", N)])
    good = kernel(INDEX + "if (i < N) y[i] = x[i] + 1;\n")
    (out,) = launch(good, [X], N, template=[("N", N)])
    assert np.array_equal(out.numpy(), X + 1)
    (out,) = launch(bad, [X], N - 1, shape=(N - 1,), template=[("N", N - 1)])  # in bounds now
    assert np.array_equal(out.numpy(), X[1:])
    jk.synchronize()  # nothing pending


def test_environment_switch_checks_kernels(monkeypatch):
    monkeypatch.setenv("JITKERNEL_CHECKED", "1")
    k = jk.cuda_kernel(name="ck", input_names=["x"], output_names=["y"], source=INDEX + "if (i < N) y[i] = x[i+1];")
    with pytest.raises(jk.KernelBoundsError):
        launch(k, [X], N, template=[("N", N)])


def test_torch_compile_raises_from_the_compiled_call():
    torch = need("torch")
    torch._dynamo.reset()
    k = kernel(INDEX + "if (i < N)\n  y[i] = x[i + 1];\n")

    def f(x):
        return k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
                 threadgroup=(TG, 1, 1), template=[("N", x.numel())])[0] * 2

    compiled = torch.compile(f, fullgraph=True)
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    with pytest.raises(jk.KernelBoundsError) as info:
        compiled(x)
    assert_report(info.value, "x", N, N, 3, False)
    y = k(inputs=[x[1:].contiguous()], output_shapes=[(N - 1,)], output_dtypes=[x.dtype], grid=(N - 1, 1, 1),
          threadgroup=(TG, 1, 1), template=[("N", N - 2)], init_value=0.0)[0]
    torch.testing.assert_close(y[:-1], x[2:])  # the context is fine


def test_cuda_graph_replay_raises_at_synchronize():
    torch = need("torch")
    k = kernel(INDEX + "if (i < N)\n  y[i] = x[i + 1];\n")
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    call = lambda: k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],  # noqa: E731
                     grid=(N, 1, 1), threadgroup=(TG, 1, 1), template=[("N", N)])
    with pytest.raises(jk.KernelBoundsError):
        call()  # compiled, loaded (and checked) before the capture
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        call()  # captured: nothing to wait for, the check is left pending
    graph.replay()
    with pytest.raises(jk.KernelBoundsError) as info:
        jk.synchronize()
    assert_report(info.value, "x", N, N, 3, False)
    jk.synchronize()  # reported once: the slot was cleared
    graph.replay()  # every replay writes the slot again, and every synchronize reads it
    with pytest.raises(jk.KernelBoundsError):
        jk.synchronize()
    graph.replay()
    with pytest.raises(jk.KernelBoundsError):
        call()  # or the next eager launch of the kernel, before its own



def test_jax_jit_raises_at_the_result_or_at_synchronize():
    jax = pytest.importorskip("jax")
    try:
        if not jax.devices("gpu"):
            pytest.skip("JAX sees no GPU")
    except RuntimeError as e:
        pytest.skip(f"JAX has no GPU backend: {e}")
    k = kernel(INDEX + "if (i < N)\n  y[i] = x[i + 1];\n")
    f = jax.jit(lambda a: k(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype], grid=(N, 1, 1),
                            threadgroup=(TG, 1, 1), template=[("N", N)])[0] + 1)
    raised = None
    try:
        jax.block_until_ready(f(jax.numpy.asarray(X)))
    except Exception as e:  # XlaRuntimeError carrying the message
        raised = e
    text = f"x[{N}] out of bounds (extent {N}) at body line 3"
    if raised is None:  # XLA captured the call into a command buffer: pending until jk.synchronize()
        with pytest.raises(jk.KernelBoundsError, match=r"^" + re.escape(text)):
            jk.synchronize()
    else:
        assert text in str(raised), str(raised)
