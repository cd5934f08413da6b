"""The report writer of bench_distributed.py: renders the run's collected results (the dict the driver builds from
each part's JSON: environment, config, per-GPU-count torch parts, the JAX part, notes) as markdown, and writes
DIR/bench_distributed.json and DIR/bench_distributed.md. Rendering only reads the dict, so a report can be rendered
again from a saved bench_distributed.json (``markdown(json.load(f))``).

The markdown has a header (device, versions, the block and how a step is timed), then one section per table that
has data: correctness of the first step, step times, paired ratios, first-step times, weak scaling, the JAX
shard_map part, and the errors, skips and cut-short parts (the same message at several GPU counts on one line).
"""
from __future__ import annotations

import json
import os
import time

from _bench_common import fmt

IMPLS = ("jitkernel", "triton", "torch")  # display order
WRAPPERS = ("ddp", "fsdp2")
MODES = ("compile", "eager")


# --- cells and keys ---------------------------------------------------------------------------------------

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


def _gpu_columns(counts):
    """The GPU-count column headers: "1 GPU | 2 GPUs | ..."."""
    return " | ".join(f"{n} GPU{'s' if n != '1' else ''}" for n in counts)


def _rows_of(res, n):
    """The torch part's rows at GPU count ``n`` (a string), {} when it has none."""
    return (res["torch"].get(n) or {}).get("rows") or {}


def _jax_meshes(res):
    return (res.get("jax") or {}).get("meshes") or {}


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


# --- sections (each a list of lines, empty when it has nothing to show) ----------------------------------

def _header(res):
    env, cfg = res["environment"], res["config"]
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
    return lines


def _correctness(res, counts):
    check_rows = []
    for n in counts:
        for key in _row_keys(res):
            c = (_rows_of(res, n).get(key) or {}).get("check")
            if c and not key.endswith("/torch"):
                ok = "–" if c.get("ok") is None else ("ok" if c["ok"] else "**FAILED**")
                check_rows.append(f"| {n} | {_label(key)} | {sci(c.get('loss_rel'))} | {sci(c.get('grad_rel_max'))} "
                                  f"| {ok} |")
    for n, entry in _jax_meshes(res).items():
        for name, c in (("first step loss", entry.get("check")), ("loss + grad norms", entry.get("grad_check"))):
            if c:
                check_rows.append(f"| {n} | jax · jitkernel vs jnp ({name}) | {sci(c.get('loss_rel'))} | "
                                  f"{sci(c.get('grad_rel_max'))} | {'ok' if c['ok'] else '**FAILED**'} |")
    if not check_rows:
        return []
    return ["## Correctness (first step, same weights and data, against the plain torch / jnp variant)", "",
            "| GPUs | variant | loss rel. diff | max grad-norm rel. diff | within tolerance |",
            "|---:|---|---:|---:|---|"] + check_rows + [""]


def _time_cell(part, row):
    """A step-time cell: the median (marked when the variant's check failed), error, not timed or –."""
    if "not_run" in part or "skipped" in part:
        return "–"
    if row is None:
        return "–"
    if "median_ms" in row:
        return fmt(row["median_ms"], 3) + (" (check failed)" if (row.get("check") or {}).get("ok") is False else "")
    if "error" in row:
        return "error"
    return "not timed"


