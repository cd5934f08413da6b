"""The guards TorchDynamo installs for a compiled kernel call, checked without a GPU (the backend never runs the op).

Every call of a compiled function first evaluates its guards; the ones a kernel call adds come from what Dynamo read
while tracing jitkernel's Python front (traced_call.dynamo_call, call_form.resolve, torch_ops.call, route). These
tests hold that set small and cheap: no guard written in Python (Dynamo adds one when a module is reached through
two paths), none comparing strings (the kernel's text, the keyword table), and a bound on the count. They also
check that the cheap identity guard still recompiles what must be: another kernel at the same global, a kernel that
gains a backward after it was compiled.
"""
import pytest

import jitkernel as jk
from jitkernel import _core
from jitkernel._frameworks import sharding, traced_call

torch = pytest.importorskip("torch")
from torch._dynamo.eval_frame import _debug_get_cache_entry_list  # noqa: E402

SOURCE = "auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < inp_shape[0]) out[i] = exp(inp[i]);"
EXP = jk.cuda_kernel(name="guards_exp", input_names=["inp"], output_names=["out"], source=SOURCE)
SLOT = EXP  # a global the tests rebind


def _exp(x, kernel=None, **extra):
    return (kernel or EXP)(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
                           threadgroup=(256, 1, 1), **extra)[0]


def _example(x):
    """The call issue 27 measured (no defaults or extra keywords of a test helper to guard)."""
    return EXP(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
               threadgroup=(256, 1, 1))[0]


def _plain(x):
    return torch.empty_like(x)


def _dict_form(x):
    return EXP(inputs={"inp": x}, output_shapes={"out": x.shape}, output_dtypes={"out": x.dtype},
               grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1))["out"]


def _outputs_given(x, y):
    EXP(inputs=[x], outputs=[y], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1))
    return y


def _from_slot(x):
    return SLOT(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
                threadgroup=(256, 1, 1))[0]


class _Counting:
    """A backend that keeps each graph and returns empty tensors of the outputs' shapes (no GPU needed)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        outs = gm.graph.find_nodes(op="output")[0].args[0]

        def run(*args):
            return tuple(torch.empty(o.meta["val"].shape) if hasattr(o, "meta") and "val" in o.meta else None
                         for o in outs)

        return run

    def kernel_text(self, i=-1):
        """The kernel argument of the launch in graph ``i``."""
        (node,) = [n for n in self.graphs[i].graph.nodes if n.op == "call_function" and "jitkernel" in str(n.target)]
        return node.args[0]

    def launches(self, i=-1):
        return [str(n.target).removesuffix(".default") for n in self.graphs[i].graph.nodes
                if n.op == "call_function" and "jitkernel" in str(n.target)]


def _guards(fn):
    """(leaf guard type names, their code, epilogue guards' code) of the newest compiled entry of ``fn``. Epilogue
    guards run as Python: Dynamo's symbolic-shape guards, and the aliasing guards these tests forbid."""
    root = _debug_get_cache_entry_list(fn)[0].guard_manager.root
    names, code = [], []

    def visit(manager):
        for guard in manager.get_leaf_guards():
            names.append(type(guard).__name__)
            code.extend(part.split("  #")[0] for part in guard.verbose_code_parts())  # without the source line
        for child in manager.get_child_managers():
            visit(child)

    visit(root)
    return names, code, [part.split("  #")[0] for g in root.get_epilogue_lambda_guards()
                         for part in g.verbose_code_parts()]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compile(fn, *args, fullgraph=True, **options):
    backend = _Counting()
    compiled = torch.compile(fn, backend=backend, fullgraph=fullgraph, **options)
    compiled(*args)
    return compiled, backend


# What the example call adds over a function without a kernel: 34 guards with torch 2.13 (the kernel: its type, its
# identity, `_vjp is None`, its type's __call__; the modules jitkernel's traced functions live in and the functions
# they call; torch.Tensor and the op; the builtins they use). Before, it added 75 plus a Python guard function; the
# bound leaves room for a torch version that guards a little more, not for a global tuple or a second module path.
EXTRA_GUARDS_BOUND = 38
# The kernel's text and names are constants of the kernel object only where TorchDynamo takes a constant result of a
# non-constant argument (torch 2.13 on: call_form._mark_kernel_constants); before, they are guarded by value.
KERNEL_IS_CONSTANT = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)


def test_kernel_call_adds_few_guards_and_no_python_guard():
    x = torch.randn(8)
    _compile(_example, x)
    _compile(_plain, x)
    kernel_guards, _, kernel_epilogue = _guards(_example)
    plain_guards, _, _ = _guards(_plain)
    assert kernel_epilogue == [], "a Python guard (a module reached through two paths?)"
    assert kernel_guards.count("LAMBDA_GUARD") == plain_guards.count("LAMBDA_GUARD")
    if KERNEL_IS_CONSTANT:
        # No string comparisons: not the kernel's text, its names, nor the keyword table.
        assert "EQUALS_MATCH" not in kernel_guards and "LENGTH_CHECK" not in kernel_guards, kernel_guards
        assert len(kernel_guards) - len(plain_guards) <= EXTRA_GUARDS_BOUND, sorted(kernel_guards)


def _with_backward():
    kernel = jk.cuda_kernel(name="guards_vjp", input_names=["inp"], output_names=["out"], source=SOURCE)
    kernel.vjp(lambda primals, outputs, cotangents: [cotangents[0]])
    return kernel


