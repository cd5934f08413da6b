"""Helpers shared by the Python benchmarks (bench_launch.py, bench_first_call.py): the kernel texts both time,
the Skip row marker, cuda.core's names, the known NumPy/numba mismatch, running a measurement in a fresh process,
the run's environment for the report, and writing the report files.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

import numpy as np

RAW_SRC = r"""
extern "C" __global__ void raw_add(const float* a, const float* b, int n, float* c) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""
# jitkernel / MLX body: n is a scalar input, read as n[0] (works for scalars in both).
JK_BODY = """
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n[0]) c[i] = a[i] + b[i];
"""
# MLX's documentation example (seed 003): the kernel users will compare first-call times with.
CG_BODY = """
    auto elem = cooperative_groups::this_grid().thread_rank();
    T tmp = inp[elem];
    out[elem] = exp(tmp);
"""


class Skip(Exception):
    """A peer or variant that cannot run here (not installed, no GPU support, a known-broken install): a
    "skipped: why" row in the table, never fatal. ``name`` is the row's name (the peer's, when None)."""

    def __init__(self, reason, name=None):
        super().__init__(reason)
        self.name = name


def cuda_core():
    """cuda.core's names (the package or its older .experimental home) and its legacy default stream."""
    try:
        import cuda.core as cc
    except ImportError as e:
        raise Skip(f"cuda.core not installed ({e})")
    if not hasattr(cc, "launch"):  # cuda.core < 0.3 kept everything in cuda.core.experimental
        try:
            import cuda.core.experimental as cc
        except ImportError as e:
            raise Skip(f"this cuda.core has no launch() ({e})")
    dev = cc.Device()
    dev.set_current()
    # LEGACY_DEFAULT_STREAM: cuda.core >= 0.6; before that Device.default_stream is the same stream (unless
    # CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM is set).
    stream = getattr(cc, "LEGACY_DEFAULT_STREAM", None) or dev.default_stream
    return cc, dev, stream


def numpy_mismatch(lib, error):
    """A skip reason when the error text ``error`` shows ``lib`` calling a NumPy function that the installed NumPy
    no longer has (numba on a NumPy newer than it supports: 'module 'numpy' has no attribute 'row_stack''), else
    None. Used for the launch table and for the fresh-process first calls alike."""
    if "module 'numpy' has no attribute" not in error:
        return None
    ver = getattr(sys.modules.get(lib), "__version__", None)
    if ver is None:
        try:
            from importlib.metadata import version
            ver = version(lib)
        except Exception:  # the reason matters, not the version
            ver = "(version unknown)"
    return f"{lib} {ver} does not work with the installed NumPy {np.__version__} ({error})"


def run_fresh(cmd, timeout, **kwargs):
    """Runs ``cmd`` in a fresh process: the dict its last "RESULT <json>" line holds, or {"error": why}."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    if p.returncode == 0 and lines:
        return json.loads(lines[-1][len("RESULT "):])
    return {"error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:300]}


def git_commit():
    """Short hash (+dirty) of the checkout; JK_COMMIT wins (device_run.sh sets it: the device's copy has no .git)."""
    if os.environ.get("JK_COMMIT"):
        return os.environ["JK_COMMIT"]
    try:
        git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, timeout=10).stdout.strip()
        commit = git("rev-parse", "--short", "HEAD")
        return commit + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "") if commit else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def environment():
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "python": platform.python_version(), "host": platform.node(), "commit": git_commit()}
    try:
        import torch
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name()
            info["torch_cuda"] = torch.version.cuda
    except ImportError:
        pass
    try:
        import jitkernel as jk
        tk = jk.toolkit_info()
        info["jitkernel_toolkit"] = {k: v for k, v in tk.items() if isinstance(v, (str, int, float, bool))}
    except Exception as e:  # report, not fail: the table is still useful without it
        info["jitkernel_toolkit"] = f"{type(e).__name__}: {e}"
    return info


def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def write_report(out, stem, res, md):
    """Writes ``<stem>.json`` (``res``) and ``<stem>.md`` (``md``) into the folder ``out``; returns ``md``. Called
    after each part of a run too, so that a crash or a timeout keeps what was measured."""
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write(md + "\n")
    return md


def paired(a: dict, b: dict):
    """Median, min, max and quartiles of a[r] / b[r] over the rounds r both measured (keys: round numbers), or
    None when no round has both: the paired ratio the distributed benchmark's workers report."""
    ratios = [a[r] / b[r] for r in sorted(set(a) & set(b)) if b[r] > 0]
    if not ratios:
        return None
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "q1": q[0], "q3": q[2],
            "rounds": len(ratios)}
