"""jitkernel kernels inside JAX programs, without a GPU: lowering for CUDA on a CPU-only jax shows our FFI custom
call with attributes that rebuild the call; the CPU platform is refused with a jitkernel error naming it; vmap,
outputs= aliasing and gradients lower as documented; the attribute (a serialised call record, the format every front
shares) carries compile options and decodes in the core, and the handler's C ABI answers malformed input with typed
errors (driven through test hooks, no XLA)."""
from __future__ import annotations

import hashlib
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel import _core

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jitkernel._frameworks import jax_call as _jax_call  # noqa: E402

SCALE = jk.cuda_kernel(name="scale_exp", input_names=["inp", "s"], output_names=["out"],
                       source="auto i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "if (i < inp_shape[0] * inp_shape[1]) out[i] = exp(inp[i]) * s[0];")


def scale_exp(x, s=2.0, outputs=None, kernel=SCALE, dict_form=False):
    launch = dict(grid=(x.size, 1, 1), threadgroup=(256, 1, 1), template=[("T", jk.float32)])
    if dict_form:
        return kernel(inputs={"inp": x, "s": s}, output_shapes={"out": x.shape}, output_dtypes={"out": jk.float32},
                      **launch)
    return kernel(inputs=[x, s], output_shapes=[x.shape], output_dtypes=[jk.float32], outputs=outputs,
                  **launch)[0]


def cuda_text(f, *args) -> str:
    return jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


def attribute_text(hlo: str) -> bytes:
    match = re.search(r'jk_call = "((?:[^"\\]|\\.)*)"', hlo)
    assert match, hlo
    # MLIR prints \\, \" and other bytes as \XX (hex).
    return re.sub(rb'\\([0-9A-Fa-f]{2}|\\|")',
                  lambda m: bytes([int(m.group(1), 16)]) if len(m.group(1)) == 2 else m.group(1),
                  match.group(1).encode())


def key_of(text: bytes) -> int:
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


X = jnp.ones((4, 8), jnp.float32)


def test_lowering_for_cuda_has_our_custom_call_with_rebuildable_attributes():
    hlo = cuda_text(scale_exp, X)
    assert f"stablehlo.custom_call @{_jax_call.TARGET}(" in hlo
    text = attribute_text(hlo)
    kernel, call = _core.decode_record(text, "jk_call")
    assert kernel["name"] == "scale_exp" and kernel["source"] == SCALE.source_text
    assert call["input_names"] == ("inp", "s") and call["output_names"] == ("out",)
    assert call["inputs"] == (("array", jk.float32, (4, 8)), ("scalar", jk.float32, struct.pack("<f", 2.0)))
    assert call["outputs"] == ((jk.float32, (4, 8)),)
    assert call["template"] == (("T", jk.float32),)
    assert call["grid"] == (32, 1, 1) and call["threadgroup"] == (256, 1, 1)
    assert call["init_value"] is None and call["extra_operands"] == 0
    key = int(re.search(r"jk_key = (-?\d+) : i64", hlo).group(1))
    assert key % 2**64 == key_of(text)


def test_scalar_inputs_are_static_attributes():
    a, b = cuda_text(lambda x: scale_exp(x, 2.0), X), cuda_text(lambda x: scale_exp(x, 3.0), X)
    assert attribute_text(a) != attribute_text(b)
    assert "(%arg0)" in a  # one operand: the scalar is not one


def test_running_or_lowering_for_cpu_is_a_jitkernel_error_naming_the_platform():
    with pytest.raises(jk.ArgumentError, match="platform 'cpu'"):
        jax.jit(scale_exp)(jax.device_put(X, jax.devices("cpu")[0]))  # on the CPU even where a GPU is present
    with pytest.raises(jk.ArgumentError, match="platform 'cpu'"):
        jax.jit(scale_exp).trace(X).lower(lowering_platforms=("cpu",))


def test_codegen_errors_are_raised_while_tracing():
    def f(x):
        return SCALE(inputs=[x, 2.0], output_shapes=[x.shape], output_dtypes=[jk.float32], grid=(32, 1, 1),
                     threadgroup=(32, 1, 1), template=[("inp", 3)])

    with pytest.raises(jk.ArgumentError, match="template"):
        cuda_text(f, X)


def test_vmap_is_sequential():
    hlo = cuda_text(jax.vmap(scale_exp), jnp.ones((3, 4, 8), jnp.float32))
    assert "stablehlo.while" in hlo and hlo.count(f"@{_jax_call.TARGET}(") == 1


def test_outputs_aliasing_an_input_and_an_extra_operand():
    hlo = cuda_text(lambda x: scale_exp(x, outputs=[x]), X)
    assert "output_operand_aliases" in hlo and "operand_index = 0" in hlo
    hlo = cuda_text(lambda x, y: scale_exp(x, outputs=[y]), X, X + 1)
    assert "operand_index = 1" in hlo and _core.decode_record(attribute_text(hlo), "jk_call")[1]["extra_operands"] == 1
    with pytest.raises(jk.ArgumentError, match="outputs"):
        two = jk.cuda_kernel(name="two", input_names=["a"], output_names=["p", "q"], source="")
        cuda_text(lambda x: two(inputs=[x], outputs=[x, x], grid=(1, 1, 1), threadgroup=(1, 1, 1)), X)


def test_dict_form_returns_outputs_by_name_and_its_backward_sees_dicts():
    out = jax.eval_shape(lambda x: scale_exp(x, dict_form=True), X)
    assert list(out) == ["out"] and out["out"].shape == (4, 8)
    kernel = jk.cuda_kernel("scale_exp_dict", ["inp", "s"], ["out"], SCALE.source_text)
    seen = []

    @kernel.vjp
    def backward(primals, outs, cts):
        seen.append((sorted(primals), sorted(outs), sorted(cts)))
        return {"inp": outs["out"] * cts["out"]}

    cuda_text(jax.grad(lambda x: scale_exp(x, kernel=kernel, dict_form=True)["out"].sum()), X)
    assert seen == [(["inp", "s"], ["out"], ["out"])]


def test_grad_without_a_backward_says_to_attach_one():
    with pytest.raises(jk.ArgumentError, match=r"kernel.vjp"):
        jax.grad(lambda x: scale_exp(x).sum())(X)


def test_grad_with_a_backward_lowers_forward_and_backward_kernels():
    kernel = jk.cuda_kernel("scale_exp_vjp", ["inp", "s"], ["out"], SCALE.source_text)
    kernel.vjp(lambda primals, outs, cts: [scale_exp(primals[0], primals[1]) * cts[0], None])
    hlo = cuda_text(jax.grad(lambda x: (scale_exp(x, kernel=kernel) ** 2).sum()), X)
    assert hlo.count(f"@{_jax_call.TARGET}(") == 2
    kernel.vjp(lambda primals, outs, cts: [cts[0]])
    with pytest.raises(jk.ArgumentError, match="one cotangent per input"):
        cuda_text(jax.grad(lambda x: scale_exp(x, kernel=kernel).sum()), X)


# ---- the attribute parser and the handler's C ABI ---------------------------------------------------------


def valid_text() -> bytes:
    kernel = _core.encode_kernel("k", ["a", "n"], ["o"], "o[0] = a[0];", "", True, 0, None, None)
    call = _core.encode_call(["a", "n"], ["o"], [("array", jk.float32, (4,)), ("scalar", 3)], [(jk.float32, (4,))],
                             [("T", jk.float32), ("N", 2), ("B", True)], (4, 1, 1), (4, 1, 1), 0.5, False, False,
                             0, True)
    return _core.encode_record(kernel, call).encode()


def test_encode_decode_round_trip():
    kernel, call = _core.decode_record(valid_text(), "jk_call")
    assert call["template"] == (("T", jk.float32), ("N", 2), ("B", True))
    assert call["init_value"] == 0.5 and call["inputs"][1] == ("scalar", jk.int32, struct.pack("<i", 3))
    assert kernel["compile_options"] == {} and kernel["backward"] is None


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t[:-4], "the text ends|expected"),
    (lambda t: t.replace(b'"jitkernel_record":2', b'"jitkernel_record":9'), "format 9 is not the one"),
    (lambda t: t + b"1", "unexpected bytes after the value"),
    (lambda t: t.replace(b'"float32"', b'"float99"', 1), 'unknown dtype "float99"'),
    (lambda t: b"[" * 40 + t, "nested deeper than 32"),
    (lambda t: b"x" + t, "expected a JSON value"),
    (lambda t: t.replace(b'["array",', b'["arrey",', 1), 'expected \\["array"'),
    (lambda t: t.replace(b'"0300000000000000"', b'"030000000000000g"'), "16 hex digits"),
    (lambda t: t.replace(b'"0300000000000000"', b'"0300000001000000"'), "past the dtype's size"),
    (lambda t: t.replace(b',"verbose":false', b',"verbose":false,"verbose":true'), 'duplicate key "verbose"'),
    (lambda t: t.replace(b'"source":"o[0] = a[0];"', b'"source":"\xff"'), "invalid UTF-8"),
    (lambda t: t.replace(b'"N",', b'"N" ,'), "not in the form jitkernel writes"),
])
def test_malformed_attribute_text_is_a_typed_error(mutate, message):
    with pytest.raises(jk.ArgumentError, match=message) as info:
        _core.decode_record(mutate(valid_text()), "jk_call")
    assert info.value.argument == "jk_call"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_corruption_never_crashes_the_decoder(data):
    text = bytearray(valid_text())
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text) - 1))
        text[i] = data.draw(st.integers(0, 255))
    try:
        _core.decode_record(bytes(text), "jk_call")
    except jk.ArgumentError as e:
        assert e.argument == "jk_call"


