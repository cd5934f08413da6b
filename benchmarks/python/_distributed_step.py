"""The torch part of bench_distributed.py, run on every GPU by torchrun: the time of one training step (forward,
backward, AdamW step) of a pre-norm transformer block whose RMSNorm and GELU are jitkernel kernels, Triton kernels
(torch.library.triton_op) or plain torch ops, under DDP and FSDP2 (fully_shard), compiled (torch.compile of each
block, as torchtitan does) and eagerly.

Every variant is built in this one process, checked once (its first step's loss and gradient norms against the plain
torch variant's, from the same initial weights and data), then timed in interleaved rounds: one block of --steps
steps of each variant per round, the order rotated every round, so that drift of the machine hits all variants alike.
A block's time is the slowest rank's. Rank 0 writes the JSON (--json) after every stage, so a run cut short keeps
what it measured; a variant that fails is a row with its error, never the end of the run.

    python -m torch.distributed.run --nproc_per_node=N _distributed_step.py --json PATH [options]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from datetime import timedelta
from types import SimpleNamespace

for _name, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                      ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_name, _value)  # the driver sets them; a direct torchrun gets them too

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch._dynamo  # noqa: E402,F401  (its exception types; torch.compile imports it anyway)

import _distributed_kernels as K  # noqa: E402
from _bench_common import paired  # noqa: E402

IMPLS = ("torch", "triton", "jitkernel")  # torch first: the reference of the checks, and least likely to fault
WRAPPERS = ("ddp", "fsdp2")
MODES = ("compile", "eager")
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
DTYPE_NAMES = {"bf16": "bfloat16", "fp32": "float32"}
# First-step agreement with the torch variant: relative difference of the loss and of each parameter's grad norm.
TOLERANCE = {"bf16": (2e-2, 5e-2), "fp32": (1e-4, 1e-3)}


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(rmsnorm(x)), then + fc2(gelu(fc1(rmsnorm(x)))); causal attention
    through scaled_dot_product_attention. ``ops`` supplies rmsnorm(x2d, w) and gelu(h)."""

    def __init__(self, dim, heads, hidden, ops):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.Parameter(torch.ones(dim))
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.norm2 = nn.Parameter(torch.ones(dim))
        self.fc1 = nn.Linear(dim, hidden, bias=False)
        self.fc2 = nn.Linear(hidden, dim, bias=False)
        self.rmsnorm = ops.rmsnorm
        self.act = ops.gelu

    def forward(self, x):
        b, s, d = x.shape
        h = self.rmsnorm(x.reshape(b * s, d), self.norm1).view(b, s, d)
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        h = self.rmsnorm(x.reshape(b * s, d), self.norm2).view(b, s, d)
        return x + self.fc2(self.act(self.fc1(h)))


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def make_ops(impl, dtype_name):
    if impl == "torch":
        return K.torch_ops()
    if impl == "triton":
        return K.triton_ops()
    return K.jitkernel_ops(DTYPE_NAMES[dtype_name], K.torch_sum_rows)


def fully_shard_fn():
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:  # torch < 2.6 kept FSDP2 under _composable
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def short(e: BaseException, limit: int = 400) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " ..."


class Variant:
    """One (wrapper, mode, impl): its model, optimizer and step."""

    def __init__(self, key, wrapper, mode, impl, model, opt, sharded):
        self.key, self.wrapper, self.mode, self.impl = key, wrapper, mode, impl
        self.model, self.opt, self.sharded = model, opt, sharded

    def loss(self, x, tgt):
        return (self.model(x).float() - tgt).pow(2).mean()

    def step(self, x, tgt):
        loss = self.loss(x, tgt)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss

    def first_step(self, x, tgt):
        """The checked step: (loss, per-parameter grad norms), then the optimizer step."""
        loss = self.loss(x, tgt)
        loss.backward()
        squares = []
        for p in self.model.parameters():
            g = p.grad
            if g is None:
                squares.append(torch.zeros((), device=x.device))
                continue
            local = g.to_local() if hasattr(g, "to_local") else g  # FSDP2: this rank's shard
            squares.append(local.float().pow(2).sum())
        sq = torch.stack(squares)
        if self.sharded:
            dist.all_reduce(sq)
        norms = sq.sqrt().tolist()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss.item(), norms


