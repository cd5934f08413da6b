"""torchrun script: kernels on DTensors through jk.sharded, one device mesh over all ranks. The rank reports:

- tensor parallelism: MLP fc1 (ColwiseParallel, DTensor output) -> GELU kernel declared @jk.sharded("elementwise")
  -> fc2 (RowwiseParallel), trained eagerly and compiled: losses and gathered parameters against the plain-torch
  twin trained on the same batches in one process;
- the sharded GELU on the column-parallel output: a DTensor with the input's placements, no collective, right values;
- RMSNorm declared @jk.sharded("rowwise") on rows split over the ranks (Shard(0), and Shard(1) of a 3-D
  batch x sequence x hidden tensor) with a replicated weight: no collective in the forward, output, input gradient
  and weight gradient equal to the reference;
- refusals, each without a collective (never a redistribution): the raw kernel given a DTensor
  (jk.ArgumentTypeError naming the input and saying to use jk.sharded), the rowwise function given rows split on
  their last dim or a split weight, and the elementwise function given a Partial DTensor (jk.ArgumentError naming
  the argument).

Arguments: the checks to run (default: all)."""
import copy
import re
import sys

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import jitkernel as jk

import _kernels as K
import _rank as R

act = jk.sharded("elementwise")(K.gelu)
norm = jk.sharded("rowwise")(K.rms_norm)

# How an error may name argument 0 / 1 of the sharded functions (or their parameter names).
ARG0, ARG1 = (r"\b(argument|arg|args|input|inputs)\W{0,2}%d\b" % i for i in (0, 1))


def _parallel(mlp, mesh):
    return parallelize_module(mlp, mesh, {"fc1": ColwiseParallel(use_local_output=False), "fc2": RowwiseParallel()})


def training(mesh, device, world):
    """The tensor-parallel MLP, eager and compiled, against the one-process twin."""
    model, twin = K.twins(lambda: K.MLP(act), lambda: K.MLP(K.gelu_ref))
    data = lambda step: K.batch(step, R.LOCAL * world, device, out=K.DIM)  # noqa: E731 - every rank: all samples
    ref = R.reference(twin.to(device), data)
    results = []
    for variant, compiled in (("tp eager", False), ("tp compiled", True)):
        torch._dynamo.reset()
        raw = _parallel(copy.deepcopy(model).to(device), mesh)
        results.append(R.check_training(variant, torch.compile(raw) if compiled else raw, raw, ref, data))
    return results


def elementwise_on_colwise_output(mesh, device, world):
    torch.manual_seed(1)
    fc1 = parallelize_module(torch.nn.Linear(K.DIM, K.HIDDEN).to(device), mesh, ColwiseParallel(use_local_output=False))
    h = fc1(torch.randn(R.LOCAL, K.SEQ, K.DIM, device=device)).detach()
    with CommDebugMode() as comm:
        y = act(h)
    ok = isinstance(y, DTensor) and tuple(y.placements) == tuple(h.placements)
    diff = R.scaled_diff(y, K.gelu_ref(h.full_tensor())) if isinstance(y, DTensor) else None
    return [{"check": "elementwise on the column-parallel output", "input_placements": str(h.placements),
             "output": type(y).__name__, "output_placements": str(getattr(y, "placements", None)),
             "collectives": comm.get_total_counts(), "diff": diff,
             "ok": bool(ok and comm.get_total_counts() == 0 and diff is not None and diff <= R.TOL)}]


