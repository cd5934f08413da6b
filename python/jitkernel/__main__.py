"""Command line: `python -m jitkernel demo` runs the documentation's exp example (see _demo.py);
`python -m jitkernel doctor` shows where jitkernel found NVRTC, the CUDA headers and the driver, and which GPUs
it sees. Both exit non-zero when something is wrong. `python -m jitkernel cache info|clear|path` shows, empties or
locates the compile cache folder (info and path also list its read-only tiers); `cache export|import FILE` writes or
reads a bundle of its entries (_fleet/bundle.py); `cache tuned` lists the autotuning decisions stored (kernel, key,
chosen configuration, each candidate's time; _fleet/autotune.py). `python -m jitkernel precompile --arch sm_80,sm_90a (--calls
module:function | --record FILE) [--tune]` compiles kernels into the cache ahead of time, without a GPU (with --tune,
on the target GPU, it decides autotuned kernels too: _fleet/precompile.py).
`python -m jitkernel sanitize [--tool memcheck] -- script.py args` runs a program under compute-sanitizer with its
reports naming jitkernel kernels and body lines (_sanitize.py). `python -m jitkernel --version` prints the version; `doctor --json` prints the doctor's report as JSON;
`--cmake-dir` prints the folder of the C++ API's CMake package (docs/cpp_api.md).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys

import jitkernel as jk
from jitkernel import _core, _demo, _sanitize
from jitkernel._fleet.autotune import tuned_decisions


# Packages jitkernel works with, as their distributions are named (versions read from metadata: nothing imported).
_FRAMEWORKS = ("numpy", "torch", "jax", "jaxlib", "cupy-cuda13x", "cupy-cuda12x", "cuda-core", "cuda-pathfinder",
               "triton", "ml-dtypes", "nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12")


def _framework_versions() -> dict:
    found = {}
    for name in _FRAMEWORKS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def _cache_state() -> dict:
    info = jk.cache_info()
    return {"path": info.path, "enabled": info.enabled, "disabled_reason": info.disabled_reason or None,
            "entries": info.entries, "bytes": info.bytes,
            "tiers": [{"path": t.path, "used": t.used, "reason": t.reason or None, "entries": t.entries}
                      for t in info.readonly]}


def _print_cache_and_frameworks(cache_state: dict, frameworks: dict) -> None:
    c = cache_state
    state = "on" if c["enabled"] else f"off ({c['disabled_reason']})"
    print(f"cache: {c['path']} ({state}; {c['entries']} kernel{'' if c['entries'] == 1 else 's'}, {_size(c['bytes'])})")
    for t in c["tiers"]:
        print(f"    read-only tier {t['path']}: " + (f"{t['entries']} entries" if t["used"] else f"not used: {t['reason']}"))
    print("frameworks: " + (", ".join(f"{k} {v}" for k, v in frameworks.items()) or "none installed"))


def doctor(as_json: bool = False) -> int:
    """Prints toolkit_info(), the compile cache's folder and state, the versions of the frameworks installed and each
    GPU's device_info() (``as_json``: one JSON object with the keys jitkernel, python, toolkit, cache, frameworks,
    devices, ok); non-zero when NVRTC (so nothing can compile) or a GPU query fails."""
    info = jk.toolkit_info()
    cache_state, frameworks = _cache_state(), _framework_versions()
    ok = not info.get("nvrtc_error")
    devices = []
    for ordinal in range(jk.device_count()):
        try:
            devices.append({"device": ordinal, **jk.device_info(ordinal)})
        except jk.JitKernelError as e:
            devices.append({"device": ordinal, "error": f"{type(e).__name__}: {e}"})
            ok = False
    if as_json:
        report = {"jitkernel": {"version": jk.__version__, "path": os.path.dirname(jk.__file__)},
                  "python": {"version": sys.version.split()[0], "executable": sys.executable},
                  "toolkit": info, "cache": cache_state, "frameworks": frameworks, "devices": devices, "ok": ok}
        print(json.dumps(report, indent=1, default=str))
        return 0 if ok else 1
    print(f"jitkernel {jk.__version__} ({os.path.dirname(jk.__file__)})")
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    _print_cache_and_frameworks(cache_state, frameworks)
    for key, value in info.items():
        if isinstance(value, (list, tuple)):
            print(f"{key}:" + ("" if value else " none"))
            for item in value:
                print(f"    {item}")
        else:
            print(f"{key}: {value}")
    for d in devices:
        detail = d.get("error") or ", ".join(f"{k}={v}" for k, v in d.items() if k != "device")
        print(f"device {d['device']}: {detail}")
    if not ok:
        print("problem: " + ("NVRTC could not be loaded, so no kernel can compile" if info.get("nvrtc_error")
                             else "a GPU could not be queried") + " (see above)")
    return 0 if ok else 1


def cmake_dir() -> int:
    """Prints the folder holding jitkernelConfig.cmake (the package compiles the C++ core's sources shipped
    beside it), for ``cmake -Djitkernel_DIR=$(python -m jitkernel --cmake-dir)``; non-zero when this
    install has none."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake")
    if not os.path.isfile(os.path.join(folder, "jitkernelConfig.cmake")):
        print(f"this jitkernel install has no CMake package ({folder} holds no jitkernelConfig.cmake); "
              "install one from the source tree with `cmake --install` (docs/cpp_api.md)", file=sys.stderr)
        return 1
    print(folder)
    return 0


