"""What ``help()`` shows a user: the factories, a kernel of each kind, ``jk.Array`` and the main errors document
their keywords and what they do. Checked on ``pydoc.render_doc``'s plain text (what ``help(x)`` prints), with
whitespace collapsed, so that a docstring that loses a keyword or its explanation fails here. No GPU needed."""
import pydoc
import re

import pytest

import jitkernel as jk

CALL_KEYWORDS = ["inputs", "output_shapes", "output_dtypes", "grid", "threadgroup", "template", "init_value",
                 "verbose", "stream", "outputs"]


def _help(obj) -> str:
    # One line; "( " as "(": Python 3.13's pydoc writes a long signature one parameter a line.
    text = re.sub(r"\s+", " ", pydoc.render_doc(obj, renderer=pydoc.plaintext).replace(" |", " "))
    return text.replace("( ", "(")


def _check(text: str, keywords, sentences):
    missing = [k for k in keywords if k not in text] + [s for s in sentences if s not in text]
    assert not missing, f"missing from help(): {missing}\n{text[:3000]}"


@pytest.fixture(scope="module")
def cuda_kernel():
    return jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")


def test_help_cuda_kernel_factory():
    _check(_help(jk.cuda_kernel),
           ["name", "input_names", "output_names", "source", "header", "ensure_row_contiguous", "shared_memory",
            "compile_options", "math_mode"],
           ["A JIT-compiled CUDA kernel from the body ``source`` (MLX's ``mx.fast.cuda_kernel``).",
            "``input_names`` / ``output_names`` may be omitted when calls pass dicts keyed by name."])


def test_help_cuda_kernel_instance(cuda_kernel):
    text = _help(cuda_kernel)
    _check(text, CALL_KEYWORDS + ["cooperative", "cluster", "source(", "compile(", "entry_name(", "attributes(",
                                  "vjp("],
           ["call it with keyword arguments only",
            "Runs the kernel and returns the outputs as a list in output_names order (a dict in the dict form",
            "``grid``: threads (x, y, z), as in MLX: blocks = ceil(grid / threadgroup)",
            "raise ``jk.ArgumentTypeError`` / ``jk.ArgumentError`` naming the argument",
            "The exact CUDA source a call with these arguments compiles (what verbose=True prints). No GPU needed."])


def test_help_metal_kernel_factory_and_instance():
    _check(_help(jk.metal_kernel), ["atomic_outputs", "compile_options", "math_mode", "header"],
           ["A JIT-compiled Metal kernel from the body ``source`` (MLX's ``mx.fast.metal_kernel``).",
            "Calling needs macOS on Apple silicon"])
    kernel = jk.metal_kernel(name="mcopy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    _check(_help(kernel), CALL_KEYWORDS + ["source(", "kernel_name(", "buffers(", "with_utils"],
           ["call it with keyword arguments only",
            "``grid`` counts threads (Metal's dispatchThreads)",
            "``stream`` must be None (Metal kernels run on jitkernel's own command queue)",
            "``cooperative`` / ``cluster`` (CUDA launch options) are refused",
            "raise ``jk.ArgumentTypeError`` / ``jk.ArgumentError`` naming the argument"])
    _check(_help(jk.MetalKernel), ["template(", "output_shapes", "output_dtypes"],
           ["everything but the inputs and template values given up front, inputs as keywords",
            "Runs the kernel on the inputs given by name; returns {output name: array}."])


def test_help_precompiled_kernel():
    _check(_help(jk.precompiled_cuda_kernel),
           ["name", "compiled_source", "scalars", "shared_memory", "ensure_row_contiguous", "cooperative",
            "cluster"] + CALL_KEYWORDS[:5],
           ["Runs the entry point ``name`` of a precompiled CUDA binary and returns its outputs as a list.",
            "positional arguments, unknown keywords and a missing required one are ArgumentTypeError naming the "
            "keyword.",
            "a pointer per input, a pointer per output, then each of ``scalars`` by value."])


def test_help_array():
    _check(_help(jk.Array), ["shape", "dtype", "ndim", "size", "nbytes", "device", "stream", "numpy(",
                             "__dlpack__", "__cuda_array_interface__"],
           ["A device array jitkernel allocated",
            "NumPy inputs are copied to the GPU and the outputs come back as jk.Array",
            "The element type, a jitkernel dtype (jk.float32, ...).",
            "Copies the array to a new NumPy array (waits for it)."])


@pytest.mark.parametrize("error, sentence", [
    (jk.JitKernelError, "Base class of every error jitkernel raises."),
    (jk.ArgumentError, "An argument has a bad value (wrong count, negative shape, unknown name, ...)."),
    (jk.ArgumentTypeError, "a keyword-only call got positional arguments, an unknown keyword or lacks a required "
                           "one."),
    (jk.CompileError, "NVRTC rejected the generated source."),
    (jk.CudaNotAvailableError, "The CUDA driver or NVRTC could not be found or loaded"),
    (jk.MetalNotAvailableError, "this needs macOS on Apple silicon"),
    (jk.KernelFaultError, "A kernel faulted on the device"),
])
def test_help_errors(error, sentence):
    keywords = {jk.ArgumentError: ["e.argument", "str(e)"], jk.ArgumentTypeError: ["e.argument"],
                jk.CompileError: ["log", "source"]}.get(error, [])
    _check(_help(error), keywords + [error.__name__], [sentence])


def _call_keywords_in_signature(kernel) -> list:
    """The keywords ``inspect.signature(kernel.__call__)`` shows: (name, required, default), keyword-only each."""
    import inspect

    parameters = inspect.signature(kernel.__call__).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
    return [(p.name, p.default is inspect.Parameter.empty, None if p.default is inspect.Parameter.empty
             else p.default) for p in parameters]


def test_help_of_the_call_shows_the_call_slots_keywords():
    """help(kernel.__call__) shows the C call slot's keywords (its table: required ones, defaults), not the
    ``(*args, **kwargs)`` of the Python function TorchDynamo traces, nor its internals."""
    from jitkernel import _core

    table = [(name, name in _core._call_required, default)
             for name, default in zip(_core._call_keywords, _core._call_defaults)]
    cuda = jk.cuda_kernel(name="k", input_names=["a"], output_names=["o"], source="")
    assert _call_keywords_in_signature(cuda) == table
    metal = jk.metal_kernel(name="k", input_names=["a"], output_names=["o"], source="")
    assert _call_keywords_in_signature(metal) == [row for row in table if row[0] not in ("cooperative", "cluster")]
    for kernel in (cuda, metal):
        text = pydoc.render_doc(kernel.__call__, renderer=pydoc.plaintext)
        # Python 3.13's pydoc writes a long signature one parameter a line: compare it as one line.
        signature = re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", "\n".join(text.splitlines()[2:20])))
        assert signature.startswith("__call__(*, inputs, output_shapes=None, output_dtypes=None, grid, "
                                    "threadgroup, template=None"), text
        assert "Runs the kernel on ``inputs``" in text and "help(type(kernel))" in text
        for internal in ("*args", "**kwargs", "Dynamo", "dynamo_call", "guard"):
            assert internal not in text, internal
        class_text = _help(type(kernel))
        assert "__call__(self, *, inputs, output_shapes=None" in class_text
        assert "Dynamo" not in class_text and "dynamo_call" not in class_text
