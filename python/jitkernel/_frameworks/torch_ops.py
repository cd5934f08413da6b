"""jitkernel kernels as torch.library ops, so that torch.compile, CUDA graphs, torch.export and autograd see them.

Three ops, registered when torch is imported (``register``, through ``post_import``; nothing happens before):

    jitkernel::launch(str kernel, str call, Tensor[] arrays, SymInt[] ints, float[] floats) -> Tensor[]
    jitkernel::launch_vjp(...same...) -> Tensor[]          (with the kernel's backward as autograd formula)
    jitkernel::launch_into(str kernel, str call, Tensor[] arrays, SymInt[] ints, float[] floats,
                           Tensor(a!)[] outputs) -> ()

``kernel`` and ``call`` are the kernel's text (``kernel_text`` / ``kernel_for`` of _kernels/cuda_kernel.py) and the
call's (``graph_records``); ``arrays`` the tensor inputs in order; ``ints`` grid, threadgroup, the output shapes and
symbolic int scalars (``CallRecord``); ``floats`` symbolic float scalars. ``launch`` allocates its outputs with
torch (so a CUDA graph capture takes them from torch's graph pool); ``launch_into`` writes caller-given outputs,
declared mutated. Their fake implementations make outputs of the recorded shapes and dtypes, which is all torch's
compiler needs; the real ones call the kernel eagerly.

``call`` is what a traced kernel call runs: TorchDynamo traces it (so it is plain Python), and eager calls reach it
for autograd. A backward attached with ``kernel.vjp`` is the op's autograd formula (``torch_autograd``, for
torch.autograd and torch.func); ``torch.func.vmap`` runs the ops once per batch element (``torch_vmap``).
"""
from __future__ import annotations

import atexit
import os
import sys
import warnings
from functools import lru_cache

from .. import _core
from .._dtypes import DType
from .. import _errors
from .._errors import ArgumentError, ArgumentTypeError, JitKernelError
from .._kernels.cuda_kernel import kernel_for
from .._kernels.precompiled import entry_for, is_entry_text
from . import graph_records, post_import, torch_inductor, torch_autograd, torch_vmap
from .call_form import resolve
from .sharding import dtensor_class_now
from .torch_autograd import route

# name -> schema, from the C++ core (cpp/jitkernel/torch_op/torch_library.hpp), which a program without Python
# defines the ops with: one definition for both.
_SCHEMAS = dict(_core._torch_op_schemas())
_library = None  # the torch.library.Library holding the ops (kept alive: dropping it unregisters them)
_record = graph_records.call_record  # marked as a constant result for TorchDynamo by register()


_torch_module = None  # torch, once register() ran (a module global: TorchDynamo must not walk sys.modules)


def compiling() -> bool:
    """True while TorchDynamo traces (it folds this to a constant)."""
    return _torch_module is not None and _torch_module.compiler.is_compiling()


def register(torch) -> None:
    """Defines the ops and their fake, real and autograd implementations (once)."""
    global _library, _torch_module
    if _library is not None:
        return
    _torch_module = torch
    lib = torch.library.Library("jitkernel", "FRAGMENT")
    for name, schema in _SCHEMAS.items():
        lib.define(name + schema)
    for name, real, fake in (("launch", _launch, _launch_fake), ("launch_vjp", _launch, _launch_fake),
                             ("launch_into", _launch_into, _launch_into_fake)):
        lib.impl(name, real, "CompositeExplicitAutograd")
        torch.library.register_fake("jitkernel::" + name, fake, lib=lib)
    # Only launch_vjp has an autograd formula: an autograd wrapper costs microseconds on every call, even without
    # grad, so kernels without a backward take launch with detached inputs (outputs outside autograd, as eagerly).
    torch.library.register_autograd("jitkernel::launch_vjp", torch_autograd.backward,
                                    setup_context=torch_autograd.setup_context, lib=lib)
    # ...and the others skip the autograd key outright: torch's fallback for ops without a formula walks every
    # argument on each call only to find that no gradient flows.
    for name in ("launch", "launch_into"):
        lib.impl(name, torch.library.fallthrough_kernel, "Autograd")
    torch_autograd.register(torch, _plan)  # the same formula for torch.func, which the op's cannot serve
    torch_vmap.register(torch, lib, _launch_fake)  # torch.func.vmap: once per batch element
    _register_cuda_kernels(torch)
    torch_inductor.register()  # compiled graphs launch directly, without the dispatcher
    # TorchDynamo is imported before anything is traced: marking the record then spares programs that never
    # compile the seconds of importing it.
    post_import.when_imported("torch._dynamo", _mark_record_constant)
    _library = lib
    atexit.register(_release_kernels)


