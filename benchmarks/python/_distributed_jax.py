"""The JAX part of bench_distributed.py: the time of one training step (forward, backward, Adam) of the same
pre-norm transformer block as the torch part, data-parallel under ``jax.shard_map`` (weights replicated, the batch
split over the mesh, gradients averaged with ``jax.lax.pmean``), with RMSNorm and GELU as jitkernel kernels (the
backward attached with ``kernel.vjp``) or as plain jnp, on meshes of 1, 2, 4 ... devices, all in this one process.

Before timing, the two variants' loss and per-parameter gradient norms of the first step are compared on the
first mesh, and their first-step losses on every mesh. Per mesh the variants are then timed in interleaved rounds
(one block of --steps steps of each per round, the order rotated), and jitkernel/jnp is the median of the per-round
ratios. The JSON (--json) is rewritten after every stage, so a run cut short keeps what it measured.

    python _distributed_jax.py --json PATH [--meshes 1,2,4] [options]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from types import SimpleNamespace

for _name, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                      ("NVSHMEM_DISABLE_NVLS", "1"), ("XLA_PYTHON_CLIENT_PREALLOCATE", "false")):
    os.environ.setdefault(_name, _value)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import _distributed_kernels as K  # noqa: E402
from _bench_common import paired  # noqa: E402

VARIANTS = ("jnp", "jitkernel")
DTYPES = {"bf16": jnp.bfloat16, "fp32": jnp.float32}
DTYPE_NAMES = {"bf16": "bfloat16", "fp32": "float32"}
TOLERANCE = {"bf16": (2e-2, 5e-2), "fp32": (1e-4, 1e-3)}
PARAM_NAMES = ("norm1", "wqkv", "wo", "norm2", "w1", "w2")


def short(e: BaseException, limit: int = 400) -> str:
    text = " ".join(f"{type(e).__name__}: {e}".split())
    return text if len(text) <= limit else text[:limit] + " ..."


def jnp_ops():
    def rmsnorm(x, w):
        xf = x.astype(jnp.float32)
        r = jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + K.EPS)
        return (xf * r * w.astype(jnp.float32)).astype(x.dtype)

    def gelu(h):
        return jax.nn.gelu(h.astype(jnp.float32), approximate=True).astype(h.dtype)

    return rmsnorm, gelu


def make_ops(variant, dtype):
    if variant == "jnp":
        return jnp_ops()
    ops = K.jitkernel_ops(DTYPE_NAMES[dtype], K.jax_sum_rows)
    return ops.rmsnorm, ops.gelu


def init_params(args):
    """Host (NumPy) weights: one dict per layer, the same for both variants."""
    rng = np.random.default_rng(1234)
    dt = np.dtype(DTYPES[args.dtype])
    d, hdim = args.dim, args.hidden
    normal = lambda shape, fan_in: (rng.standard_normal(shape, dtype=np.float32) / math.sqrt(fan_in)).astype(dt)
    return [{"norm1": np.ones((d,), dt), "wqkv": normal((d, 3 * d), d), "wo": normal((d, d), d),
             "norm2": np.ones((d,), dt), "w1": normal((d, hdim), d), "w2": normal((hdim, d), hdim)}
            for _ in range(args.layers)]


def block(p, x, rmsnorm, gelu, heads):
    b, s, d = x.shape
    h = rmsnorm(x.reshape(b * s, d), p["norm1"]).reshape(b, s, d)
    qkv = (h @ p["wqkv"]).reshape(b, s, 3, heads, d // heads)
    a = jax.nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=True)
    x = x + a.reshape(b, s, d) @ p["wo"]
    h = rmsnorm(x.reshape(b * s, d), p["norm2"]).reshape(b, s, d)
    return x + gelu(h @ p["w1"]) @ p["w2"]


def make_loss(ops, heads):
    rmsnorm, gelu = ops

    def loss_fn(params, x, tgt):
        for p in params:
            x = block(p, x, rmsnorm, gelu, heads)
        return jnp.mean((x.astype(jnp.float32) - tgt) ** 2)

    return loss_fn


def adam(params, grads, state, lr=1e-4, b1=0.9, b2=0.999, eps=1e-8):
    m, v, count = state
    count = count + 1
    m = jax.tree.map(lambda m_, g: b1 * m_ + (1 - b1) * g.astype(jnp.float32), m, grads)
    v = jax.tree.map(lambda v_, g: b2 * v_ + (1 - b2) * jnp.square(g.astype(jnp.float32)), v, grads)
    c1 = 1 - b1 ** count.astype(jnp.float32)
    c2 = 1 - b2 ** count.astype(jnp.float32)
    params = jax.tree.map(lambda p, m_, v_: (p.astype(jnp.float32) - lr * (m_ / c1) / (jnp.sqrt(v_ / c2) + eps))
                          .astype(p.dtype), params, m, v)
    return params, (m, v, count)


def shard_map(f, mesh, in_specs, out_specs):
    # check_vma=False: the jitkernel custom call has no replication rule of its own; the pmean makes the
    # gradients (and so the weights) equal on every device.
    try:
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    except TypeError:  # older JAX: check_rep
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)


def make_step(loss_fn, mesh):
    def local_step(params, state, x, tgt):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, tgt)
        grads = jax.lax.pmean(grads, "dp")
        params, state = adam(params, grads, state)
        return params, state, jax.lax.pmean(loss, "dp")

    f = shard_map(local_step, mesh, (P(), P(), P("dp"), P("dp")), (P(), P(), P()))
    return jax.jit(f, donate_argnums=(0, 1))


def make_grad_check(loss_fn, mesh):
    """Loss and each parameter's gradient norm (gradients averaged over the mesh), without an update."""
    def local(params, x, tgt):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, tgt)
        grads = jax.lax.pmean(grads, "dp")
        norms = [jnp.sqrt(jnp.sum(jnp.square(g[name].astype(jnp.float32)))) for g in grads for name in PARAM_NAMES]
        return jax.lax.pmean(loss, "dp"), jnp.stack(norms)

    return jax.jit(shard_map(local, mesh, (P(), P("dp"), P("dp")), (P(), P())))