def test_compile_options_travel_in_the_attribute():
    kernel = jk.cuda_kernel(name="fast_exp", input_names=["inp", "s"], output_names=["out"],
                            source=SCALE.source_text, compile_options={"math_mode": "fast", "defines": {"K": 2}})
    hlo = cuda_text(lambda x: scale_exp(x, kernel=kernel), X)
    decoded, _ = _core.decode_record(attribute_text(hlo), "jk_call")
    assert decoded["compile_options"] == {"math_mode": "fast", "defines": {"K": "2"}}


def test_handler_metadata_declares_version_and_command_buffer_trait():
    assert _core._xla_metadata() == (0, 3, 1)


def test_handler_instantiate_stage_answers_with_ffi_errors():
    text = valid_text()
    assert _core._xla_run_stage(text, key_of(text)) is None
    assert "jk_key: does not match" in _core._xla_run_stage(text, key_of(text) ^ 1)
    broken = text.replace(b'"float32"', b'"float99"', 1)
    assert 'unknown dtype "float99"' in _core._xla_run_stage(broken, key_of(broken))
    assert "FFI API is version 1.3" in _core._xla_run_stage(text, key_of(text), api_major=1)
    assert "call frame" in _core._xla_run_stage(text, key_of(text), frame_size=40)
    names = text.replace(b'"input_names":["a","n"]', b'"input_names":["a","a"]')  # the spec check runs
    assert names != text
    assert "jitkernel: instantiate stage" in _core._xla_run_stage(names, key_of(names))


