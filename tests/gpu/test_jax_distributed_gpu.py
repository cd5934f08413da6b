"""Kernels with backwards in JAX programs over 2 and 4 GPUs, checked against the same math in jnp: jax.grad and
jax.value_and_grad inside and around shard_map with a sharded input (softplus), a replicated input (an RMSNorm's
weight), both mixed (also on a 2-D mesh where the rows are split over one axis only), a data-parallel SGD step with
pmean; and jax.jit with NamedSharding'ed inputs and no shard_map: functions declared with jk.sharded run per shard
(the compiled program has no all-gather), with gradients, and an undeclared kernel still gives the right answer
(XLA gathers its inputs and runs it whole on every GPU). Each test skips with fewer GPUs than it needs."""
from __future__ import annotations

from _gpu_util import INDEX  # also keeps JAX from preallocating the GPU

import numpy as np
import pytest

import jitkernel as jk

pytestmark = pytest.mark.gpu
jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402


def gpus(n: int) -> list:
    try:
        devices = jax.devices("gpu")
    except RuntimeError as e:
        pytest.skip(f"JAX has no GPU backend: {e}")
    if len(devices) < n:
        pytest.skip(f"needs {n} GPUs, JAX sees {len(devices)}")
    return devices[:n]


def mesh_of(n, names=("x",), shape=None):
    return Mesh(np.array(gpus(n)).reshape(shape or (n,)), names)


