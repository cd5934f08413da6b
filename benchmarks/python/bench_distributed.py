"""What jitkernel kernels cost inside a distributed training step (issue 25, "Measure"): one step (forward, backward,
optimizer) of a small pre-norm transformer block whose RMSNorm and GELU are (a) jitkernel kernels with a backward
(CUDA C bodies, attached with ``kernel.vjp``), (b) the same algorithms as Triton kernels registered with
``torch.library.triton_op`` + ``wrap_triton`` + ``register_autograd``, (c) plain torch ops; under DDP and FSDP2
(``fully_shard``), compiled (``torch.compile`` of each block) and eagerly, on 1, 2 and 4 GPUs with the same batch
per GPU (weak scaling). Then the JAX version of the step under ``jax.shard_map`` (batch split over the mesh,
gradients ``pmean``-ed), jitkernel kernels vs plain jnp, on meshes of 1, 2 and 4 devices.

    python benchmarks/python/bench_distributed.py --out DIR [--gpus 1,2,4] [--quick]

This script only drives: for each GPU count it runs ``python -m torch.distributed.run --nproc_per_node=N
_distributed_step.py`` (a free MASTER_PORT each time, a time limit, the whole process group ended on timeout) and
reads rank 0's JSON; then ``_distributed_jax.py`` once over all mesh sizes. Inside each process every variant is
checked once (first-step loss and per-parameter gradient norms against the plain variant, printed) and then timed
in interleaved rounds (one block of steps of each variant per round, the order rotated), so the machine's drift
hits all variants alike: a variant's time is the median over rounds, jitkernel/triton and jitkernel/torch are
medians of per-round paired ratios, and the scaling table divides each variant's step time at N GPUs by its time
at 1 GPU. A variant that fails is a row with its error; a GPU count above what is present is skipped, saying so.

The whole run keeps to --budget seconds (default 235): each part gets a time limit that leaves the later parts their
share, and stops starting new rounds in time to finish. Writes DIR/bench_distributed.json, DIR/bench_distributed.md
(device, GPU count, versions, commit, tables; both written by _distributed_report.py, which can render the markdown
again from a saved JSON) and DIR/bench_distributed.log (every subprocess's output).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from _bench_common import git_commit
from _distributed_report import IMPLS, MODES, WRAPPERS, save

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_WORKER = os.path.join(HERE, "_distributed_step.py")
JAX_WORKER = os.path.join(HERE, "_distributed_jax.py")
# NVLink multicast (NVLS) stays off on the lent machines: every subprocess gets these.
MANDATORY_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# Seconds kept for each part still to come when a part's time limit is set (they run faster: warm caches).
SHARE_TORCH, SHARE_JAX, SHARE_REPORT = 35, 45, 5
MIN_PART_S = 20  # a part with less time than this left is not started

os.environ.update(MANDATORY_ENV)


# --- running the parts ------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Log:
    """The run's log file; each subprocess line also goes to stdout (with a prefix)."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.lock = threading.Lock()

    def line(self, text, prefix=""):
        with self.lock:
            self.f.write(prefix + text + "\n")
            print(prefix + text, flush=True)


def run_part(cmd, env, timeout, log, prefix):
    """Runs ``cmd`` in its own process group with output streamed to the log; (exit code or None on timeout,
    seconds, last lines). On timeout the whole group (torchrun and its workers) gets SIGTERM, then SIGKILL."""
    log.line("$ " + " ".join(cmd), prefix)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True, cwd=HERE)
    tail = []

    def pump():
        for raw in proc.stdout:
            text = raw.rstrip("\n")
            tail.append(text)
            del tail[:-40]
            log.line(text, prefix)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    rc = None
    try:
        rc = proc.wait(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        log.line(f"time limit of {timeout:.0f} s reached: ending the process group", prefix)
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    reader.join(timeout=5)
    return rc, time.perf_counter() - t0, list(tail)


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def failure_reason(rc, tail):
    if rc is None:
        return "timed out"
    lines = [l for l in tail if l.strip() and not l.startswith("$ ")]
    errors = [l for l in lines if "Error" in l or "error" in l]
    return f"exit {rc}: " + ((errors or lines or ["no output"])[-1].strip()[:300])


def common_args(args):
    out = ["--dtype", args.dtype, "--batch", str(args.batch), "--seq", str(args.seq), "--dim", str(args.dim),
           "--heads", str(args.heads), "--hidden", str(args.hidden), "--layers", str(args.layers),
           "--rounds", str(args.rounds), "--steps", str(args.steps), "--warmup", str(args.warmup)]
    return out


def part_limit(deadline, parts_after_torch, jax_after):
    """Seconds this part may take so that the parts after it keep their shares."""
    reserve = SHARE_REPORT + SHARE_TORCH * parts_after_torch + (SHARE_JAX if jax_after else 0)
    return deadline - time.time() - reserve


def torch_part(n, args, env, deadline, parts_after, jax_after, log, tmp):
    limit = part_limit(deadline, parts_after, jax_after)
    if limit < MIN_PART_S:
        return {"not_run": f"time budget spent ({max(0, limit):.0f} s left for it)"}
    path = os.path.join(tmp, f"torch_{n}.json")
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={n}", "--master_addr=127.0.0.1",
           f"--master_port={free_port()}", TORCH_WORKER, "--json", path, *common_args(args),
           "--impls", ",".join(args.impls), "--wrappers", ",".join(args.wrappers), "--modes", ",".join(args.modes),
           "--deadline", f"{time.time() + limit - 15:.0f}"]
    if args.cpu:
        cmd += ["--device", "cpu"]
    return collect(path, *run_part(cmd, env, limit, log, f"[torch {n}] "))