def demo(full_source: bool = False) -> int:
    return _demo.main(full_source)


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"


def cache(action: str, args=None) -> int:
    """`cache info` prints the folder and its state, `cache clear` empties it, `cache path` prints the folder,
    `cache export FILE` / `cache import FILE` write / read a bundle."""
    if action in ("export", "import"):
        return bundle(action, args)
    if action == "tuned":
        return tuned()
    if action == "path":
        print(jk.cache_path())
        for tier in jk.cache_info().readonly:  # then the read-only tiers, in lookup order (when set)
            print(f"read-only: {tier.path}")
        return 0
    if action == "clear":
        kernels, records = _core._cache_clear()
        print(f"removed {kernels} cached kernel{'' if kernels == 1 else 's'} and {records} toolkit "
              f"record{'' if records == 1 else 's'} from {jk.cache_path()}")
        return 0
    info = jk.cache_info()
    print(f"path: {info.path}")
    print(f"enabled: {'yes' if info.enabled else 'no (' + info.disabled_reason + ')'}")
    print(f"entries: {info.entries} compiled kernel{'' if info.entries == 1 else 's'}, {info.records} toolkit "
          f"record{'' if info.records == 1 else 's'}")
    print(f"size: {_size(info.bytes)} of at most {_size(info.max_bytes)}")
    for tier in info.readonly:
        state = f"{tier.entries} entries, {_size(tier.bytes)}" if tier.used else f"not used: {tier.reason}"
        print(f"read-only: {tier.path} ({state})")
    print(f"claims: {'on, waiting up to ' + format(info.claim_wait_seconds, 'g') + ' s' if info.claims else 'off'}")
    return 0


def _config_text(config: dict) -> str:
    parts = [f"{name}={value['dtype'] if isinstance(value, dict) else value}" for name, value in config["template"]]
    parts += [f"{k}={tuple(config[k])}" for k in ("threadgroup", "grid") if config[k] is not None]
    return " ".join(parts) or "(defaults)"


def tuned() -> int:
    """`cache tuned`: every autotuning decision in the cache folder and its read-only tiers."""
    decisions = tuned_decisions()
    if not decisions:
        print(f"no autotuning decisions in {jk.cache_path()}")
        return 0
    for d in sorted(decisions, key=lambda d: (d["kernel"], d["device"], d["key"])):
        print(f"{d['kernel']} on {d['device']} ({d['arch']}), key {d['key']}: "
              f"{_config_text(d['configs'][d['chosen']])}  [{d['where']}/{d['entry']}]")
        for i, (config, ms, error) in enumerate(zip(d["configs"], d["times_ms"], d["errors"])):
            mark = "*" if i == d["chosen"] else " "
            result = f"{ms * 1000:.2f} us" if ms is not None else f"failed: {(error or '?').splitlines()[0]}"
            print(f"  {mark} {i}: {_config_text(config)}: {result}")
    return 0


