"""Inductor writes jitkernel's ops as direct launches (python/jitkernel/_frameworks/torch_inductor.py): the
generated Python wrapper calls ``extern_kernels.jitkernel_launch`` with the op's arguments, for ``launch`` and for
``launch_into``. On this CPU-only machine the launch itself refuses the CPU tensors, which shows it ran (its own
message, a jitkernel exception); GPU results are in tests/gpu/test_torch_op_kernels_gpu.py."""
import pathlib

import pytest

import jitkernel as jk

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor.codegen.custom_extern_kernel_codegen")

EXP = jk.cuda_kernel(name="ind_exp", input_names=["x"], output_names=["y"],
                     source="auto i = threadIdx.x; y[i] = exp(x[i]);")


def _wrapper_sources():
    from torch._inductor.codecache import PyCodeCache

    return [pathlib.Path(m.__file__).read_text() for m in PyCodeCache.modules if getattr(m, "__file__", None)]


def _compile_and_run(f, *args):
    torch._dynamo.reset()
    before = len(_wrapper_sources())
    with pytest.raises(jk.ArgumentTypeError, match=r"inputs\[0\]: a traced jitkernel call runs on CUDA tensors"):
        torch.compile(f, fullgraph=True)(*args)
    return "\n".join(_wrapper_sources()[before:])


def test_launch_is_written_as_a_direct_launch():
    def f(x):
        return EXP(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
                   threadgroup=(32, 1, 1))[0] + 1

    code = _compile_and_run(f, torch.randn(8))
    assert "extern_kernels.jitkernel_launch('{\"jitkernel_kernel\"" in code, code
    assert "torch.ops.jitkernel.launch.default(" not in code


def test_launch_into_is_written_as_a_direct_launch_with_its_outputs():
    def f(x, y):
        EXP(inputs=[x], grid=(x.numel(), 1, 1), threadgroup=(32, 1, 1), outputs=[y])
        return y * 2

    code = _compile_and_run(f, torch.randn(8), torch.empty(8))
    line = next(line for line in code.splitlines() if "extern_kernels.jitkernel_launch(" in line)
    assert not line.lstrip().startswith("buf") and line.rstrip().endswith("])"), line  # no result; outputs last
    assert "torch.ops.jitkernel.launch_into.default(" not in code


def test_the_direct_launch_checks_its_arguments():
    from jitkernel import _core

    with pytest.raises(jk.ArgumentTypeError, match="kernel: expected the serialised kernel"):
        _core._torch_graph_launch(1, "", [], [], [])
    with pytest.raises(jk.ArgumentError, match="kernel: "):
        _core._torch_graph_launch("{}", "{}", [], [], [])
