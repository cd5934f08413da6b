"""Shared by the clang checks of the Metal backend (docs/metal.md): check 2 (test_metal_clang_runtime.py) compiles
the Metal runtime's C++ against metal-cpp plus stub Apple system headers; check 3 (test_metal_clang_sources.py)
parses every generated Metal source against a metal_stdlib shim. Both need clang >= 16; check 2 also metal-cpp
and nanobind's headers.

Where the tools are: ``JITKERNEL_CLANG`` (a clang++ binary) or the newest ``clang++-N`` / ``clang++`` on PATH;
``JITKERNEL_METAL_CPP_DIR`` (the folder holding ``Metal/Metal.hpp``) or ``build/metal-check/metal-cpp`` in the
checkout; ``JITKERNEL_NANOBIND_DIR`` (nanobind's include folder), ``build/metal-check/nanobind`` or the installed
nanobind. ``.ci/run`` installs clang and runs tests/metal_shim/fetch_tools.py for the headers. Without them the
tests skip, except under ``CI=true`` or when one of those variables is set, where they fail: a broken install must
not pass as skips.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "tests" / "metal_shim"
APPLE_STUBS = SHIM / "apple"  # objc, CoreFoundation, dispatch, ... (check 2)
MSL_SHIM = SHIM / "msl"  # metal_stdlib and friends (check 3)
TOOLS = REPO / "build" / "metal-check"  # where .ci/run puts its downloads (ignored by git)
MIN_CLANG = 16


TOOL_VARIABLES = ("JITKERNEL_CLANG", "JITKERNEL_METAL_CPP_DIR", "JITKERNEL_NANOBIND_DIR")


def required() -> bool:
    """Whether missing tools are an error: under CI=true, or when a tool's location was given explicitly."""
    return os.environ.get("CI", "").lower() == "true" or any(os.environ.get(v) for v in TOOL_VARIABLES)


def unavailable(reason: str):
    """Skips the calling test, or fails it when the tools are required."""
    if required():
        pytest.fail(f"{reason} (the Metal checks are required under CI=true or when "
                    f"{'/'.join(TOOL_VARIABLES)} is set; .ci/run installs the tools, see docs/metal.md)")
    pytest.skip(reason)


def need(found: tuple):
    """The tool of a find_*() result, or skip / fail (unavailable) saying why it is missing."""
    value, why = found
    if value is None:
        unavailable(why)
    return value


def clang_version(path: str) -> int | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"clang version (\d+)", out)
    return int(m.group(1)) if m else None


def find_clang() -> tuple[str | None, str]:
    """(path of clang++ >= 16, "") or (None, why not)."""
    given = os.environ.get("JITKERNEL_CLANG")
    if given:
        version = clang_version(given)
        if version is None:
            return None, f"JITKERNEL_CLANG={given} is not a clang that runs"
        if version < MIN_CLANG:
            return None, f"JITKERNEL_CLANG={given} is clang {version}; the Metal checks need clang >= {MIN_CLANG}"
        return given, ""
    for name in [f"clang++-{v}" for v in range(30, MIN_CLANG - 1, -1)] + ["clang++"]:
        path = shutil.which(name)
        if path and (clang_version(path) or 0) >= MIN_CLANG:
            return path, ""
    return None, f"no clang++ >= {MIN_CLANG} found (apt-get install clang-16, or set JITKERNEL_CLANG)"


def find_metal_cpp() -> tuple[Path | None, str]:
    given = os.environ.get("JITKERNEL_METAL_CPP_DIR")
    folder = Path(given) if given else TOOLS / "metal-cpp"
    if (folder / "Metal" / "Metal.hpp").is_file():
        return folder, ""
    where = f"JITKERNEL_METAL_CPP_DIR={given}" if given else str(folder)
    return None, f"no metal-cpp headers at {where} (they come with the mlx-metal macOS wheel; see docs/metal.md)"