def test_import_jitkernel_imports_no_jax_and_registers_the_target_once_jax_is_imported():
    code = ("import sys, jitkernel, jitkernel._frameworks.jax_call as j; assert 'jax' not in sys.modules; "
            "assert not j._registered; import jax; assert j._registered")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_bfloat16_and_init_value_lowering():
    x = jnp.ones((8,), jnp.bfloat16)
    k = jk.cuda_kernel(name="fill_bf16", input_names=["a"], output_names=["o"], source="o[0] = a[0];")
    f = lambda x: k(inputs=[x], output_shapes=[x.shape], output_dtypes=[jk.bfloat16], grid=(1, 1, 1),
                    threadgroup=(1, 1, 1), init_value=1.5)[0]
    _, call = _core.decode_record(attribute_text(cuda_text(f, x)), "jk_call")
    assert call["inputs"] == (("array", jk.bfloat16, (8,)),) and call["init_value"] == 1.5
    assert np.dtype(jax.eval_shape(f, x).dtype) == np.dtype(jnp.bfloat16)


def test_execute_timing_hook_counts_only_while_on():
    # The profiling hook benchmarks use to split a jitted call's cost: off by default.
    text = valid_text()
    before = _core._xla_execute_times()
    _core._xla_run_stage(text, key_of(text), stage="execute")  # fails without a device; still an execute
    assert _core._xla_execute_times() == before
    _core._xla_time_executes(True)
    try:
        _core._xla_run_stage(text, key_of(text), stage="execute")
    finally:
        _core._xla_time_executes(False)
    calls, handler_ns, _ = _core._xla_execute_times()
    assert calls == before[0] + 1 and handler_ns > before[1]