def compare(a_loss, a_norms, b_loss, b_norms, tol):
    loss_rel = abs(a_loss - b_loss) / max(abs(b_loss), 1e-30)
    out = {"loss_rel": loss_rel, "ok": math.isfinite(a_loss) and loss_rel <= tol[0], "tolerance": list(tol)}
    if a_norms is not None:
        grad_rel = max((abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a_norms, b_norms)), default=0.0)
        out["grad_rel_max"] = grad_rel
        out["ok"] = out["ok"] and grad_rel <= tol[1]
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--meshes", default="1,2,4", help="device counts; larger than present: skipped")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--batch", type=int, default=8, help="sequences per device")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--deadline", type=float, default=0.0, help="time.time() after which no new round starts")
    args = ap.parse_args(argv)
    args.meshes = [int(n) for n in args.meshes.split(",") if n]
    args.variants = [v for v in VARIANTS if v in args.variants.split(",")]
    if args.dim % args.heads:
        ap.error("--dim must be a multiple of --heads")
    return args


def log(msg):
    print(f"[jax] {msg}", flush=True)


def new_results(args, devices) -> dict:
    res = {"versions": {"jax": jax.__version__}, "platform": devices[0].platform,
           "device": getattr(devices[0], "device_kind", str(devices[0])), "device_count": len(devices),
           "config": {k: v for k, v in vars(args).items() if k not in ("json", "deadline")},
           "variant_errors": {}, "meshes": {}}
    try:
        import jaxlib
        res["versions"]["jaxlib"] = jaxlib.__version__
    except Exception:  # noqa: BLE001 - informational
        pass
    return res


def json_writer(res, path, t_start):
    """``save()``: writes ``res`` (with the seconds since ``t_start``) to ``path``, through a temporary file."""
    def save():
        res["elapsed_s"] = time.perf_counter() - t_start
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, path)

    return save


