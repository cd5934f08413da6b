"""`python -m jitkernel sanitize [--tool T] -- script.py args`: runs a Python program under NVIDIA's
compute-sanitizer and says which jitkernel kernel and which line of its body each report is about.

A generated kernel's entry point is ``<name>_<16 hex digits>`` (cpp/jitkernel/codegen/entry_name.cpp) and its body is
compiled with line info under ``#line 1 "source"`` (its header under ``#line 1 "header"``), so the sanitizer's reports
name the entry point and ``source:<line>``. Report lines (those starting with ``=========``) are rewritten to name
the kernel and the body (or header) line; the program's own output passes through unchanged. Two location forms
occur: ``at <entry>+0x1d0 in <dir>/source:3`` (memcheck, initcheck, synccheck, racecheck's hazard lines) and
``at 0x1d0 in <dir>/source:3:<entry>`` (file:line:function, racecheck's form in some releases). The sanitizer is
the one named by ``JITKERNEL_COMPUTE_SANITIZER``, else the one NVIDIA's ``nvidia-cuda-sanitizer-api`` wheel ships (``pip install
"jitkernel[sanitize]"``), else the CUDA toolkit's (``CUDA_HOME``, ``CUDA_PATH``, /usr/local/cuda, ``PATH``).
Child processes are followed (``--target-processes all``) and host backtraces are off (``--show-backtrace device``:
host backtraces keep the Python frames they walk alive). The exit status is the sanitizer's: 1 when it reported an
error (``--error-exitcode 1``), else the program's.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
_ENTRY = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)_([0-9a-f]{16})\b")
# "in <dir>/source:3", optionally followed by ":<entry>" (the file:line:function form).
_LOCATION = re.compile(r"\bin (?:\S*/)?(source|header):(\d+)(?::([A-Za-z_][A-Za-z0-9_]*)_[0-9a-f]{16}\b)?")
_PART = {"source": "the kernel body", "header": "the kernel header"}
_WHEEL_BINARIES = ("cu13/bin/compute-sanitizer", "cu12/bin/compute-sanitizer", "cuda_sanitizer_api/bin/compute-sanitizer")


class SanitizerNotFound(Exception):
    """No compute-sanitizer program; the message says what to install."""


def find_sanitizer() -> str:
    """The compute-sanitizer program to run (see the module docstring for the order)."""
    named = os.environ.get("JITKERNEL_COMPUTE_SANITIZER")
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return named
        raise SanitizerNotFound(f"JITKERNEL_COMPUTE_SANITIZER={named!r} is not an executable file")
    candidates = []
    try:
        import nvidia  # the namespace package NVIDIA's CUDA wheels install into

        for root in getattr(nvidia, "__path__", ()):
            candidates += [os.path.join(root, rel) for rel in _WHEEL_BINARIES]
    except ImportError:
        pass
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            candidates.append(os.path.join(os.environ[variable], "bin", "compute-sanitizer"))
    candidates.append("/usr/local/cuda/bin/compute-sanitizer")
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    on_path = shutil.which("compute-sanitizer")
    if on_path:
        return on_path
    raise SanitizerNotFound("compute-sanitizer not found: install it with pip install \"jitkernel[sanitize]\" "
                            "(NVIDIA's nvidia-cuda-sanitizer-api wheel ships it) or with the CUDA toolkit, or name "
                            "it in JITKERNEL_COMPUTE_SANITIZER (looked in: " + ", ".join(candidates) + ", PATH)")


def rewrite(line: str) -> str:
    """A sanitizer report line with jitkernel's entry points and body lines named as the user wrote them."""
    if not line.startswith("========="):
        return line
    line = _LOCATION.sub(_location, line)
    return _ENTRY.sub(lambda m: f"jitkernel kernel '{m.group(1)}'", line)


def _location(m: re.Match) -> str:
    text = f"in {_PART[m.group(1)]}, line {m.group(2)}"
    return text + (f" of jitkernel kernel '{m.group(3)}'" if m.group(3) else "")


def command(sanitizer: str, tool: str, program: list) -> list:
    """The sanitizer's command line for running `program` (a script and its arguments) with this Python."""
    return [sanitizer, "--tool", tool, "--target-processes", "all", "--show-backtrace", "device",
            "--error-exitcode", "1", sys.executable, *program]


def run(tool: str, program: list) -> int:
    """Runs `program` under the sanitizer, printing its output with report lines rewritten; the exit status."""
    if tool not in TOOLS:
        print(f"sanitize: --tool must be one of {', '.join(TOOLS)}, got {tool!r}", file=sys.stderr)
        return 2
    if not program:
        print("sanitize: give the program to run after --, e.g. python -m jitkernel sanitize -- script.py",
              file=sys.stderr)
        return 2
    try:
        sanitizer = find_sanitizer()
    except SanitizerNotFound as e:
        print(f"sanitize: {e}", file=sys.stderr)
        return 1
    with subprocess.Popen(command(sanitizer, tool, program), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", bufsize=1) as proc:
        for line in proc.stdout:
            sys.stdout.write(rewrite(line))
            sys.stdout.flush()
    return proc.returncode
