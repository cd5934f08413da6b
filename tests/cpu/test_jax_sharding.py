"""Kernels in JAX programs over many devices, without a GPU: the custom call's FFI runner is replaced by a jnp
stand-in of each kernel (``_jax_call._runner``), so jitkernel's custom_vjp and its varying-manual-axes (vma) handling
run for real on a mesh of 4 CPU devices. Checked against gradients of the same math in plain jnp: jax.grad and
jax.value_and_grad inside and around shard_map with sharded inputs, replicated inputs, both mixed over a 2-D mesh,
a data-parallel SGD step with pmean, and check_vma=False; and the real runner's custom call traced inside shard_map
with operands of different vma (one type for all operands and results).

The multi-device CPU backend must be configured before JAX first initializes it: where another test module got there
first (one CPU device), the tests here run again in a fresh process with four CPU devices, through one test."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

from jitkernel import _core, _jax_call  # noqa: E402

N_DEVICES = 4


def _four_cpu_devices() -> bool:
    try:
        jax.config.update("jax_num_cpu_devices", N_DEVICES)  # refused once the backend is up
    except Exception:  # noqa: BLE001 - any refusal means: too late in this process
        pass
    return len(jax.devices("cpu")) >= N_DEVICES


IN_PROCESS = _four_cpu_devices()
_CHILD = "JITKERNEL_JAX_SHARDING_CHILD"


@pytest.fixture(autouse=True)
def _needs_devices(request):
    if request.node.name.startswith("test_in_a_fresh_process"):
        return
    if not IN_PROCESS:
        pytest.skip(f"JAX was started with fewer than {N_DEVICES} CPU devices in this process: "
                    "test_in_a_fresh_process_with_four_cpu_devices runs these")


def test_in_a_fresh_process_with_four_cpu_devices():
    if IN_PROCESS:
        pytest.skip("this process has the CPU devices: the tests ran here")
    assert os.environ.get(_CHILD) is None, "the child process too has too few CPU devices"
    env = dict(os.environ, **{_CHILD: "1", "JAX_PLATFORMS": "cpu"})
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-4000:]
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-4000:]


# ---- kernels and their jnp stand-ins ------------------------------------------------------------------------

INDEX = "const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"


def kernel(name, inputs, outputs, source="(void)0;"):
    return jk.cuda_kernel(name=name, input_names=inputs, output_names=outputs, source=INDEX + source)


def _softplus(x):
    return jnp.where(x > 20, x, jnp.log1p(jnp.exp(jnp.minimum(x, 20))))


def _rms(x, eps=1e-6):
    return jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)


def _rms_bwd(x, w, g):
    r = _rms(x)
    wg = w * g
    dx = wg * r - x * r ** 3 * jnp.mean(wg * x, axis=-1, keepdims=True)
    return dx, g * x * r  # dx, per-row contributions to dw


# name -> jnp function of the kernel's array operands, returning its outputs (what the CUDA source computes)
STAND_INS = {
    "sp_fwd": lambda x: (_softplus(x),),
    "sp_bwd": lambda x, g: (g * jax.nn.sigmoid(x),),
    "spw_fwd": lambda x, w: (_softplus(x) * w,),
    "spw_bwd": lambda x, w, g: (g * w * jax.nn.sigmoid(x), g * _softplus(x)),
    "rms_fwd": lambda x, w: (x * _rms(x) * w,),
    "rms_bwd": _rms_bwd,
}


@pytest.fixture(autouse=True)
def stand_in_runner(monkeypatch):
    """Every custom call runs its kernel's jnp stand-in instead of the FFI target (which needs a GPU)."""
    def runner(plan):
        fn = STAND_INS[_core._xla_parse(plan.text.encode())["name"]]
        return lambda *operands: tuple(fn(*operands))

    monkeypatch.setattr(_jax_call, "_runner", runner)


def launch(k, inputs, outs):
    n = int(np.prod(inputs[0].shape))
    return k(inputs=list(inputs), output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
             grid=(n, 1, 1), threadgroup=(256, 1, 1), template=[("N", n)])


SP, SP_BWD = kernel("sp_fwd", ["x"], ["y"]), kernel("sp_bwd", ["x", "g"], ["dx"])
SP.vjp(lambda p, o, c: [launch(SP_BWD, [p[0], c[0]], [p[0]])[0]])

SPW, SPW_BWD = kernel("spw_fwd", ["x", "w"], ["y"]), kernel("spw_bwd", ["x", "w", "g"], ["dx", "dw"])


@SPW.vjp
def _spw_backward(p, o, c):
    dx, dw = launch(SPW_BWD, [p[0], jnp.broadcast_to(p[1], p[0].shape), c[0]], [p[0], p[0]])
    return [dx, dw.sum(0)]


RMS, RMS_BWD = kernel("rms_fwd", ["x", "w"], ["y"]), kernel("rms_bwd", ["x", "w", "g"], ["dx", "dw_rows"])


@RMS.vjp
def _rms_backward(p, o, c):
    dx, dw_rows = launch(RMS_BWD, [p[0], p[1], c[0]], [p[0], p[0]])
    return [dx, dw_rows.sum(0)]


def softplus(x):
    return launch(SP, [x], [x])[0]


def scaled_softplus(x, w):
    return launch(SPW, [x, w], [x])[0]


def rmsnorm(x, w):
    return launch(RMS, [x, w], [x])[0]


def rmsnorm_ref(x, w):
    return x * _rms(x) * w


# ---- helpers ------------------------------------------------------------------------------------------------


def shard_map(f, mesh, in_specs, out_specs, **kw):
    sm = getattr(jax, "shard_map", None)
    if sm is None:
        from jax.experimental.shard_map import shard_map as sm
    return sm(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def mesh_of(n, names=("x",), shape=None):
    return Mesh(np.array(jax.devices("cpu")[:n]).reshape(shape or (n,)), names)


def put(x, mesh, spec):
    return jax.device_put(jnp.asarray(x), NamedSharding(mesh, spec))


def data(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


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
