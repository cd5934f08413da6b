"""The serialised call (cpp/jitkernel/engine/call_record.hpp): one codec for the torch op's strings, XLA's jk_call
attribute and JITKERNEL_RECORD lines. Round trips are exact, a record written by one front replays in another
(``precompile --record``), the version is checked by name, and the decoder is strict and linear on hostile text."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel import _core
from jitkernel._frameworks import graph_records

SOURCE = "auto i = threadIdx.x; if (i < a_shape[0]) b[i] = a[i] * s[0];"
KERNEL = jk.cuda_kernel(name="scaled", input_names=["a", "s"], output_names=["b"], source=SOURCE,
                        compile_options={"math_mode": "fast", "defines": {"K": 3}})

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
dtypes = st.sampled_from([jk.float32, jk.float16, jk.bfloat16, jk.int32, jk.int64, jk.uint8, jk.bool_])
extents = st.one_of(st.none(), st.integers(0, 2**40))
shapes = st.one_of(st.none(), st.lists(extents, max_size=4).map(tuple))


@st.composite
def calls(draw):
    n_in, n_out = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    inputs = []
    for _ in range(n_in):
        kind = draw(st.sampled_from(["array", "scalar", "unfixed"]))
        if kind == "array":
            inputs.append(("array", draw(st.one_of(st.none(), dtypes)), draw(shapes)))
        elif kind == "scalar":
            inputs.append(("scalar", draw(st.one_of(st.booleans(), st.integers(-2**31, 2**31 - 1),
                                                    st.floats(width=32)))))
        else:
            inputs.append(("scalar", draw(dtypes), None))
    outputs = [(draw(dtypes), draw(shapes)) for _ in range(n_out)]
    template = draw(st.lists(st.tuples(names, st.one_of(st.integers(-2**63, 2**63 - 1), st.booleans(), dtypes)),
                             max_size=3))
    dims = st.one_of(st.none(), st.tuples(extents, extents, extents))
    return ([f"i{k}" for k in range(n_in)], [f"o{k}" for k in range(n_out)], inputs, outputs, template,
            draw(dims), draw(dims), draw(st.one_of(st.none(), st.floats(allow_nan=False))), draw(st.booleans()),
            draw(st.booleans()), draw(st.integers(0, 3)), True)


@settings(max_examples=200, deadline=None)
@given(calls(), names, st.text(max_size=40))
def test_every_call_round_trips_exactly(args, name, source):
    kernel = _core.encode_kernel(name, None, None, source, "", False, 7, {"std": "c++20"}, "m.backward")
    call = _core.encode_call(*args)
    record = _core.encode_record(kernel, call)
    decoded_kernel, decoded_call = _core.decode_record(record, "record")
    assert decoded_kernel == _core.decode_kernel(kernel, "kernel") and decoded_call == _core.decode_call(call, "c")
    assert decoded_kernel["name"] == name and decoded_kernel["source"] == source
    assert decoded_kernel["input_names"] is None and decoded_kernel["backward"] == "m.backward"
    assert decoded_kernel["compile_options"] == {"std": "c++20"}
    assert decoded_call["grid"] == (None if args[5] is None else tuple(args[5]))
    assert [o[1] for o in decoded_call["outputs"]] == [None if s is None else tuple(s) for _, s in args[3]]
    # Encoding what was decoded gives the same text: the one canonical form.
    again = _core.encode_call(list(decoded_call["input_names"]), list(decoded_call["output_names"]),
                              [e if e[0] == "array" or e[2] is None else ("scalar", _value(e)) for e in
                               decoded_call["inputs"]], list(decoded_call["outputs"]), list(decoded_call["template"]),
                              decoded_call["grid"], decoded_call["threadgroup"], decoded_call["init_value"],
                              decoded_call["verbose"], decoded_call["dict_form"], decoded_call["extra_operands"], True)
    assert again == call


def _value(entry):
    """A decoded scalar as the NumPy scalar of its exact dtype (what an eager call passes as that dtype)."""
    return graph_records.scalar_value(entry[1], entry[2]) if entry[1] != jk.bool_ else entry[2] != b"\0"


def _record_file(tmp_path, *texts):
    path = tmp_path / "calls.jsonl"
    path.write_text("".join(t + "\n" for t in texts))
    return str(path)


def test_a_torch_op_call_replays_in_precompile(tmp_path):
    call = graph_records.call_record(["a", "s"], ["b"], [("array", "float32", 1), ("scalar", "float", None)],
                                     ["float32"], [1], [], None, False, False)
    report = jk.precompile(_record_file(tmp_path, _core.encode_record(KERNEL._spec, call)), ["sm_80"])
    assert report.kernels == 1


def test_an_xla_attribute_replays_in_precompile(tmp_path):
    jax = pytest.importorskip("jax")

    def f(x):
        return KERNEL(inputs=[x, 2.0], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
                      threadgroup=(32, 1, 1))[0]

    hlo = jax.jit(f).trace(jax.numpy.ones(64)).lower(lowering_platforms=("cuda",)).as_text()
    text = hlo.split('jk_call = "', 1)[1].split('"', 1)[0].replace('\\22', '"').replace('\\5C', '\\')
    kernel, _ = _core.decode_record(text, "jk_call")
    assert kernel["compile_options"] == {"math_mode": "fast", "defines": {"K": "3"}}  # JAX carries them now
    assert jk.precompile(_record_file(tmp_path, text), ["sm_80"]).kernels == 1


def test_a_record_line_and_an_xla_attribute_are_one_format():
    line = _core._call_record_line(KERNEL._impl, [np.zeros(4, np.float32), np.float32(2)], [jk.float32], None)
    kernel, call = _core.decode_record(line, "record")
    assert kernel["name"] == "scaled" and call["inputs"] == (("array", jk.float32, (None,)), ("scalar", jk.float32,
                                                                                              None))
    assert call["grid"] is None and call["outputs"] == ((jk.float32, None),)  # a signature: no geometry, no sizes


@pytest.mark.parametrize("field, text", [
    ("jitkernel_kernel", '{"name":"k","source":"","input_names":null}'),  # a jitkernel before format 2
    ("jitkernel_call", '{"input_names":[],"output_names":[],"inputs":[],"output_dtypes":[]}'),
])
def test_text_of_an_older_format_names_the_version(field, text):
    decode = _core.decode_kernel if field == "jitkernel_kernel" else _core.decode_call
    with pytest.raises(jk.ArgumentError, match=f"{field}: missing .*before format 2"):
        decode(text, "kernel")
    newer = json.dumps({field: 3}, separators=(",", ":"))
    with pytest.raises(jk.ArgumentError, match="format 3 is not the one this jitkernel reads \\(2\\)"):
        decode(newer, "kernel")


def test_hostile_text_is_refused_in_linear_time():
    many_keys = "{" + ",".join(f'"k{i}":0' for i in range(200_000)) + "}"
    long_string = '{"jitkernel_call":2,"input_names":["' + "x" * 20_000_000 + '"]}'
    for text, message in ((many_keys, "jitkernel_call: missing"), ("[" * 1_000_000, "nested deeper than 32"),
                          (long_string, 'missing field "output_names"'), ('"\\ud800"', "a lone surrogate")):
        start = time.process_time()  # CPU time: what the work costs, however loaded the machine is
        with pytest.raises(jk.ArgumentError, match=message):
            _core.decode_call(text, "call")
        assert time.process_time() - start < 5, message  # quadratic work would take minutes here


def test_errors_name_the_argument_the_text_came_in():
    with pytest.raises(jk.ArgumentError) as info:
        _core.decode_record("{}", "jk_call")
    assert info.value.argument == "jk_call" and "jitkernel_record: missing" in str(info.value)
    with pytest.raises(jk.ArgumentTypeError, match="^kernel: expected a serialised jitkernel call"):
        _core.decode_kernel(3, "kernel")