def build(args, wrapper, mode, impl, ops, device, fullgraph):
    torch.manual_seed(1234)  # the same initial weights for every variant and rank
    blocks = [Block(args.dim, args.heads, args.hidden, ops).to(device=device, dtype=DTYPES[args.dtype])
              for _ in range(args.layers)]
    if mode == "compile":
        blocks = [torch.compile(b, fullgraph=fullgraph, dynamic=False) for b in blocks]
    model = Stack(blocks)
    if wrapper == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    else:
        fully_shard = fully_shard_fn()
        for b in model.blocks:
            fully_shard(b)
        fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return Variant(f"{wrapper}/{mode}/{impl}", wrapper, mode, impl, model, opt, wrapper == "fsdp2")


def agree(flag: bool, device) -> bool:
    """True on every rank when ``flag`` holds on every rank."""
    t = torch.tensor([0.0 if flag else 1.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item() == 0.0


def rank_max(value: float, device) -> float:
    t = torch.tensor([value], device=device, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def versions():
    info = {"torch": torch.__version__, "cuda": torch.version.cuda}
    try:
        info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    except Exception:  # noqa: BLE001 - informational
        pass
    for mod in ("triton", "jitkernel"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001 - informational
            info[mod] = f"not importable ({type(e).__name__})"
    return info


def check(rows, keys, args):
    """First-step agreement of each variant of one (wrapper, mode) with its torch variant."""
    loss_tol, grad_tol = TOLERANCE[args.dtype]
    ref_key = next((k for k in keys if k.endswith("/torch") and "loss0" in rows[k]), None)
    out = {}
    for key in keys:
        row = rows[key]
        if "loss0" not in row:
            continue
        if ref_key is None:
            out[key] = {"ok": None, "note": "no torch variant to compare with"}
            continue
        ref = rows[ref_key]
        loss_rel = abs(row["loss0"] - ref["loss0"]) / max(abs(ref["loss0"]), 1e-30)
        grad_rel = max((abs(a - b) / max(abs(b), 1e-30) for a, b in zip(row["grad_norms"], ref["grad_norms"])),
                       default=0.0)
        ok = math.isfinite(row["loss0"]) and loss_rel <= loss_tol and grad_rel <= grad_tol
        out[key] = {"ok": ok, "loss_rel": loss_rel, "grad_rel_max": grad_rel, "reference": ref_key,
                    "tolerance": [loss_tol, grad_tol]}
        row["check"] = out[key]
    return out


def summarize(res, times):
    for key, by_round in times.items():
        if by_round:
            xs = list(by_round.values())
            res["rows"][key].update(median_ms=statistics.median(xs), min_ms=min(xs), max_ms=max(xs),
                                    rounds=len(xs), times_ms=[round(t, 4) for t in xs])
    ratios = {}
    for wrapper in WRAPPERS:
        for mode in MODES:
            group = f"{wrapper}/{mode}"
            jk = times.get(f"{group}/jitkernel")
            if not jk:
                continue
            for other in ("triton", "torch"):
                theirs = times.get(f"{group}/{other}")
                r = paired(jk, theirs) if theirs else None
                if r:
                    ratios.setdefault(group, {})[f"jitkernel/{other}"] = r
    res["ratios"] = ratios


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", required=True, help="where rank 0 writes the results")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--batch", type=int, default=8, help="sequences per GPU")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--wrappers", default=",".join(WRAPPERS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=10, help="steps per timed block")
    ap.add_argument("--warmup", type=int, default=3, help="steps of each variant after its first")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="time.time() after which no new round starts (0: none)")
    ap.add_argument("--nccl-timeout", type=int, default=300)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: gloo and CPU tensors, to check this script's logic on a machine without a GPU")
    args = ap.parse_args(argv)
    for name, allowed in (("impls", IMPLS), ("wrappers", WRAPPERS), ("modes", MODES)):
        chosen = [v for v in getattr(args, name).split(",") if v]
        bad = [v for v in chosen if v not in allowed]
        if bad:
            ap.error(f"--{name}: unknown {bad}; choose from {list(allowed)}")
        setattr(args, name, [v for v in allowed if v in chosen])  # canonical order
    if args.dim % args.heads:
        ap.error("--dim must be a multiple of --heads")
    return args


def init_distributed(args):
    """The process group and this rank's device: NCCL and its GPU, or (--device cpu) gloo and the CPU;
    (device, its name, its synchronize)."""
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", device_id=device, timeout=timedelta(seconds=args.nccl_timeout))
        return device, torch.cuda.get_device_name(device), torch.cuda.synchronize
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.nccl_timeout))
    return torch.device("cpu"), "cpu", (lambda: None)