def _register_cuda_kernels(torch) -> None:
    """Puts the ops' C++ implementation (cpp/jitkernel/torch_op/) under torch's CUDA dispatch key, so that a CUDA
    call (a compiled graph's above all) goes from the dispatcher straight into the engine; the Python
    implementations above stay for the other keys. It needs torch's stable C ABI with lists and strings (torch
    2.10 on) built with CUDA; without one the Python implementation runs CUDA calls too, and a warning says why."""
    if torch.version.cuda is None:
        return  # no CUDA tensors in this torch: nothing would reach the kernel
    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    try:
        _core._register_torch_op_kernels([os.path.join(lib_dir, "libtorch_cpu.so"),
                                          os.path.join(lib_dir, "libtorch_cuda.so")])
    except JitKernelError as e:
        warnings.warn(f"jitkernel: torch ops run through their Python implementation ({e})", RuntimeWarning,
                      stacklevel=2)


def run_op(op, *args):
    """Calls one of the ops from Python (an eager traced call, autograd, vmap): an error of the ops' C++
    implementation, which torch raises as RuntimeError("jitkernel.<class>: ..."), comes out as that jitkernel
    class. (A compiled graph calls the op from generated code: there the RuntimeError is what surfaces.)"""
    if compiling():
        return op(*args)
    try:
        return op(*args)
    except RuntimeError as e:
        typed = _errors.from_op_message(str(e))
        if typed is None:
            raise
        raise typed from None


def _mark_record_constant(_dynamo) -> None:
    """Tells TorchDynamo that the call record is a constant of its arguments (folded at trace time)."""
    global _record
    _record = _torch_module.compiler.assume_constant_result(graph_records.call_record)


def _release_kernels() -> None:
    """At exit: drops what holds kernel objects past the extension's teardown (the plans here, and TorchDynamo's
    caches, whose guards keep the compiled functions' globals), so that the process exits without leaks."""
    _plan.cache_clear()
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None:
        try:
            dynamo.reset()
        except Exception:  # noqa: BLE001 - at exit, a reset that needs new imports may fail: the report is quieted
            pass
        # Even so, a compiled function's frame state keeps its module's globals (the user's kernels) past the
        # extension's teardown, which nanobind would report as leaks of ours: quiet them for this exit only.
        _core._quiet_leak_warnings()


# ---------------------------------------------------------------------------
# Recording a call (traced by TorchDynamo: plain Python only).

def _constant(value):
    """A template or dtype value as a Python constant TorchDynamo can hand to the record."""
    return value.name if isinstance(value, DType) else value


def _scalar_entry(value, ints: list, floats: list):
    """An int or float scalar input goes into ``ints`` / ``floats`` (TorchDynamo shows a symbolic int as a plain
    int, so every one is passed as a value): at run time it gets the type an eager call gives it."""
    if isinstance(value, bool):
        return ("scalar", "bool", value)
    if isinstance(value, int):
        ints.append(value)
        return ("scalar", "int", None)
    if isinstance(value, float):
        floats.append(value)
        return ("scalar", "float", None)
    raise ArgumentTypeError("inputs", f"a traced torch call takes torch tensors and Python int, float and bool "
                                      f"scalars as inputs, got {type(value).__name__}")


