"""torchrun script: FSDP2 (fully_shard on every block, then on the model) over a model whose blocks call kernels
with a backward (RMSNorm, GELU), eagerly and with each block compiled (torch.compile(block, fullgraph=True) before
fully_shard, as torchtitan does). Each rank trains on its slice of every global batch; the rank reports, per variant,
the losses and how far the gathered parameters (DTensor.full_tensor()) are from the one-process reference (the
plain-torch twin trained on the whole batches).

Arguments: the variants to run (default: both)."""
import copy
import sys

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import _kernels as K
import _rank as R


def _shard(model, mesh, compiled: bool):
    for i, block in enumerate(model.blocks):
        if compiled:
            block = torch.compile(block, fullgraph=True)
            model.blocks[i] = block
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


VARIANTS = {"eager": False, "compiled": True}


def main():
    rank, world, device = R.setup()
    mesh = init_device_mesh(device.type, (world,))
    model, twin = K.twins(lambda: K.Model(True), lambda: K.Model(False))
    ref = R.reference(twin.to(device), lambda step: K.batch(step, R.LOCAL * world, device))
    results = []
    for variant in sys.argv[1:] or VARIANTS:
        torch._dynamo.reset()
        raw = _shard(copy.deepcopy(model).to(device), mesh, VARIANTS[variant])
        results.append(R.check_training(variant, raw, raw, ref, R.local_data(rank, world, device)))
    R.report(results)
    R.finish()


if __name__ == "__main__":
    main()