def load_ops(run) -> dict:
    """{impl: ops} of the implementations that loaded on every rank; the others' errors in the results."""
    ops = {}
    for impl in run.args.impls:
        try:
            ops[impl] = make_ops(impl, run.args.dtype)
            ok, err = True, None
        except Exception as e:  # noqa: BLE001 - a row saying why
            ok, err = False, short(e)
        if not agree(ok, run.device):
            run.res["impl_errors"][impl] = err or "failed on another rank"
            ops.pop(impl, None)
            run.log(f"{impl}: not available: {run.res['impl_errors'][impl]}")
    return ops


def build_first_step(run, wrapper, mode, impl, row):
    """Builds the variant and runs its checked first step: compiled with fullgraph=True first and, when dynamo
    reports a graph break, again without. (variant, None, loss, grad norms), or (None, error, ...) on this rank."""
    err, v, loss0, norms = None, None, None, None
    for fullgraph in ((True, False) if mode == "compile" else (True,)):
        try:
            v = build(run.args, wrapper, mode, impl, run.ops[impl], run.device, fullgraph)
            loss0, norms = v.first_step(run.x, run.tgt)
            run.sync()
            err = None
            if not fullgraph:
                row["note"] = "graph break under fullgraph=True; compiled with graph breaks"
            break
        except torch._dynamo.exc.Unsupported as e:
            err, v = short(e), None
            row["fullgraph_error"] = err
        except Exception as e:  # noqa: BLE001 - a row saying why
            err, v = short(e), None
            break
    return v, err, loss0, norms


def start_variant(run, wrapper, mode, impl):
    """The variant's row, built and its first step taken on every rank; the variant, or None (its row says why)."""
    key = f"{wrapper}/{mode}/{impl}"
    row = run.res["rows"][key] = {"wrapper": wrapper, "mode": mode, "impl": impl}
    if impl not in run.ops:
        row["error"] = f"{impl} not available: {run.res['impl_errors'].get(impl)}"
        return None
    t0 = time.perf_counter()
    v, err, loss0, norms = build_first_step(run, wrapper, mode, impl, row)
    if not agree(err is None, run.device):
        row["error"] = err or "failed on another rank"
        run.log(f"{key}: error: {row['error']}")
        run.save()
        return None
    row["first_step_s"] = rank_max(time.perf_counter() - t0, run.device)
    row["loss0"], row["grad_norms"] = loss0, norms
    run.log(f"{key}: first step (build{', compile' if mode == 'compile' else ''}) "
            f"{row['first_step_s']:.1f} s, loss {loss0:.6f}")
    run.save()
    return v


def start_variants(run) -> list:
    """Every (mode, wrapper, impl) built and its first step taken, then each (wrapper, mode) checked against its
    torch variant (logged); the variants that work."""
    variants = []
    for mode in run.args.modes:
        for wrapper in run.args.wrappers:
            started = [start_variant(run, wrapper, mode, impl) for impl in run.args.impls]
            variants += [v for v in started if v is not None]
            keys = [f"{wrapper}/{mode}/{impl}" for impl in run.args.impls]
            for key, c in check(run.res["rows"], keys, run.args).items():
                if key == c.get("reference"):
                    continue
                if c.get("ok") is None:
                    run.log(f"check {key}: {c.get('note')}")
                else:
                    run.log(f"check {key}: {'ok' if c['ok'] else 'FAILED'} (loss rel diff {c['loss_rel']:.2e}, "
                            f"max grad-norm rel diff {c['grad_rel_max']:.2e} vs {c['reference']}; "
                            f"tolerance {c['tolerance'][0]:g} / {c['tolerance'][1]:g})")
    return variants


def warm_up(run, variants) -> list:
    """--warmup steps of each variant; those that took them on every rank."""
    live = []
    for v in variants:
        try:
            for _ in range(run.args.warmup):
                v.step(run.x, run.tgt)
            run.sync()
            ok, err = True, None
        except Exception as e:  # noqa: BLE001
            ok, err = False, short(e)
        if agree(ok, run.device):
            live.append(v)
        else:
            run.res["rows"][v.key]["error"] = f"warm-up: {err or 'failed on another rank'}"
    return live


