"""Kernels in JAX programs over many devices, without a GPU (stand-in kernels: tests/cpu/_jax_stand_ins.py): jitkernel's
custom_vjp and its varying-manual-axes (vma) handling on a mesh of 4 CPU devices, checked against gradients of the
same math in plain jnp: jax.grad and jax.value_and_grad inside and around shard_map with sharded inputs, replicated
inputs, both mixed over a 2-D mesh, a data-parallel SGD step with pmean, and check_vma=False; and the real runner's
custom call traced inside shard_map with operands of different vma (one type for all operands and results)."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk

jax = pytest.importorskip("jax")
from _jax_stand_ins import *  # noqa: E402,F401,F403 - devices, stand-in kernels, fixtures, helpers
from _jax_stand_ins import jnp, run_in_a_fresh_process  # noqa: E402
from _jax_stand_ins import _jax_call, _softplus  # noqa: E402


def test_in_a_fresh_process_with_four_cpu_devices():
    run_in_a_fresh_process(__file__)

# ---- gradients inside and around shard_map ------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_grad_of_a_sharded_elementwise_input(n):
    mesh = mesh_of(n)
    x = data(8 * n, 16)
    xs = put(x, mesh, P("x"))
    expected = jax.nn.sigmoid(x)
    # around: the whole shard_map differentiated
    f = shard_map(softplus, mesh, P("x"), P("x"))
    close(jax.jit(jax.grad(lambda v: f(v).sum()))(xs), expected)
    # inside: each shard differentiates its own loss; value_and_grad with the psum'd loss
    inside = shard_map(lambda v: jax.value_and_grad(lambda u: jax.lax.psum(softplus(u).sum(), "x"))(v),
                       mesh, P("x"), (P(), P("x")))
    loss, g = jax.jit(inside)(xs)
    close(loss, _softplus(x).sum(), rtol=1e-5)
    close(g, expected)


@pytest.mark.parametrize("n", [2, 4])
def test_grad_of_a_replicated_weight_is_summed_over_the_shards(n):
    mesh = mesh_of(n)
    x, w, t = data(4 * n, 32), 1 + 0.1 * data(32, seed=1), data(4 * n, 32, seed=2)
    ref = jax.grad(lambda x, w: ((rmsnorm_ref(x, w) - t) ** 2).sum(), argnums=(0, 1))(x, w)
    f = shard_map(rmsnorm, mesh, (P("x", None), P()), P("x", None))
    got = jax.jit(jax.grad(lambda x, w: ((f(x, w) - t) ** 2).sum(), argnums=(0, 1)))(
        put(x, mesh, P("x", None)), put(w, mesh, P()))
    close(got[0], ref[0], rtol=1e-4, atol=1e-5)
    close(got[1], ref[1], rtol=1e-4, atol=1e-5)

    def local(x, w, t):
        return jax.value_and_grad(lambda x, w: jax.lax.psum(((rmsnorm(x, w) - t) ** 2).sum(), "x"),
                                  argnums=(0, 1))(x, w)

    inside = shard_map(local, mesh, (P("x", None), P(), P("x", None)), (P(), (P("x", None), P())))
    loss, (gx, gw) = jax.jit(inside)(put(x, mesh, P("x", None)), put(w, mesh, P()), put(t, mesh, P("x", None)))
    close(loss, ((rmsnorm_ref(x, w) - t) ** 2).sum(), rtol=1e-5)
    close(gx, ref[0], rtol=1e-4, atol=1e-5)
    close(gw, ref[1], rtol=1e-4, atol=1e-5)  # the weight's gradient is invariant: out_specs P() accepts it


def test_mixed_axes_on_a_2d_mesh():
    """x varies over both axes, w over 'b' only: w's cotangent is summed over 'a' (its shards along 'a')."""
    mesh = mesh_of(4, ("a", "b"), (2, 2))
    x, w = data(8, 16), data(16, seed=1)
    ref = jax.grad(lambda x, w: (_softplus(x) * w).sum() ** 2 / 100, argnums=(0, 1))(x, w)

    def local(x, w):
        return jax.grad(lambda x, w: jax.lax.psum(scaled_softplus(x, w).sum(), ("a", "b")) ** 2 / 100,
                        argnums=(0, 1))(x, w)

    gx, gw = jax.jit(shard_map(local, mesh, (P("a", "b"), P("b")), (P("a", "b"), P("b"))))(
        put(x, mesh, P("a", "b")), put(w, mesh, P("b")))
    close(gx, ref[0], rtol=1e-4)
    close(gw, ref[1], rtol=1e-4)
    around = shard_map(scaled_softplus, mesh, (P("a", "b"), P("b")), P("a", "b"))
    g2 = jax.jit(jax.grad(lambda x, w: around(x, w).sum() ** 2 / 100, argnums=(0, 1)))(
        put(x, mesh, P("a", "b")), put(w, mesh, P("b")))
    close(g2[0], ref[0], rtol=1e-4)
    close(g2[1], ref[1], rtol=1e-4)


