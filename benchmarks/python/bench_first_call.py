"""First call of a CUDA kernel in a new process: jitkernel with an empty and with a warm disk cache, beside CuPy and
MLX, a bare NVRTC compile of the same source, and what `import jitkernel` costs (issue 4's benchmark).

Kernels: MLX's documentation example (seed 003: exp of a float32 vector, element index from
cooperative_groups::this_grid().thread_rank()) and the same kernel without cooperative groups (index from
blockIdx.x * blockDim.x + threadIdx.x), N = 4096 elements, 256 threads per block.

Each measurement runs in a fresh process whose compile caches (JITKERNEL_CACHE_DIR, CUPY_CACHE_DIR, ...) point
into a new temporary folder; imports, inputs and the CUDA context are made before the clock starts, and each
process checks its kernel's result after the clock stops:
  jitkernel empty / warm  jk.cuda_kernel(...) + first call + synchronize; "warm" is a second process sharing the
                          folder the first one filled.
  bare NVRTC              nvrtcCreateProgram + nvrtcCompileProgram + nvrtcGetCUBIN of the exact source jitkernel
                          generates (k.source()), through the NVRTC library jitkernel found, with only
                          --gpu-architecture (and -I when the source includes headers): the first compile in a
                          fresh process (what a first call pays) and the median of a few more in that process.
  CuPy empty / warm       cp.RawKernel(<the same generated source>) + launch + synchronize, its own disk cache.
  MLX                     mx.fast.cuda_kernel with the same body + first call + mx.eval (MLX has no disk cache).
  import                  `import numpy`, then `import jitkernel` in a fresh process: the second's time, and which
                          array frameworks (torch, cupy, jax, mlx, ...) it pulled into sys.modules.
Medians over --reps processes. Targets (printed with their ratios): warm cache <= 0.5 ms; empty cache without
cooperative groups <= 1.5x the bare NVRTC compile; seed 003 (empty cache) < 0.5x MLX's first call; import
<= 20 ms over numpy, with no other array framework imported.

--compile-only (also chosen when no GPU is found): jitkernel rows time jk.cuda_kernel + CudaKernel.compile() to a
cubin for --arch (empty vs warm disk cache; no launch), the check being a valid cubin, identical in both
processes; CuPy and MLX rows are skipped. The peers section (below) needs a GPU.

Peers section (--sections peers): the first-call table that bench_launch.py used to print: c = a + b through
jitkernel, CuPy, torch, cuda.core, Triton, numba and MLX, each in a fresh process from a script file (Triton
reads kernels from files) with empty caches, then a second, different kernel in that process, then a second
process on the filled cache folders (disk-warm).

    python3 benchmarks/python/bench_first_call.py --out DIR [--reps 3] [--compile-only] [--sections issue,import,peers]

Writes bench_first_call.json and bench_first_call.md to --out; exits 1 when a jitkernel measurement fails. The
measured processes are in _first_call_children.py, the peers section's scripts in _first_call_cold.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np

from _bench_common import environment, fmt, run_fresh, write_report
from _first_call_children import CHILDREN, KERNELS, N_ISSUE, median, median_stages
from _first_call_cold import COLD, cold_start, cuda_device_count, missing_module

FRAMEWORKS = ("torch", "cupy", "jax", "jaxlib", "mlx", "tensorflow", "numba", "triton", "dask", "pandas")
CACHE_ENV = {"JITKERNEL_CACHE_DIR": "jitkernel", "CUPY_CACHE_DIR": "cupy", "TRITON_CACHE_DIR": "triton",
             "NUMBA_CACHE_DIR": "numba", "CUDA_CACHE_PATH": "nv", "XDG_CACHE_HOME": "xdg"}
TARGETS = {"warm_ms": 0.5, "nocg_vs_nvrtc": 1.5, "seed003_vs_mlx": 0.5, "import_ms": 20.0}
HERE = os.path.dirname(os.path.abspath(__file__))


# `import numpy`, then `import jitkernel`: nothing else runs in that process first.
IMPORT_SCRIPT = """import sys, time, json
t0 = time.perf_counter(); import numpy; t1 = time.perf_counter(); import jitkernel; t2 = time.perf_counter()
print("RESULT " + json.dumps({"numpy_ms": (t1 - t0) * 1e3, "jitkernel_ms": (t2 - t1) * 1e3,
      "frameworks": sorted(m for m in %r if m in sys.modules)}))
