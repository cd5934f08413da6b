"""torchrun script for the shared compile cache: every rank (any number per GPU: LOCAL_RANK % the GPUs it sees)
makes its CUDA context, waits for all the others (a gloo barrier, so that they look the kernels up together), then
runs the four kernels of _kernels (RMSNorm and GELU, forward and backward) on torch tensors of its GPU, compares
outputs and input gradient with torch, and reports its compile cache counts (jk.cache_info(): misses = NVRTC
compiles, stores, hits, read-only tier hits, claim waits)."""
import torch
import torch.distributed as dist

import jitkernel as jk

import _kernels as K
import _rank as R


def main():
    _, _, device = R.setup("gloo")
    torch.manual_seed(0)
    x = torch.randn(8, K.SEQ, K.HIDDEN, device=device)
    weight = (1 + 0.1 * torch.randn(K.HIDDEN)).to(device)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    torch.cuda.synchronize()
    dist.barrier()
    y = K.rms_norm(K.gelu(xs[0]), weight)
    (y ** 2).sum().backward()
    y_ref = K.rms_norm_ref(K.gelu_ref(xs[1]), weight)
    (y_ref ** 2).sum().backward()
    diff, dx = R.scaled_diff(y, y_ref), R.scaled_diff(xs[0].grad, xs[1].grad)
    i = jk.cache_info()
    R.report([{"check": "kernels", "ok": diff <= R.TOL and dx <= R.TOL, "y": diff, "dx": dx}],
             hits=i.hits, misses=i.misses, stores=i.stores, readonly_hits=i.readonly_hits, claim_waits=i.claim_waits)
    R.finish()


if __name__ == "__main__":
    main()
