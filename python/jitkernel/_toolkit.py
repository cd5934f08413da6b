"""Where NVRTC and the CUDA headers are: found here, handed to the C++ core before its first compile.

NVRTC, first match wins:
  1. ``JITKERNEL_NVRTC_PATH``: a specific libnvrtc.so (authoritative: if it does not exist, loading fails naming it);
  2. cuda-pathfinder (``pip install "jitkernel[cuda]"`` brings the nvidia-cuda-nvrtc wheel it finds; it also
     searches conda and the system loader); set ``JITKERNEL_NO_PATHFINDER=1`` to skip it;
  3. a CUDA toolkit: ``CUDA_HOME`` / ``CUDA_PATH`` if set, else /usr/local/cuda (lib64, lib, targets/*/lib).
libnvrtc-builtins from the same folder is preloaded (NVRTC 13 wheels have no RPATH).

Headers (-I folders): ``JITKERNEL_INCLUDE_PATH`` (os.pathsep-separated) first; then the folder with cuda_fp16.h
(cudart headers: nvidia-cuda-runtime wheel or a toolkit's include/) and the CCCL folder (cuda/std,
nvidia-cuda-cccl wheel's include/cccl or a toolkit's include/cccl), from the toolkit NVRTC came from when it came
from one, else cuda-pathfinder, else the CUDA roots above.

Nothing here runs at import: the extension calls ``configure()`` right before it may first compile.
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

from . import _core

INSTALL_HINT = ('Install NVRTC and the CUDA headers with `pip install "jitkernel[cuda]"`, or set '
                "JITKERNEL_NVRTC_PATH to a libnvrtc.so.13 (or CUDA_HOME to a CUDA toolkit).")


@dataclass
class Toolkit:
    nvrtc_library: str = ""
    nvrtc_found_via: str = ""
    nvrtc_preload: list = field(default_factory=list)
    include_dirs: list = field(default_factory=list)
    include_found_via: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # why earlier places did not match / what is missing
    nvrtc_missing: bool = False


_found: Toolkit | None = None


def _cuda_roots() -> list[tuple[str, str]]:
    roots = [(var, os.environ[var]) for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)]
    return roots or [("/usr/local/cuda", "/usr/local/cuda")]


def _version_key(path: str):
    return [int(p) for p in re.findall(r"\d+", os.path.basename(path))]


def _builtins_for(nvrtc: str) -> list[str]:
    """libnvrtc-builtins.so.<major>.<minor> next to libnvrtc (not the .alt variant)."""
    folder = os.path.dirname(os.path.realpath(nvrtc))
    candidates = [p for p in glob.glob(os.path.join(folder, "libnvrtc-builtins.so.*")) if ".alt." not in p]
    return sorted(candidates, key=_version_key)[-1:]


def _nvrtc_in_root(root: str) -> str | None:
    found = []
    for libdir in ("lib64", "lib", *glob.glob(os.path.join(root, "targets", "*", "lib"))):
        found += [p for p in glob.glob(os.path.join(root, libdir, "libnvrtc.so*"))
                  if ".alt." not in p and os.path.isfile(p)]
    return sorted(found, key=lambda p: (len(_version_key(p)), _version_key(p)))[-1] if found else None


def _headers_in_root(root: str) -> tuple[str | None, str | None]:
    """(folder with cuda_fp16.h, CCCL folder with cuda/std/version) of a toolkit."""
    includes = [os.path.join(root, "include"), *glob.glob(os.path.join(root, "targets", "*", "include"))]
    cudart = next((d for d in includes if os.path.isfile(os.path.join(d, "cuda_fp16.h"))), None)
    cccl = None
    for d in includes:
        for candidate in (os.path.join(d, "cccl"), d):  # CUDA 13: include/cccl; CUDA 12: include itself
            if os.path.isfile(os.path.join(candidate, "cuda", "std", "version")):
                cccl = cccl or candidate
    return cudart, cccl


def _pathfinder():
    if os.environ.get("JITKERNEL_NO_PATHFINDER", "") not in ("", "0"):
        return None, "cuda-pathfinder: skipped (JITKERNEL_NO_PATHFINDER is set)"
    try:
        import cuda.pathfinder as pathfinder
    except ImportError:
        return None, 'cuda-pathfinder: not installed (pip install "jitkernel[cuda]")'
    return pathfinder, None


def _pathfinder_header(pathfinder, libname: str) -> tuple[str | None, str]:
    try:
        locate = getattr(pathfinder, "locate_nvidia_header_directory", None)
        if locate is not None:
            found = locate(libname)
            return (found.abs_path, f"cuda-pathfinder ({found.found_via})") if found else (None, "")
        return pathfinder.find_nvidia_header_directory(libname), "cuda-pathfinder"
    except Exception as e:  # unknown libname in old versions, odd installs: report, keep searching
        return None, f"cuda-pathfinder {libname} headers: {e}"


def search() -> Toolkit:
    """Finds NVRTC and the include folders (without loading anything but what cuda-pathfinder loads)."""
    tk = Toolkit()
    pathfinder, skipped = _pathfinder()
    nvrtc_root = None

    env = os.environ.get("JITKERNEL_NVRTC_PATH")
    if env:
        tk.nvrtc_library, tk.nvrtc_found_via = env, "JITKERNEL_NVRTC_PATH"
        if not os.path.isfile(env):
            tk.nvrtc_missing = True
            tk.notes.append(f"JITKERNEL_NVRTC_PATH={env}: no such file (unset it to search elsewhere)")
    if not tk.nvrtc_library and pathfinder is not None:
        try:
            loaded = pathfinder.load_nvidia_dynamic_lib("nvrtc")
            tk.nvrtc_library = loaded.abs_path or "libnvrtc.so.13"
            tk.nvrtc_found_via = f"cuda-pathfinder ({loaded.found_via})"
        except Exception as e:
            tk.notes.append(f"cuda-pathfinder: {type(e).__name__}: {str(e).strip().splitlines()[0]}")
    elif skipped and not tk.nvrtc_library:
        tk.notes.append(skipped)
    if not tk.nvrtc_library:
        for var, root in _cuda_roots():
            path = _nvrtc_in_root(root)
            if path:
                tk.nvrtc_library, tk.nvrtc_found_via, nvrtc_root = path, var, root
                break
            tk.notes.append(f"{var}={root}: no libnvrtc.so* in lib64/, lib/ or targets/*/lib/")
    if not tk.nvrtc_library:
        tk.nvrtc_missing = True
        tk.nvrtc_library, tk.nvrtc_found_via = "libnvrtc.so.13", "system loader (last resort)"
    if os.path.isfile(tk.nvrtc_library):
        tk.nvrtc_preload = _builtins_for(tk.nvrtc_library)

    extra = [d for d in os.environ.get("JITKERNEL_INCLUDE_PATH", "").split(os.pathsep) if d]
    tk.include_dirs += extra
    tk.include_found_via += ["JITKERNEL_INCLUDE_PATH"] * len(extra)
    cudart = cccl = None
    sources = []
    if nvrtc_root:
        sources.append(("toolkit", nvrtc_root))
    if pathfinder is not None:
        sources.append(("pathfinder", None))
    sources += [("toolkit", root) for _, root in _cuda_roots()]
    for kind, root in sources:
        if kind == "toolkit":
            c, k = _headers_in_root(root)
            via = f"CUDA toolkit {root}"
            c_via = k_via = via
        else:
            c, c_via = _pathfinder_header(pathfinder, "cudart")
            k, k_via = _pathfinder_header(pathfinder, "cccl")
            if not c and c_via:
                tk.notes.append(c_via)
            if not k and k_via:
                tk.notes.append(k_via)
        if c and not cudart:
            cudart = c
            tk.include_dirs.append(c)
            tk.include_found_via.append(c_via)
        if k and not cccl:
            cccl = k
            tk.include_dirs.append(k)
            tk.include_found_via.append(k_via)
        if cudart and cccl:
            break
    if not cudart:
        tk.notes.append("CUDA headers (cuda_fp16.h) not found: kernels using half/bfloat16 will not compile; "
                        "pip install nvidia-cuda-runtime (part of jitkernel[cuda])")
    if not cccl:
        tk.notes.append("CCCL headers (cuda/std) not found: cooperative_groups will not compile; "
                        "pip install nvidia-cuda-cccl (part of jitkernel[cuda])")
    return tk


def configure() -> Toolkit:
    """Searches and hands the result to the core (the extension calls this before its first compile)."""
    global _found
    tk = search()
    _core.configure_toolkit(tk.nvrtc_library, tk.nvrtc_preload, tk.include_dirs)
    _found = tk
    return tk


def search_notes(with_hint: bool = True) -> str:
    """Where the NVRTC search looked and what it found wrong (appended to CudaNotAvailableError messages)."""
    tk = _found if _found is not None else search()
    lines = [f"NVRTC: tried {tk.nvrtc_library} (from {tk.nvrtc_found_via})"]
    lines += [f"  {note}" for note in tk.notes]
    if with_hint:
        lines.append(INSTALL_HINT)
    return "\n".join(lines)


def toolkit_info() -> dict:
    """What jitkernel found: NVRTC (path, how it was found, version), include folders, the driver and GPUs.

    Never raises for a missing piece: it is reported under the ``*_error`` keys instead.
    """
    from ._errors import JitKernelError

    info: dict = {}
    try:
        major, minor = _core.nvrtc_version()  # configures and loads NVRTC if needed
        info["nvrtc_version"], info["nvrtc_error"] = f"{major}.{minor}", None
    except JitKernelError as e:
        info["nvrtc_version"], info["nvrtc_error"] = None, str(e).splitlines()[0]
    tk = _found if _found is not None else configure()
    info["nvrtc_library"] = tk.nvrtc_library
    info["nvrtc_found_via"] = tk.nvrtc_found_via
    info["nvrtc_preload"] = list(tk.nvrtc_preload)
    info["include_dirs"] = list(tk.include_dirs)
    info["include_found_via"] = list(tk.include_found_via)
    info["notes"] = list(tk.notes)
    try:
        version = _core.driver_version()
        info["driver_version"], info["driver_error"] = f"{version // 1000}.{version % 1000 // 10}", None
    except JitKernelError as e:
        info["driver_version"], info["driver_error"] = None, str(e).splitlines()[0]
    info["cuda_available"] = _core.cuda_available()
    info["device_count"] = _core.device_count()
    return info
