"""precompiled_cuda_kernel traced, without a GPU: the kernel text of backend "precompiled" (round trip, canonical
form, hostile texts refused with an ArgumentError naming the field), the torch op strings that make_fx and
torch.compile (fullgraph, static and dynamic shapes) put in the graph, the jk_call attribute of a jax.jit lowering
for CUDA, the errors each raises while tracing, and `precompile --record` passing over such a record. The kernel
runs on a GPU only: tests/gpu/test_precompiled_traced_gpu.py."""
from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core
from jitkernel._frameworks import torch_ops
from jitkernel._kernels.precompiled import RecordedEntry, entry_for

SOURCE = r"""
extern "C" __global__ void axpy(const float* x, float* y, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
"""
CAP = 32 << 20  # kMaxRecordedBinaryBytes


def compile_or_skip(target="cubin"):
    try:
        return jk.compile_cuda(SOURCE, arch="sm_90a", target=target)
    except jk.CudaNotAvailableError as e:
        pytest.skip(f"NVRTC not available: {e}")


@pytest.fixture(scope="module")
def cubin():
    return compile_or_skip()


@pytest.fixture(scope="module")
def text(cubin):
    return _core.encode_precompiled("axpy", cubin, 2, False, 0)


def fields(text):
    return json.loads(text)


def dump(d):
    return json.dumps(d, separators=(",", ":"))


# ---- the codec ------------------------------------------------------------------------------------------------

def test_kernel_text_round_trip_and_canonical(cubin, text):
    assert text.startswith('{"jitkernel_kernel":2,"backend":"precompiled","name":"axpy","format":"cubin","binary":"')
    d = fields(text)
    assert list(d) == ["jitkernel_kernel", "backend", "name", "format", "binary", "scalars",
                       "ensure_row_contiguous", "shared_memory"]
    assert base64.b64decode(d["binary"], validate=True) == cubin
    args = _core.decode_kernel(text, "kernel")
    assert args == {"backend": "precompiled", "name": "axpy", "compiled_source": cubin, "format": "cubin",
                    "scalars": 2, "ensure_row_contiguous": False, "shared_memory": 0}
    again = _core.encode_precompiled(args["name"], args["compiled_source"], args["scalars"],
                                     args["ensure_row_contiguous"], args["shared_memory"])
    assert again == text  # decode -> encode gives the same bytes


@pytest.mark.parametrize("length", range(0, 7))
def test_base64_lengths_round_trip(cubin, length):
    """Every padding case (binary length mod 3) reads back exactly; the binary is PTX text cut short is not a
    binary, so the codec is driven through a hand-made text of the right form."""
    raw = bytes(range(200, 200 + length)) if length else b""
    d = fields(_core.encode_precompiled("axpy", cubin, 0, True, 16))
    d["binary"] = base64.b64encode(raw).decode()
    t = dump(d)
    if not raw:
        with pytest.raises(jk.ArgumentError, match="binary: is empty"):
            _core.decode_kernel(t, "kernel")
        return
    assert _core.decode_kernel(t, "kernel")["compiled_source"] == raw


def test_formats_are_read_from_the_bytes(cubin):
    ptx = compile_or_skip("ptx")
    assert fields(_core.encode_precompiled("axpy", ptx, 0, False, 0))["format"] == "ptx"
    with pytest.raises(jk.ArgumentError) as e:
        _core.encode_precompiled("axpy", b"not a binary", 0, False, 0)
    assert e.value.argument == "compiled_source"


def _variant(text, **changes):
    d = fields(text)
    for k, v in changes.items():
        if v is KeyError:
            del d[k]
        else:
            d[k] = v
    return dump(d)


HOSTILE = {
    "bad character": (dict(binary="AAA*"), "binary: not base64: character 3"),
    "length": (dict(binary="AAAAA"), "binary: not base64: its length"),
    "whitespace": (dict(binary="AAAA AAA"), "binary: not base64"),
    "padding inside": (dict(binary="AA==AAAA"), "binary: not base64: character 2"),
    "unused bits": (dict(binary="AB=="), "binary: not base64: the bits after"),
    "binary type": (dict(binary=12), "binary: expected a string, got an int"),
    "scalars type": (dict(scalars="2"), "scalars: expected an int"),
    "scalars negative": (dict(scalars=-1), "scalars: -1 is outside"),
    "name empty": (dict(name=""), "name: is empty"),
    "name type": (dict(name=None), "name: expected a string"),
    "format": (dict(format="elf"), 'format: expected "ptx", "cubin" or "fatbin"'),
    "shared_memory": (dict(shared_memory=-4), "shared_memory: -4 is outside"),
    "ensure type": (dict(ensure_row_contiguous=1), "ensure_row_contiguous: expected a bool"),
    "missing": (dict(scalars=KeyError), 'missing field "scalars"'),
    "unknown": (dict(source="x"), 'unknown field "source"'),
    "backend": (dict(backend="precompiled2"), 'backend: expected "cuda" or "precompiled"'),
}


