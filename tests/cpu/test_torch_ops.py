"""jitkernel kernels as torch.library ops, checked without a GPU: registration when torch is imported (and not
before), the graphs torch.compile and torch.export record (one op, no graph break, symbolic sizes kept symbolic),
the fake implementations' shapes and dtypes, the records' round trip, and the errors of traced calls. Running the ops
needs a GPU: tests/gpu/test_torch_compile_gpu.py."""
import subprocess
import sys

import pytest

import jitkernel as jk
from jitkernel._frameworks import graph_records
from jitkernel._kernels import cuda_kernel as cuda_kernel_module

torch = pytest.importorskip("torch")

SOURCE = "auto i = blockIdx.x * blockDim.x + threadIdx.x; if (i < inp_shape[0]) out[i] = exp(inp[i]) * s[0];"


def _kernel(name="myexp"):
    return jk.cuda_kernel(name=name, input_names=["inp", "s"], output_names=["out"], source=SOURCE)


KERNEL = _kernel()


def _call(x, s=2.0, kernel=KERNEL):
    return kernel(inputs=[x, s], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.numel(), 1, 1),
                  threadgroup=(256, 1, 1))[0]


class _Graphs:
    """A torch.compile backend that keeps each graph and returns zeros (the op itself cannot run without a GPU)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)

        def run(*args):
            return tuple(torch.zeros(()) for _ in gm.graph.find_nodes(op="output")[0].args[0])

        return run


def _launch_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and "jitkernel" in str(n.target)]


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_import_jitkernel_imports_no_torch():
    proc = _run("import sys, jitkernel; assert 'torch' not in sys.modules, 'torch imported'")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("order", ["jitkernel first", "torch first"])
def test_ops_registered_whichever_is_imported_first(order):
    imports = "import jitkernel, torch" if order == "jitkernel first" else "import torch, jitkernel"
    proc = _run(imports + "; print(torch.ops.jitkernel.launch.default._schema);"
                          "print(torch.ops.jitkernel.launch_into.default._schema)")
    assert proc.returncode == 0, proc.stderr
    assert "jitkernel::launch(str kernel, str call, Tensor[] arrays, SymInt[] ints" in proc.stdout
    assert "Tensor(a!)[] outputs" in proc.stdout
    proc = _run(imports + "; print(torch.ops.jitkernel.launch_vjp.default._schema)")
    assert "jitkernel::launch_vjp(str kernel" in proc.stdout, proc.stderr


def test_registering_the_ops_does_not_import_dynamo():
    # TorchDynamo takes seconds to import: a program that never compiles must not pay for it, and one that does
    # gets the call record marked as a constant once Dynamo is imported.
    proc = _run("import sys, torch, jitkernel; from jitkernel._frameworks import torch_ops as o;"
                "assert 'torch._dynamo' not in sys.modules, 'dynamo imported';"
                "assert not getattr(o._record, '_dynamo_marked_constant', False);"
                "import torch._dynamo; assert o._record._dynamo_marked_constant")
    assert proc.returncode == 0, proc.stderr


def test_compile_fullgraph_records_one_op():
    graphs = _Graphs()
    f = torch.compile(lambda x: _call(x) * 2, backend=graphs, fullgraph=True)
    f(torch.randn(8))
    (gm,) = graphs.graphs
    (node,) = _launch_nodes(gm)
    assert node.target in (torch.ops.jitkernel.launch, torch.ops.jitkernel.launch.default)
    spec, record = node.args[0], node.args[1]
    assert cuda_kernel_module.kernel_for(spec) is KERNEL
    r = graph_records.decode(record)
    assert r.inputs == (("array", jk.float32, (None,)), ("scalar", jk.float32, None)) and node.args[4] == [2.0]
    assert r.outputs == ((jk.float32, (None,)),) and r.grid == (None,) * 3


def test_explain_counts_no_graph_break():
    explain = torch._dynamo.explain(lambda x: _call(x) + 1)
    with pytest.raises(jk.JitKernelError):  # the graph runs the op on a CPU tensor: no GPU here
        explain(torch.randn(4))
    torch._dynamo.reset()
    graphs = _Graphs()
    torch.compile(lambda x: _call(x) + 1, backend=graphs)(torch.randn(4))
    assert len(graphs.graphs) == 1


def test_dynamic_shapes_stay_symbolic():
    graphs = _Graphs()
    f = torch.compile(lambda x: _call(x), backend=graphs, fullgraph=True, dynamic=True)
    f(torch.randn(8))
    f(torch.randn(13))
    assert len(graphs.graphs) == 1  # one graph for both sizes: grid and shapes were not pinned
    (node,) = _launch_nodes(graphs.graphs[0])
    ints = node.args[3]
    assert any(isinstance(i, torch.fx.Node) for i in ints), ints


def test_symbolic_int_scalar_input_stays_symbolic():
    graphs = _Graphs()
    f = torch.compile(lambda x: _call(x, s=x.shape[0] + 1), backend=graphs, fullgraph=True, dynamic=True)
    f(torch.randn(8))
    f(torch.randn(9))
    assert len(graphs.graphs) == 1
    (node,) = _launch_nodes(graphs.graphs[0])
    assert graph_records.decode(node.args[1]).inputs[1] == ("scalar", jk.int32, None)
    assert isinstance(node.args[3][-1], torch.fx.Node)  # the scalar: last of ints, computed in the graph


def test_dict_form_and_template_inside_compile():
    kernel = jk.cuda_kernel(name="tmpl", source="out[0] = (T)inp[0] * N;")
    graphs = _Graphs()

    def f(x):
        return kernel(inputs={"inp": x}, output_shapes={"out": (1,)}, output_dtypes={"out": jk.float16},
                      grid=(1, 1, 1), threadgroup=(1, 1, 1), template=[("T", jk.float16), ("N", 3)])["out"]

    torch.compile(f, backend=graphs, fullgraph=True)(torch.randn(2))
    (node,) = _launch_nodes(graphs.graphs[0])
    r = graph_records.decode(node.args[1])
    assert r.dict_form and r.input_names == ("inp",) and r.output_names == ("out",)
    assert r.template == (("T", jk.float16), ("N", 3)) and r.output_dtypes == (jk.float16,)


def test_outputs_given_are_declared_mutated():
    graphs = _Graphs()

    def f(x, y):
        KERNEL(inputs=[x, 1.0], grid=(4, 1, 1), threadgroup=(4, 1, 1), outputs=[y])
        return y

    torch.compile(f, backend=graphs, fullgraph=True)(torch.randn(4), torch.empty(4))
    (node,) = _launch_nodes(graphs.graphs[0])
    assert node.target in (torch.ops.jitkernel.launch_into, torch.ops.jitkernel.launch_into.default)


def test_in_place_input_also_output_exports():
    class M(torch.nn.Module):
        def forward(self, x):
            KERNEL(inputs=[x, 1.0], grid=(4, 1, 1), threadgroup=(4, 1, 1), outputs=[x])
            return x

    ep = torch.export.export(M(), (torch.randn(4),))
    code = ep.graph_module.code
    assert "jitkernel.launch_into" in code


def test_fake_tensors_give_declared_shapes_and_dtypes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    two = jk.cuda_kernel(name="two", input_names=["a"], output_names=["b", "c"], source="b[0] = a[0]; c[0] = 1;")
    with FakeTensorMode():
        a = torch.empty(5, 3)
        b, c = two(inputs=[a], output_shapes=[(5, 3), (7,)], output_dtypes=[jk.float16, torch.int32],
                   grid=(1, 1, 1), threadgroup=(1, 1, 1))
    assert (b.shape, b.dtype) == ((5, 3), torch.float16)
    assert (c.shape, c.dtype) == ((7,), torch.int32)


def test_export_dynamic_and_reload_in_a_new_process(tmp_path):
    class M(torch.nn.Module):
        def forward(self, x):
            return _call(x)

    n = torch.export.Dim("n")
    ep = torch.export.export(M(), (torch.randn(8),), dynamic_shapes={"x": {0: n}})
    assert len([x for x in ep.graph.nodes if "jitkernel" in str(x.target)]) == 1
    path = tmp_path / "m.pt2"
    torch.export.save(ep, path)
    proc = _run(f"import jitkernel, torch; ep = torch.export.load({str(path)!r}); "
                f"print([str(n.target) for n in ep.graph.nodes if 'jitkernel' in str(n.target)])")
    assert proc.returncode == 0, proc.stderr
    assert "jitkernel.launch.default" in proc.stdout


def test_spec_rebuilds_the_kernel():
    spec = KERNEL._spec
    fields = __import__("json").loads(spec)
    assert fields["source"] == SOURCE and fields["input_names"] == ["inp", "s"]
    del cuda_kernel_module._by_text[spec]
    try:
        rebuilt = cuda_kernel_module.kernel_for(spec)
        assert rebuilt is not KERNEL and rebuilt.source_text == SOURCE and rebuilt.output_names == ("out",)
    finally:
        cuda_kernel_module._by_text[spec] = KERNEL


@pytest.mark.parametrize("text", ["", "{", "[]", '{"name": 1}', "null"])
def test_malformed_strings_are_typed_errors(text):
    with pytest.raises(jk.ArgumentError, match="^kernel: not a jitkernel kernel"):
        cuda_kernel_module.kernel_for(text)
    with pytest.raises(jk.ArgumentError, match="^call: not a jitkernel call"):
        graph_records.decode(text)


def _op_strings():
    """A kernel and a call as a traced call of KERNEL writes them, parsed (to be changed by a test)."""
    import json

    record = graph_records.call_record(["inp", "s"], ["out"], [("array", "float32", 1), ("scalar", "float", None)],
                                        ["float32"], [1], [("T", "float32"), ("N", 2)], None, False, False)
    return json.loads(KERNEL._spec), json.loads(record)


def _canonical(fields) -> str:
    """Fields dumped as the core writes them (json keeps their order), so only the changed field is wrong."""
    import json

    return json.dumps(fields, separators=(",", ":"))


def _deep(n=100000):
    return "[" * n + "]" * n


def _set_item(key, index, value):
    return lambda spec, rec: rec[key].__setitem__(index, value)


# (which string, its change, what the error says): strings as a loaded torch.export program or any caller of
# jitkernel::launch can pass them; each must be an ArgumentError naming the string and the field.
_BAD_OP_STRINGS = [
    ("kernel", lambda spec, rec: _deep(), "nested deeper than 32 levels"),
    ("call", lambda spec, rec: _deep(), "nested deeper than 32 levels"),
    ("kernel", lambda spec, rec: spec.update(name="\ud800"), "a lone surrogate"),
    ("kernel", lambda spec, rec: '{"name":"\ud800"}', "not valid Unicode"),
    ("kernel", lambda spec, rec: spec.update(name=["x"]), "name: expected a string, got a list"),
    ("kernel", lambda spec, rec: spec.update(shared_memory="0"), "shared_memory: expected an int, got a string"),
    ("kernel", lambda spec, rec: spec.update(input_names=[1]), "input_names[0]: expected a string, got an int"),
    ("kernel", lambda spec, rec: spec.__delitem__("source"), 'missing field "source"'),
    ("kernel", lambda spec, rec: spec.update(eval="os.system"), 'unknown field "eval"'),
    ("kernel", lambda spec, rec: spec.update(jitkernel_kernel=1), "format 1 is not the one this jitkernel reads"),
    ("kernel", lambda spec, rec: spec.__delitem__("jitkernel_kernel"), "jitkernel_kernel: missing"),
    ("kernel", lambda spec, rec: spec.update(backend="metal"), 'expected "cuda" or "precompiled"'),
    ("kernel", lambda spec, rec: spec.update(compile_options={"math_mode": "turbo"}),
     'compile_options.math_mode: expected "fast" or "safe"'),
    ("kernel", lambda spec, rec: spec.update(compile_options={"eval": 1}), 'unknown option "eval"'),
    ("kernel", lambda spec, rec: spec.update(compile_options={"math_mode": "safe"}), "not in the form jitkernel"),
    ("call", lambda spec, rec: rec.update(outputs=[["float32", ["1"]]]), "outputs[0].shape[0]: expected an int"),
    ("call", lambda spec, rec: rec.update(outputs=[["float32", [-1]]]), "outputs[0].shape[0]: -1 is outside"),
    ("call", lambda spec, rec: rec.update(outputs=[["float32", [None]]] * 2), "2 outputs for 1 output names"),
    ("call", lambda spec, rec: rec.update(outputs="x"), "outputs: expected a list, got a string"),
    ("call", lambda spec, rec: rec.update(input_names=["\udfff", "s"]), "a lone surrogate"),
    ("call", lambda spec, rec: rec.update(input_names="inp"), "input_names: expected a list"),
    ("call", lambda spec, rec: rec.update(outputs=[["float99", [None]]]), 'unknown dtype "float99"'),
    ("call", lambda spec, rec: rec.update(outputs=[[None, [None]]]), "outputs[0].dtype: expected a string, got null"),
    ("call", _set_item("inputs", 1, ["scalar", "float32", "2"]), "inputs[1].value: expected 16 hex digits"),
    ("call", _set_item("inputs", 0, ["array", 1]), "inputs[0]: expected"),
    ("call", _set_item("inputs", 0, "array"), "inputs[0]: expected a list"),
    ("call", _set_item("template", 0, ["T", "dtype", 3]), "template[0].value: expected a string, got an int"),
    ("call", _set_item("template", 1, ["N", "int", "2"]), "template[1].value: expected an int"),
    ("call", _set_item("template", 1, ["N"]), "template[1]: expected [name"),
    ("call", lambda spec, rec: rec.update(init_value=[0]), "init_value: expected a string, got a list"),
    ("call", lambda spec, rec: rec.update(verbose="yes"), "verbose: expected a bool"),
    ("call", lambda spec, rec: rec.__delitem__("dict_form"), 'missing field "dict_form"'),
    ("call", lambda spec, rec: _canonical(dict(sorted(rec.items()))), "not in the form jitkernel writes"),
    ("call", lambda spec, rec: '{"verbose":true,"verbose":false}', 'duplicate key "verbose"'),
]


@pytest.mark.parametrize("argument, change, field", _BAD_OP_STRINGS,
                         ids=[f"{a}-{f.split(':')[0]}-{i}" for i, (a, _, f) in enumerate(_BAD_OP_STRINGS)])
def test_malformed_op_strings_are_argument_errors_naming_the_field(argument, change, field):
    import json

    from jitkernel._frameworks import torch_ops

    spec, rec = _op_strings()
    replaced = change(spec, rec)
    strings = {"kernel": _canonical(spec), "call": _canonical(rec)}
    if isinstance(replaced, str):  # a whole string instead of a changed field
        strings[argument] = replaced
    strings = {k: v.replace("\\\\u", "\\u") for k, v in strings.items()}  # json.dumps escaped the escapes
    with pytest.raises(jk.ArgumentError) as info:
        torch_ops._plan(strings["kernel"], strings["call"])  # what jitkernel::launch does first
    assert info.value.argument == argument and field in str(info.value), str(info.value)
    assert isinstance(info.value, jk.JitKernelError)
    # And through the op itself, as a loaded program calls it (no GPU needed: the strings are read first);
    # torch's own schema check refuses a str that is not valid Unicode before the op runs.
    if not all(text.isascii() for text in strings.values()):
        return
    with pytest.raises(jk.ArgumentError, match=argument):
        torch.ops.jitkernel.launch(strings["kernel"], strings["call"], [], [1, 1, 1, 1, 1, 1, 4], [2.0])


@pytest.mark.parametrize("arrays, ints, floats, named", [
    (0, [1, 1, 1, 1, 1, 1, 4], [2.0], "1 arrays"),         # the record's array input missing
    (1, [1, 1, 1], [2.0], "7 ints"),                        # grid and threadgroup cut short, no output shape
    (1, [1, 1, 1, 1, 1, 1, 4, 9], [2.0], "7 ints"),         # one int too many
    (1, [1, 1, 1, 1, 1, 1, 4], [], "1 floats"),             # the float scalar missing
])
def test_op_lists_that_do_not_match_the_record_are_argument_errors(arrays, ints, floats, named):
    import json

    spec, rec = _op_strings()
    strings = _canonical(spec), _canonical(rec)
    tensors = [torch.zeros(2)] * arrays
    for op in (torch.ops.jitkernel.launch, torch.ops.jitkernel.launch_into):
        extra = [[torch.zeros(2)]] if op is torch.ops.jitkernel.launch_into else []
        with pytest.raises(jk.ArgumentError, match=f"^call: the call record describes {named}"):
            op(*strings, tensors, ints, floats, *extra)


def test_op_strings_written_by_a_traced_call_decode():
    spec, rec = _op_strings()
    r = graph_records.decode(_canonical(rec))
    assert r.outputs == ((jk.float32, (None,)),) and r.template == (("T", jk.float32), ("N", 2))
    assert cuda_kernel_module.kernel_for(_canonical(spec)) is KERNEL
    for value in (float("nan"), float("-inf"), 1.5, 1, True, None):  # what an eager init_value may be
        text = graph_records.call_record(["inp", "s"], ["out"], [("array", "float32", 1), ("scalar", "float", None)],
                                          ["float32"], [1], [], value, False, False)
        got = graph_records.decode(text).init_value
        assert got == value or (got != got and value != value)


def test_traced_call_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4)
        with pytest.raises(jk.ArgumentTypeError, match="stream"):
            KERNEL(inputs=[x, 1.0], output_shapes=[(4,)], output_dtypes=[x.dtype], grid=(4, 1, 1),
                   threadgroup=(4, 1, 1), stream=0)
        with pytest.raises(jk.ArgumentTypeError, match="scalars"):
            KERNEL(inputs=[x, "s"], output_shapes=[(4,)], output_dtypes=[x.dtype], grid=(4, 1, 1),
                   threadgroup=(4, 1, 1))
        with pytest.raises(jk.ArgumentError, match="do not match"):
            KERNEL(inputs={"inp": x}, output_shapes={"out": (4,)}, output_dtypes={"out": x.dtype},
                   grid=(4, 1, 1), threadgroup=(4, 1, 1))


def test_vjp_takes_a_function_and_changes_the_spec():
    kernel = _kernel("with_vjp")
    before = kernel._spec
    with pytest.raises(jk.ArgumentTypeError, match="backward"):
        kernel.vjp(3)

    @kernel.vjp
    def backward(primals, outputs, cotangents):
        return [cotangents[0], None]

    assert kernel._vjp is backward and kernel._has_vjp
    assert kernel._spec != before and cuda_kernel_module.kernel_for(kernel._spec) is kernel


def test_dynamo_sees_python_call_cpython_the_c_slot():
    from jitkernel._frameworks import traced_call

    assert type(KERNEL).__call__ is traced_call.dynamo_call
    assert type(KERNEL).__dict__["__call__"] is type(KERNEL).__call__
    # CPython still calls the C slot: its keyword errors come from C++ (the message names the type's __call__).
    with pytest.raises(jk.ArgumentTypeError, match=r"CudaKernel.__call__\(\) got an unexpected keyword"):
        KERNEL(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), bogus=1)


def test_user_subclass_calls_through_the_c_slot():
    class Mine(jk.CudaKernel):
        pass

    kernel = Mine("mine", ["a"], ["b"], "b[0] = a[0];", "", True, 0)
    assert type(kernel).__call__.__code__.co_name == "dynamo_call"  # inherited: CPython now runs the Python function
    with pytest.raises(jk.ArgumentTypeError, match="unexpected keyword argument 'bogus'"):
        kernel(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), bogus=1)
    with pytest.raises(jk.ArgumentTypeError, match="missing required keyword argument 'grid'"):
        kernel(inputs=[], threadgroup=(1, 1, 1))


def test_bad_keywords_inside_compile_raise_the_eager_error():
    f = torch.compile(lambda x: KERNEL(inputs=[x, 1.0], grid=(4, 1, 1), threadgroup=(4, 1, 1), bogus=1),
                      backend=_Graphs())
    with pytest.raises(jk.ArgumentTypeError, match="unexpected keyword argument 'bogus'"):
        f(torch.randn(4))


def test_kernel_from_an_older_jitkernel_is_refused_naming_the_format():
    import json

    fields = json.loads(KERNEL._spec)
    del fields["jitkernel_kernel"], fields["backend"], fields["backward"]  # as a jitkernel before format 2 wrote it
    with pytest.raises(jk.ArgumentError, match="jitkernel_kernel: missing .*before format 2"):
        cuda_kernel_module.kernel_for(json.dumps(fields, sort_keys=True))


def test_kernel_with_compile_options_round_trips():
    options = {"math_mode": "fast", "defines": {"N": 4, "FLAG": None}, "max_registers": 64}
    kernel = jk.cuda_kernel(name="opts", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                            compile_options=options)
    del cuda_kernel_module._by_text[kernel._spec]
    rebuilt = cuda_kernel_module.kernel_for(kernel._spec)
    assert rebuilt is not kernel and rebuilt._spec == kernel._spec
    assert rebuilt.compile_options == {"math_mode": "fast", "defines": {"FLAG": None, "N": "4"}, "max_registers": 64}


def test_what_torchdynamo_traces_never_reads_sys_modules():
    # TorchDynamo traces a compiled call through these functions; reading sys.modules there fails the trace with
    # "dictionary changed size during iteration" whenever an import changes it meanwhile (seen on 4x H200 in the
    # torch.compile tests). Framework classes are module globals set by the import hook instead.
    from jitkernel._frameworks import call_form, sharding, sharding_torch, torch_autograd, torch_ops, traced_call

    traced = [traced_call.dynamo_call, call_form.list_form, traced_call.reject_launch_options,
              torch_ops.call, torch_ops.compiling, torch_ops._scalar_entry, torch_ops._constant,
              torch_ops._refuse_dtensors, torch_autograd.route, torch_autograd._refuse_compiled_grad,
              sharding.Sharded.__call__, sharding_torch.call, sharding_torch._split, sharding_torch._place]
    for fn in traced:
        assert "sys" not in fn.__code__.co_names and "modules" not in fn.__code__.co_names, fn.__qualname__