def call(kernel, *, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream, outputs,
         verbose):
    """The kernel call as ``jitkernel::launch`` (or ``launch_into`` with ``outputs=``); returns what an eager call
    returns (a list, or a dict in the dict form). TorchDynamo guards each global read here on every call of the
    compiled function: torch is reached as ``_torch_module`` (which ``compiling`` guards already), the kernel's text
    through ``resolve`` (an identity guard on the kernel, not a comparison of its text), and other modules only
    through functions imported from them (``route``, ``dtensor_class_now``): a module reached both as an attribute
    here and as the globals of its own traced functions is guarded, in Python, to be one object."""
    if stream is not None:
        raise ArgumentTypeError("stream", "a traced torch call runs on torch's current stream; omit stream= and "
                                          "use `with torch.cuda.stream(s):` instead")
    in_names, out_names, spec, inputs, shapes, dtypes, outputs, dict_form = resolve(kernel, inputs, output_shapes,
                                                                                  output_dtypes, outputs)
    if shapes is None:
        shapes = [tuple(o.shape) for o in outputs or ()]
    if dtypes is None:
        dtypes = [o.dtype for o in outputs or ()]
    ints = list(grid) + list(threadgroup)
    for shape in shapes:
        ints.extend(shape)
    _refuse_dtensors(kernel, in_names, inputs, out_names, outputs)
    torch = _torch_module
    arrays, floats, entries = [], [], []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            arrays.append(value)
            entries.append(("array", value.dtype, value.dim()))  # static while tracing, as the source needs
        else:
            entries.append(_scalar_entry(value, ints, floats))
    template_values = tuple((name, _constant(v)) for name, v in template) if template else ()
    record = _record(in_names, out_names, tuple(entries), tuple(_constant(d) for d in dtypes),
                     tuple(len(s) for s in shapes), template_values, init_value, bool(verbose), dict_form)
    way = route(torch, kernel, arrays, compiling(), outputs is not None)
    if way == "none":
        arrays = [a.detach() for a in arrays]
    if outputs is None:
        if way == "function":
            results = run_op(torch_autograd.apply, spec, record, arrays, ints, floats)
        else:
            launch = torch.ops.jitkernel.launch_vjp if way == "op" else torch.ops.jitkernel.launch
            results = run_op(launch, spec, record, arrays, ints, floats)
    else:
        if way != "none":
            raise ArgumentError("outputs", "a kernel with a backward cannot write outputs= while autograd records "
                                           "it; omit outputs= (or run under torch.no_grad())")
        run_op(torch.ops.jitkernel.launch_into, spec, record, arrays, ints, floats, outputs)
        results = outputs
    return dict(zip(out_names, results)) if dict_form else list(results)


def _refuse_dtensors(kernel, input_names, inputs, output_names, outputs) -> None:
    """A DTensor reaching a kernel has no rule saying which pieces of it the kernel may run on: refused, naming
    the input and the way to declare one (``jk.sharded``)."""
    dtensor = dtensor_class_now()  # not sys.modules: TorchDynamo traces this
    if dtensor is None:
        return
    for names, values, what in ((input_names, inputs, "inputs"), (output_names, outputs or (), "outputs")):
        for name, value in zip(names, values):
            if isinstance(value, dtensor):
                raise ArgumentTypeError(what, f"{what[:-1]} {name!r} of kernel {kernel.name!r} is a DTensor "
                                              f"(placements {tuple(value.placements)}); a kernel runs on local "
                                              f"tensors only. Declare how the function calling it is split with "
                                              f"@jk.sharded('elementwise' | 'rowwise' | 'i j, j -> i j') (it then "
                                              f"runs on the local shards), or pass {name}.to_local() / "
                                              f"{name}.full_tensor() yourself")


# ---------------------------------------------------------------------------
# Running a recorded call.

