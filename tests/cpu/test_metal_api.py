"""The metal_kernel API on any OS: the factory's checks, the call's argument checks (all made before Metal is
needed), MetalNotAvailableError where Metal cannot run, verbose output in MLX's format, the dict form of seed 000,
seed 002's MetalKernel class, outputs=, and inputs from other frameworks (MLX arrays, torch CPU tensors).
"""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk

EXP = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""

needs_no_metal = pytest.mark.skipif(jk.metal_available(), reason="Metal is available: calls run (tests/gpu)")


def exp_kernel(**factory):
    return jk.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP, **factory)


def call_args(a=None, **over):
    a = np.zeros((4, 16), np.float16) if a is None else a
    kw = dict(inputs=[a], template=[("T", jk.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
              output_shapes=[a.shape], output_dtypes=[a.dtype])
    kw.update(over)
    return kw


def source_of(kernel, kw):
    return kernel.source(inputs=kw["inputs"], output_dtypes=kw["output_dtypes"], template=kw.get("template"))


# --------------------------------------------------------------------------- the factory
@pytest.mark.parametrize("kwargs, error, argument", [
    (dict(name=3), jk.ArgumentTypeError, "name"),
    (dict(input_names="inp"), jk.ArgumentTypeError, "input_names"),
    (dict(input_names=["inp", 2]), jk.ArgumentTypeError, "input_names"),
    (dict(output_names=("out", None)), jk.ArgumentTypeError, "output_names"),
    (dict(source=None), jk.ArgumentTypeError, "source"),
    (dict(source=b"x"), jk.ArgumentTypeError, "source"),
    (dict(header=1), jk.ArgumentTypeError, "header"),
    (dict(ensure_row_contiguous=1), jk.ArgumentTypeError, "ensure_row_contiguous"),
    (dict(atomic_outputs="yes"), jk.ArgumentTypeError, "atomic_outputs"),
    (dict(compile_options="fast"), jk.ArgumentTypeError, "compile_options"),
    (dict(compile_options={"math_mode": "precise"}), jk.ArgumentError, "compile_options"),
    (dict(compile_options={"math_mode": 2}), jk.ArgumentError, "compile_options"),
    (dict(compile_options={"unknown": "value"}), jk.ArgumentError, "compile_options"),
    (dict(name="my kernel"), jk.ArgumentError, "name"),
])
def test_factory_errors_name_the_argument(kwargs, error, argument):
    args = dict(name="myexp", input_names=["inp"], output_names=["out"], source=EXP)
    args.update(kwargs)
    with pytest.raises(error) as info:
        jk.metal_kernel(**args)
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}: ")


@pytest.mark.parametrize("mode", ["safe", "relaxed", "fast"])
def test_math_modes(mode):
    k = exp_kernel(compile_options={"math_mode": mode})
    assert k.math_mode == mode and k._impl.math_mode == mode


def test_defaults():
    k = exp_kernel()
    assert k.math_mode == "safe" and k.ensure_row_contiguous is True and k.atomic_outputs is False
    assert exp_kernel(compile_options={}).math_mode == "safe"
    assert repr(k) == "jitkernel.MetalKernelFunction(name='myexp', input_names=('inp',), output_names=('out',))"


# --------------------------------------------------------------------------- calling without Metal
@needs_no_metal
def test_call_raises_metal_not_available():
    with pytest.raises(jk.MetalNotAvailableError, match="macOS on Apple silicon") as info:
        exp_kernel()(**call_args())
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, jk.JitKernelError)
    assert jk.metal_available() is False


@needs_no_metal
def test_verbose_prints_like_mlx_before_raising(capsys):
    k = exp_kernel()
    kw = call_args()
    with pytest.raises(jk.MetalNotAvailableError):
        k(**kw, verbose=True)
    printed = capsys.readouterr().out
    assert printed == f"Generated source code for `myexp`:\n```\n{source_of(k, kw)}\n```\n"