def jax_part(meshes, args, env, deadline, log, tmp):
    limit = deadline - time.time() - SHARE_REPORT
    if limit < MIN_PART_S:
        return {"not_run": f"time budget spent ({max(0, limit):.0f} s left for it)"}
    path = os.path.join(tmp, "jax.json")
    cmd = [sys.executable, JAX_WORKER, "--json", path, "--meshes", ",".join(map(str, meshes)),
           *common_args(args), "--deadline", f"{time.time() + limit - 10:.0f}"]
    return collect(path, *run_part(cmd, env, limit, log, "[jax] "))


def collect(path, rc, seconds, tail) -> dict:
    """A part's JSON (what its worker wrote, even when cut short) with how the part ended."""
    data = read_json(path) or {}
    data["exit"] = rc
    data["seconds"] = seconds
    if rc != 0:
        data["failure"] = failure_reason(rc, tail)
    return data


def gpus_present(cpu: bool, wanted) -> tuple:
    """(count, how it was found). torch in a subprocess (it follows CUDA_VISIBLE_DEVICES and leaves this process
    without a CUDA context), else nvidia-smi."""
    if cpu:
        return max(wanted), "--cpu: host devices"
    try:
        p = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 0 and p.stdout.strip().isdigit():
            return int(p.stdout.strip()), "torch.cuda.device_count()"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        return sum(1 for l in p.stdout.splitlines() if l.startswith("GPU ")), "nvidia-smi -L"
    except (OSError, subprocess.SubprocessError):
        return 0, "no torch CUDA and no nvidia-smi"


def versions():
    from importlib import metadata

    out = {"python": sys.version.split()[0]}
    for dist in ("torch", "triton", "jax", "jaxlib", "jitkernel"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


# --- main -------------------------------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for bench_distributed.{json,md,log}")
    ap.add_argument("--gpus", default="1,2,4", help="GPU counts (torchrun processes; JAX mesh sizes)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 rounds of 3 steps, 1 warm-up step")
    ap.add_argument("--budget", type=float, default=235, help="seconds for the whole run (default 235)")
    ap.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--batch", type=int, default=8, help="sequences per GPU")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--steps", type=int, default=10, help="steps per timed block")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--impls", default="torch,triton,jitkernel")
    ap.add_argument("--wrappers", default=",".join(WRAPPERS))
    ap.add_argument("--modes", default=",".join(MODES), help="compile,eager")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--cpu", action="store_true",
                    help="check the plumbing without GPUs: gloo ranks on CPU tensors, JAX on host devices "
                         "(jitkernel rows then fail: kernels need CUDA; Triton rows need TRITON_INTERPRET=1)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.steps, args.warmup = 3, 3, 1
    try:
        args.gpus = sorted({int(n) for n in args.gpus.split(",") if n.strip()})
    except ValueError:
        ap.error(f"--gpus: comma-separated integers, got {args.gpus!r}")
    if not args.gpus or min(args.gpus) < 1:
        ap.error("--gpus: at least one count, each >= 1")
    for name, allowed in (("impls", IMPLS), ("wrappers", WRAPPERS), ("modes", MODES)):
        chosen = [x for x in getattr(args, name).split(",") if x]
        bad = [x for x in chosen if x not in allowed]
        if bad or not chosen:
            ap.error(f"--{name}: choose from {list(allowed)}, got {chosen}")
        setattr(args, name, chosen)
    if args.dim % args.heads:
        ap.error("--dim must be a multiple of --heads")
    return args


def main(argv=None):
    args = parse_args(argv)
    t0 = time.perf_counter()
    deadline = time.time() + args.budget
    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "bench_distributed.log")
    if os.path.exists(log_path):
        os.remove(log_path)
    log = Log(log_path)
    env = dict(os.environ, **MANDATORY_ENV, PYTHONUNBUFFERED="1")
    if args.cpu:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            f" --xla_force_host_platform_device_count={max(args.gpus)}").strip()
        env["JAX_PLATFORMS"] = "cpu"
    present, how = gpus_present(args.cpu, args.gpus)
    import datetime
    res = {"environment": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                           "commit": git_commit(), "versions": versions(), "gpus_present": present,
                           "gpus_found_by": how, "host": os.uname().nodename},
           "config": {k: v for k, v in vars(args).items() if k != "out"}, "torch": {}, "jax": None, "notes": []}
    log.line(f"{present} GPU(s) present ({how}); budget {args.budget:.0f} s; " + json.dumps(res["environment"]))
    runnable = [n for n in args.gpus if n <= present]
    for n in args.gpus:
        if n > present:
            res["notes"].append(f"{n} GPUs: skipped, only {present} present")
            if not args.no_torch:
                res["torch"][str(n)] = {"skipped": f"only {present} GPU(s) present"}
            log.line(f"{n} GPUs: skipped, only {present} present")
    save(res, args.out, t0)
    with tempfile.TemporaryDirectory(prefix="bench_distributed_") as tmp:
        if not args.no_torch:
            for i, n in enumerate(runnable):
                res["torch"][str(n)] = torch_part(n, args, env, deadline, len(runnable) - i - 1,
                                                  not args.no_jax and bool(runnable), log, tmp)
                save(res, args.out, t0)
        if not args.no_jax and runnable:
            res["jax"] = jax_part(runnable, args, env, deadline, log, tmp)
            save(res, args.out, t0)
    md = save(res, args.out, t0)
    print()
    print(md, flush=True)
    failed = any("failure" in p for p in res["torch"].values()) or bool(res["jax"] and "failure" in res["jax"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