""" % (FRAMEWORKS,)


def run_child(spec, env, timeout):
    """One fresh process measuring ``spec``; its result dict or {"error": ...}."""
    return run_fresh([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)], timeout, env=env,
                     cwd=HERE)


def python_env(pycache):
    """os.environ with Python bytecode in the folder ``pycache``, shared by the run's processes (an installed
    wheel has its .pyc files; a checkout run with PYTHONDONTWRITEBYTECODE would compile sources each time)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def fresh_env(folder, pycache):
    """The environment of a measured process: every compile cache in ``folder`` (created empty)."""
    env = python_env(pycache)
    for var, sub in CACHE_ENV.items():
        env[var] = os.path.join(folder, sub)
    env.pop("JITKERNEL_CACHE", None)  # the disk cache on, whatever the caller's shell says
    return env


# --- issue section: the two kernels, jitkernel beside bare NVRTC, CuPy, MLX -----------------------------------

def generated(kernel):
    """(source, entry name) jitkernel generates for ``kernel`` with float32 inputs (no GPU needed)."""
    import jitkernel as jk
    k = jk.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=KERNELS[kernel][1])
    sig = dict(inputs=[np.zeros(N_ISSUE, np.float32)], output_dtypes=[np.float32], template=[("T", jk.float32)])
    return k.source(**sig), k.entry_name(**sig)


def _peer_skip(module, compile_only):
    if compile_only:
        return "compile-only run (no GPU)"
    return missing_module((module,))


def summarise(row, runs):
    """A table cell from the fresh-process runs of one row: median ms, the samples, the first error, and what the
    row's runs report besides (NVRTC version and load time; jitkernel's disk-cache counts, a warm miss an error)."""
    cell = {"ms": median(r.get("ms") for r in runs), "samples_ms": [r.get("ms") for r in runs]}
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        cell["error"] = errors[0]
    if row == "nvrtc":
        cell["repeat_median_ms"] = median(r.get("repeat_median_ms") for r in runs)
        cell["load_ms"] = median(r.get("load_ms") for r in runs)
        cell["nvrtc_version"] = next((r["nvrtc_version"] for r in runs if "nvrtc_version" in r), None)
        cell["options"] = next((r["options"] for r in runs if "options" in r), None)
    if row.startswith("jk"):
        cell["cache"] = next((r["cache"] for r in runs if "cache" in r), None)
        cell["stages"] = median_stages(runs)
        if row.startswith("jk_warm") and any(r.get("cache", {}).get("hits") == 0 for r in runs):
            cell["error"] = "the warm-cache process missed the disk cache (cache_info().hits == 0)"
    return cell


