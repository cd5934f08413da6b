"""What each rank of the torchrun scripts in this folder shares: joining the job (NCCL, one GPU per rank; gloo when
torch has no GPU, which runs the scripts' plumbing on a CPU), training a module for a few SGD steps, the one-process
reference (the plain-torch twin trained on the whole batches on this rank), comparing parameters with it and
across ranks, and writing the rank's report as JSON for the test to check (``JK_TEST_REPORTS``/rank<N>.json)."""
from __future__ import annotations

import copy
import datetime
import json
import os

import torch
import torch.distributed as dist

from _kernels import batch

STEPS = 4
LR = 0.1
TOL = 2e-5  # largest difference from the one-process reference (losses, parameters, outputs, gradients); a GELU
# off by 0.1% moves the DDP weights by 2.4e-5 and the losses by 3.1e-5 from it, float32 rounding by about 1e-7
SPREAD_TOL = 1e-6  # largest difference between ranks' parameters
LOCAL = 8  # samples per rank in every global batch (the same on 2 and 4 ranks, so compiled graphs are reused)


def setup(backend: str | None = None):
    """Joins the job; returns (rank, world size, this rank's device)."""
    torch.set_float32_matmul_precision("highest")  # no TF32: the comparisons are float32 against float32
    local = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    backend = backend or ("nccl" if device.type == "cuda" else "gloo")
    bound = {"device_id": device} if backend == "nccl" else {}  # NCCL on this rank's GPU from the start
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=120), **bound)
    return dist.get_rank(), dist.get_world_size(), device


def finish() -> None:
    dist.barrier()
    dist.destroy_process_group()


def report(checks: list, **extra) -> None:
    """Writes this rank's report where the test reads it: its rank, device and checks (dicts with "check", "ok"
    and the numbers behind them)."""
    rank = dist.get_rank()
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else "cpu"
    data = dict(rank=rank, device=str(device), checks=checks, **extra)
    path = os.path.join(os.environ["JK_TEST_REPORTS"], f"rank{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


def full(p):
    """A parameter as one plain tensor (a DTensor's shards gathered)."""
    p = p.detach()
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def scaled_diff(a, b) -> float:
    """Largest difference between ``a`` and the reference ``b`` (one plain tensor each, or a DTensor ``a``),
    relative to b's largest magnitude where that exceeds 1."""
    a, b = full(a), b.detach()
    return ((a - b).abs().max() / b.abs().max().clamp(min=1)).item()


def local_data(rank: int, world: int, device):
    """The step's data for this rank: its slice of the global batch of LOCAL * world samples."""
    def data(step):
        x, target = batch(step, LOCAL * world, device)
        return x[rank * LOCAL:(rank + 1) * LOCAL], target[rank * LOCAL:(rank + 1) * LOCAL]
    return data


def train(module, params, data, steps: int = STEPS):
    """SGD on the mean squared error for ``steps`` steps; returns the losses (a tensor)."""
    opt = torch.optim.SGD(list(params), lr=LR)
    losses = []
    for step in range(steps):
        x, target = data(step)
        loss = torch.nn.functional.mse_loss(module(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    return torch.stack(losses)


def reference(twin, data):
    """Trains a copy of the twin on ``data`` (the whole batches); returns (trained twin, losses, largest change of
    any parameter, which the tests compare with their tolerance)."""
    twin = copy.deepcopy(twin)
    start = [p.detach().clone() for p in twin.parameters()]
    losses = train(twin, twin.parameters(), data)
    moved = max((p.detach() - s).abs().max().item() for p, s in zip(twin.parameters(), start))
    return twin, losses, moved


def spread(module) -> float:
    """Largest difference of any parameter between this rank and rank 0."""
    flat = torch.cat([full(p).flatten() for p in module.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    return max((g - gathered[0]).abs().max().item() for g in gathered)


def param_diff(module, twin):
    """(largest difference between a parameter of ``module`` and the twin's, the parameter's name)."""
    mine, theirs = list(module.named_parameters()), list(twin.named_parameters())
    assert len(mine) == len(theirs), f"{len(mine)} parameters vs the reference's {len(theirs)}"
    diffs = [((full(p) - q.detach()).abs().max().item(), name.replace("_orig_mod.", ""))
             for (name, p), (_, q) in zip(mine, theirs)]
    return max(diffs)


def check_training(variant: str, module, raw, ref, data) -> dict:
    """Trains ``module`` (``raw`` wrapped for the variant: DDP, FSDP, compiled...) on ``data`` and measures it
    against ``ref`` (from ``reference``): losses (averaged over ranks), parameters, ranks' agreement. ``ok`` when
    all are within the tolerances and training moved the parameters at least 10 * TOL (else the comparison would
    say nothing)."""
    losses = train(module, raw.parameters(), data)
    dist.all_reduce(losses)
    losses /= dist.get_world_size()
    twin, ref_losses, moved = ref
    diff, worst = param_diff(raw, twin)
    loss_diff, ranks = (losses - ref_losses).abs().max().item(), spread(raw)
    return {"check": variant, "ok": loss_diff <= TOL and diff <= TOL and ranks <= SPREAD_TOL and moved >= 10 * TOL,
            "loss_diff": loss_diff, "param_diff": diff, "worst_param": worst, "moved": moved, "spread": ranks,
            "losses": losses.tolist(), "ref_losses": ref_losses.tolist()}
