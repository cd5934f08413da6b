"""The warm path of a tuned call in the core (cpp/bindings/services/tune_lookup.cpp): the key bucket's JSON agrees
with json.dumps wherever the core writes it, the decision key is the SHA-256 of its three lines, the head line is
read strictly (hostile payloads are None, never an exception), and the one-call lookup agrees with the steps it
replaces."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel import _core
from jitkernel._fleet import tune_decisions
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=8))
buckets = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.lists(inner, max_size=4).map(tuple)), max_leaves=20)


def plain(value) -> bool:
    """Whether the core is meant to write ``value`` (else it must give None)."""
    if value is None or isinstance(value, bool):
        return True
    if type(value) is int:
        return -2**63 <= value < 2**63
    if type(value) is str:
        return all(0x20 <= ord(c) <= 0x7e for c in value)
    if type(value) in (list, tuple):
        return all(plain(v) for v in value)
    return False


@settings(max_examples=400, deadline=None)
@given(buckets)
def test_bucket_json_is_json_dumps_or_none(value):
    text = _core._tune_bucket_json(value)
    if plain(value):
        assert text == json.dumps(value, separators=(",", ":"))
    else:
        assert text is None


@pytest.mark.parametrize("value", [[[(1000,), (4, 5), None], ["float32", "int64"], None], [[], [()]],
                                   [True, False, 'q"\\'], [2**63 - 1, -2**63]])
def test_common_buckets_are_written_by_the_core(value):
    assert _core._tune_bucket_json(value) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("value", [[1.5], ["é"], ["a\nb"], [{"a": 1}], [2**63], [object()]])
def test_other_buckets_are_left_to_json(value):
    assert _core._tune_bucket_json(value) is None


def test_a_deep_bucket_is_left_to_json():
    value: list = []
    for _ in range(40):
        value = [value]
    assert _core._tune_bucket_json(value) is None


class Duck:
    """An array by duck typing: a shape (any sequence) and a dtype."""
    shape = [3, 4]
    dtype = jk.float16


def test_describe_gives_shapes_and_dtypes():
    shapes, dtypes = _core._tune_describe([Duck(), 7, np.arange(5, dtype=np.int16), 2.5])
    assert shapes == ((3, 4), None, (5,), None) and isinstance(shapes[0], tuple)
    assert dtypes == (jk.float16, "int", jk.int16, "float")
    with pytest.raises(TypeError):
        _core._tune_describe(5)


def test_decision_key_is_the_sha256_of_three_lines():
    assert tune_decisions.decision_key("s", "i", "b") == hashlib.sha256(b"s\ni\nb").hexdigest()


DIGEST = "ab" * 32


def payload(head: bytes, body: bytes = b"{}") -> bytes:
    return tune_decisions.MAGIC + head + b"\n" + body


@pytest.mark.parametrize("data, expected", [
    (payload(b"2 " + DIGEST.encode()), 2),
    (payload(b"0 " + DIGEST.encode()), 0),
    (payload(b"3 " + DIGEST.encode()), None),  # the space has 3 configurations
    (payload(b"02 " + DIGEST.encode()), 2),
    (payload(b"12345 " + DIGEST.encode()), None),  # five digits
    (payload(b" " + DIGEST.encode()), None),
    (payload(b"-1 " + DIGEST.encode()), None),
    (payload(b"1 " + DIGEST.upper().encode()), None),
    (payload(b"1 " + DIGEST.encode() + b" "), None),
    (payload(b"1 " + DIGEST.encode() + b"x" * 20), None),  # the head line is longer than its bound
    (payload(b"1"), None),
    (b"jitkernel-tune 1\n1 " + DIGEST.encode() + b"\n{}", None),
    (tune_decisions.MAGIC + b"1 " + DIGEST.encode(), None),  # no end of line
    (b"", None),
    (payload(b"1 " + DIGEST.encode(), b"x" * tune_decisions.MAX_BYTES), None),  # over the size bound
])
def test_head_line_is_read_strictly(data, expected):
    assert tune_decisions.chosen_of(data, DIGEST, 3) == expected


def test_find_without_a_decision(tmp_path, monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path))
    _core._cache_reset()
    try:
        key, found, chosen, present = _core._tune_find("s", "i", "b", DIGEST, 3)
        assert key == tune_decisions.decision_key("s", "i", "b")
        assert (found, chosen, present) == (None, None, False)
        tune_decisions.store(key, payload(b"1 " + DIGEST.encode()))
        assert _core._tune_find("s", "i", "b", DIGEST, 3)[1:] == (payload(b"1 " + DIGEST.encode()), 1, True)
        assert _core._tune_find("s", "i", "b", DIGEST, 1)[1:] == (None, None, True)  # stored, not for this space
    finally:
        monkeypatch.undo()
        _core._cache_reset()


def test_identity_text_is_length_prefixed():
    assert tune_decisions.identity_text({"name": "NVIDIA H100", "arch": "sm_90a"}) == "11:NVIDIA H1006:sm_90a"
    assert tune_decisions.identity_text({"name": "a1:b", "arch": ""}) != tune_decisions.identity_text(
        {"name": "a", "arch": "b"})


def test_identity_of_a_device_that_does_not_exist(mock_driver, tmp_path):
    result = run_with_mock(mock_driver, """
import jitkernel as jk
from jitkernel import _core
name, arch, text = _core._tune_identity(0)
assert text == _core._tune_identity_text(name, arch), (name, arch, text)
for bad, kind in ((99, jk.ArgumentError), (True, jk.ArgumentTypeError), ("0", jk.ArgumentTypeError)):
    try:
        _core._tune_identity(bad)
    except kind as e:
        assert "device" in str(e), e
    else:
        raise AssertionError(bad)
print("ok")
""", tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_dtypes_are_described_as_jitkernel_dtypes_and_written_as_names():
    class Exotic:
        shape = (2,)
        dtype = object()  # no jitkernel dtype: kept as it is, and the bucket is left to Python

    shapes, dtypes = _core._tune_describe([np.zeros(3, np.float16), Exotic()])
    assert dtypes[0] is jk.float16 and dtypes[1] is Exotic.dtype
    assert _core._tune_dtype(np.dtype(np.int8)) is jk.int8 and _core._tune_dtype("nonsense") == "nonsense"
    assert _core._tune_bucket_json([shapes[:1], dtypes[:1], (jk.float32,)]) == '[[[3]],["float16"],["float32"]]'
    assert _core._tune_bucket_json([dtypes]) is None


def test_bucket_text_is_unchanged_by_where_the_dtypes_come_from():
    """The stored bucket (so the decision key) of a call is what the Python writer made before the core wrote it:
    NumPy, jitkernel and name dtypes give one text."""
    kernel = jk.cuda_kernel(name="bucket_k", input_names=["x"], output_names=["y"], source="y[0] = x[0];")
    tuned = jk.autotune(kernel, configs=[jk.Config(threadgroup=(32, 1, 1))], grid=(1, 1, 1))
    texts = set()
    for out in ([jk.float32], [np.dtype(np.float32)], ["float32"]):
        _, _, memory_key = tuned._table.key_of([np.zeros((4, 2), np.float16), 3], out, None, None)
        texts.add(tuned._bucket_text(memory_key))
    assert texts == {'[[[4,2],null],["float16","int"],["float32"]]'}
