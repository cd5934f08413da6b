"""precompiled_cuda_kernel inside torch and JAX tracing, without a GPU: make_fx and torch.compile(fullgraph=True),
static and dynamic, record the call as jitkernel::launch (launch_into with outputs=) with the precompiled kernel
text and the call record as its strings and the sizes and scalars as its SymInt/float lists; jax.jit lowered for
CUDA carries the record as jk_call; each front's errors are typed and raised while tracing."""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

torch = pytest.importorskip("torch")
from torch._dynamo.testing import EagerAndRecordGraphs  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

SOURCE = r"""
extern "C" __global__ void axpy(const float* x, float* y, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
"""


@pytest.fixture(scope="module")
def cubin():
    try:
        return jk.compile_cuda(SOURCE, arch="sm_90a")
    except jk.CudaNotAvailableError as e:
        pytest.skip(f"NVRTC not available: {e}")


def axpy(cubin, x, a=2.0, name="axpy", **extra):
    n = x.shape[0]
    launch = dict(name=name, compiled_source=cubin, inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                  scalars=[n, a], grid=(n, 1, 1), threadgroup=(128, 1, 1))
    launch.update(extra)
    return jk.precompiled_cuda_kernel(**launch)


def launches(graph):
    return [n for n in graph.graph.nodes if n.op == "call_function" and "jitkernel" in str(n.target)]


def check_strings(node, cubin, scalars=2):
    kernel, call = node.args[0], node.args[1]
    args = _core.decode_kernel(kernel, "kernel")
    assert args["backend"] == "precompiled" and args["compiled_source"] == cubin and args["scalars"] == scalars
    decoded = _core.decode_call(call, "call")
    assert decoded["input_names"] == ("input0", "scalar0", "scalar1")
    assert [e[1].name for e in decoded["inputs"]] == ["float32", "int32", "float32"]
    _core.check_recorded(kernel, call)


def test_make_fx_records_the_op(cubin):
    graph = make_fx(lambda x: axpy(cubin, x)[0], tracing_mode="fake")(torch.ones(8))
    (node,) = launches(graph)
    assert "jitkernel.launch" in str(node.target)
    check_strings(node, cubin)
    assert list(node.args[3]) == [8, 1, 1, 128, 1, 1, 8, 8] and list(node.args[4]) == [2.0]


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_fullgraph(cubin, dynamic):
    torch._dynamo.reset()
    backend = EagerAndRecordGraphs()
    compiled = torch.compile(lambda x: axpy(cubin, x)[0], backend=backend, fullgraph=True, dynamic=dynamic)
    with pytest.raises(jk.ArgumentTypeError, match="runs on CUDA tensors"):  # traced in full, then run on the CPU
        compiled(torch.ones(8))
    (graph,) = backend.graphs
    (node,) = launches(graph)
    check_strings(node, cubin)
    ints = list(node.args[3])
    symbolic = [v for v in ints if not isinstance(v, int)]
    assert bool(symbolic) == dynamic  # n (grid, extent, scalar) is a SymInt under dynamic=True
    assert len(node.args[4]) == 1  # a: 2.0, or a symbolic float under dynamic=True


def test_torch_compile_outputs_is_launch_into(cubin):
    torch._dynamo.reset()
    backend = EagerAndRecordGraphs()

    def f(x, y):
        return axpy(cubin, x, outputs=[y])[0]

    compiled = torch.compile(f, backend=backend, fullgraph=True)
    with pytest.raises(jk.ArgumentTypeError):
        compiled(torch.ones(8), torch.empty(8))
    (node,) = launches(backend.graphs[0])
    assert "launch_into" in str(node.target)


@pytest.mark.parametrize("change, error, argument, message", [
    (dict(name="nope"), jk.ArgumentError, "name", "no entry point 'nope'"),
    (dict(scalars=[np.float16(1)]), jk.ArgumentTypeError, "scalars", "Python bool, int (int32) and float"),
    (dict(stream=1), jk.ArgumentTypeError, "stream", "torch's current stream"),
    (dict(cluster=(2, 1, 1)), jk.ArgumentTypeError, "cluster", "not supported when traced"),
])
def test_torch_trace_errors_are_typed(cubin, change, error, argument, message):
    with pytest.raises(error, match=re.escape(message)) as e:
        make_fx(lambda x: axpy(cubin, x, **change)[0], tracing_mode="fake")(torch.ones(8))
    assert e.value.argument == argument


def test_torch_scalar_input_must_be_a_tensor(cubin):
    with pytest.raises(jk.ArgumentTypeError, match="input 1: .* takes torch arrays") as e:
        make_fx(lambda x: axpy(cubin, x, inputs=[x, 3.0])[0], tracing_mode="fake")(torch.ones(8))
    assert e.value.argument == "inputs"


