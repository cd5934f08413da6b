"""jitkernel kernels inside JAX programs on a GPU (the XLA FFI handler): jax.jit equals NumPy, shard_map over the
mesh of the GPUs present (and a 2-GPU variant), eager JAX arrays, a donated input aliased to its output, outputs=
arrays that are not inputs, init_value, vmap, a new process served from JAX's persistent compilation cache,
check_grads on a fused softplus forward/backward pair, and XLA's command buffers (CUDA graphs) replaying our launch
without calling the handler again."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

from _gpu_util import INDEX  # also keeps JAX from preallocating the GPU

import numpy as np
import pytest

import jitkernel as jk

pytestmark = pytest.mark.gpu
jax = pytest.importorskip("jax")
jnp = jax.numpy
from jitkernel._frameworks import jax_call as _jax_call  # noqa: E402
from jitkernel._frameworks.call_form import list_form  # noqa: E402


@pytest.fixture(autouse=True)
def _jax_gpu():
    try:
        if not jax.devices("gpu"):
            pytest.skip("JAX sees no GPU")
    except RuntimeError as e:
        pytest.skip(f"JAX has no GPU backend: {e}")


EXP = jk.cuda_kernel(name="jax_exp", input_names=["inp"], output_names=["out"],
                     source=INDEX + "if (i < N) out[i] = exp(inp[i]);")
HALF = jk.cuda_kernel(name="jax_half", input_names=["inp"], output_names=["out"],
                      source=INDEX + "if (i < N / 2) out[i] = inp[i] * 2;")


def run(kernel, x, outputs=None, init_value=None):
    return kernel(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
                  threadgroup=(256, 1, 1), template=[("N", x.size)], init_value=init_value, outputs=outputs)[0]


@contextlib.contextmanager
def x64():
    """float64 arrays for one test (JAX makes float32 ones by default)."""
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


def data(n=4096, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).normal(size=n).astype(dtype)


def test_jit_matches_numpy():
    x = data()
    y = jax.jit(lambda a: run(EXP, a) + 1.0)(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), np.exp(x) + 1.0, rtol=1e-5)


def test_eager_jax_arrays_both_paths():
    x = data()
    a = jnp.asarray(x)
    (eager,) = EXP(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype], grid=(a.size, 1, 1),
                   threadgroup=(256, 1, 1), template=[("N", a.size)])
    np.testing.assert_allclose(np.asarray(eager), np.exp(x), rtol=1e-5)
    # a concrete array through the custom call (op-by-op dispatch), as under jax.grad's eager tracers
    (direct,) = _jax_call.call(EXP, list_form(EXP, [a], [a.shape], [a.dtype], (a.size, 1, 1), (256, 1, 1),
                                              [("N", a.size)], None, None, False))
    np.testing.assert_allclose(np.asarray(direct), np.exp(x), rtol=1e-5)


def _shard_map():
    return getattr(jax, "shard_map", None) or __import__("jax.experimental.shard_map",
                                                         fromlist=["shard_map"]).shard_map


def _sharded_exp(devices):
    from jax.sharding import Mesh, PartitionSpec as P

    mesh = Mesh(np.array(devices), ("x",))
    f = jax.jit(_shard_map()(lambda a: run(EXP, a), mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    x = data(1024 * len(devices))
    y = f(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), np.exp(x), rtol=1e-5)
    assert len(y.sharding.device_set) == len(devices)


def test_shard_map_over_all_gpus():
    _sharded_exp(jax.devices("gpu"))


def test_shard_map_over_two_gpus():
    if len(jax.devices("gpu")) < 2:
        pytest.skip("needs 2 GPUs")
    _sharded_exp(jax.devices("gpu")[:2])


def test_donated_input_is_aliased_to_the_output():
    x = data()
    a = jnp.asarray(x)
    f = jax.jit(lambda v: run(EXP, v, outputs=[v]), donate_argnums=0)
    y = f(a)
    np.testing.assert_allclose(np.asarray(y), np.exp(x), rtol=1e-5)
    assert a.is_deleted()


def test_outputs_array_that_is_not_an_input_keeps_what_the_kernel_does_not_write():
    x, base = data(), data(seed=1)
    y = jax.jit(lambda v, b: run(HALF, v, outputs=[b]))(jnp.asarray(x), jnp.asarray(base))
    expected = base.copy()
    expected[: x.size // 2] = x[: x.size // 2] * 2
    np.testing.assert_array_equal(np.asarray(y), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_init_value_fills_what_the_kernel_does_not_write(dtype):
    x = data(dtype=dtype)
    with x64():
        y = jax.jit(lambda v: run(HALF, v, init_value=1.5))(jnp.asarray(x))
    expected = np.full_like(x, 1.5)
    expected[: x.size // 2] = x[: x.size // 2] * 2
    np.testing.assert_array_equal(np.asarray(y), expected)


def test_vmap_runs_the_kernel_per_batch_element():
    x = data(4 * 512).reshape(4, 512)
    y = jax.jit(jax.vmap(lambda a: run(EXP, a)))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y), np.exp(x), rtol=1e-5)


SOFTPLUS = jk.cuda_kernel(name="softplus_fwd", input_names=["x"], output_names=["y"],
                          source=INDEX + "if (i < N) y[i] = x[i] > 20 ? x[i] : log1p(exp(x[i]));")
SOFTPLUS_BWD = jk.cuda_kernel(name="softplus_bwd", input_names=["x", "g"], output_names=["dx"],
                              source=INDEX + "if (i < N) dx[i] = g[i] / (1 + exp(-x[i]));")


def softplus_bwd(primals, outputs, cotangents):
    x, g = primals[0], cotangents[0]
    return [SOFTPLUS_BWD(inputs=[x, g], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.size, 1, 1),
                         threadgroup=(256, 1, 1), template=[("N", x.size)])[0]]


def test_check_grads_on_fused_softplus():
    from jax.test_util import check_grads

    SOFTPLUS.vjp(softplus_bwd)

    def f(x):
        return run(SOFTPLUS, x)

    with x64():
        x = jnp.asarray(data(256, np.float64))
        assert x.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.asarray(jax.nn.softplus(x)), rtol=1e-12)
        check_grads(jax.jit(f), (x,), order=1, modes=("rev",), atol=1e-6, rtol=1e-6)
        g = jax.jit(jax.grad(lambda v: f(v).sum()))(x)
        np.testing.assert_allclose(np.asarray(g), np.asarray(jax.nn.sigmoid(x)), rtol=1e-12)
        eager = jax.grad(lambda v: f(v).sum())(x)  # op by op, no jit
        np.testing.assert_allclose(np.asarray(eager), np.asarray(jax.nn.sigmoid(x)), rtol=1e-12)


def _subprocess(code: str, env_extra: dict) -> str:
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", **env_extra)
    header = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import numpy as np, jax, jax.numpy as jnp
        import jitkernel as jk
        from jitkernel import _core
        from jitkernel._frameworks import jax_call as _jax_call
        from test_jax_ffi_gpu import run, EXP, HALF, data
    """)
    done = subprocess.run([sys.executable, "-c", header + textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_persistent_compilation_cache_in_a_new_process(tmp_path):
    code = f"""
        hits = []
        jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name))
        jax.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        x = data()
        y = jax.jit(lambda a: run(EXP, a) * 3.0)(jnp.asarray(x))
        np.testing.assert_allclose(np.asarray(y), np.exp(x) * 3.0, rtol=1e-5)
        print("HITS", sum("cache_hits" in h for h in hits))
    """
    first = _subprocess(code, {})
    second = _subprocess(code, {})
    assert "HITS 0" in first, first
    assert "HITS 0" not in second and "HITS" in second, second


def test_command_buffers_replay_without_calling_the_handler():
    code = """
        x = jnp.asarray(data())
        f = jax.jit(lambda a: jnp.sin(run(EXP, a + 1.0)) * 2.0)
        expected = np.sin(np.exp(np.asarray(x) + 1.0)) * 2.0
        before = _core._xla_execute_count()
        for _ in range(20):
            y = f(x)
        np.testing.assert_allclose(np.asarray(y), expected, rtol=1e-5, atol=1e-5)
        print("EXECUTES", _core._xla_execute_count() - before)
    """
    graphs = "--xla_gpu_enable_command_buffer=FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1"
    captured = _subprocess(code, {"XLA_FLAGS": graphs})
    plain = _subprocess(code, {"XLA_FLAGS": "--xla_gpu_enable_command_buffer="})
    n_captured = int(captured.split("EXECUTES")[1])
    n_plain = int(plain.split("EXECUTES")[1])
    assert n_plain == 20, plain
    assert n_captured < 20, captured  # recorded once (or a few times), then replayed as a CUDA graph


def test_compile_options_apply_under_jit_and_in_a_new_process_from_the_persistent_cache(tmp_path):
    # The serialised call carries compile options (a define here), also into a process that gets the program from
    # JAX's persistent cache and rebuilds the kernel from the attribute alone.
    code = f"""
        from _gpu_util import INDEX
        scaled = jk.cuda_kernel(name="jax_define", input_names=["inp"], output_names=["out"],
                                source=INDEX + "if (i < N) out[i] = inp[i] * SCALE;",
                                compile_options={{"defines": {{"SCALE": 3}}, "math_mode": "fast"}})
        jax.config.update("jax_compilation_cache_dir", {str(tmp_path)!r})
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        x = data()
        y = jax.jit(lambda a: run(scaled, a))(jnp.asarray(x))
        np.testing.assert_allclose(np.asarray(y), x * 3, rtol=1e-6)
        print("OK")
    """
    assert "OK" in _subprocess(code, {}) and "OK" in _subprocess(code, {})
