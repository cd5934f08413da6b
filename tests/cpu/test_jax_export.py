"""jax.export of programs that call jitkernel kernels, without a GPU: exported for CUDA on a CPU-only jax with
jk.jax_export_disabled_checks() (jax.export refuses our custom call without it), serialised and deserialised, the
program still carries our call with its versioned record; a record of another format is refused by the handler with
both versions named; symbolic shapes are an ArgumentError naming the input. Running a deserialised program in a new
process is tests/gpu/test_jax_export_gpu.py."""
from __future__ import annotations

import pytest

import jitkernel as jk
from jitkernel import _core

jax = pytest.importorskip("jax")
pytest.importorskip("flatbuffers", reason="jax.export's serialisation needs flatbuffers")
jnp = jax.numpy
from jax import export  # noqa: E402

from test_jax_lowering import attribute_text, key_of  # noqa: E402

TWICE = jk.cuda_kernel(name="twice_plus", input_names=["x", "b"], output_names=["y"],
                       source="auto i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "if (i < x_shape[0]) y[i] = 2.0f * x[i] + b[0];")


def program(x):
    y = TWICE(inputs=[x, 0.5], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.shape[0], 1, 1),
              threadgroup=(128, 1, 1))[0]
    return jnp.sin(y)


SPEC = jax.ShapeDtypeStruct((1000,), jnp.float32)


def exported(spec=SPEC, **kw):
    return export.export(jax.jit(program), platforms=["cuda"], **kw)(spec)


def test_export_needs_the_checks_jitkernel_vouches_for():
    with pytest.raises(ValueError, match="custom calls"):
        exported()
    checks = jk.jax_export_disabled_checks()
    assert checks == [export.DisabledSafetyCheck.custom_call("jitkernel_cuda_kernel")]


def test_serialised_program_keeps_the_versioned_call():
    blob = exported(disabled_checks=jk.jax_export_disabled_checks()).serialize()
    back = export.deserialize(blob)
    assert back.platforms == ("cuda",)
    assert back.in_avals == (jax.core.ShapedArray((1000,), jnp.float32),)
    text = attribute_text(back.mlir_module())
    kernel, call = _core.decode_record(text, "jk_call")
    assert kernel["name"] == "twice_plus" and call["inputs"][0] == ("array", jk.float32, (1000,))
    assert _core._xla_run_stage(text, key_of(text)) is None  # a new process's instantiate stage rebuilds it


def test_a_record_of_another_format_is_refused_naming_both_versions():
    text = attribute_text(exported(disabled_checks=jk.jax_export_disabled_checks()).mlir_module())
    assert text.startswith(b'{"jitkernel_record":2,')
    other = text.replace(b'"jitkernel_record":2', b'"jitkernel_record":3', 1)
    message = _core._xla_run_stage(other, key_of(other))
    assert "jitkernel_record: format 3 is not the one this jitkernel reads (2)" in message


def test_symbolic_shapes_are_an_argument_error_naming_the_input():
    spec = jax.ShapeDtypeStruct(export.symbolic_shape("n"), jnp.float32)
    with pytest.raises(jk.ArgumentError, match="input 'x' is \\(n,\\), with a symbolic dimension") as e:
        exported(spec, disabled_checks=jk.jax_export_disabled_checks())
    assert e.value.argument == "inputs"