class _Plan:
    """One (kernel, call) pair of strings, decoded once: the engine and how to rebuild the call's arguments. The
    op's ``ints`` are the call's unfixed extents (grid, threadgroup, output shapes, in order), then its unfixed
    non-float scalars; ``floats`` its unfixed float scalars."""

    def __init__(self, spec: str, record: str):
        kernel = entry_for(spec) if is_entry_text(spec) else kernel_for(spec)  # a precompiled entry point, or not
        self.kernel = kernel
        self.record = r = graph_records.decode(record)
        if r.grid is None or r.threadgroup is None or any(shape is None for _, shape in r.outputs):
            raise ArgumentError("call", "a call the torch op runs has a grid, a threadgroup and output ranks")
        self.engine = kernel._impl_for(r.input_names, r.output_names)
        self.sizes = list(r.grid) + list(r.threadgroup) + [d for _, shape in r.outputs for d in shape]
        self.n_slots = sum(v is None for v in self.sizes)
        self.all_slots = self.n_slots == len(self.sizes)
        unfixed = [e for e in r.inputs if e[0] == "scalar" and e[2] is None]
        floats = sum(_is_float(e[1]) for e in unfixed)
        self.counts = (sum(e[0] == "array" for e in r.inputs), self.n_slots + len(unfixed) - floats, floats)

    def check(self, arrays, ints, floats) -> None:
        """The op's lists hold what the record describes (a loaded program or a caller may pass any lists)."""
        for name, values, want in zip(("arrays", "ints", "floats"), (arrays, ints, floats), self.counts):
            if len(values) != want:
                raise ArgumentError("call", f"the call record describes {want} {name}, the op was given "
                                            f"{len(values)}")

    def inputs(self, arrays, ints, floats) -> list:
        it_arrays, it_ints, it_floats = iter(arrays), iter(ints[self.n_slots:]), iter(floats)
        out = []
        for entry in self.record.inputs:
            if entry[0] == "array":
                out.append(next(it_arrays))
            elif entry[2] is not None:
                out.append(entry[2])
            else:
                out.append(next(it_floats) if _is_float(entry[1]) else next(it_ints))
        return out

    def geometry(self, ints) -> list:
        """grid, threadgroup and output extents, the unfixed ones from ``ints``."""
        if self.all_slots:
            return ints[:self.n_slots]
        it = iter(ints)
        return [next(it) if v is None else v for v in self.sizes]

    def shapes(self, ints) -> list:
        sizes, shapes, at = self.geometry(ints), [], 6
        for _, shape in self.record.outputs:
            shapes.append(tuple(sizes[at:at + len(shape)]))
            at += len(shape)
        return shapes

    def run(self, arrays, ints, floats, outputs):
        """Runs the call eagerly; without ``outputs`` they come from torch's allocator through the call path."""
        r = self.record
        tensor = _torch().Tensor  # a subclass without __torch_dispatch__ arrives as itself: read its memory
        plain = [a if type(a) is tensor else a.as_subclass(tensor) for a in arrays]
        shapes, dtypes = (None, None) if outputs is not None else (self.shapes(ints), list(r.output_dtypes))
        sizes = self.geometry(ints)
        return self.engine._call(self.inputs(plain, ints, floats), shapes, dtypes, tuple(sizes[0:3]),
                                 tuple(sizes[3:6]), list(r.template) or None, r.init_value, None, outputs, r.verbose)


def _is_float(dtype) -> bool:
    return dtype.name.startswith(("float", "bfloat"))


def _torch():
    return sys.modules["torch"]


@lru_cache(maxsize=1024)
def _plan(spec: str, record: str) -> _Plan:
    return _Plan(spec, record)


def _device(torch, arrays):
    return arrays[0].device if arrays else torch.device("cuda", torch.cuda.current_device())


def _torch_dtype(torch, dtype):
    return getattr(torch, "bool" if dtype.name == "bool" else dtype.name)


def _empty_outputs(torch, plan, arrays, ints, factory):
    device = _device(torch, arrays)
    return [factory(shape, dtype=_torch_dtype(torch, d), device=device)
            for shape, d in zip(plan.shapes(ints), plan.record.output_dtypes)]


def _launch(kernel, call, arrays, ints, floats):
    plan = _plan(kernel, call)
    plan.check(arrays, ints, floats)
    if arrays:  # tensor inputs: the outputs are torch's, on their device and stream
        _cuda_only(arrays)
        return plan.run(arrays, ints, floats, None)
    torch = _torch()
    outputs = _empty_outputs(torch, plan, arrays, ints, torch.empty)
    plan.run(arrays, ints, floats, outputs)
    return outputs


def _launch_into(kernel, call, arrays, ints, floats, outputs):
    plan = _plan(kernel, call)
    plan.check(arrays, ints, floats)
    _cuda_only(arrays)
    plan.run(arrays, ints, floats, list(outputs))


def _cuda_only(arrays) -> None:
    """Eagerly a host tensor is copied in and comes back as a jk.Array; an op's outputs must be tensors on the
    inputs' device, so an op on a host tensor is refused."""
    for i, a in enumerate(arrays):
        if not a.is_cuda:
            raise ArgumentTypeError("inputs", f"array input {i}: a traced jitkernel call runs on CUDA tensors, got "
                                              f"a tensor on {a.device}")


def _launch_fake(kernel, call, arrays, ints, floats):
    torch = _torch()
    plan = _plan(kernel, call)
    plan.check(arrays, ints, floats)
    return _empty_outputs(torch, plan, arrays, ints, torch.empty)


def _launch_into_fake(kernel, call, arrays, ints, floats, outputs):
    return None