@pytest.mark.parametrize("over, error, argument", [
    (dict(inputs=[]), jk.ArgumentError, "inputs"),
    (dict(inputs=[object()]), jk.ArgumentTypeError, "inputs"),
    (dict(inputs=[np.zeros(4)]), jk.ArgumentError, "inputs"),  # float64
    (dict(grid=(0, 1, 1)), jk.ArgumentError, "grid"),
    (dict(grid=(1, 1)), jk.ArgumentError, "grid"),
    (dict(threadgroup=(1.5, 1, 1)), jk.ArgumentTypeError, "threadgroup"),
    (dict(output_shapes=[(-1,)]), jk.ArgumentError, "output_shapes"),
    (dict(output_shapes=[(4,), (4,)]), jk.ArgumentError, "output_shapes"),
    (dict(output_shapes=None), jk.ArgumentTypeError, "output_shapes"),
    (dict(output_dtypes=None), jk.ArgumentTypeError, "output_dtypes"),
    (dict(output_dtypes=["float99"]), jk.ArgumentError, "output_dtypes"),
    (dict(template=[("T", 1.5)]), jk.ArgumentTypeError, "template"),
    (dict(template="T"), jk.ArgumentTypeError, "template"),
    (dict(template=[("N", 2**31)]), jk.ArgumentError, "template"),
    (dict(init_value="0"), jk.ArgumentTypeError, "init_value"),
    (dict(verbose=1), jk.ArgumentTypeError, "verbose"),
    (dict(stream=0), jk.ArgumentError, "stream"),
    (dict(outputs=[np.zeros((4, 16), np.float16)] * 2), jk.ArgumentError, "outputs"),
    (dict(outputs=np.zeros((4, 16), np.float16)), jk.ArgumentTypeError, "outputs"),
    (dict(outputs=[object()], output_shapes=None, output_dtypes=None), jk.ArgumentTypeError, "outputs"),
])
def test_call_argument_errors_come_first(over, error, argument):
    with pytest.raises(error) as info:
        exp_kernel()(**call_args(**over))
    assert info.value.argument == argument


@needs_no_metal
def test_outputs_give_shapes_and_dtypes():
    out = np.zeros((4, 16), np.float16)
    with pytest.raises(jk.MetalNotAvailableError):
        exp_kernel()(**call_args(output_shapes=None, output_dtypes=None, outputs=[out]))


def test_call_is_keyword_only():
    with pytest.raises(TypeError):
        exp_kernel()([np.zeros(4, np.float32)])


# --------------------------------------------------------------------------- seed 000: the dict form
def test_dict_form_without_names():
    k = jk.metal_kernel(name="myexp", source=EXP)
    a = np.zeros((4, 16), np.float16)
    src = k.source(inputs={"inp": a}, output_dtypes={"out": a.dtype}, template={"T": jk.float32})
    assert src == source_of(exp_kernel(), call_args(a))
    assert k.kernel_name(inputs={"inp": a}, output_dtypes={"out": a.dtype}, template={"T": jk.float32}) == \
        "custom_kernel_myexp__float_float16_t_float16_t"


def test_positional_name_and_source():
    k = jk.metal_kernel("myexp", EXP)
    assert k.input_names is None and k.source_text == EXP


@needs_no_metal
def test_dict_form_call_reaches_the_runtime():
    k = jk.metal_kernel(name="myexp", source=EXP)
    a = np.zeros((4, 16), np.float16)
    with pytest.raises(jk.MetalNotAvailableError):
        k(inputs={"inp": a}, template={"T": jk.float32}, grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
          output_shapes={"out": a.shape}, output_dtypes={"out": a.dtype})


def test_dict_form_errors():
    k = jk.metal_kernel(name="myexp", source=EXP)
    a = np.zeros(16, np.float32)
    with pytest.raises(jk.ArgumentError, match="^inputs: this kernel was made without input_names.*metal_kernel"):
        k.source(inputs=[a], output_dtypes={"out": a.dtype})
    with pytest.raises(jk.ArgumentError, match="^output_dtypes: this kernel was made without output_names"):
        k.source(inputs={"inp": a}, output_dtypes=[a.dtype])
    named = exp_kernel()
    with pytest.raises(jk.ArgumentError, match=r"^inputs: the keys \['x'\] do not match"):
        named.source(inputs={"x": a}, output_dtypes=[a.dtype])
    with pytest.raises(jk.ArgumentTypeError, match="^inputs: dict keys must be names"):
        k.source(inputs={1: a}, output_dtypes={"out": a.dtype})