@pytest.mark.parametrize("why", sorted(HOSTILE))
def test_hostile_kernel_texts_are_refused_naming_the_field(text, why):
    changes, message = HOSTILE[why]
    with pytest.raises(jk.ArgumentError, match=re.escape(message)) as e:
        _core.decode_kernel(_variant(text, **changes), "kernel")
    assert e.value.argument == "kernel"


def test_non_canonical_texts_are_refused(text):
    d = fields(text)
    reordered = dict(reversed(list(d.items())))
    for t in (json.dumps(d), dump(reordered), text.replace('"scalars":2', '"scalars":2.0')):
        with pytest.raises(jk.ArgumentError):
            _core.decode_kernel(t, "kernel")


def test_oversize_binary_is_refused_before_decoding(text):
    huge = "A" * ((CAP // 3 + 2) * 4)
    with pytest.raises(jk.ArgumentError, match="binary: larger than 32 MiB"):
        _core.decode_kernel(_variant(text, binary=huge), "kernel")
    with pytest.raises(jk.ArgumentError) as e:
        _core.encode_precompiled("axpy", b"\0" * (CAP + 1), 0, False, 0)
    assert e.value.argument == "compiled_source"


def _call(inputs, template=(), verbose=False):
    names = [f"input{i}" for i in range(len(inputs))]
    return _core.encode_call(names, ["output0"], inputs, [("float32", (8,))], list(template), (8, 1, 1),
                             (128, 1, 1), None, verbose, False, 0, False)


GOOD_INPUTS = [("array", "float32", (8,)), ("scalar", 8), ("scalar", 2.0)]


def test_record_round_trip_and_kernel_call_checks(text):
    call = _call(GOOD_INPUTS)
    record = _core.encode_record(text, call)
    kernel, decoded = _core.decode_record(record, "record")
    assert kernel["backend"] == "precompiled"
    assert [e[1].name for e in decoded["inputs"]] == ["float32", "int32", "float32"]  # no widening
    _core.check_recorded(text, call)
    bad = {
        "a scalar where the precompiled kernel takes an array": [("scalar", 1.0)] + GOOD_INPUTS[1:],
        "an array where the precompiled kernel takes a scalar": GOOD_INPUTS[:2] + [("array", "float32", (1,))],
        "passes 2 scalars by value but the call has 1 inputs": GOOD_INPUTS[:1],
    }
    for message, inputs in bad.items():
        with pytest.raises(jk.ArgumentError, match=re.escape(message)):
            _core.decode_record(_core.encode_record(text, _call(inputs)), "record")
        with pytest.raises(jk.ArgumentError, match=re.escape(message)):
            _core.check_recorded(text, _call(inputs))
    with pytest.raises(jk.ArgumentError, match="template: a precompiled kernel takes no template"):
        _core.decode_record(_core.encode_record(text, _call(GOOD_INPUTS, [("N", 3)])), "record")
    with pytest.raises(jk.ArgumentError, match="verbose: a precompiled kernel has no generated source"):
        _core.decode_record(_core.encode_record(text, _call(GOOD_INPUTS, verbose=True)), "record")


def test_binary_checks_without_a_gpu(cubin, text):
    """The format the text claims is checked against the bytes, the entry name and parameter sizes too."""
    with pytest.raises(jk.ArgumentError, match="format: the binary is cubin, not ptx") as e:
        _core.check_recorded(_variant(text, format="ptx"), _call(GOOD_INPUTS))
    assert e.value.argument == "kernel"
    with pytest.raises(jk.ArgumentError, match="no entry point 'nope'"):
        _core.check_recorded(_variant(text, name="nope"), _call(GOOD_INPUTS))
    with pytest.raises(jk.ArgumentError, match="takes 4 parameters but the call passes 3"):
        one = _core.encode_precompiled("axpy", cubin, 1, False, 0)
        _core.check_recorded(one, _call(GOOD_INPUTS[:2]))


def test_torch_plan_of_a_precompiled_text(cubin, text):
    entry = entry_for(text)
    assert isinstance(entry, RecordedEntry) and entry.compiled_source == cubin and entry.scalars == 2
    assert entry_for(text) is entry
    call = _core.encode_call(["input0", "scalar0", "scalar1"], ["output0"],
                             [("array", "float32", (None,)), ("scalar", "int32", None), ("scalar", "float32", None)],
                             [("float32", (None,))], None, (None,) * 3, (None,) * 3, None, False, False, 0, False)
    plan = torch_ops._Plan(text, call)
    assert plan.engine is entry
    assert plan.counts == (1, 6 + 1 + 1, 1)  # 1 array; grid, threadgroup, 1 extent and n; a
    assert plan.inputs(["x"], [8, 1, 1, 128, 1, 1, 8, 8], [2.0]) == ["x", 8, 2.0]
    with pytest.raises(jk.ArgumentError) as e:
        entry_for(text.replace('"backend":"precompiled"', '"backend":"precompiled" '))
    assert e.value.argument == "kernel"


def test_precompile_record_skips_precompiled_kernels(tmp_path, text):
    record = tmp_path / "record.jsonl"
    record.write_text(_core.encode_record(text, _call(GOOD_INPUTS)) + "\n")
    report = jk.precompile(str(record), archs=["sm_90a"])
    assert report.kernels == 0 and report.binaries == 0