def issue_section(args, arch, compile_only, inputs, toolkit, pycache):
    """Medians over args.reps fresh processes of every row, per kernel, and the raw samples. One discarded
    jitkernel run first writes the bytecode of what a first call imports."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="jk_first_call_warmup_") as folder:
        run_child({"role": "jitkernel", "kernel": "nocg", "compile_only": compile_only, "arch": arch,
                   "inputs": inputs}, fresh_env(folder, pycache), args.timeout)
    skip = {"cupy": _peer_skip("cupy", compile_only), "mlx": _peer_skip("mlx.core", compile_only),
            "torch": _peer_skip("torch", compile_only)}
    for kernel, (label, _) in KERNELS.items():
        source, entry = generated(kernel)
        samples = {r: [] for r in ("jk_empty", "jk_warm", "jk_warm_given", "jk_warm_numpy", "jk_warm_torch",
                                   "nvrtc", "cupy_empty", "cupy_warm", "mlx")}
        base = {"kernel": kernel, "compile_only": compile_only, "arch": arch, "inputs": inputs}
        for _ in range(args.reps):
            folder = tempfile.mkdtemp(prefix=f"jk_first_call_{kernel}_")
            try:
                env = fresh_env(folder, pycache)
                jk_spec = dict(base, role="jitkernel")
                samples["jk_empty"].append(run_child(jk_spec, env, args.timeout))
                samples["jk_warm"].append(run_child(jk_spec, env, args.timeout))
                if not compile_only:
                    samples["jk_warm_given"].append(run_child(dict(jk_spec, outputs_given=True), env, args.timeout))
                    # the output allocated by the call: from jitkernel's pool (NumPy input, uploaded into the
                    # pool too) and from torch's caching allocator (torch input)
                    samples["jk_warm_numpy"].append(run_child(dict(jk_spec, input_kind="numpy"), env,
                                                              args.timeout))
                    if not skip["torch"]:
                        samples["jk_warm_torch"].append(run_child(dict(jk_spec, input_kind="torch"), env,
                                                                  args.timeout))
                samples["nvrtc"].append(run_child(dict(
                    base, role="nvrtc", source=source, nvrtc_library=toolkit["nvrtc_library"],
                    nvrtc_preload=toolkit["nvrtc_preload"], include_dirs=toolkit["include_dirs"]),
                    env, args.timeout))
                if not skip["cupy"]:
                    cupy_spec = dict(base, role="cupy", source=source, entry=entry)
                    samples["cupy_empty"].append(run_child(cupy_spec, env, args.timeout))
                    samples["cupy_warm"].append(run_child(cupy_spec, env, args.timeout))
                if not skip["mlx"]:
                    r = run_child(dict(base, role="mlx"), env, args.timeout)
                    if "No CUDA back-end" in r.get("error", ""):
                        skip["mlx"] = "this MLX has no CUDA back-end"
                    else:
                        samples["mlx"].append(r)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        rows = {row: {"skipped": skip[row.split("_")[0]]} if skip.get(row.split("_")[0]) else
                {"skipped": "compile-only run (no GPU)"} if not runs else summarise(row, runs)
                for row, runs in samples.items()}
        if compile_only and not any("error" in rows[r] for r in ("jk_empty", "jk_warm")):
            if len({r.get("cubin_sha256") for r in samples["jk_empty"] + samples["jk_warm"]}) != 1:
                rows["jk_warm"]["error"] = "the warm-cache cubin differs from the compiled one"
        out[kernel] = {"label": label, "entry": entry, "source_chars": len(source),
                       "includes": [l.strip() for l in source.splitlines() if l.lstrip().startswith("#include")],
                       "rows": rows}
        print(f"{label}: " + json.dumps({r: v.get("ms", v.get("skipped")) for r, v in rows.items()}), flush=True)
    return out


def import_section(reps, timeout, pycache):
    """`import jitkernel` after `import numpy` in fresh processes, after one discarded run that writes the
    bytecode (python_env)."""
    runs = []
    env = python_env(pycache)
    with tempfile.TemporaryDirectory(prefix="jk_import_") as folder:
        for i in range(reps + 1):
            r = run_fresh([sys.executable, "-c", IMPORT_SCRIPT], timeout, cwd=folder, env=env)
            if i > 0 or "error" in r:  # the first run only writes the bytecode (unless it failed)
                runs.append(r)
    ok = [r for r in runs if "error" not in r]
    res = {"numpy_ms": median(r["numpy_ms"] for r in ok), "jitkernel_ms": median(r["jitkernel_ms"] for r in ok),
           "samples_ms": [r.get("jitkernel_ms") for r in runs],
           "frameworks": sorted({m for r in ok for m in r["frameworks"]})}
    if len(ok) < len(runs):
        res["error"] = next(r["error"] for r in runs if "error" in r)
    return res


def targets(issue, imp, compile_only):
    """Rows of the target table: (what, measured, limit, ratio or None, status)."""
    rows = []

    def ms(kernel, row):
        r = issue.get(kernel, {}).get("rows", {}).get(row, {})
        return None if "error" in r or "skipped" in r else r.get("ms")

    def status(value, limit, strict=False):
        if value is None:
            return "not measured"
        return "PASS" if (value < limit if strict else value <= limit) else "FAIL"

    what = "compile" if compile_only else "first call"
    for kernel, (label, _) in KERNELS.items():
        w = ms(kernel, "jk_warm")
        rows.append((f"warm cache, {label}: {what} ms", w, f"<= {TARGETS['warm_ms']} ms", None,
                     status(w, TARGETS["warm_ms"])))
        if not compile_only:
            w = ms(kernel, "jk_warm_given")
            rows.append((f"warm cache, {label}: {what} ms, output given (no allocation)", w,
                         f"<= {TARGETS['warm_ms']} ms", None, status(w, TARGETS["warm_ms"])))
    e, b = ms("nocg", "jk_empty"), ms("nocg", "nvrtc")
    ratio = e / b if e is not None and b else None
    rows.append((f"empty cache, without cooperative_groups: {what} / bare NVRTC compile (fresh process)",
                 f"{fmt(e, 1)} / {fmt(b, 1)} ms", f"<= {TARGETS['nocg_vs_nvrtc']}x", ratio,
                 status(ratio, TARGETS["nocg_vs_nvrtc"])))
    e, m = ms("seed003", "jk_empty"), ms("seed003", "mlx")
    ratio = e / m if e is not None and m else None
    rows.append(("empty cache, seed 003: jitkernel / MLX first call", f"{fmt(e, 1)} / {fmt(m, 1)} ms",
                 f"< {TARGETS['seed003_vs_mlx']}x", ratio, status(ratio, TARGETS["seed003_vs_mlx"], strict=True)))
    if imp:
        v = imp.get("jitkernel_ms")
        rows.append(("`import jitkernel` after `import numpy`, ms", v, f"<= {TARGETS['import_ms']} ms", None,
                     status(v, TARGETS["import_ms"])))
        fw = imp.get("frameworks")
        rows.append(("array frameworks `import jitkernel` imports", ", ".join(fw) if fw else "none", "none", None,
                     "not measured" if fw is None or "error" in imp else ("PASS" if not fw else "FAIL")))
    return rows


# --- report -------------------------------------------------------------------------------------------------------

def _cell(r, digits=1):
    if not r:
        return "–"
    if "skipped" in r:
        return f"skipped: {r['skipped']}"
    if "error" in r:
        return f"error: {r['error'][:160]}"
    return fmt(r.get("ms"), digits)


JK_ROWS = {"jk_empty": "empty cache", "jk_warm": "warm cache", "jk_warm_given": "warm, output given",
           "jk_warm_numpy": "warm, NumPy input (jk pool)", "jk_warm_torch": "warm, torch input (torch allocator)"}


def stage_table(issue, peers=None):
    """Markdown lines: per jitkernel row, the median ms of each stage of the core's stage clock, the factory call,
    "other" (Python, argument handling, launch, synchronize: the total less the stages) and the total; stages are
    self times (a nested stage is not counted in its parent)."""
    cols = [(f"{k['label']}, {JK_ROWS[row]}", k["rows"][row]) for k in issue.values() for row in JK_ROWS
            if k["rows"].get(row, {}).get("stages")]
    if peers and (peers.get("jitkernel") or {}).get("cold", {}).get("stages"):
        p = peers["jitkernel"]
        cols.append(("c = a + b (torch), empty cache", {"ms": p["cold"]["first_call_ms"], "stages": p["cold"]["stages"]}))
        if p.get("diskwarm", {}).get("stages"):
            cols.append(("c = a + b (torch), disk-warm",
                         {"ms": p["diskwarm"]["first_call_ms"], "stages": p["diskwarm"]["stages"]}))
    if not cols:
        return []
    names = []
    for _, c in cols:
        names += [n for n in c["stages"] if n not in names and n not in ("other", "factory", "import_jitkernel")]
    lines = ["## Where a jitkernel first call spends its time, ms (median per stage; stage clock)", "",
             "| stage | " + " | ".join(c for c, _ in cols) + " |", "|---|" + "---:|" * len(cols)]
    for n in names + ["factory", "other"]:
        lines.append(f"| {n} | " + " | ".join(fmt(c["stages"].get(n), 2) for _, c in cols) + " |")
    lines.append("| **total (timed)** | " + " | ".join(fmt(c.get("ms"), 2) for _, c in cols) + " |")
    lines.append("| `import jitkernel` (before the clock) | " +
                 " | ".join(fmt(c["stages"].get("import_jitkernel"), 1) for _, c in cols) + " |")
    lines += ["", "factory: `jk.cuda_kernel(...)`; other: the timed total less the stages and the factory (Python "
              "front, codegen, argument handling, launch, synchronize).", ""]
    return lines


def markdown(res):
    env, cfg = res["environment"], res["config"]
    mode = f"compile-only ({cfg['arch']}, no launch)" if cfg["compile_only"] else f"GPU ({cfg['arch']})"
    lines = ["# First call in a new process: jitkernel beside bare NVRTC, CuPy and MLX", "",
             f"{env.get('device', 'no CUDA device')} · {mode} · commit {env.get('commit')} · {env.get('date')} · "
             f"Python {env.get('python')} · NVRTC {cfg.get('nvrtc_version')} · median of {cfg['reps']} "
             f"fresh processes per cell", ""]
    if res.get("issue"):
        lines += ["## Targets (issue 4)", "", "| target | measured | limit | ratio | status |", "|---|---:|---|---:|---|"]
        for what, value, limit, ratio, st in targets(res["issue"], res.get("import"), cfg["compile_only"]):
            shown = fmt(value, 2) if isinstance(value, (int, float)) or value is None else value
            lines.append(f"| {what} | {shown} | {limit} | {fmt(ratio, 2)} | {st} |")
        what = "kernel creation + compile() to a cubin" if cfg["compile_only"] else \
            "kernel creation + compile + load + launch + synchronize"
        lines += ["", f"## {what}, ms", "",
                  "| kernel | jitkernel, empty cache | jitkernel, warm cache | jitkernel, warm cache, output given "
                  "| bare NVRTC, first compile in a "
                  "fresh process | bare NVRTC, further compiles | loading NVRTC (not in the bare columns) "
                  "| CuPy RawKernel, empty cache | CuPy, warm cache | MLX (no disk cache) |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for kernel, k in res["issue"].items():
            r = k["rows"]
            lines.append(f"| {k['label']} | {_cell(r['jk_empty'])} | {_cell(r['jk_warm'], 2)} "
                         f"| {_cell(r['jk_warm_given'], 2)} | {_cell(r['nvrtc'])} "
                         f"| {fmt(r['nvrtc'].get('repeat_median_ms'), 1)} | {fmt(r['nvrtc'].get('load_ms'), 1)} "
                         f"| {_cell(r['cupy_empty'])} "
                         f"| {_cell(r['cupy_warm'], 2)} | {_cell(r['mlx'])} |")
        lines += ["", "The source compiled by bare NVRTC and CuPy is the one jitkernel generates (`k.source()`); "
                  "bare NVRTC gets only `--gpu-architecture` (and `-I` when the source includes headers). Includes "
                  "in the generated sources: " + "; ".join(
                      f"{k['label']}: {', '.join(k['includes']) or 'none'}" for k in res["issue"].values()), ""]
        lines += ["| kernel | warm cache, NumPy input (output from jitkernel's pool) | warm cache, torch input (output "
                  "from torch's caching allocator) |", "|---|---:|---:|"]
        for k in res["issue"].values():
            lines.append(f"| {k['label']} | {_cell(k['rows'].get('jk_warm_numpy'), 2)} "
                         f"| {_cell(k['rows'].get('jk_warm_torch'), 2)} |")
        lines.append("")
    if res.get("issue") or res.get("peers"):
        lines += stage_table(res.get("issue") or {}, res.get("peers"))
    imp = res.get("import")
    if imp:
        lines += ["## `import jitkernel`", "",
                  f"`import numpy` {fmt(imp.get('numpy_ms'), 1)} ms, then `import jitkernel` "
                  f"{fmt(imp.get('jitkernel_ms'), 1)} ms (median of {len(imp.get('samples_ms', []))} fresh "
                  f"processes; samples {', '.join(fmt(x, 1) for x in imp.get('samples_ms', []))}); array "
                  f"frameworks it imported: {', '.join(imp.get('frameworks') or []) or 'none'}"
                  + (f"; error: {imp['error']}" if imp.get("error") else ""), ""]
    if res.get("peers"):
        lines += ["## First call of c = a + b, every peer (fresh process, empty caches)", "",
                  "| library | cold ms | second kernel, same process ms | disk-warm process ms | note |",
                  "|---|---:|---:|---:|---|"]
        for row, r in res["peers"].items():
            if "skipped" in r:
                lines.append(f"| {row} | skipped: {r['skipped'][:200]} | | | |")
                continue
            c, w = r.get("cold", {}), r.get("diskwarm", {})
            note = "; ".join(x for x in (r.get("note"), c.get("error") and f"cold: {c['error']}",
                                         w.get("error") and f"disk-warm: {w['error']}") if x)
            lines.append(f"| {row} | {fmt(c.get('first_call_ms'), 1)} | {fmt(c.get('second_kernel_ms'), 1)} | "
                         f"{fmt(w.get('first_call_ms'), 1)} | {note[:300]} |")
        lines.append("")
    return "\n".join(lines)


def save(res, out):
    return write_report(out, "bench_first_call", res, markdown(res))


def jitkernel_failed(res):
    bad = [r for k in res.get("issue", {}).values() for n, r in k["rows"].items()
           if n.startswith("jk") and "skipped" not in r and ("error" in r or r.get("ms") is None)]
    peers = res.get("peers", {}).get("jitkernel", {})
    return bool(bad) or any("error" in peers.get(x, {}) for x in ("cold", "diskwarm"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder for bench_first_call.md and bench_first_call.json")
    ap.add_argument("--sections", default="issue,import,peers", help="comma-separated: issue, import, peers")
    ap.add_argument("--reps", type=int, default=3, help="fresh processes per cell (median)")
    ap.add_argument("--import-reps", type=int, default=9, help="fresh processes for the import time")
    ap.add_argument("--compile-only", action="store_true", help="no GPU: time compiles to a cubin for --arch")
    ap.add_argument("--arch", default="sm_90a", help="architecture of --compile-only runs")
    ap.add_argument("--inputs", choices=("auto", "cupy", "torch"), default="auto",
                    help="array framework of jitkernel's inputs on the GPU (auto: CuPy if installed, else torch)")
    ap.add_argument("--peers", default=",".join(sorted({p for p, _, _ in COLD.values()})),
                    help="peers of the peers section")
    ap.add_argument("--timeout", type=float, default=180, help="seconds per fresh process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        print("RESULT " + json.dumps(CHILDREN[spec["role"]](spec)), flush=True)
        return 0
    if not args.out:
        ap.error("--out is required")
    sections = [s for s in args.sections.split(",") if s]
    unknown = set(sections) - {"issue", "import", "peers"}
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)}")
    os.makedirs(args.out, exist_ok=True)

    devices, why = cuda_device_count()
    compile_only = args.compile_only or devices == 0
    import jitkernel as jk
    tk = jk.toolkit_info()
    if tk.get("nvrtc_error"):
        print(f"NVRTC not usable: {tk['nvrtc_error']}", file=sys.stderr)
        return 1
    arch = args.arch if compile_only else jk.device_info(0)["arch"]
    inputs = args.inputs
    if inputs == "auto":
        inputs = "cupy" if not missing_module(("cupy",)) else "torch"
    res = {"environment": environment(), "config": {
        "compile_only": compile_only, "why_compile_only": why if devices == 0 else "", "arch": arch,
        "reps": args.reps, "inputs": inputs, "nvrtc_version": tk.get("nvrtc_version"),
        "nvrtc_library": tk.get("nvrtc_library"), "sections": sections}}
    print(json.dumps(res["config"]), flush=True)
    pycache = tempfile.mkdtemp(prefix="jk_first_call_pycache_")
    try:
        if "import" in sections:
            res["import"] = import_section(args.import_reps, args.timeout, pycache)
            print("import: " + json.dumps(res["import"]), flush=True)
            save(res, args.out)
        if "issue" in sections:
            res["issue"] = issue_section(args, arch, compile_only, inputs, tk, pycache)
            save(res, args.out)
    finally:
        shutil.rmtree(pycache, ignore_errors=True)
    if "peers" in sections:
        res["peers"] = {}
        peers = set(p for p in args.peers.split(",") if p)
        for row, (peer, _, _) in COLD.items():
            if peer in peers:
                res["peers"][row] = cold_start(row, args.timeout, args.reps) if devices else {"skipped": why}
                print(f"first call {row}: {json.dumps(res['peers'][row])}", flush=True)
                save(res, args.out)
    md = save(res, args.out)
    print()
    print(md)
    return 1 if jitkernel_failed(res) else 0


if __name__ == "__main__":
    sys.exit(main())