# --------------------------------------------------------------------------- seed 002: MetalKernel
def test_metal_kernel_class_generates_the_same_source():
    a = np.zeros((4, 16), np.float16)
    k = jk.MetalKernel(name="myexp", source=EXP, grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                       output_shapes={"out": a.shape}, output_dtypes={"out": a.dtype})
    assert k.template(T=jk.float32) is k
    assert k.source(inp=a) == source_of(exp_kernel(), call_args(a))
    assert k.source(inp=a, with_utils=True).endswith(k.source(inp=a))
    assert repr(k) == "jitkernel.MetalKernel(name='myexp')"


@needs_no_metal
def test_metal_kernel_class_call():
    a = np.zeros((4, 16), np.float16)
    k = jk.MetalKernel(name="myexp", source=EXP, grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                       output_shapes={"out": a.shape}, output_dtypes={"out": a.dtype}, ensure_row_contiguous=False)
    k.template(T=jk.float32)
    with pytest.raises(jk.MetalNotAvailableError):
        k(inp=a)
    assert "const device float16_t* x [[buffer(0)]]" in k.source(x=a)  # no input names: the keywords name them
    with pytest.raises(jk.ArgumentError, match="^input_names: input name 'uint' is reserved"):
        k.source(uint=a)


@pytest.mark.parametrize("over, argument", [
    (dict(output_shapes=[(4,)]), "output_shapes"), (dict(output_dtypes=[jk.float32]), "output_dtypes"),
    (dict(verbose="yes"), "verbose"), (dict(name=""), "name"),
])
def test_metal_kernel_class_errors(over, argument):
    args = dict(name="myexp", source=EXP, grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes={"out": (4,)},
                output_dtypes={"out": jk.float32})
    args.update(over)
    with pytest.raises((jk.ArgumentError, jk.ArgumentTypeError)) as info:
        jk.MetalKernel(**args)
    assert info.value.argument == argument


# --------------------------------------------------------------------------- other frameworks' arrays
def test_mlx_arrays_and_dtypes():
    mx = pytest.importorskip("mlx.core")
    k = exp_kernel()
    a = mx.zeros((4, 16), dtype=mx.float16)
    src = k.source(inputs=[a], output_dtypes=[a.dtype], template=[("T", mx.float32)])
    assert src == source_of(k, call_args(np.zeros((4, 16), np.float16)))
    b = mx.zeros((3,), dtype=mx.bfloat16)
    assert "const constant bfloat16_t* inp" in k.source(inputs=[b], output_dtypes=[mx.bfloat16],
                                                         template=[("T", mx.int32)])


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    k = exp_kernel()
    t = torch.zeros((4, 16), dtype=torch.float16)
    assert k.source(inputs=[t], output_dtypes=[t.dtype], template=[("T", torch.float32)]) == \
        source_of(k, call_args(np.zeros((4, 16), np.float16)))


# --------------------------------------------------------------------------- one conversion for both backends
class _CudaStandIn:
    """A device array as far as the argument conversion can tell (DLPack on a CUDA device)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise AssertionError("a device array must be refused before it is exported")


@pytest.mark.parametrize("over", [
    dict(inputs=np.zeros(4, np.float16)),
    dict(inputs=[]),
    dict(output_shapes=(4, 16)),
    dict(output_shapes=[(4, 16), (4, 16)]),
    dict(output_dtypes=[jk.float16, jk.float16]),
    dict(outputs=np.zeros((4, 16), np.float16)),
    dict(outputs=[np.zeros((4, 16), np.float16)] * 2),
    dict(grid=(1, 1)),
    dict(init_value="0"),
], ids=lambda over: next(iter(over)))
def test_both_backends_word_argument_errors_alike(over):
    """Metal calls go through the CUDA calls' conversion (host-memory policy): the same error, word for word."""
    metal, cuda = exp_kernel(), jk.cuda_kernel("myexp", ["inp"], ["out"], "out[0] = inp[0];")
    errors = []
    for kernel in (metal, cuda):
        with pytest.raises((jk.ArgumentError, jk.ArgumentTypeError)) as info:
            kernel(**call_args(**over))
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("argument", ["inputs", "outputs"])
def test_device_arrays_are_refused(argument):
    over = dict(inputs=[_CudaStandIn()]) if argument == "inputs" else dict(outputs=[_CudaStandIn()])
    with pytest.raises(jk.ArgumentTypeError, match=rf"^{argument}: (input|output) 0 \('(inp|out)'\): expected an "
                                                   r"array in CPU memory .*got a device array"):
        exp_kernel()(**call_args(**over))