def test_eager_cpu_tensor_is_not_traced(cubin):
    """A plain tensor stays on the eager path: it runs where there is a GPU (a host tensor is copied in), else it
    raises the eager path's error, not the traced path's."""
    try:
        axpy(cubin, torch.ones(8))
    except (jk.ArgumentTypeError, jk.ArgumentError, jk.CudaNotAvailableError) as e:
        assert "traced" not in str(e)


# ---- JAX ---------------------------------------------------------------------------------------------------

def lowered(f, *args) -> str:
    jax = pytest.importorskip("jax")
    return jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


def attribute(hlo: str) -> str:
    match = re.search(r'jk_call = "((?:[^"\\]|\\.)*)"', hlo)
    assert match, hlo[:2000]
    return re.sub(r'\\([0-9A-Fa-f]{2}|\\|")',
                  lambda m: chr(int(m.group(1), 16)) if len(m.group(1)) == 2 else m.group(1), match.group(1))


def test_jax_jit_lowers_to_the_custom_call(cubin):
    jnp = pytest.importorskip("jax.numpy")
    hlo = lowered(lambda x: axpy(cubin, x)[0], jnp.ones(8, jnp.float32))
    kernel, call = _core.decode_record(attribute(hlo), "jk_call")
    assert kernel["backend"] == "precompiled" and kernel["compiled_source"] == cubin
    assert [e[1].name for e in call["inputs"]] == ["float32", "int32", "float32"]  # Python int: int32, as eagerly
    assert call["grid"] == (8, 1, 1) and call["outputs"][0][1] == (8,)


def test_jax_errors_are_typed(cubin):
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.ones(8, jnp.float32)
    with pytest.raises(jk.ArgumentError, match="no entry point 'nope'") as e:
        lowered(lambda x: axpy(cubin, x, name="nope")[0], x)
    assert e.value.argument == "name"
    with pytest.raises(jk.ArgumentTypeError, match="takes JAX arrays") as e:
        lowered(lambda x: axpy(cubin, x, inputs=[x, 1.0])[0], x)
    assert e.value.argument == "inputs"
    with pytest.raises(jk.ArgumentTypeError, match="fixed when JAX traces") as e:
        lowered(lambda x: axpy(cubin, x, a=x[0])[0], x)
    assert e.value.argument == "scalars"
    with pytest.raises(jk.ArgumentError, match="takes 4 parameters but the call passes 3") as e:
        lowered(lambda x: axpy(cubin, x, scalars=[8])[0], x)
    assert e.value.argument == "scalars"


def test_make_fx_symbolic_keeps_sizes_symbolic(cubin):
    """Sizes stay symbolic; a scalar must be a Python value there (make_fx passes SymInts as they are, which a
    traced torch call takes as inputs of no kernel kind: as for cuda_kernel)."""
    graph = make_fx(lambda x: axpy(cubin, x, scalars=[8, 2.0])[0], tracing_mode="symbolic")(torch.ones(8))
    (node,) = launches(graph)
    check_strings(node, cubin)
    assert any(not isinstance(v, int) for v in node.args[3])


def test_inductor_writes_a_direct_launch_and_the_cpp_call_site_builds(cubin):
    """Inductor (the default backend) writes the op as extern_kernels.jitkernel_launch; running it builds the C++
    call site of the precompiled text (decoded, binary parsed, entry and parameters checked) before it refuses
    the CPU tensor."""
    pytest.importorskip("torch._inductor.codegen.custom_extern_kernel_codegen")
    import pathlib

    from torch._inductor.codecache import PyCodeCache

    torch._dynamo.reset()
    before = len(PyCodeCache.modules)
    with pytest.raises(jk.ArgumentTypeError, match=r"inputs\[0\]: a traced jitkernel call runs on CUDA tensors"):
        torch.compile(lambda x: axpy(cubin, x)[0] + 1, fullgraph=True)(torch.ones(8))
    code = "\n".join(pathlib.Path(m.__file__).read_text() for m in PyCodeCache.modules[before:]
                     if getattr(m, "__file__", None))
    assert "extern_kernels.jitkernel_launch('{\"jitkernel_kernel\":2,\"backend\":\"precompiled\"" in code


def test_cpp_call_site_refuses_a_bad_precompiled_text(cubin):
    graph = make_fx(lambda x: axpy(cubin, x)[0], tracing_mode="fake")(torch.ones(8))
    (node,) = launches(graph)
    kernel, call, ints, floats = node.args[0], node.args[1], list(node.args[3]), list(node.args[4])
    for bad, argument, message in ((kernel.replace('"name":"axpy"', '"name":"axpz"'), "name", "no entry point"),
                                   (kernel.replace('"format":"cubin"', '"format":"ptx"'), "kernel", "format:")):
        with pytest.raises(jk.ArgumentError, match=message) as e:
            _core._torch_graph_launch(bad, call, [], ints, floats)
        assert e.value.argument == argument
