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
(device, GPU count, versions, commit, tables) and DIR/bench_distributed.log (every subprocess's output).
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

from _bench_common import fmt, git_commit

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_WORKER = os.path.join(HERE, "_distributed_step.py")
JAX_WORKER = os.path.join(HERE, "_distributed_jax.py")
# NVLink multicast (NVLS) stays off on the lent machines: every subprocess gets these.
MANDATORY_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
IMPLS = ("jitkernel", "triton", "torch")  # display order
WRAPPERS = ("ddp", "fsdp2")
MODES = ("compile", "eager")
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
    rc, seconds, tail = run_part(cmd, env, limit, log, f"[torch {n}] ")
    data = read_json(path) or {}
    data["exit"] = rc
    data["seconds"] = seconds
    if rc != 0:
        data["failure"] = failure_reason(rc, tail)
    return data


def jax_part(meshes, args, env, deadline, log, tmp):
    limit = deadline - time.time() - SHARE_REPORT
    if limit < MIN_PART_S:
        return {"not_run": f"time budget spent ({max(0, limit):.0f} s left for it)"}
    path = os.path.join(tmp, "jax.json")
    cmd = [sys.executable, JAX_WORKER, "--json", path, "--meshes", ",".join(map(str, meshes)),
           *common_args(args), "--deadline", f"{time.time() + limit - 10:.0f}"]
    rc, seconds, tail = run_part(cmd, env, limit, log, "[jax] ")
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


# --- report -----------------------------------------------------------------------------------------------

def _row_keys(res):
    keys = []
    for mode in MODES:
        for wrapper in WRAPPERS:
            for impl in IMPLS:
                key = f"{wrapper}/{mode}/{impl}"
                if any(key in (part.get("rows") or {}) for part in res["torch"].values()):
                    keys.append(key)
    return keys


def _label(key):
    return key.replace("/", " · ")


def sci(x):
    return "–" if x is None else f"{x:.1e}"


def _ratio_cell(r):
    if not r:
        return "–"
    return f"{r['median']:.3f} [{r['min']:.2f}–{r['max']:.2f}]"


def scaling(res):
    """{variant key: {n: time(n) / time(1)}} for the torch rows and the JAX variants."""
    out = {}
    base = (res["torch"].get("1") or {}).get("rows") or {}
    for key in _row_keys(res):
        t1 = (base.get(key) or {}).get("median_ms")
        if not t1:
            continue
        for n, part in res["torch"].items():
            tn = ((part.get("rows") or {}).get(key) or {}).get("median_ms")
            if n != "1" and tn:
                out.setdefault(key, {})[n] = tn / t1
    meshes = (res.get("jax") or {}).get("meshes") or {}
    for variant in ("jnp", "jitkernel"):
        t1 = ((meshes.get("1") or {}).get("rows") or {}).get(variant, {}).get("median_ms")
        if not t1:
            continue
        for n, entry in meshes.items():
            tn = ((entry.get("rows") or {}).get(variant) or {}).get("median_ms")
            if n != "1" and tn:
                out.setdefault(f"jax/{variant}", {})[n] = tn / t1
    return out


def markdown(res):
    env, cfg = res["environment"], res["config"]
    counts = [str(n) for n in cfg["gpus"]]
    v = env["versions"]
    device = next((p.get("device") for p in res["torch"].values() if p.get("device")), None) or \
        (res.get("jax") or {}).get("device") or "device unknown"
    lines = ["# Distributed training step: jitkernel vs Triton vs torch (issue 25)", "",
             f"{device} · {env['gpus_present']} GPU(s) present · commit {env['commit']} · {env['date']} · "
             f"torch {v.get('torch')} · triton {v.get('triton')} · jax {v.get('jax')} · jitkernel "
             f"{v.get('jitkernel')} · Python {v.get('python')}", "",
             f"Block: pre-norm transformer block (RMSNorm → causal scaled_dot_product_attention → residual; RMSNorm → "
             f"MLP with GELU (tanh) → residual) × {cfg['layers']}, d = {cfg['dim']}, {cfg['heads']} heads, MLP "
             f"{cfg['hidden']}, sequence {cfg['seq']}, batch {cfg['batch']} per GPU (weak scaling), {cfg['dtype']} "
             f"weights and activations, AdamW (JAX: Adam). A step is forward + backward + optimizer step; its time is "
             f"the slowest rank's, median over up to {cfg['rounds']} interleaved rounds of {cfg['steps']} steps "
             f"(after {cfg['warmup']} warm-up step(s)). Ratios are medians of per-round paired ratios [min–max]. "
             f"compile = torch.compile of each block (fullgraph, static shapes), then DDP / fully_shard.", ""]
    if res.get("notes"):
        lines += [f"- {n}" for n in res["notes"]] + [""]

    # correctness
    check_rows = []
    for n in counts:
        part = res["torch"].get(n) or {}
        for key in _row_keys(res):
            c = ((part.get("rows") or {}).get(key) or {}).get("check")
            if c and not key.endswith("/torch"):
                ok = "–" if c.get("ok") is None else ("ok" if c["ok"] else "**FAILED**")
                check_rows.append(f"| {n} | {_label(key)} | {sci(c.get('loss_rel'))} | {sci(c.get('grad_rel_max'))} "
                                  f"| {ok} |")
    jax_meshes = (res.get("jax") or {}).get("meshes") or {}
    for n, entry in jax_meshes.items():
        for name, c in (("first step loss", entry.get("check")), ("loss + grad norms", entry.get("grad_check"))):
            if c:
                check_rows.append(f"| {n} | jax · jitkernel vs jnp ({name}) | {sci(c.get('loss_rel'))} | "
                                  f"{sci(c.get('grad_rel_max'))} | {'ok' if c['ok'] else '**FAILED**'} |")
    if check_rows:
        lines += ["## Correctness (first step, same weights and data, against the plain torch / jnp variant)", "",
                  "| GPUs | variant | loss rel. diff | max grad-norm rel. diff | within tolerance |",
                  "|---:|---|---:|---:|---|"] + check_rows + [""]

    # step times
    keys = _row_keys(res)
    if keys:
        lines += ["## Step time (ms, median over rounds)", "",
                  "| variant | " + " | ".join(f"{n} GPU{'s' if n != '1' else ''}" for n in counts) + " |",
                  "|---|" + "---:|" * len(counts)]
        for key in keys:
            cells = []
            for n in counts:
                part = res["torch"].get(n) or {}
                row = (part.get("rows") or {}).get(key)
                if "not_run" in part or "skipped" in part:
                    cells.append("–")
                elif row is None:
                    cells.append("–")
                elif "median_ms" in row:
                    cells.append(fmt(row["median_ms"], 3) + (" (check failed)" if (row.get("check") or {}).get("ok")
                                                             is False else ""))
                elif "error" in row:
                    cells.append("error")
                else:
                    cells.append("not timed")
            lines.append(f"| {_label(key)} | " + " | ".join(cells) + " |")
        lines.append("")
        ratio_rows = []
        for mode in MODES:
            for wrapper in WRAPPERS:
                group = f"{wrapper}/{mode}"
                for other in ("triton", "torch"):
                    name = f"jitkernel/{other}"
                    cells = [_ratio_cell(((res["torch"].get(n) or {}).get("ratios") or {}).get(group, {}).get(name))
                             for n in counts]
                    if any(c != "–" for c in cells):
                        ratio_rows.append(f"| {wrapper} · {mode} | {name} | " + " | ".join(cells) + " |")
        if ratio_rows:
            lines += ["## Ratios (paired per round: median [min–max]; below 1 = jitkernel faster)", "",
                      "| wrapper · mode | ratio | " + " | ".join(f"{n} GPU{'s' if n != '1' else ''}"
                                                                 for n in counts) + " |",
                      "|---|---|" + "---:|" * len(counts)] + ratio_rows + [""]
        first = [(key, [((res["torch"].get(n) or {}).get("rows") or {}).get(key, {}).get("first_step_s")
                        for n in counts]) for key in keys]
        if any(x is not None for _, xs in first for x in xs):
            lines += ["## First step (s, slowest rank): build, wrap, compile, the checked step", "",
                      "Compiled variants of one kind share their compiled code (DDP's compile is FSDP2's; the "
                      "1-GPU run fills the inductor cache the later runs read).", "",
                      "| variant | " + " | ".join(f"{n} GPU{'s' if n != '1' else ''}" for n in counts) + " |",
                      "|---|" + "---:|" * len(counts)]
            lines += [f"| {_label(key)} | " + " | ".join(fmt(x, 1) for x in xs) + " |" for key, xs in first]
            lines.append("")

    sc = scaling(res)
    later = [n for n in counts if n != "1"]
    if sc and later:
        lines += ["## Weak scaling (step time at N GPUs / at 1 GPU; 1.00 = perfect)", "",
                  "| variant | " + " | ".join(f"{n} GPUs" for n in later) + " |", "|---|" + "---:|" * len(later)]
        for key, by_n in sc.items():
            lines.append(f"| {_label(key)} | " + " | ".join(fmt(by_n.get(n), 3) for n in later) + " |")
        lines.append("")

    jax = res.get("jax")
    if jax and jax_meshes:
        lines += ["## JAX: shard_map data parallel (pmean of gradients), jitkernel kernels vs jnp", "",
                  f"jax {((jax.get('versions') or {}).get('jax'))} on {jax.get('device_count')} × "
                  f"{jax.get('device')}; the same block, one jitted step per mesh, donated weights.", "",
                  "| devices | jnp ms | jitkernel ms | jitkernel/jnp | first step s (jnp / jitkernel) |",
                  "|---:|---:|---:|---:|---|"]
        for n, entry in jax_meshes.items():
            if "skipped" in entry:
                lines.append(f"| {n} | skipped: {entry['skipped']} | | | |")
                continue
            rows = entry.get("rows") or {}

            def cell(r):
                return fmt(r["median_ms"], 3) if "median_ms" in r else ("error" if "error" in r else "–")

            lines.append(f"| {n} | {cell(rows.get('jnp', {}))} | {cell(rows.get('jitkernel', {}))} | "
                         f"{_ratio_cell(entry.get('ratio'))} | {fmt(rows.get('jnp', {}).get('first_step_s'), 1)} / "
                         f"{fmt(rows.get('jitkernel', {}).get('first_step_s'), 1)} |")
        lines.append("")

    problems = {}  # (where, what) -> GPU counts: the same message at several counts is one line

    def problem(where, what, n):
        problems.setdefault((where, what), []).append(n)

    for n in counts:
        part = res["torch"].get(n) or {}
        for what in ("skipped", "not_run", "failure", "stopped_early"):
            if part.get(what):
                problem("torch", f"{what.replace('_', ' ')}: {part[what]}", n)
        for impl, err in (part.get("impl_errors") or {}).items():
            problem("torch", f"{impl} not available: {err}", n)
        for key, row in (part.get("rows") or {}).items():
            if row.get("error") and not row["error"].startswith(f"{row.get('impl')} not available"):
                problem(f"torch, {_label(key)}", row["error"], n)
            if row.get("fullgraph_error"):
                problem(f"torch, {_label(key)}", f"fullgraph=True failed, compiled with graph breaks: "
                                                 f"{row['fullgraph_error']}", n)
    if jax:
        for what in ("not_run", "failure", "skipped"):
            if jax.get(what):
                problem("jax", f"{what.replace('_', ' ')}: {jax[what]}", "all")
        for name, err in (jax.get("variant_errors") or {}).items():
            problem("jax", f"{name} not available: {err}", "all")
        for n, entry in jax_meshes.items():
            if entry.get("stopped_early"):
                problem("jax", entry["stopped_early"], n)
            for name, row in (entry.get("rows") or {}).items():
                if row.get("error") and not row["error"].startswith("not available"):
                    problem(f"jax, {name}", row["error"], n)
    if problems:
        lines += ["## Errors, skips and cut-short parts", ""]
        for (where, what), ns in problems.items():
            on = "" if ns == ["all"] else f" ({', '.join(ns)} GPU{'s' if ns != ['1'] else ''})"
            lines.append(f"- {where}{on}: {what}")
        lines.append("")
    lines.append(f"Total {fmt(res.get('elapsed_s'), 0)} s.")
    return "\n".join(lines)


def save(res, out, t0):
    res["elapsed_s"] = time.perf_counter() - t0
    with open(os.path.join(out, "bench_distributed.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(out, "bench_distributed.md"), "w") as f:
        f.write(md + "\n")
    return md


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
