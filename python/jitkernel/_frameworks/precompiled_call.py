"""``precompiled_cuda_kernel`` calls that a framework records instead of running (``call_routes.precompiled``).

A call on traced arrays becomes what every kernel call becomes there: the ``jitkernel::launch`` torch op (or
``launch_into`` with ``outputs=``) under ``torch.compile`` / ``make_fx`` / ``torch.export``, an XLA FFI custom call
under ``jax.jit``. The kernel text is the entry point's (``RecordedEntry``: the binary, its format, the entry name),
the call the usual call record, whose inputs are the array inputs, then the ``scalars`` (passed by value: Python
ints as int32 and floats as float32, as eagerly; under torch.compile they may be symbolic). Array inputs only: a
Python scalar in ``inputs`` (a pointer to a 0-d array eagerly) must be a 0-d array here, which a compiled graph or
an XLA program holds like any other, so a recorded call never uploads or allocates.

TorchDynamo traces ``call``: plain Python on the arguments; the texts are made by ``_texts``, which it takes as a
constant of its (constant) arguments, so the binary's bytes are read once per trace, not per call.
"""
from __future__ import annotations

from .. import _core
from .._errors import ArgumentTypeError
from .._kernels.precompiled import RecordedEntry, entry_text
from . import jax_call, post_import
from .call_form import TracedCall
from .graph_records import call_record
from .torch_ops import _constant, _scalar_entry, run_op
from .traced_call import _is_jax_tracer, reject_launch_options

_torch_module = None  # torch, once imported (register); a module global, as TorchDynamo must not walk sys.modules
_cache: dict = {}  # _texts' arguments -> its result


def register(torch) -> None:
    global _torch_module
    _torch_module = torch


def _names(n_arrays: int, n_scalars: int, n_outputs: int) -> tuple:
    """Names for the call record (a precompiled call has none): what its errors call each argument."""
    return (tuple(f"input{i}" for i in range(n_arrays)) + tuple(f"scalar{i}" for i in range(n_scalars)),
            tuple(f"output{j}" for j in range(n_outputs)))


def _texts(name, compiled_source, n_scalars, ensure_row_contiguous, shared_memory, entries, dtypes, ranks,
           init_value) -> tuple:
    """(kernel text, call text) of a traced torch call, checked by the core without a GPU: the binary parses and
    holds the entry, whose parameter sizes (where the binary records them) match the call."""
    key = (name, compiled_source, n_scalars, ensure_row_contiguous, shared_memory, entries, dtypes, ranks, init_value)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    in_names, out_names = _names(len(entries) - n_scalars, n_scalars, len(dtypes))
    kernel = entry_text(name, compiled_source, n_scalars, ensure_row_contiguous, shared_memory)
    record = call_record(in_names, out_names, entries, dtypes, ranks, (), init_value, False, False)
    _core.check_recorded(kernel, record)
    if len(_cache) >= 256:
        _cache.clear()
    _cache[key] = (kernel, record)
    return kernel, record


post_import.when_imported("torch._dynamo", lambda dynamo: dynamo.assume_constant_result(_texts))


def call(name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup, shared_memory,
         init_value, ensure_row_contiguous, stream, outputs, cooperative, cluster):
    """A ``precompiled_cuda_kernel`` call on traced arrays (its arguments, checked by its front), recorded."""
    reject_launch_options(cooperative, cluster)
    inputs, scalars = list(inputs), list(scalars or ())
    if any(_is_jax_tracer(v) for v in inputs) or any(_is_jax_tracer(v) for v in outputs or ()):
        return _jax(name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup,
                    shared_memory, init_value, ensure_row_contiguous, stream, outputs)
    return _torch(name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup,
                  shared_memory, init_value, ensure_row_contiguous, stream, outputs)


def _not_array(i: int, value, framework: str) -> ArgumentTypeError:
    return ArgumentTypeError("inputs", f"input {i}: a traced precompiled_cuda_kernel call takes {framework} arrays "
                                       f"as inputs, got {type(value).__name__}; pass it as a 0-d array, or by value "
                                       f"in scalars=")


def _torch(name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup, shared_memory,
           init_value, ensure_row_contiguous, stream, outputs):
    """The call as ``jitkernel::launch`` / ``launch_into``; returns the outputs as a list."""
    if stream is not None:
        raise ArgumentTypeError("stream", "a traced torch call runs on torch's current stream; omit stream= and "
                                          "use `with torch.cuda.stream(s):` instead")
    torch = _torch_module
    shapes = output_shapes if output_shapes is not None else [tuple(o.shape) for o in outputs or ()]
    dtypes = output_dtypes if output_dtypes is not None else [o.dtype for o in outputs or ()]
    ints = list(grid) + list(threadgroup)
    for shape in shapes:
        ints.extend(shape)
    arrays, floats, entries = [], [], []
    for i, value in enumerate(inputs):
        if not isinstance(value, torch.Tensor):
            raise _not_array(i, value, "torch")
        arrays.append(value.detach())  # no backward: the outputs are outside autograd, as eagerly
        entries.append(("array", value.dtype, value.dim()))
    for i, value in enumerate(scalars):
        if not isinstance(value, (bool, int, float)):
            raise ArgumentTypeError("scalars", f"scalar {i}: a traced torch call takes Python bool, int (int32) and "
                                               f"float (float32) scalars, got {type(value).__name__}")
        entries.append(_scalar_entry(value, ints, floats))
    kernel, record = _texts(name, compiled_source, len(scalars), bool(ensure_row_contiguous), shared_memory,
                            tuple(entries), tuple(_constant(d) for d in dtypes), tuple(len(s) for s in shapes),
                            init_value)
    if outputs is None:
        return list(run_op(torch.ops.jitkernel.launch, kernel, record, arrays, ints, floats))
    run_op(torch.ops.jitkernel.launch_into, kernel, record, arrays, ints, floats, list(outputs))
    return list(outputs)


def _jax(name, compiled_source, inputs, output_shapes, output_dtypes, scalars, grid, threadgroup, shared_memory,
         init_value, ensure_row_contiguous, stream, outputs):
    """The call as the XLA custom call of every kernel (``jax_call``); scalars are fixed when traced."""
    if stream is not None:
        raise ArgumentTypeError("stream", "a call traced by JAX runs on XLA's stream; omit stream=")
    for i, value in enumerate(inputs):
        if jax_call._is_scalar(value):
            raise _not_array(i, value, "JAX")
    for i, value in enumerate(scalars):
        if not jax_call._is_scalar(value):
            raise ArgumentTypeError("scalars", f"scalar {i}: scalars are fixed when JAX traces the call: pass a "
                                               f"Python or NumPy scalar, or the value as an input array, got "
                                               f"{type(value).__name__}")
    entry = RecordedEntry(name, compiled_source, len(scalars), bool(ensure_row_contiguous), shared_memory,
                          entry_text(name, compiled_source, len(scalars), bool(ensure_row_contiguous),
                                     shared_memory))
    in_names, out_names = _names(len(inputs), len(scalars), len(output_dtypes or outputs or ()))
    traced = TracedCall(in_names, out_names, inputs + scalars, output_shapes, output_dtypes, tuple(grid),
                        tuple(threadgroup), None, init_value, list(outputs) if outputs is not None else None, False,
                        False)
    return jax_call.call(entry, traced)