def shard_map(f, mesh, in_specs, out_specs, **kw):
    sm = getattr(jax, "shard_map", None)
    if sm is None:
        from jax.experimental.shard_map import shard_map as sm
    return sm(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def put(x, mesh, spec):
    return jax.device_put(np.asarray(x), NamedSharding(mesh, spec))


def data(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def close(a, b, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def compiled_text(f, *args) -> str:
    return f.lower(*args).compile().as_text()


def split_rows(y) -> bool:
    """`y` (2-D) is split by rows over mesh axis 'x' (JAX writes the spec P('x') or P('x', None))."""
    return y.sharding.is_equivalent_to(NamedSharding(y.sharding.mesh, P("x", None)), 2)


# ---- kernels: an elementwise softplus and a row-wise RMSNorm with a weight, each with its backward -------------

SP = jk.cuda_kernel(name="dist_softplus", input_names=["x"], output_names=["y"],
                    source=INDEX + "if (i < N) y[i] = x[i] > 20 ? x[i] : log1p(exp(x[i]));")
SP_BWD = jk.cuda_kernel(name="dist_softplus_bwd", input_names=["x", "g"], output_names=["dx"],
                        source=INDEX + "if (i < N) dx[i] = g[i] / (1 + exp(-x[i]));")

RMS = jk.cuda_kernel(name="dist_rmsnorm", input_names=["x", "w"], output_names=["y"], source=INDEX + """
if (i < R) {
    float ss = 0.f;
    for (int j = 0; j < D; ++j) { float v = x[i * D + j]; ss += v * v; }
    const float inv = rsqrtf(ss / D + 1e-6f);
    for (int j = 0; j < D; ++j) y[i * D + j] = x[i * D + j] * inv * w[j];
}""")
RMS_BWD = jk.cuda_kernel(name="dist_rmsnorm_bwd", input_names=["x", "w", "g"], output_names=["dx", "dw_rows"],
                         source=INDEX + """
if (i < R) {
    float ss = 0.f, dot = 0.f;
    for (int j = 0; j < D; ++j) {
        const float v = x[i * D + j];
        ss += v * v;
        dot += w[j] * g[i * D + j] * v;
    }
    const float inv = rsqrtf(ss / D + 1e-6f);
    const float c = inv * inv * inv * dot / D;
    for (int j = 0; j < D; ++j) {
        const float v = x[i * D + j], gj = g[i * D + j];
        dx[i * D + j] = w[j] * gj * inv - v * c;
        dw_rows[i * D + j] = gj * v * inv;
    }
}""")


def _elementwise(kernel, inputs, like):
    return kernel(inputs=inputs, output_shapes=[like.shape], output_dtypes=[like.dtype], grid=(like.size, 1, 1),
                  threadgroup=(256, 1, 1), template=[("N", like.size)])


def _rowwise(kernel, inputs, like, n_out):
    rows, d = like.shape
    return kernel(inputs=inputs, output_shapes=[like.shape] * n_out, output_dtypes=[like.dtype] * n_out,
                  grid=(rows, 1, 1), threadgroup=(64, 1, 1), template=[("R", rows), ("D", d)])


SP.vjp(lambda p, o, c: [_elementwise(SP_BWD, [p[0], c[0]], p[0])[0]])


@RMS.vjp
def _rms_backward(p, o, c):
    dx, dw_rows = _rowwise(RMS_BWD, [p[0], p[1], c[0]], p[0], 2)
    return [dx, dw_rows.sum(0)]


def softplus(x):
    return _elementwise(SP, [x], x)[0]


def rmsnorm(x, w):
    return _rowwise(RMS, [x, w], x, 1)[0]


def softplus_ref(x):
    return jax.nn.softplus(x)


def rmsnorm_ref(x, w):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def test_kernels_match_their_references_on_one_gpu():
    gpus(1)
    x, w = data(16, 64), 1 + 0.1 * data(64, seed=1)
    close(jax.jit(softplus)(x), softplus_ref(x))
    close(jax.jit(rmsnorm)(x, w), rmsnorm_ref(x, w))
    g = jax.jit(jax.grad(lambda x, w: (rmsnorm(x, w) ** 2).sum(), argnums=(0, 1)))(x, w)
    ref = jax.grad(lambda x, w: (rmsnorm_ref(x, w) ** 2).sum(), argnums=(0, 1))(x, w)
    close(g[0], ref[0])
    close(g[1], ref[1], rtol=1e-4, atol=1e-4)


# ---- shard_map ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_shard_map_grad_of_a_sharded_input(n):
    mesh = mesh_of(n)
    x = data(64 * n, 32)
    xs = put(x, mesh, P("x"))
    around = shard_map(softplus, mesh, P("x"), P("x"))
    close(jax.jit(jax.grad(lambda v: around(v).sum()))(xs), jax.nn.sigmoid(x))
    inside = shard_map(lambda v: jax.value_and_grad(lambda u: jax.lax.psum(softplus(u).sum(), "x"))(v),
                       mesh, P("x"), (P(), P("x")))
    loss, g = jax.jit(inside)(xs)
    close(loss, softplus_ref(x).sum(), rtol=1e-5)
    close(g, jax.nn.sigmoid(x))


@pytest.mark.parametrize("n", [2, 4])
def test_shard_map_grad_of_a_replicated_input(n):
    """The weight is replicated, the rows split: its gradient is the sum of the shards' contributions."""
    mesh = mesh_of(n)
    x, w, t = data(32 * n, 64), 1 + 0.1 * data(64, seed=1), data(32 * n, 64, seed=2)
    ref = jax.grad(lambda w: ((rmsnorm_ref(x, w) - t) ** 2).sum())(w)

    def local(x, w, t):
        return jax.grad(lambda w: jax.lax.psum(((rmsnorm(x, w) - t) ** 2).sum(), "x"))(w)

    specs = (P("x", None), P(), P("x", None))
    gw = jax.jit(shard_map(local, mesh, specs, P()))(put(x, mesh, specs[0]), put(w, mesh, P()), put(t, mesh, specs[2]))
    close(gw, ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n", [2, 4])
def test_shard_map_value_and_grad_of_sharded_and_replicated_inputs(n):
    mesh = mesh_of(n)
    x, w, t = data(32 * n, 64), 1 + 0.1 * data(64, seed=1), data(32 * n, 64, seed=2)

    def loss(x, w, norm):
        return ((norm(x, w) - t) ** 2).sum()

    ref_loss, ref = jax.value_and_grad(loss, argnums=(0, 1))(x, w, rmsnorm_ref)
    around = shard_map(rmsnorm, mesh, (P("x", None), P()), P("x", None))
    args = (put(x, mesh, P("x", None)), put(w, mesh, P()))
    got_loss, (gx, gw) = jax.jit(jax.value_and_grad(lambda x, w: loss(x, w, around), argnums=(0, 1)))(*args)
    close(got_loss, ref_loss, rtol=1e-5)
    close(gx, ref[0])
    close(gw, ref[1], rtol=1e-4, atol=1e-3)


def test_shard_map_on_a_2d_mesh_rows_split_over_one_axis():
    """x varies over 'a' only (replicated over 'b'), w over neither: the weight's gradient sums over 'a'."""
    mesh = mesh_of(4, ("a", "b"), (2, 2))
    x, w = data(64, 32), 1 + 0.1 * data(32, seed=1)
    ref = jax.grad(lambda x, w: (rmsnorm_ref(x, w) ** 2).sum(), argnums=(0, 1))(x, w)

    def local(x, w):
        return jax.grad(lambda x, w: jax.lax.psum((rmsnorm(x, w) ** 2).sum(), "a"), argnums=(0, 1))(x, w)

    gx, gw = jax.jit(shard_map(local, mesh, (P("a", None), P()), (P("a", None), P())))(
        put(x, mesh, P("a", None)), put(w, mesh, P()))
    close(gx, ref[0])
    close(gw, ref[1], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_sgd_step_with_pmean(n):
    mesh = mesh_of(n)
    x, w, t, lr = data(32 * n, 64), 1 + 0.1 * data(64, seed=1), data(32 * n, 64, seed=2), 0.5

    def loss(w, x, t, norm):
        return jnp.mean((norm(x, w) - t) ** 2)

    expected = w - lr * jax.grad(loss)(w, x, t, rmsnorm_ref)

    def step(w, x, t):
        return w - lr * jax.grad(lambda w: jax.lax.pmean(loss(w, x, t, rmsnorm), "x"))(w)

    specs = (P(), P("x", None), P("x", None))
    new_w = jax.jit(shard_map(step, mesh, specs, P()))(put(w, mesh, P()), put(x, mesh, specs[1]),
                                                       put(t, mesh, specs[2]))
    close(new_w, expected, rtol=1e-5, atol=1e-6)


# ---- jax.jit with NamedSharding'ed inputs, no shard_map -----------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_sharded_jit_declared_elementwise_runs_per_shard(n):
    act = jk.sharded("elementwise")(softplus)
    mesh = mesh_of(n)
    x = data(64 * n, 32)
    xs = put(x, mesh, P("x", None))
    f = jax.jit(lambda v: act(v) * 2)
    y = f(xs)
    close(y, softplus_ref(x) * 2)
    assert split_rows(y)
    assert "all-gather" not in compiled_text(f, xs)
    g = jax.jit(jax.grad(lambda v: act(v).sum()))
    close(g(xs), jax.nn.sigmoid(x))
    assert "all-gather" not in compiled_text(g, xs)


@pytest.mark.parametrize("n", [2, 4])
def test_sharded_jit_declared_rowwise_with_gradients(n):
    norm = jk.sharded("rowwise")(rmsnorm)
    mesh = mesh_of(n)
    x, w, t = data(32 * n, 64), 1 + 0.1 * data(64, seed=1), data(32 * n, 64, seed=2)
    args = (put(x, mesh, P("x", None)), put(w, mesh, P()))
    f = jax.jit(norm)
    close(f(*args), rmsnorm_ref(x, w))
    assert "all-gather" not in compiled_text(f, *args)

    def loss(x, w, fn):
        return ((fn(x, w) - t) ** 2).mean()

    ref_loss, ref = jax.value_and_grad(loss, argnums=(0, 1))(x, w, rmsnorm_ref)
    g = jax.jit(jax.value_and_grad(lambda x, w: loss(x, w, norm), argnums=(0, 1)))
    got_loss, (gx, gw) = g(*args)
    close(got_loss, ref_loss, rtol=1e-5)
    close(gx, ref[0], rtol=1e-4, atol=1e-6)
    close(gw, ref[1], rtol=1e-4, atol=1e-5)
    text = compiled_text(g, *args)
    assert "all-gather" not in text and "all-reduce" in text


def test_sharded_jit_undeclared_kernel_is_right():
    """No declaration: XLA replicates the custom call (gathers the inputs, runs the whole kernel everywhere)."""
    mesh = mesh_of(2)
    x, w = data(64, 64), 1 + 0.1 * data(64, seed=1)
    args = (put(x, mesh, P("x", None)), put(w, mesh, P()))
    f = jax.jit(rmsnorm)
    close(f(*args), rmsnorm_ref(x, w))
    g = jax.jit(jax.grad(lambda x, w: (rmsnorm(x, w) ** 2).sum(), argnums=(0, 1)))
    ref = jax.grad(lambda x, w: (rmsnorm_ref(x, w) ** 2).sum(), argnums=(0, 1))(x, w)
    got = g(*args)
    close(got[0], ref[0])
    close(got[1], ref[1], rtol=1e-4, atol=1e-3)
    print("undeclared kernel gathered:", "all-gather" in compiled_text(f, *args))
