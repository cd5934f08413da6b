"""Checked mode on a GPU where the frameworks allocate: an output of the torch op's C++ implementation (the
dispatcher path of exported programs and AOTInductor) and of a compiled graph is poisoned, and one the kernel left
unwritten raises; so is an XLA result under jax.jit (raised with the result, or visible as the NaN when XLA
captured the call into a command buffer). Two threads launching one checked kernel at once (torch on two unordered
streams; jax.jit from two threads, XLA's handler running without the GIL) each get their own reports: a report is
never lost or given to the other thread's launch (docs/checked.md)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import need

pytestmark = pytest.mark.gpu

TG = 128
N = 1000
INDEX = "const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"  # body line 1
SKIP_3 = INDEX + "if (i < N && i != 3) y[i] = x[i];\n"  # element 3 is never written


def kernel(source, inputs=("x",), name="ckf"):
    return jk.cuda_kernel(name=name, input_names=list(inputs), output_names=["y"], source=source,
                          compile_options={"checked": True})


def test_torch_op_cpp_path_poisons_and_checks_its_outputs():
    torch = need("torch")
    from torch.fx.experimental.proxy_tensor import make_fx

    k = kernel(SKIP_3)
    f = lambda x: k(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(N, 1, 1),  # noqa: E731
                    threadgroup=(TG, 1, 1), template=[("N", N)])[0]
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    graph = make_fx(f, tracing_mode="fake")(x)
    (node,) = [n for n in graph.graph.nodes if n.op == "call_function" and "jitkernel" in str(n.target)]
    kernel_text, call_text, ints, floats = node.args[0], node.args[1], list(node.args[3]), list(node.args[4])
    with pytest.raises(RuntimeError, match=r"jitkernel\.UnwrittenOutputError: y\[3\] was never written"):
        torch.ops.jitkernel.launch.default(kernel_text, call_text, [x], ints, floats)  # the CUDA key: op_kernels.cpp
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: f(x) + 1, fullgraph=True)  # the compiled graph's direct launch
    with pytest.raises((jk.UnwrittenOutputError, RuntimeError), match=r"y\[3\] was never written"):
        compiled(x)


def test_jax_jit_results_are_poisoned_and_checked():
    jax = need("jax")
    k = kernel(SKIP_3)
    f = jax.jit(lambda a: k(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype], grid=(N, 1, 1),
                            threadgroup=(TG, 1, 1), template=[("N", N)])[0])
    try:
        y = np.asarray(jax.block_until_ready(f(jax.numpy.arange(N, dtype=jax.numpy.float32))))
    except Exception as e:  # XlaRuntimeError carrying the message
        assert "y[3] was never written by kernel 'ckf'" in str(e), str(e)
    else:  # captured into a command buffer: no check, but the poison is there
        assert np.isnan(y[3]) and y.view(np.uint32)[3] == 0xFFFADBAD and (np.delete(y, 3) == np.delete(
            np.arange(N, dtype=np.float32), 3)).all()


def test_two_torch_threads_on_unordered_streams_get_their_own_reports():
    torch = need("torch")
    k = kernel(INDEX + "if (i < N) y[i] = x[i + off[0]];\n", inputs=("x", "off"))
    x = torch.arange(N, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()  # x is written before the threads' streams read it
    errors = {1: [], 0: []}

    def run(off):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for _ in range(50):
                try:
                    k(inputs=[x, off], output_shapes=[(N,)], output_dtypes=[jk.float32], grid=(N, 1, 1),
                      threadgroup=(TG, 1, 1), template=[("N", N)])
                    errors[off].append(None)
                except jk.KernelBoundsError as e:
                    errors[off].append(str(e))

    threads = [threading.Thread(target=run, args=(off,)) for off in (1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = f"x[{N}] out of bounds (extent {N}) at body line 2"
    assert len(errors[1]) == 50 and all(e is not None and e.startswith(expected) for e in errors[1]), errors[1]
    assert errors[0] == [None] * 50, errors[0]


JAX_THREADS = """
    import threading
    import jax, jax.numpy as jnp, numpy as np, jitkernel as jk
    N, TG = 1000, 128
    k = jk.cuda_kernel(name="ckt", input_names=["x", "off"], output_names=["y"],
                       source="const int i = blockIdx.x * blockDim.x + threadIdx.x;\\n"
                              "if (i < N) y[i] = x[i + off[0]];\\n",
                       compile_options={"checked": True})
    def f(off):
        return jax.jit(lambda a: k(inputs=[a, off], output_shapes=[a.shape], output_dtypes=[a.dtype],
                                   grid=(N, 1, 1), threadgroup=(TG, 1, 1), template=[("N", N)])[0])
    x = jnp.arange(N, dtype=jnp.float32)
    results = {1: [], 0: []}
    def run(off):
        g = f(off)
        for _ in range(50):
            try:
                jax.block_until_ready(g(x))
                results[off].append(None)
            except Exception as e:
                results[off].append(str(e))
    threads = [threading.Thread(target=run, args=(off,)) for off in (1, 0)]
    for t in threads: t.start()
    for t in threads: t.join()
    expected = f"x[{N}] out of bounds (extent {N}) at body line 2"
    assert len(results[1]) == 50 and all(e is not None and expected in e for e in results[1]), results[1]
    assert results[0] == [None] * 50, results[0]
    print("OK")
"""


def test_two_jax_threads_get_their_own_reports(tmp_path):
    need("jax")
    # Without command buffers every launch is checked in the handler, which XLA runs on the callers' threads.
    env = dict(os.environ, XLA_FLAGS=(os.environ.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer=").strip())
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(JAX_THREADS)], capture_output=True, text=True,
                          env=env, timeout=600, cwd=tmp_path)
    assert done.returncode == 0 and "OK" in done.stdout, done.stdout + done.stderr
