"""``jk.sharded`` under ``jax.jit`` with NamedSharding'ed inputs and no shard_map, without a GPU (stand-in kernels:
tests/cpu/_jax_stand_ins.py): declared functions run per shard with no all-gather (Shardy and GSPMD), gradients
through them, concrete sharded arrays, vmap, the rule's errors; and an undeclared custom call, which XLA gathers."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk

jax = pytest.importorskip("jax")
from _jax_stand_ins import *  # noqa: E402,F401,F403 - devices, stand-in kernels, fixtures, helpers
from _jax_stand_ins import jnp, run_in_a_fresh_process  # noqa: E402
from _jax_stand_ins import _softplus  # noqa: E402


def test_in_a_fresh_process_with_four_cpu_devices():
    run_in_a_fresh_process(__file__)

# ---- jk.sharded under jax.jit with NamedSharding'ed inputs (no shard_map) -------------------------------------


def compiled_text(f, *args) -> str:
    return f.lower(*args).compile().as_text()


def split_rows(y) -> bool:
    """`y` (2-D) is split by rows over mesh axis 'x' (JAX writes the spec P('x') or P('x', None))."""
    return y.sharding.is_equivalent_to(NamedSharding(y.sharding.mesh, P("x", None)), 2)


def declared(rule, fn, **kw):
    """`fn` under jk.sharded(rule), recording the shapes of the arrays it is traced with."""
    seen = []

    def recorded(*args):
        seen.append(tuple(tuple(a.shape) for a in args if hasattr(a, "shape")))
        return fn(*args)

    return jk.sharded(rule, **kw)(recorded), seen


@pytest.mark.parametrize("n", [2, 4])
def test_declared_elementwise_runs_per_shard_with_no_gather(n):
    act, seen = declared("elementwise", softplus)
    mesh = mesh_of(n)
    x = data(8 * n, 16)
    xs = put(x, mesh, P("x", None))
    f = jax.jit(lambda v: act(v) * 2)
    y = f(xs)
    close(y, _softplus(x) * 2)
    assert split_rows(y)
    assert ((8, 16),) in seen  # traced on the local shard: the kernel's grid and shapes follow it
    assert "all-gather" not in compiled_text(f, xs)


def test_declared_rowwise_with_a_replicated_weight_on_a_2d_mesh():
    norm, seen = declared("rowwise", rmsnorm)
    mesh = mesh_of(4, ("a", "b"), (2, 2))
    x, w = data(16, 32), 1 + 0.1 * data(32, seed=1)
    args = (put(x, mesh, P(("a", "b"), None)), put(w, mesh, P()))
    f = jax.jit(norm)
    close(f(*args), rmsnorm_ref(x, w), rtol=1e-5)
    assert ((4, 32), (32,)) in seen
    assert "all-gather" not in compiled_text(f, *args)


def test_rowwise_split_along_the_row_is_gathered_and_right():
    norm, seen = declared("rowwise", rmsnorm)
    mesh = mesh_of(4)
    x, w = data(8, 32), 1 + 0.1 * data(32, seed=1)
    args = (put(x, mesh, P(None, "x")), put(w, mesh, P("x")))
    close(jax.jit(norm)(*args), rmsnorm_ref(x, w), rtol=1e-5)
    assert all(s == ((8, 32), (32,)) for s in seen)  # whole rows everywhere


def test_factor_rule_with_two_results_and_a_replicated_factor():
    def both(x, w):
        return scaled_softplus(x, w), softplus(x)

    fn, seen = declared("i j, j -> i j, i j", both, replicated=("j",))
    mesh = mesh_of(4, ("a", "b"), (2, 2))
    x, w = data(8, 16), data(16, seed=1)
    args = (put(x, mesh, P("a", "b")), put(w, mesh, P("b")))
    f = jax.jit(fn)
    y, z = f(*args)
    close(y, _softplus(x) * w)
    close(z, _softplus(x))
    assert ((4, 16), (16,)) in seen  # rows split over 'a', columns (kept whole) gathered over 'b'


def test_gradients_through_a_declared_function_under_sharded_jit():
    norm, seen = declared("rowwise", rmsnorm)
    mesh = mesh_of(4)
    x, w, t = data(16, 32), 1 + 0.1 * data(32, seed=1), data(16, 32, seed=2)

    def loss(x, w, fn):
        return ((fn(x, w) - t) ** 2).mean()

    ref_loss, ref = jax.value_and_grad(loss, argnums=(0, 1))(x, w, rmsnorm_ref)
    args = (put(x, mesh, P("x", None)), put(w, mesh, P()))
    g = jax.jit(jax.value_and_grad(lambda x, w: loss(x, w, norm), argnums=(0, 1)))
    got_loss, (gx, gw) = g(*args)
    close(got_loss, ref_loss)
    close(gx, ref[0], rtol=1e-4, atol=1e-6)
    close(gw, ref[1], rtol=1e-4, atol=1e-6)
    assert split_rows(gx)
    text = compiled_text(g, *args)
    assert "all-gather" not in text and "all-reduce" in text  # the weight's per-shard sums, added up
    assert ((4, 32), (32,)) in seen

    lr = 0.5  # a data-parallel SGD step: replicated weight, batch split over 'x'
    step = jax.jit(lambda w, x: w - lr * jax.grad(lambda w: loss(x, w, norm))(w))
    new_w = step(args[1], args[0])
    close(new_w, w - lr * ref[1], rtol=1e-5)
    assert "all-gather" not in compiled_text(step, args[1], args[0])


@pytest.mark.parametrize("shardy", [True, False])
def test_both_partitioners(shardy):
    old = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        norm, _ = declared("rowwise", rmsnorm)
        mesh = mesh_of(4)
        x, w = data(16, 32), 1 + 0.1 * data(32, seed=1)
        args = (put(x, mesh, P("x", None)), put(w, mesh, P()))
        g = jax.jit(jax.grad(lambda x, w: (norm(x, w) ** 2).sum(), argnums=(0, 1)))
        ref = jax.grad(lambda x, w: (rmsnorm_ref(x, w) ** 2).sum(), argnums=(0, 1))(x, w)
        got = g(*args)
        close(got[0], ref[0], rtol=1e-4, atol=1e-5)
        close(got[1], ref[1], rtol=1e-4, atol=1e-5)
        assert "all-gather" not in compiled_text(g, *args)
    finally:
        jax.config.update("jax_use_shardy_partitioner", old)


def test_concrete_sharded_arrays_outside_jit_run_per_shard():
    act, seen = declared("elementwise", softplus)
    mesh = mesh_of(4)
    x = data(16, 8)
    y = act(put(x, mesh, P("x", None)))
    close(y, _softplus(x))
    assert split_rows(y) and ((4, 8),) in seen


def test_inside_shard_map_it_is_a_plain_call_and_on_one_device_the_whole_call():
    act, seen = declared("elementwise", softplus)
    mesh = mesh_of(4)
    x = data(16, 8)
    f = jax.jit(shard_map(act, mesh, P("x"), P("x")))
    assert "custom_partitioning" not in str(jax.make_jaxpr(f)(put(x, mesh, P("x"))))
    close(f(put(x, mesh, P("x"))), _softplus(x))
    assert set(seen) == {((4, 8),)}
    close(jax.jit(act)(jnp.asarray(x)), _softplus(x))
    assert set(seen[1:]) == {((16, 8),)}


def test_arrays_must_be_positional_and_the_rule_must_fit():
    act = jk.sharded("elementwise")(lambda x, scale=1.0: softplus(x) * scale)
    with pytest.raises(jk.ArgumentTypeError, match="^scale: .*positional"):
        jax.jit(lambda x: act(x, scale=x))(jnp.ones(4))
    pair = jk.sharded("i, i -> i")(lambda x, y: softplus(x))
    with pytest.raises(jk.ArgumentError, match="^rule: "):
        jax.jit(lambda x: pair(x, x))(jnp.ones((4, 4)))


# An opaque custom call that runs on the CPU (LAPACK's Cholesky factorization in jaxlib), standing in for a kernel:
# XLA can no more see into it than into jitkernel's CUDA custom call. jaxlib loads its LAPACK functions when it
# first lowers a linalg op for the CPU: one jnp.linalg.cholesky on a CPU array does that first.
def _load_lapack():
    eye = jax.device_put(np.eye(2, dtype=np.float32), jax.devices("cpu")[0])
    np.testing.assert_allclose(np.asarray(jnp.linalg.cholesky(eye)), np.eye(2))


def _lapack_cholesky(m):
    out, _ = jax.ffi.ffi_call("lapack_spotrf_ffi", (jax.ShapeDtypeStruct(m.shape, m.dtype),
                                                    jax.ShapeDtypeStruct(m.shape[:-2], np.int32)),
                              input_output_aliases={0: 0})(m, uplo=np.uint8(ord("L")))
    return (out,)


def test_an_undeclared_kernel_under_sharded_jit_is_gathered_and_right(monkeypatch):
    _load_lapack()
    monkeypatch.setitem(STAND_INS, "chol", _lapack_cholesky)
    chol_kernel = kernel("chol", ["a"], ["l"])

    def chol(a):
        return launch(chol_kernel, [a], [a])[0]

    mesh = mesh_of(4)
    a = data(8, 3, 3)
    spd = a @ a.transpose(0, 2, 1) + 3 * np.eye(3, dtype=np.float32)
    expected = np.asarray(jax.jit(chol)(jax.device_put(spd, jax.devices("cpu")[0])))  # one CPU device
    args = (put(spd, mesh, P("x")),)
    undeclared = jax.jit(chol)
    close(undeclared(*args), expected)
    text = compiled_text(undeclared, *args)
    assert "all-gather" in text and "lapack_spotrf_ffi" in text  # gathered, then the whole call on every device
    per_matrix = jax.jit(jk.sharded("b m n -> b m n", replicated=("m", "n"))(chol))
    close(per_matrix(*args), expected)
    assert "all-gather" not in compiled_text(per_matrix, *args)


def test_vmap_of_a_declared_function_runs_it_vmapped_on_whole_arrays():
    act, _ = declared("elementwise", softplus)
    mesh = mesh_of(4)
    x = data(4, 16)
    xs = put(x, mesh, P("x", None))
    close(jax.jit(jax.vmap(act))(xs), _softplus(x))
    close(jax.vmap(jax.jit(act))(xs), _softplus(x))
    close(jax.jit(jax.vmap(jax.grad(lambda r: act(r).sum())))(xs), jax.nn.sigmoid(x))
