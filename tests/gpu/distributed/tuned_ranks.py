"""torchrun script for autotuning across ranks: every rank (one per GPU) calls one autotuned kernel on a torch
tensor of its GPU, all at once on an empty shared cache (a gloo barrier first). One rank claims the bucket and times
the candidates (a slow, a fast and a middling configuration); the others wait on its claim and read its decision.
Each rank checks its output against torch, gathers every rank's chosen configuration (all must agree: a must for
deterministic training) and reports its tuning counts and choice; then a second tuned object of the same kernel on
each rank reads the stored decision and times nothing."""
import torch
import torch.distributed as dist

import jitkernel as jk

import _rank as R

SPIN = """
size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
if (SLOW_US > 0 && threadIdx.x == 0) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < SLOW_US * 1000ull);
}
__syncthreads();
if (i < inp_shape[0]) out[i] = inp[i] * 2 + 1;
"""
SPACE = [jk.Config(template={"SLOW_US": us}, threadgroup=(tg, 1, 1)) for us, tg in ((40, 256), (0, 128), (20, 64))]
FASTEST = 1


def tuned_kernel():
    k = jk.cuda_kernel(name="tuned_ranks", input_names=["inp"], output_names=["out"], source=SPIN)
    return jk.autotune(k, configs=SPACE, grid=lambda shapes, cfg: (shapes[0][0], 1, 1))


def main():
    rank, world, device = R.setup("gloo")
    x = torch.arange(8192, dtype=torch.float32, device=device) * (rank + 1)
    tuned = tuned_kernel()
    torch.cuda.synchronize()
    dist.barrier()
    (y,) = tuned(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[jk.float32])
    ok = bool(torch.equal(y, x * 2 + 1)) and y.device == device
    chosen = SPACE.index(tuned.tune(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[jk.float32]))
    everyone = [None] * world
    dist.all_gather_object(everyone, chosen)
    again = tuned_kernel()  # a second object: the decision comes from the cache, nothing is timed
    (z,) = again(inputs=[x], output_shapes=[tuple(x.shape)], output_dtypes=[jk.float32])
    ok_again = bool(torch.equal(z, y)) and again.stats == {"tuned": 0, "loaded": 1, "candidates_timed": 0}
    R.report([{"check": "output", "ok": ok}, {"check": "ranks agree", "ok": len(set(everyone)) == 1,
                                              "chosen": everyone},
              {"check": "stored decision", "ok": ok_again, "stats": again.stats}],
             stats=tuned.stats, chosen=chosen)
    R.finish()


if __name__ == "__main__":
    main()