def bundle(action: str, args) -> int:
    """`cache export FILE [--keys K ...] [--from DIR]` / `cache import FILE [--into DIR]`."""
    if args.file is None:
        print(f"cache {action}: the bundle FILE is required", file=sys.stderr)
        return 2
    try:
        if action == "export":
            r = jk.export_cache(args.file, keys=args.keys, directory=args.source)
            print(f"exported {r.entries} entr{'y' if r.entries == 1 else 'ies'}, {r.aliases} serving "
                  f"alias{'' if r.aliases == 1 else 'es'} and {r.decisions} autotuning decision"
                  f"{'' if r.decisions == 1 else 's'} ({_size(r.bytes)}) to {r.path}")
            return 0
        r = jk.import_cache(args.file, into=args.into)
    except jk.JitKernelError as e:
        print(f"cache {action}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    where = args.into or jk.cache_path()
    print(f"imported {r.stored} of {r.entries} entr{'y' if r.entries == 1 else 'ies'} ({_size(r.bytes)}) into {where}")
    if r.jitkernel != jk.__version__:
        print(f"note: the bundle was written by jitkernel {r.jitkernel}; this is {jk.__version__}, whose cache keys "
              f"differ, so its entries will not be used", file=sys.stderr)
    return 0 if r.stored == r.entries else 1


def precompile(args) -> int:
    """`precompile --arch A,B (--calls module:function | --record FILE) [--tune]`."""
    try:
        if args.calls is not None:
            module, _, qualname = args.calls.partition(":")
            if not module or not qualname:
                print(f"precompile: --calls expects module:function, got {args.calls!r}", file=sys.stderr)
                return 2
            calls = importlib.import_module(module)
            for part in qualname.split("."):
                calls = getattr(calls, part)
        else:
            calls = args.record
        r = jk.precompile(calls, args.arch, tune=args.tune)
    except jk.JitKernelError as e:
        print(f"precompile: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"precompiled {r.kernels} kernel{'' if r.kernels == 1 else 's'} ({r.calls} calls) for {', '.join(r.archs)}: "
          f"{r.compiled} compiled, {r.cached} already cached, in {r.cache_dir}")
    if args.tune:
        print(f"autotuning: {r.decisions} bucket{'' if r.decisions == 1 else 's'} decided, {r.tuned} timed now")
    return 0


# name -> (run(args) -> exit status, help)
COMMANDS = {
    "demo": (lambda a: demo(a.full_source),
             "run the exp example: launch and check against NumPy on a GPU; without one, show the generated "
             "kernel and compile it to an sm_90a cubin"),
    "doctor": (lambda a: doctor(a.json), "show the NVRTC library, CUDA include folders, driver, GPUs, compile cache "
                                          "and frameworks jitkernel finds"),
    "cache": (lambda a: cache(a.action, a), "show (info), empty (clear) or print the folder of (path) the compile "
                                            "cache; write (export) or read (import) a bundle of its entries; list "
                                            "autotuning decisions (tuned)"),
    "precompile": (precompile, "compile the kernels a function calls (--calls) or a record lists (--record) for "
                               "GPU architectures into the compile cache, without a GPU"),
    "sanitize": (lambda a: _sanitize.run(a.tool, a.program[1:] if a.program[:1] == ["--"] else a.program),
                 "run a Python program under NVIDIA's compute-sanitizer, its reports naming the jitkernel kernel "
                 "and the line of its body"),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jitkernel",
        description="jitkernel: write the body of a CUDA kernel, jitkernel generates the signature, "
                    "compiles it with NVRTC and launches it.",
        epilog="examples:\n  python -m jitkernel demo\n  python -m jitkernel doctor\n"
               "  python -m jitkernel cache info\n"
               "  python -m jitkernel precompile --arch sm_80,sm_90a --calls mymodule:warm_up\n"
               "  python -m jitkernel cache export kernels.jkbundle\n"
               "  python -m jitkernel sanitize --tool memcheck -- train.py --steps 1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print jitkernel's version and exit")
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the folder of the C++ API's CMake package (for -Djitkernel_DIR=) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if name == "demo":
            command.add_argument("--full-source", action="store_true",
                                 help="show the whole generated text, jitkernel's preamble included")
        if name == "doctor":
            command.add_argument("--json", action="store_true", help="one JSON object instead of text")
        if name == "cache":
            command.add_argument("action", choices=("info", "clear", "path", "export", "import", "tuned"),
                                 help="info: folder, state and size; clear: remove every entry jitkernel stored; "
                                      "path: the folder; export FILE / import FILE: write / read a bundle; "
                                      "tuned: the autotuning decisions stored")
            command.add_argument("file", nargs="?", metavar="FILE", help="the bundle (export and import)")
            command.add_argument("--keys", nargs="+", metavar="KEY", help="export: only these entries (hex keys)")
            command.add_argument("--from", dest="source", metavar="DIR",
                                 help="export: from this cache folder instead of the configured one")
            command.add_argument("--into", metavar="DIR",
                                 help="import: into DIR/kernels (a folder for JITKERNEL_CACHE_READONLY_DIRS) "
                                      "instead of the compile cache")
        if name == "precompile":
            command.add_argument("--arch", required=True, metavar="ARCHS",
                                 help="comma-separated architectures, e.g. sm_80,sm_90a,sm_100a")
            source = command.add_mutually_exclusive_group(required=True)
            source.add_argument("--calls", metavar="MODULE:FUNCTION",
                                help="a function (no arguments) that makes the kernel calls")
            source.add_argument("--record", metavar="FILE", help="a call record written with JITKERNEL_RECORD")
            command.add_argument("--tune", action="store_true",
                                 help="also decide the autotuned kernels' buckets on this machine's GPU (one of "
                                      "ARCHS), for `cache export` to ship")
        if name == "sanitize":
            command.add_argument("--tool", default="memcheck", choices=_sanitize.TOOLS,
                                 help="the sanitizer's tool (default: memcheck)")
            command.add_argument("program", nargs=argparse.REMAINDER, metavar="-- SCRIPT [ARGS]",
                                 help="the Python program and its arguments, after --")
    args = parser.parse_args(argv)
    if args.version:
        print(f"jitkernel {jk.__version__}")
        return 0
    if args.cmake_dir:
        return cmake_dir()
    if args.command is None:
        parser.print_help()
        return 2
    return COMMANDS[args.command][0](args)


if __name__ == "__main__":
    sys.exit(main())