def _step_times(res, counts, keys):
    lines = ["## Step time (ms, median over rounds)", "",
             "| variant | " + _gpu_columns(counts) + " |",
             "|---|" + "---:|" * len(counts)]
    for key in keys:
        cells = [_time_cell(res["torch"].get(n) or {}, _rows_of(res, n).get(key)) for n in counts]
        lines.append(f"| {_label(key)} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _ratios(res, counts):
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
    if not ratio_rows:
        return []
    return ["## Ratios (paired per round: median [min–max]; below 1 = jitkernel faster)", "",
            "| wrapper · mode | ratio | " + _gpu_columns(counts) + " |",
            "|---|---|" + "---:|" * len(counts)] + ratio_rows + [""]


def _first_steps(res, counts, keys):
    first = [(key, [_rows_of(res, n).get(key, {}).get("first_step_s") for n in counts]) for key in keys]
    if not any(x is not None for _, xs in first for x in xs):
        return []
    lines = ["## First step (s, slowest rank): build, wrap, compile, the checked step", "",
             "Compiled variants of one kind share their compiled code (DDP's compile is FSDP2's; the "
             "1-GPU run fills the inductor cache the later runs read).", "",
             "| variant | " + _gpu_columns(counts) + " |",
             "|---|" + "---:|" * len(counts)]
    lines += [f"| {_label(key)} | " + " | ".join(fmt(x, 1) for x in xs) + " |" for key, xs in first]
    lines.append("")
    return lines


def _weak_scaling(res, counts):
    sc = scaling(res)
    later = [n for n in counts if n != "1"]
    if not (sc and later):
        return []
    lines = ["## Weak scaling (step time at N GPUs / at 1 GPU; 1.00 = perfect)", "",
             "| variant | " + " | ".join(f"{n} GPUs" for n in later) + " |", "|---|" + "---:|" * len(later)]
    for key, by_n in sc.items():
        lines.append(f"| {_label(key)} | " + " | ".join(fmt(by_n.get(n), 3) for n in later) + " |")
    lines.append("")
    return lines


def _jax_cell(r):
    return fmt(r["median_ms"], 3) if "median_ms" in r else ("error" if "error" in r else "–")


def _jax_table(res):
    jax, jax_meshes = res.get("jax"), _jax_meshes(res)
    if not (jax and jax_meshes):
        return []
    lines = ["## JAX: shard_map data parallel (pmean of gradients), jitkernel kernels vs jnp", "",
             f"jax {((jax.get('versions') or {}).get('jax'))} on {jax.get('device_count')} × "
             f"{jax.get('device')}; the same block, one jitted step per mesh, donated weights.", "",
             "| devices | jnp ms | jitkernel ms | jitkernel/jnp | first step s (jnp / jitkernel) |",
             "|---:|---:|---:|---:|---|"]
    for n, entry in jax_meshes.items():
        if "skipped" in entry:
            lines.append(f"| {n} | skipped: {entry['skipped']} | | | |")
            continue
        rows = entry.get("rows") or {}
        lines.append(f"| {n} | {_jax_cell(rows.get('jnp', {}))} | {_jax_cell(rows.get('jitkernel', {}))} | "
                     f"{_ratio_cell(entry.get('ratio'))} | {fmt(rows.get('jnp', {}).get('first_step_s'), 1)} / "
                     f"{fmt(rows.get('jitkernel', {}).get('first_step_s'), 1)} |")
    lines.append("")
    return lines


# --- errors, skips and cut-short parts --------------------------------------------------------------------

def _torch_problems(res, counts, problem):
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


def _jax_problems(res, problem):
    jax = res.get("jax")
    if not jax:
        return
    for what in ("not_run", "failure", "skipped"):
        if jax.get(what):
            problem("jax", f"{what.replace('_', ' ')}: {jax[what]}", "all")
    for name, err in (jax.get("variant_errors") or {}).items():
        problem("jax", f"{name} not available: {err}", "all")
    for n, entry in _jax_meshes(res).items():
        if entry.get("stopped_early"):
            problem("jax", entry["stopped_early"], n)
        for name, row in (entry.get("rows") or {}).items():
            if row.get("error") and not row["error"].startswith("not available"):
                problem(f"jax, {name}", row["error"], n)


def _problems(res, counts):
    problems = {}  # (where, what) -> GPU counts: the same message at several counts is one line

    def problem(where, what, n):
        problems.setdefault((where, what), []).append(n)

    _torch_problems(res, counts, problem)
    _jax_problems(res, problem)
    if not problems:
        return []
    lines = ["## Errors, skips and cut-short parts", ""]
    for (where, what), ns in problems.items():
        on = "" if ns == ["all"] else f" ({', '.join(ns)} GPU{'s' if ns != ['1'] else ''})"
        lines.append(f"- {where}{on}: {what}")
    lines.append("")
    return lines


# --- the report -------------------------------------------------------------------------------------------

def markdown(res):
    counts = [str(n) for n in res["config"]["gpus"]]
    keys = _row_keys(res)
    lines = _header(res) + _correctness(res, counts)
    if keys:
        lines += _step_times(res, counts, keys) + _ratios(res, counts) + _first_steps(res, counts, keys)
    lines += _weak_scaling(res, counts) + _jax_table(res) + _problems(res, counts)
    lines.append(f"Total {fmt(res.get('elapsed_s'), 0)} s.")
    return "\n".join(lines)


def save(res, out, t0):
    """Writes DIR/bench_distributed.json and .md (elapsed time since ``t0``, a perf_counter value); the markdown."""
    res["elapsed_s"] = time.perf_counter() - t0
    with open(os.path.join(out, "bench_distributed.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = markdown(res)
    with open(os.path.join(out, "bench_distributed.md"), "w") as f:
        f.write(md + "\n")
    return md