def rowwise_on_split_rows(mesh, device, world):
    """RMSNorm forward and backward on rows split over the ranks, against the reference on whole tensors."""
    results = []
    for what, placement, shape in (("batch", Shard(0), (2 * world, K.SEQ, K.HIDDEN)),
                                   ("sequence", Shard(1), (2, K.SEQ * world, K.HIDDEN))):
        g = torch.Generator().manual_seed(2)
        xf, cf = (torch.randn(shape, generator=g).to(device) for _ in range(2))
        wf = (1 + 0.1 * torch.randn(K.HIDDEN, generator=g)).to(device)
        x = distribute_tensor(xf, mesh, [placement]).requires_grad_()
        w = distribute_tensor(wf, mesh, [Replicate()]).requires_grad_()
        with CommDebugMode() as comm:
            y = norm(x, w)
        collectives = comm.get_total_counts()
        entry = {"check": f"rowwise on rows split by {what}", "shape": shape, "output": type(y).__name__,
                 "output_placements": str(getattr(y, "placements", None)), "collectives": collectives}
        if isinstance(y, DTensor):
            y.backward(distribute_tensor(cf, mesh, [placement]))
            xr, wr = xf.clone().requires_grad_(), wf.clone().requires_grad_()
            yr = K.rms_norm_ref(xr, wr)
            yr.backward(cf)
            entry.update(y=R.scaled_diff(y, yr), dx=R.scaled_diff(x.grad, xr.grad),
                         dweight=R.scaled_diff(w.grad, wr.grad), dweight_placements=str(w.grad.placements))
        numbers = [entry.get(k) for k in ("y", "dx", "dweight")]
        entry["ok"] = (tuple(getattr(y, "placements", ())) == (placement,) and collectives == 0
                       and all(n is not None and n <= R.TOL for n in numbers))
        results.append(entry)
    return results


def _refused(check: str, expected, call, *patterns) -> dict:
    """Runs ``call()``, which must raise ``expected`` whose message matches every pattern, with no collective."""
    error = None
    with CommDebugMode() as comm:
        try:
            call()
        except Exception as e:  # noqa: BLE001 - reported, and the check fails unless it is the expected error
            error = e
    message = str(error) if error is not None else ""
    ok = isinstance(error, expected) and comm.get_total_counts() == 0 and all(re.search(p, message) for p in patterns)
    return {"check": check, "ok": bool(ok), "raised": type(error).__name__ if error is not None else "nothing",
            "message": message[:600], "collectives": comm.get_total_counts()}


def refusals(mesh, device, world):
    torch.manual_seed(3)
    h = distribute_tensor(torch.randn(R.LOCAL, K.HIDDEN * world, device=device), mesh, [Shard(1)])
    w = distribute_tensor(torch.ones(K.HIDDEN * world, device=device), mesh, [Replicate()])
    rows = distribute_tensor(torch.randn(2 * world, K.HIDDEN * world, device=device), mesh, [Shard(0)])
    w_split = distribute_tensor(torch.ones(K.HIDDEN * world, device=device), mesh, [Shard(0)])
    partial = DTensor.from_local(torch.randn(R.LOCAL, K.HIDDEN, device=device), mesh, [Partial()])
    results = [_refused(f"raw kernel given a DTensor (requires_grad={grad})", jk.ArgumentTypeError,
                        lambda: K.gelu(h.detach().requires_grad_(grad)), r"jk\.sharded",
                        r"\bact_in\b|inputs\[0\]|input 0") for grad in (False, True)]
    results.append(_refused("rowwise given rows split on their last dim", jk.ArgumentError, lambda: norm(h, w),
                            rf"\bhidden\b|{ARG0}"))
    results.append(_refused("rowwise given a split weight", jk.ArgumentError, lambda: norm(rows, w_split),
                            rf"\bweight\b|{ARG1}"))
    results.append(_refused("elementwise given a Partial DTensor", jk.ArgumentError, lambda: act(partial),
                            rf"\bx\b|{ARG0}"))
    return results


CHECKS = {f.__name__: f for f in (training, elementwise_on_colwise_output, rowwise_on_split_rows, refusals)}


def main():
    rank, world, device = R.setup()
    mesh = init_device_mesh(device.type, (world,))
    results = []
    for name in sys.argv[1:] or CHECKS:
        results.extend(CHECKS[name](mesh, device, world))
    R.report(results)
    R.finish()


if __name__ == "__main__":
    main()