def find_nanobind() -> tuple[Path | None, str]:
    given = os.environ.get("JITKERNEL_NANOBIND_DIR")
    if given:
        folder = Path(given)
    elif (TOOLS / "nanobind").is_dir():
        folder = TOOLS / "nanobind"
    else:
        try:
            import nanobind
        except ImportError:
            return None, ("no nanobind headers: not installed, JITKERNEL_NANOBIND_DIR not set "
                          "(python tests/metal_shim/fetch_tools.py fetches them)")
        folder = Path(nanobind.include_dir())
    if (folder / "nanobind" / "nanobind.h").is_file():
        return folder, ""
    return None, f"no nanobind/nanobind.h under {folder}"


def python_include() -> tuple[Path | None, str]:
    folder = Path(sysconfig.get_paths()["include"])
    if (folder / "Python.h").is_file():
        return folder, ""
    return None, f"no Python.h in {folder} (install the Python development headers)"


def run_clang(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def run_parallel(jobs: dict, timeout: float = 300) -> dict:
    """{key: argv} -> {key: CompletedProcess}, a few clang processes at a time."""
    workers = max(2, min(8, os.cpu_count() or 2))
    with ThreadPoolExecutor(workers) as pool:
        futures = {key: pool.submit(run_clang, argv, timeout) for key, argv in jobs.items()}
        return {key: f.result() for key, f in futures.items()}


# ---- check 3: from a generated Metal source to C++ that clang parses against the shim --------------------------

# Flags of check 3: C++17; clang's SYCL device mode, in which the OpenCL address spaces the shim maps device /
# constant / threadgroup to convert to the generic one (so objects copy out of any space, as in Metal) but not back;
# no system headers (Metal code has none); Metal's attributes ignored (see tests/metal_shim/msl/metal_stdlib).
MSL_FLAGS = ["-x", "c++", "-std=c++17", "-fsyntax-only", "-Xclang", "-fsycl-is-device", "-nostdinc",
             "-Wno-unknown-attributes", "-Wno-user-defined-literals", "-ferror-limit=20"]

_INSTANTIATION = re.compile(
    r'^template \[\[host_name\("(?P<host>[A-Za-z_][A-Za-z0-9_]*)"\)\]\] \[\[kernel\]\] '
    r'(?P<rest>decltype\((?P<name>[A-Za-z_][A-Za-z0-9_]*)<.*>\) (?P=name)<.*>;)$', re.M)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def as_cpp(source: str) -> tuple[str, list[str]]:
    """The C++ text clang parses for a Metal `source`, and the host names of its explicit instantiations.

    Two rewrites, each for something C++ cannot express: an explicit instantiation
    ``template [[host_name("X")]] [[kernel]] decltype(X<...>) X<...>;`` loses its attributes (C++ allows none
    there; the host name must equal the function's name, which is checked), and a `threadgroup` variable declared
    in a function gets `static` (C++ has no automatic variables in another address space)."""
    hosts = []

    def strip(m: re.Match) -> str:
        if m.group("host") != m.group("name"):
            raise AssertionError(f"host_name {m.group('host')!r} differs from the instantiated {m.group('name')!r}")
        hosts.append(m.group("host"))
        return "template " + m.group("rest")

    text = _INSTANTIATION.sub(strip, source)
    # Comments blanked (same length) so that they are not mistaken for code when looking back from a keyword.
    masked = _COMMENTS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    starts = []
    for m in re.finditer(r"\bthreadgroup\b", masked):
        before = masked[: m.start()].rstrip()
        if before and before[-1] in ";{}":  # starts a statement: a declaration, not a parameter or cast
            starts.append(m.start())
    for pos in reversed(starts):
        text = text[:pos] + "static " + text[pos:]
    return text, hosts


def msl_command(clang: str, path: Path) -> list[str]:
    return [clang, *MSL_FLAGS, "-isystem", str(MSL_SHIM), str(path)]