def make_losses(args, res) -> dict:
    """{variant: loss function} for the variants whose ops could be made; the others' errors in the results."""
    losses = {}
    for v in args.variants:
        try:
            losses[v] = make_loss(make_ops(v, args.dtype), args.heads)
        except Exception as e:  # noqa: BLE001 - a row saying why
            res["variant_errors"][v] = short(e)
            log(f"{v}: not available: {res['variant_errors'][v]}")
    return losses


def mesh_deadline(run, n):
    """time.time() after which mesh ``n`` starts no new round, so that the meshes after it keep an equal share of
    what is left; 0.0 without --deadline, None when the budget is spent."""
    if not run.args.deadline:
        return 0.0
    left = run.args.deadline - time.time()
    if left <= 0:
        return None
    return time.time() + left / (len(run.todo) - run.todo.index(n))


def mesh_data(mesh, n, args):
    """Inputs and targets of the whole mesh (--batch sequences per device), split over it."""
    split = NamedSharding(mesh, P("dp"))
    key = jax.random.PRNGKey(7)
    kx, kt = jax.random.split(key)
    shape = (n * args.batch, args.seq, args.dim)
    x = jax.device_put(jax.random.normal(kx, shape, jnp.float32).astype(DTYPES[args.dtype]), split)
    tgt = jax.device_put(jax.random.normal(kt, shape, jnp.float32), split)
    return x, tgt


def start_variant(run, v, row, mesh, x, tgt):
    """Variant ``v`` on the mesh: the loss and gradient-norm check (until one mesh has done it), the first step
    (compiling) and the warm-up; [step, params, state] for the timed rounds."""
    rep = NamedSharding(mesh, P())
    if not run.checked:  # loss and gradient norms, once, on the first mesh
        t0 = time.perf_counter()
        loss, norms = make_grad_check(run.losses[v], mesh)(jax.device_put(run.host_params, rep), x, tgt)
        row["check_loss"], row["check_grad_norms"] = float(loss), [float(g) for g in norms]
        row["check_s"] = time.perf_counter() - t0
    params = jax.device_put(run.host_params, rep)
    zeros = lambda p: jnp.zeros(p.shape, jnp.float32)  # noqa: E731
    state = jax.device_put((jax.tree.map(zeros, run.host_params), jax.tree.map(zeros, run.host_params),
                            jnp.zeros((), jnp.int32)), rep)
    step = make_step(run.losses[v], mesh)
    t0 = time.perf_counter()
    params, state, loss = step(params, state, x, tgt)
    row["loss0"] = float(loss)
    row["first_step_s"] = time.perf_counter() - t0
    for _ in range(run.args.warmup):
        params, state, loss = step(params, state, x, tgt)
    jax.block_until_ready((params, loss))
    return [step, params, state]


def start_variants(run, entry, mesh, n, x, tgt) -> dict:
    """{variant: [step, params, state]} of the variants that started; a row with its error for the others."""
    live = {}
    for v in run.args.variants:
        row = entry["rows"][v] = {}
        if v not in run.losses:
            row["error"] = f"not available: {run.res['variant_errors'][v]}"
            continue
        try:
            live[v] = start_variant(run, v, row, mesh, x, tgt)
            log(f"mesh {n}, {v}: first step (compile) {row['first_step_s']:.1f} s, loss {row['loss0']:.6f}")
        except Exception as e:  # noqa: BLE001 - a row saying why
            row["error"] = short(e)
            log(f"mesh {n}, {v}: error: {row['error']}")
        run.save()
    return live


def check_variants(run, entry, live, n):
    """jitkernel against jnp on this mesh: loss and gradient norms (the first mesh only), first-step loss."""
    rows = entry["rows"]
    if "jitkernel" not in live or "jnp" not in live:
        return
    tol = TOLERANCE[run.args.dtype]
    a, b = rows["jitkernel"], rows["jnp"]
    if not run.checked and "check_loss" in a and "check_loss" in b:
        entry["grad_check"] = compare(a["check_loss"], a["check_grad_norms"], b["check_loss"],
                                      b["check_grad_norms"], tol)
        c = entry["grad_check"]
        log(f"check (mesh {n}, loss and grad norms): {'ok' if c['ok'] else 'FAILED'} (loss rel diff "
            f"{c['loss_rel']:.2e}, max grad-norm rel diff {c['grad_rel_max']:.2e})")
    entry["check"] = compare(a["loss0"], None, b["loss0"], None, tol)
    log(f"check (mesh {n}, first-step loss): {'ok' if entry['check']['ok'] else 'FAILED'} "
        f"(rel diff {entry['check']['loss_rel']:.2e})")


