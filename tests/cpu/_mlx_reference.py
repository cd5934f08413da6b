"""MLX 0.32.4's Metal code generation, run live, for the byte-for-byte comparison with jitkernel's.

MLX writes its generated Metal source to C++ ``std::cout`` when a kernel is called with ``verbose=True``; on Linux
(no Metal) it only generates while a function is traced by ``mx.export_function``. ``mlx_sources(specs)`` runs one
child process that imports MLX, exports one function per spec (see ``_metal_cases.py``) while file descriptor 1
points at a temporary file, and returns ``{id: text}`` (MLX's text without the "Generated source code" framing) or
``{id: MlxFailure}``. ``mlx_unavailable()`` says why the comparison cannot run here (None when it can): MLX missing,
another version, or a build whose export does not print Metal code (some CUDA builds).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

MLX_VERSION = "0.32.4"

# Runs in the child: reads specs (JSON) from argv[1], writes results (JSON) to argv[2].
_CHILD = r'''
import json, os, sys, tempfile
import mlx.core as mx

def dtype(name):
    return getattr(mx, "bool_" if name == "bool" else name)

def run(spec, workdir):
    arrays = [e for e in spec["inputs"] if "scalar" not in e]
    template = None
    if spec["template"] is not None:
        template = [(n, dtype(v["dtype"]) if isinstance(v, dict) else v) for n, v in spec["template"]]
    kernel = mx.fast.metal_kernel(
        name=spec["name"], input_names=spec["input_names"], output_names=spec["output_names"],
        source=spec["source"], header=spec["header"], ensure_row_contiguous=spec["ensure_row_contiguous"],
        atomic_outputs=spec["atomic_outputs"])

    def fn(*args):
        it = iter(args)
        inputs = [e["scalar"] if "scalar" in e else next(it) for e in spec["inputs"]]
        return kernel(inputs=inputs, template=template, grid=tuple(spec["grid"]),
                      threadgroup=tuple(spec["threadgroup"]), output_shapes=[tuple(s) for s in spec["output_shapes"]],
                      output_dtypes=[dtype(d) for d in spec["output_dtypes"]], init_value=spec["init_value"],
                      verbose=True)

    args = [mx.zeros(tuple(e["shape"]), dtype(e["dtype"])) for e in arrays]
    capture = os.path.join(workdir, "stdout.txt")
    sys.stdout.flush()
    saved = os.dup(1)
    with open(capture, "wb") as f:
        os.dup2(f.fileno(), 1)
    try:
        mx.export_function(os.path.join(workdir, spec["id"] + ".mlxfn"), fn, *args)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    with open(capture, "rb") as f:
        return f.read().decode("utf-8")

specs = json.load(open(sys.argv[1]))
results = {"version": mx.__version__, "cases": {}}
with tempfile.TemporaryDirectory() as workdir:
    for spec in specs:
        try:
            results["cases"][spec["id"]] = {"stdout": run(spec, workdir)}
        except Exception as e:
            results["cases"][spec["id"]] = {"error": f"{type(e).__name__}: {e}"}
json.dump(results, open(sys.argv[2], "w"))
'''


@dataclass
class MlxFailure:
    """MLX raised, or printed something that is not its verbose framing."""

    message: str


def _unframe(name: str, stdout: str):
    prefix = f"Generated source code for `{name}`:\n```\n"
    suffix = "\n```\n"
    if not stdout.startswith(prefix) or not stdout.endswith(suffix) or len(stdout) < len(prefix) + len(suffix):
        return MlxFailure(f"unexpected output from MLX: {stdout[:200]!r}")
    return stdout[len(prefix):-len(suffix)]


def mlx_sources(specs: list, timeout: float = 600) -> dict:
    """{spec id: MLX's generated text or MlxFailure}; raises RuntimeError when the child process fails."""
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = os.path.join(tmp, "specs.json")
        out_path = os.path.join(tmp, "results.json")
        with open(spec_path, "w") as f:
            json.dump(specs, f)
        proc = subprocess.run([sys.executable, "-c", _CHILD, spec_path, out_path], capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0 or not os.path.exists(out_path):
            raise RuntimeError(f"the MLX child process failed (exit {proc.returncode}): "
                               f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        with open(out_path) as f:
            results = json.load(f)
    by_id = {s["id"]: s for s in specs}
    out = {}
    for sid, r in results["cases"].items():
        out[sid] = MlxFailure(r["error"]) if "error" in r else _unframe(by_id[sid]["name"], r["stdout"])
    return out


def mlx_unavailable(probe_spec: dict) -> str | None:
    """Why MLX's Metal code generation cannot be compared here, or None. ``probe_spec``: a simple case."""
    try:
        import mlx.core as mx
    except Exception as e:  # ImportError, or a broken install raising something else
        return (f"mlx is not importable ({type(e).__name__}: {e}); the comparison needs "
                f"pip install 'mlx[cpu]=={MLX_VERSION}' (Linux x86_64/aarch64, Python >= 3.10)")
    version = getattr(mx, "__version__", "?")
    if version != MLX_VERSION:
        return f"mlx {version} is installed; the byte-for-byte comparison is pinned to MLX {MLX_VERSION}"
    if not hasattr(mx, "export_function") or not hasattr(mx.fast, "metal_kernel"):
        return "this mlx build has no mx.export_function / mx.fast.metal_kernel"
    try:
        probe = mlx_sources([probe_spec], timeout=300)[probe_spec["id"]]
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        return f"running MLX's code generation failed: {e}"
    if isinstance(probe, MlxFailure):
        return f"this mlx build does not print its Metal code under mx.export_function: {probe.message}"
    return None
