"""torchrun script: DistributedDataParallel over a model whose blocks call kernels with a backward (RMSNorm, GELU),
eagerly, as torch.compile(DDP(model)) and as DDP(torch.compile(model, fullgraph=True)). Each rank trains on its
slice of every global batch; the rank reports, per variant, the losses and how far its weights are from the other
ranks' and from the one-process reference (the plain-torch twin trained on the whole batches).

Arguments: the variants to run (default: all)."""
import copy
import sys

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import _kernels as K
import _rank as R


def _ddp(module, device):
    return DDP(module, device_ids=[device] if device.type == "cuda" else None)


VARIANTS = {
    "eager": _ddp,
    "compile(DDP)": lambda m, device: torch.compile(_ddp(m, device)),
    "DDP(compile)": lambda m, device: _ddp(torch.compile(m, fullgraph=True), device),
}


def main():
    rank, world, device = R.setup()
    model, twin = K.twins(lambda: K.Model(True), lambda: K.Model(False))
    ref = R.reference(twin.to(device), lambda step: K.batch(step, R.LOCAL * world, device))
    results = []
    for variant in sys.argv[1:] or VARIANTS:
        torch._dynamo.reset()
        raw = copy.deepcopy(model).to(device)
        results.append(R.check_training(variant, VARIANTS[variant](raw, device), raw, ref,
                                        R.local_data(rank, world, device)))
    R.report(results)
    R.finish()


if __name__ == "__main__":
    main()