@pytest.mark.parametrize("form", ["dict", "outputs", "backward", "dynamic", "template"])
def test_no_python_guard_in_any_call_form(form):
    x = torch.randn(8, requires_grad=form == "backward")
    if form == "dict":
        fn, args, options = _dict_form, (x,), {}
    elif form == "outputs":
        fn, args, options = _outputs_given, (x, torch.empty(8)), {}
    elif form == "backward":
        kernel = _with_backward()
        fn, args, options = (lambda t: _exp(t, kernel)), (x,), {}
    elif form == "dynamic":
        fn, args, options = _exp, (x,), {"dynamic": True}
    else:
        fn, args, options = (lambda t: _exp(t, template=[("T", jk.float32)])), (x,), {}
    _, backend = _compile(fn, *args, **options)
    _, code, epilogue = _guards(fn)
    assert not [part for part in epilogue if " is G[" in part], epilogue  # two paths to one object
    assert not [part for part in code if "_KEYWORDS" in part], code
    if KERNEL_IS_CONSTANT:
        assert not [part for part in code if "_spec" in part or "_names" in part], code
    assert len(backend.graphs) == 1
    if form == "backward":
        assert backend.launches() == ["jitkernel.launch_vjp"]


def test_a_kernel_gaining_a_backward_recompiles():
    kernel = jk.cuda_kernel(name="guards_later_vjp", input_names=["inp"], output_names=["out"], source=SOURCE)
    x = torch.randn(8, requires_grad=True)
    compiled, backend = _compile(lambda t: _exp(t, kernel), x)
    assert backend.launches() == ["jitkernel.launch"]
    kernel.vjp(lambda primals, outputs, cotangents: [cotangents[0]])
    compiled(x)
    assert len(backend.graphs) == 2, "a backward attached after compiling must reach the graph"
    assert backend.launches() == ["jitkernel.launch_vjp"]
    assert backend.kernel_text() == kernel._spec


def test_another_backward_recompiles():
    kernel = _with_backward()
    x = torch.randn(8, requires_grad=True)
    compiled, backend = _compile(lambda t: _exp(t, kernel), x)

    def other(primals, outputs, cotangents):
        return [cotangents[0] * 2]

    kernel.vjp(other)
    compiled(x)
    assert len(backend.graphs) == 2
    assert backend.kernel_text() == kernel._spec


def test_another_kernel_at_the_same_global_recompiles():
    global SLOT
    x = torch.randn(8)
    compiled, backend = _compile(_from_slot, x)
    first = backend.kernel_text()
    assert first == EXP._spec
    try:
        SLOT = jk.cuda_kernel(name="guards_other", input_names=["inp"], output_names=["out"],
                              source=SOURCE.replace("exp(", "log("))
        compiled(x)
        assert len(backend.graphs) == 2
        assert backend.kernel_text() == SLOT._spec
        SLOT = EXP
        compiled(x)
        assert len(backend.graphs) == 2, "the first kernel's graph is still valid for it"
    finally:
        SLOT = EXP


def test_the_kernel_text_cannot_be_changed_but_by_vjp():
    # The guard on a kernel is its identity: its text must not change under it, except through vjp (guarded by
    # `_vjp`). The names and source are fixed when the kernel is made (the C++ kernel holds its own copy).
    with pytest.raises(AttributeError):
        EXP.not_a_slot = 1
    assert set(type(EXP).__slots__) >= {"_spec", "_vjp"}


def test_keyword_table_written_in_dynamo_call_matches_the_call_slot():
    consts = traced_call.dynamo_call.__code__.co_consts
    assert _core._call_keywords in consts
    assert set(_core._call_required) == {"inputs", "grid", "threadgroup"}
    assert all(name in consts for name in _core._call_required)
    defaults = dict(zip(_core._call_keywords, _core._call_defaults))
    assert defaults == {**dict.fromkeys(_core._call_keywords), "verbose": False}


class _FakeDTensor(torch.Tensor):
    """Stands in for DTensor (a real one needs a process group: tests/cpu/test_sharding.py)."""

    placements = ("Shard(0)",)


def test_a_dtensor_is_refused_and_a_plain_subclass_passes(monkeypatch):
    monkeypatch.setattr(sharding, "dtensor_class", _FakeDTensor)
    x = torch.randn(8)
    with pytest.raises(jk.ArgumentTypeError, match="input 'inp' of kernel 'guards_exp' is a DTensor"):
        _compile(_exp, x.as_subclass(_FakeDTensor), fullgraph=False)  # Dynamo cannot build the error: eager raises
    torch._dynamo.reset()
    _, backend = _compile(_exp, torch.nn.Parameter(x, requires_grad=False))
    assert backend.launches() == ["jitkernel.launch"]


def test_functions_added_to_the_traced_path_never_read_sys_modules():
    # As tests/cpu/test_torch_ops.py checks for the others: walking sys.modules while Dynamo traces fails whenever
    # an import changes it meanwhile.
    from jitkernel._frameworks import call_form, torch_ops

    for fn in (call_form.resolve, call_form.kernel_constants, sharding.dtensor_class_now, torch_ops.run_op):
        assert "sys" not in fn.__code__.co_names and "modules" not in fn.__code__.co_names, fn.__qualname__