@pytest.mark.parametrize("n", [2, 4])
def test_data_parallel_sgd_step_with_pmean(n):
    """Replicated parameters, the batch split over 'x': the step's update equals the full-batch one."""
    mesh = mesh_of(n)
    x, w, t, lr = data(4 * n, 32), 1 + 0.1 * data(32, seed=1), data(4 * n, 32, seed=2), 0.5

    def loss(w, x, t, norm):
        return jnp.mean((norm(x, w) - t) ** 2)

    full = w - lr * jax.grad(loss)(w, x, t, rmsnorm_ref)

    def step(w, x, t):  # mean of the per-shard losses, differentiated in each shard
        g = jax.grad(lambda w: jax.lax.pmean(loss(w, x, t, rmsnorm), "x"))(w)
        return w - lr * g

    def step_pvary(w, x, t):  # the per-shard gradients of varying parameters, averaged with pmean
        wv = _jax_call.pvary(w, ("x",))
        return w - lr * jax.lax.pmean(jax.grad(loss)(wv, x, t, rmsnorm), "x")

    args = (put(w, mesh, P()), put(x, mesh, P("x", None)), put(t, mesh, P("x", None)))
    for body in (step, step_pvary):
        new_w = jax.jit(shard_map(body, mesh, (P(), P("x", None), P("x", None)), P()))(*args)
        close(new_w, full, rtol=1e-5)


def test_check_vma_off_gives_the_local_contributions():
    mesh = mesh_of(4)
    x, w = data(16, 32), 1 + 0.1 * data(32, seed=1)
    ref = jax.grad(lambda w: rmsnorm_ref(x, w).sum())(w)
    local = shard_map(lambda x, w: jax.lax.psum(jax.grad(lambda w: rmsnorm(x, w).sum())(w), "x"), mesh,
                      (P("x", None), P()), P(), check_vma=False)
    close(jax.jit(local)(put(x, mesh, P("x", None)), put(w, mesh, P())), ref, rtol=1e-4)


def test_an_invariant_cotangent_is_made_varying():
    """A backward that returns a cotangent computed from nothing varying (a constant) still type-checks."""
    k = kernel("sp_fwd", ["x"], ["y"])
    k.vjp(lambda p, o, c: [jnp.full(p[0].shape, 2.0, p[0].dtype)])
    mesh = mesh_of(2)
    f = shard_map(lambda v: jax.grad(lambda u: launch(k, [u], [u])[0].sum())(v), mesh, P("x"), P("x"))
    close(jax.jit(f)(put(data(8), mesh, P("x"))), np.full(8, 2.0))


def test_a_cotangent_varying_over_an_axis_its_input_does_not_is_an_error():
    mesh = mesh_of(4, ("a", "b"), (2, 2))

    def local(x, w):
        k = kernel("sp_fwd", ["x"], ["y"])
        k.vjp(lambda p, o, c: [c[0] * x.sum()])  # x varies over 'a', which w does not
        return jax.grad(lambda w: launch(k, [w], [w])[0].sum())(w)

    f = shard_map(local, mesh, (P("a"), P("b")), P("b"))
    with pytest.raises(jk.ArgumentError, match=r"^vjp: .*cotangent 0 varies over mesh axes \('a',\)"):
        jax.jit(f)(put(data(4), mesh, P("a")), put(data(4), mesh, P("b")))


def test_the_custom_call_gets_operands_and_results_of_one_vma(monkeypatch):
    """The real runner (ffi_call, whose abstract eval requires equal vma): a sharded and a replicated operand."""
    monkeypatch.undo()  # no stand-in: trace the FFI custom call itself
    mesh = mesh_of(2)
    seen = {}

    def local(x, w):
        y = rmsnorm(x, w)
        seen["vma"] = (_jax_call.vma_of(x), _jax_call.vma_of(w), _jax_call.vma_of(y))
        return y

    f = jax.jit(shard_map(local, mesh, (P("x", None), P()), P("x", None)))
    text = f.trace(jnp.ones((8, 16)), jnp.ones(16)).lower(lowering_platforms=("cuda",)).as_text()
    assert f"@{_jax_call.TARGET}(" in text
    assert seen["vma"] == (frozenset({"x"}), frozenset(), frozenset({"x"}))
    # differentiated in each shard: forward and backward custom calls, and the weight's cotangent summed
    g = jax.jit(shard_map(lambda x, w: jax.value_and_grad(lambda w: jax.lax.psum(local(x, w).sum(), "x"))(w), mesh,
                          (P("x", None), P()), (P(), P())))
    text = g.trace(jnp.ones((8, 16)), jnp.ones(16)).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count(f"@{_jax_call.TARGET}(") == 2 and "all_reduce" in text


def test_vma_helpers_without_vma_support(monkeypatch):
    """Old JAX (no jax.typeof): no axis varies and nothing is cast."""
    monkeypatch.delattr(jax, "typeof")
    x = jnp.ones(3)
    assert _jax_call.vma_of(x) == frozenset()
    assert _jax_call.pvary(x, ()) is x
    close(jax.jit(softplus)(x), _softplus(x))