def time_rounds(run, live) -> dict:
    """Interleaved rounds until --rounds, the deadline or no variant left: per round a block of --steps steps of
    each variant (the order rotated, each block started together on all ranks), its time the slowest rank's, the
    results summarized and saved. {variant key: {round: ms per step}}."""
    res, args = run.res, run.args
    times = {v.key: {} for v in live}
    r = 0
    while live and r < args.rounds:
        t_round = time.time()
        order = live[r % len(live):] + live[:r % len(live)]
        dts, failed = [], []
        for v in order:
            dist.barrier()
            run.sync()
            t0 = time.perf_counter()
            try:
                for _ in range(args.steps):
                    v.step(run.x, run.tgt)
                run.sync()
                dts.append((time.perf_counter() - t0) / args.steps * 1e3)
                failed.append(0.0)
            except Exception as e:  # noqa: BLE001
                res["rows"][v.key]["error"] = f"round {r}: {short(e)}"
                dts.append(0.0)
                failed.append(1.0)
        over = args.deadline and time.time() + (time.time() - t_round) > args.deadline
        t = torch.tensor(dts + failed + [1.0 if (run.rank == 0 and over) else 0.0], device=run.device,
                         dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        vals = t.tolist()
        n = len(order)
        for i, v in enumerate(order):
            if vals[n + i]:
                res["rows"][v.key].setdefault("error", f"round {r}: failed on another rank")
            else:
                times[v.key][r] = vals[i]
        live = [v for i, v in enumerate(order) if not vals[n + i]]
        live.sort(key=lambda v: list(times).index(v.key))
        r += 1
        summarize(res, times)
        res["rounds_done"] = r
        run.save()
        if vals[-1]:
            res["stopped_early"] = f"time budget: {r} of {args.rounds} rounds"
            run.log(res["stopped_early"])
            break
    return times


def main(argv=None):
    args = parse_args(argv)
    device, device_name, sync = init_distributed(args)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_float32_matmul_precision("high")
    for limit in ("cache_size_limit", "recompile_limit"):  # one compiled entry per variant, all of the same code
        if hasattr(torch._dynamo.config, limit):
            setattr(torch._dynamo.config, limit, 64)

    res = {"world_size": world, "device": device_name, "versions": versions(),
           "config": {k: v for k, v in vars(args).items() if k not in ("json", "deadline")},
           "rows": {}, "impl_errors": {}, "stage": "setup"}
    t_start = time.perf_counter()

    def save():
        if rank != 0:
            return
        res["elapsed_s"] = time.perf_counter() - t_start
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(res, f, indent=1)
        os.replace(tmp, args.json)

    def log(msg):
        if rank == 0:
            print(f"[rank 0 of {world}] {msg}", flush=True)

    # What the stages below share (ops: set once loaded).
    run = SimpleNamespace(args=args, res=res, device=device, sync=sync, rank=rank, save=save, log=log)
    save()
    run.ops = load_ops(run)
    gen = torch.Generator(device="cpu").manual_seed(100 + rank)  # each rank its own batch
    run.x = torch.randn(args.batch, args.seq, args.dim, generator=gen).to(device, DTYPES[args.dtype])
    run.tgt = torch.randn(args.batch, args.seq, args.dim, generator=gen).to(device)
    variants = start_variants(run)
    save()

    # Warm-up, then interleaved rounds.
    res["stage"] = "warmup"
    save()
    live = warm_up(run, variants)
    res["stage"] = "rounds"
    save()
    times = time_rounds(run, live)
    res["stage"] = "done"
    summarize(res, times)
    save()
    for key, row in res["rows"].items():
        if "median_ms" in row:
            log(f"{key:<26} {row['median_ms']:8.3f} ms/step (median of {row['rounds']} rounds)")
        elif "error" in row:
            log(f"{key:<26} error: {row['error']}")
    for group, rs in res.get("ratios", {}).items():
        for name, st in rs.items():
            log(f"{group:<16} {name:<18} {st['median']:.3f} (min {st['min']:.3f}, max {st['max']:.3f})")
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
