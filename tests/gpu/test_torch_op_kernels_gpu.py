"""The torch ops' C++ implementation under torch's CUDA dispatch key (cpp/jitkernel/torch_op/): registered at import,
checked as strictly as the Python one (counts, dtypes, ranks) with jitkernel's error type in torch's message,
writing on torch's current stream into outputs from torch's allocator; and the direct launch compiled graphs call in
its place (cpp/bindings/call/graph_launch.cpp), which raises jitkernel's own exceptions."""
import pytest

import jitkernel as jk
from _gpu_util import INDEX, need

pytestmark = pytest.mark.gpu

AXPB = jk.cuda_kernel(name="op_axpb", input_names=["x", "a", "b"], output_names=["y", "n"],
                      source=INDEX + "if (i < x_shape[0] * x_shape[1]) { y[i] = x[i] * a[0] + T(b[0]); }\n"
                                     "if (i == 0) n[0] = x_shape[0] * x_shape[1];")


def _texts(torch, x, a, b, init_value=None):
    """The op's two strings and int/float lists for AXPB on x (float a, int b), as a traced call records them."""
    from jitkernel._frameworks import graph_records

    record = graph_records.call_record(
        ("x", "a", "b"), ("y", "n"), (("array", x.dtype, x.dim()), ("scalar", "float", None), ("scalar", "int", None)),
        (x.dtype, torch.int32), (2, 1), (("T", "float32"),), init_value, False, False)
    n = x.numel()
    ints = [n, 1, 1, 128, 1, 1, x.shape[0], x.shape[1], 1, b]
    return AXPB._spec, record, ints, [a]


def _expected(torch, x, a, b):
    return x * a + b


def test_the_cuda_kernel_is_the_cpp_one():
    torch = need("torch")
    dump = torch._C._dispatch_dump("jitkernel::launch")
    cuda_lines = [line for line in dump.splitlines() if line.startswith("CUDA")]
    assert cuda_lines and "op_kernels.cpp" in cuda_lines[0], dump


def test_launch_allocates_outputs_with_torch_and_fills_scalars():
    torch = need("torch")
    x = torch.randn(33, 7, device="cuda")
    spec, record, ints, floats = _texts(torch, x, 1.5, 3)
    y, n = torch.ops.jitkernel.launch.default(spec, record, [x], ints, floats)
    assert y.shape == (33, 7) and y.dtype == torch.float32 and y.device == x.device
    assert n.dtype == torch.int32 and int(n.item()) == 33 * 7
    torch.testing.assert_close(y, _expected(torch, x, 1.5, 3))


def test_launch_into_writes_given_outputs_and_strided_inputs_are_read_right():
    torch = need("torch")
    base = torch.randn(7, 33, device="cuda")
    x = base.t()  # not row-contiguous: the engine copies it as an eager call does
    spec, record, ints, floats = _texts(torch, x, -2.0, 5)
    y = torch.full((33, 7), 99.0, device="cuda")
    n = torch.zeros(1, dtype=torch.int32, device="cuda")
    torch.ops.jitkernel.launch_into.default(spec, record, [x], ints, floats, [y, n])
    torch.testing.assert_close(y, _expected(torch, x, -2.0, 5))
    assert int(n.item()) == 33 * 7


def test_runs_on_torchs_current_stream():
    torch = need("torch")
    x = torch.randn(64, 64, device="cuda")
    spec, record, ints, floats = _texts(torch, x, 2.0, 1)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # keeps s busy: work on another stream would finish first
        x2 = x * 1.0  # written on s just before the launch
        y, _ = torch.ops.jitkernel.launch.default(spec, record, [x2], ints, floats)
    s.synchronize()
    torch.testing.assert_close(y, _expected(torch, x, 2.0, 1))


def test_bad_arguments_raise_naming_what_is_wrong():
    torch = need("torch")
    x = torch.randn(8, 8, device="cuda")
    spec, record, ints, floats = _texts(torch, x, 1.0, 1)
    with pytest.raises(RuntimeError, match=r"jitkernel.ArgumentError: .*float64 with 2 dims; the call was traced "
                                           r"with float32"):
        torch.ops.jitkernel.launch.default(spec, record, [x.double()], ints, floats)
    with pytest.raises(RuntimeError, match=r"jitkernel.ArgumentError: .*call record describes 1 arrays, 10 ints"):
        torch.ops.jitkernel.launch.default(spec, record, [x], ints[:-1], floats)
    with pytest.raises(RuntimeError, match=r"jitkernel.ArgumentError: .*does not fit in int32"):
        torch.ops.jitkernel.launch.default(spec, record, [x], ints[:-1] + [2 ** 40], floats)
    with pytest.raises(RuntimeError, match=r"jitkernel.ArgumentError: call"):
        torch.ops.jitkernel.launch.default(spec, record[:-3], [x], ints, floats)
    # the op still works after each refusal
    y, _ = torch.ops.jitkernel.launch.default(spec, record, [x], ints, floats)
    torch.testing.assert_close(y, _expected(torch, x, 1.0, 1))


def test_compiled_dynamic_shapes_launch_for_each_size():
    torch = need("torch")

    def f(x, a, b):
        return AXPB(inputs=[x, a, b], output_shapes=[x.shape, (1,)], output_dtypes=[x.dtype, jk.int32],
                    grid=(x.numel(), 1, 1), threadgroup=(128, 1, 1), template=[("T", jk.float32)])[0]

    g = torch.compile(f, fullgraph=True, dynamic=True)
    for rows in (5, 17, 300):
        x = torch.randn(rows, 9, device="cuda")
        torch.testing.assert_close(g(x, 0.5, 2), _expected(torch, x, 0.5, 2))


def test_two_gpus_allocate_on_the_inputs_device():
    torch = need("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.randn(16, 4, device="cuda:1")
    spec, record, ints, floats = _texts(torch, x, 3.0, 0)
    y, n = torch.ops.jitkernel.launch.default(spec, record, [x], ints, floats)
    assert y.device == x.device and n.device == x.device
    torch.testing.assert_close(y, _expected(torch, x, 3.0, 0))


def test_a_compiled_graph_raises_jitkernels_own_errors():
    torch = need("torch")
    broken = jk.cuda_kernel(name="op_broken", input_names=["x"], output_names=["y"],
                            source=INDEX + "y[i] = x[i] +;")
    f = torch.compile(lambda x: broken(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype],
                                       grid=(x.numel(), 1, 1), threadgroup=(64, 1, 1))[0], fullgraph=True)
    with pytest.raises(jk.CompileError, match="op_broken"):
        f(torch.randn(64, device="cuda"))


def test_the_direct_launch_matches_the_op():
    torch = need("torch")
    from jitkernel import _core

    x = torch.randn(40, 3, device="cuda")
    spec, record, ints, floats = _texts(torch, x, 0.25, -4)
    y, n = _core._torch_graph_launch(spec, record, [x], ints, floats)
    y2, n2 = torch.ops.jitkernel.launch.default(spec, record, [x], ints, floats)
    torch.testing.assert_close(y, y2)
    assert int(n.item()) == int(n2.item()) == 120
    out = [torch.empty_like(y), torch.empty_like(n)]
    assert _core._torch_graph_launch(spec, record, [x], ints, floats, out) is None
    torch.testing.assert_close(out[0], y)
    with pytest.raises(jk.ArgumentError, match="float64 with 2 dims"):
        _core._torch_graph_launch(spec, record, [x.double()], ints, floats)