def time_rounds(args, entry, live, x, tgt, deadline) -> dict:
    """Interleaved rounds (one block of --steps steps of each live variant, the order rotated each round) until
    --rounds or ``deadline``; {variant: {round: ms per step}}."""
    rows = entry["rows"]
    times = {v: {} for v in live}
    names = list(live)
    for r in range(args.rounds):
        t_round = time.time()
        for v in names[r % len(names):] + names[:r % len(names)] if names else []:
            step, params, state = live[v]
            try:
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    params, state, loss = step(params, state, x, tgt)
                jax.block_until_ready((params, loss))
                times[v][r] = (time.perf_counter() - t0) / args.steps * 1e3
                live[v][1:] = [params, state]
            except Exception as e:  # noqa: BLE001
                rows[v]["error"] = f"round {r}: {short(e)}"
                names.remove(v)
        if not names:
            break
        if deadline and time.time() + (time.time() - t_round) > deadline:
            entry["stopped_early"] = f"time budget: {r + 1} of {args.rounds} rounds"
            log(entry["stopped_early"])
            break
    return times


def record_times(entry, times, n):
    """Each variant's median, min and max over rounds, and the paired jitkernel/jnp ratio, into the mesh's entry."""
    rows = entry["rows"]
    for v, by_round in times.items():
        if by_round:
            xs = list(by_round.values())
            rows[v].update(median_ms=statistics.median(xs), min_ms=min(xs), max_ms=max(xs), rounds=len(xs),
                           times_ms=[round(t, 4) for t in xs])
            log(f"mesh {n}, {v}: {rows[v]['median_ms']:.3f} ms/step (median of {len(xs)} rounds)")
    if times.get("jitkernel") and times.get("jnp"):
        entry["ratio"] = paired(times["jitkernel"], times["jnp"])
        if entry["ratio"]:
            log(f"mesh {n}: jitkernel/jnp {entry['ratio']['median']:.3f}")


def skip_mesh(run, entry, n, why):
    """The mesh's entry says why it was not run."""
    entry["skipped"] = why
    log(f"mesh of {n}: skipped ({entry['skipped']})")
    run.save()


def run_mesh(run, n):
    """One mesh of ``n`` devices, its entry in the results: start, check and time the variants (or skip it)."""
    entry = run.res["meshes"][str(n)] = {"rows": {}}
    if n > len(run.devices):
        skip_mesh(run, entry, n, f"{len(run.devices)} devices present")
        return
    # Rounds of this mesh stop in time to leave the meshes after it an equal share of what is left.
    deadline = mesh_deadline(run, n)
    if deadline is None:
        skip_mesh(run, entry, n, "time budget spent")
        return
    mesh = Mesh(np.array(run.devices[:n]), ("dp",))
    x, tgt = mesh_data(mesh, n, run.args)
    live = start_variants(run, entry, mesh, n, x, tgt)
    check_variants(run, entry, live, n)
    run.checked = run.checked or any("check_loss" in r for r in entry["rows"].values())
    times = time_rounds(run.args, entry, live, x, tgt, deadline)
    record_times(entry, times, n)
    live.clear()
    run.save()


def main(argv=None):
    args = parse_args(argv)
    t_start = time.perf_counter()
    devices = jax.devices()
    res = new_results(args, devices)
    save = json_writer(res, args.json, t_start)
    # What every mesh shares; ``checked``: the loss and gradient-norm check has been done (on the first mesh).
    run = SimpleNamespace(args=args, res=res, save=save, devices=devices, losses=make_losses(args, res),
                          host_params=init_params(args), checked=False,
                          todo=[n for n in args.meshes if n <= len(devices)])
    for n in args.meshes:
        run_mesh(run, n)
    res["done"] = True
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