def test_read_only_outputs_are_refused():
    out = np.zeros((4, 16), np.float16)
    out.flags.writeable = False
    with pytest.raises(jk.ArgumentError, match=r"^outputs: output 0 \('out'\): the array is read-only"):
        exp_kernel()(**call_args(outputs=[out]))


# --------------------------------------------------------------------------- one kernel type for both factories
def test_one_kernel_type_and_call_slot():
    """Both factories' kernels are _core.KernelBase objects called through its C call slot: the Python __call__ in
    their classes' dicts (for help() and inspect, and TorchDynamo's for CUDA) never runs on a call."""
    import sys

    from jitkernel import _core
    metal, cuda = exp_kernel(), jk.cuda_kernel("myexp", ["inp"], ["out"], "out[0] = inp[0];")
    assert isinstance(metal, _core.KernelBase) and isinstance(cuda, _core.KernelBase)
    ran = []
    sys.setprofile(lambda frame, event, arg: ran.append(frame.f_code) if event == "call" else None)
    try:
        for kernel in (metal, cuda):
            with pytest.raises(jk.ArgumentTypeError, match="unexpected keyword argument 'bogus'"):
                kernel(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), bogus=1)
    finally:
        sys.setprofile(None)
    assert vars(type(metal))["__call__"].__code__ not in ran and vars(type(cuda))["__call__"].__code__ not in ran


@pytest.mark.parametrize("over, argument", [(dict(cooperative=True), "cooperative"),
                                            (dict(cluster=(2, 1, 1)), "cluster")])
def test_cuda_launch_options_are_refused(over, argument):
    with pytest.raises(jk.ArgumentError, match=rf"^{argument}: Metal kernels .* not supported"):
        exp_kernel()(**call_args(**over))


@needs_no_metal
def test_cuda_launch_options_left_at_none_are_accepted():
    with pytest.raises(jk.MetalNotAvailableError):
        exp_kernel()(**call_args(cooperative=None, cluster=None))


@pytest.mark.parametrize("call, argument, message", [
    (lambda k: k(**call_args(), bogus=1), "bogus", "__call__() got an unexpected keyword argument 'bogus'"),
    (lambda k: k(inputs=[np.zeros(4, np.float32)], grid=(1, 1, 1)), "threadgroup",
     "__call__() missing required keyword argument 'threadgroup'"),
    (lambda k: k([np.zeros(4, np.float32)]), "inputs", "__call__() takes keyword arguments only"),
])
def test_keyword_errors_are_the_call_slots(call, argument, message):
    """The same keyword errors as a CUDA kernel's, from the same call slot (named by the kernel's class)."""
    for kernel in (exp_kernel(), jk.cuda_kernel("myexp", ["inp"], ["out"], "out[0] = inp[0];")):
        with pytest.raises(jk.ArgumentTypeError) as info:
            call(kernel)
        assert info.value.argument == argument
        assert str(info.value).startswith(f"{argument}: {type(kernel).__name__}.{message}"), str(info.value)


def test_traced_arrays_are_an_error_not_a_recorded_call():
    torch = pytest.importorskip("torch")

    class Sub(torch.Tensor):
        pass

    with pytest.raises(jk.ArgumentTypeError) as info:
        exp_kernel()(**call_args(torch.zeros((4, 16), dtype=torch.float16).as_subclass(Sub), grid=(64, 1, 1)))
    assert info.value.argument == "inputs" and "traced" in str(info.value), str(info.value)


@needs_no_metal
def test_a_cuda_calls_launch_options_do_not_reach_the_next_metal_call():
    """Calls on one thread reuse one argument store: a CUDA call's cluster must not stay for a Metal call."""
    cuda = jk.cuda_kernel("myexp", ["inp"], ["out"], "out[0] = inp[0];")
    a = np.zeros(4, np.float32)
    with pytest.raises(jk.JitKernelError):
        cuda(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1),
             cluster=(3, 1, 1), cooperative=True)
    with pytest.raises(jk.MetalNotAvailableError):
        exp_kernel()(**call_args())
