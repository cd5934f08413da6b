"""Where NVRTC and the CUDA headers are: found here for the C++ core, which asks (``resolve()``) the first time it
needs them, whichever entry point needs them first (cpp/jitkernel/cuda/toolkit/toolkit_provider.hpp).

NVRTC, first match wins:
  1. ``JITKERNEL_NVRTC_PATH``: a specific libnvrtc.so (authoritative: if it does not exist, loading fails naming it);
  2. cuda-pathfinder (``pip install "jitkernel[cuda]"`` brings the nvidia-cuda-nvrtc wheel it finds; it also
     searches conda and the system loader); set ``JITKERNEL_NO_PATHFINDER=1`` to skip it. Its first answers are
     taken without importing it when they are unambiguous (``_wheel_toolkit``): the one NVRTC already loaded in
     the process, else the one NVIDIA wheel layout in site-packages that has NVRTC and both header folders;
  3. a CUDA toolkit: ``CUDA_HOME`` / ``CUDA_PATH`` if set, else /usr/local/cuda (lib64, lib, targets/*/lib).
libnvrtc-builtins from the same folder is preloaded (NVRTC 13 wheels have no RPATH).

Headers (-I folders): ``JITKERNEL_INCLUDE_PATH`` (os.pathsep-separated) first; then the folder with cuda_fp16.h
(cudart headers: nvidia-cuda-runtime wheel or a toolkit's include/) and the CCCL folder (cuda/std,
nvidia-cuda-cccl wheel's include/cccl or a toolkit's include/cccl), from the toolkit NVRTC came from when it came
from one, else cuda-pathfinder, else the CUDA roots above.

Nothing here runs at import: the core calls ``resolve()`` once, when it first needs NVRTC or the headers.

The search costs tens of milliseconds (importing cuda-pathfinder, which also loads NVRTC), more than a compile-cache hit
should take, so ``resolve()`` keeps its result as a toolkit record in the compile cache folder
(cpp/jitkernel/cuda/toolkit/toolkit_record.hpp: checksummed, written atomically, in the private folder; none with
``JITKERNEL_CACHE=0``). A record's key is everything that chooses where the search looks (the variables above,
CONDA_PREFIX, LD_LIBRARY_PATH, PYTHONPATH, the interpreter and its prefixes, what places the user's site-packages
folder) and the NVRTC libraries the process has loaded before searching, each by path and stat identity
(cuda-pathfinder returns an NVRTC that another package loaded, e.g. torch's: such a process gets its own record,
which names that library, the file the core's dlopen then finds loaded -- unless that library is the very file the
record of processes without it names, which it then shares); it holds the stat identities (device, inode, size,
mtime, ctime) of the files found and of the places looked at (the site-packages folders and their nvidia/
subfolders, conda-meta, the CUDA roots, the loader cache, the LD_LIBRARY_PATH folders), and it is used only while
all of them are unchanged: installing, removing or replacing any of them makes the next process search again (and
rewrite it). With a valid record neither cuda-pathfinder nor NVRTC is loaded until a kernel really
has to be compiled. The record only picks the files: compile keys still identify NVRTC by its ELF build-id (read when
the record was written, from a file unchanged since) and every header a compile can read (cache/compile_key.hpp;
the heads of the toolkit headers that fingerprint the include folders come from the record too, each file watched).
``toolkit_info()`` always searches.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import site
import sys
from dataclasses import dataclass, field

from . import _core
from ._errors import JitKernelError

INSTALL_HINT = ('Install NVRTC and the CUDA headers with `pip install "jitkernel[cuda]"` (`jitkernel[cuda12]` for a '
                "CUDA 12 driver or a GPU older than sm_75), or set JITKERNEL_NVRTC_PATH to a libnvrtc.so (or "
                "CUDA_HOME to a CUDA toolkit).")


@dataclass
class Toolkit:
    nvrtc_library: str = ""
    nvrtc_found_via: str = ""
    nvrtc_preload: list = field(default_factory=list)
    include_dirs: list = field(default_factory=list)
    include_found_via: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # why earlier places did not match / what is missing
    nvrtc_missing: bool = False
    from_record: bool = False  # read from the persisted record (not searched in this process)


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


def _first_line(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else ""


def _pathfinder_installed() -> bool:
    """Whether cuda-pathfinder can be imported, without importing it. ``find_spec("cuda.pathfinder")`` imports the
    parent package ``cuda``, so where no ``cuda`` package is installed at all (``pip install .`` without an extra)
    it raises ModuleNotFoundError instead of answering None."""
    try:
        return importlib.util.find_spec("cuda.pathfinder") is not None
    except (ImportError, ValueError):  # no (or a broken) parent package `cuda`
        return False


def _pathfinder():
    if os.environ.get("JITKERNEL_NO_PATHFINDER", "") not in ("", "0"):
        return None, "cuda-pathfinder: skipped (JITKERNEL_NO_PATHFINDER is set)"
    try:
        import cuda.pathfinder as pathfinder  # optional (the cuda extras), and its import costs tens of ms
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
        return None, f"cuda-pathfinder {libname} headers: {_first_line(e)}"


# NVIDIA's wheels of NVRTC and the CUDA headers under site-packages/nvidia/, where cuda-pathfinder looks first:
# (libnvrtc, the folder with cuda_fp16.h, the CCCL folder with cuda/std/version) per CUDA major version.
_WHEEL_LAYOUTS = (("cu13/lib/libnvrtc.so.13", "cu13/include", "cu13/include/cccl"),
                  ("cuda_nvrtc/lib/libnvrtc.so.12", "cuda_runtime/include", "cuda_cccl/include"))
_WHEEL_VIA = "NVIDIA wheel in site-packages (cuda-pathfinder's first place)"


def _wheel_toolkit(loaded: list) -> Toolkit | None:
    """What the full search finds when NVIDIA's wheels answer, found without importing cuda-pathfinder (the import
    alone costs tens of milliseconds, most of a first call's search): exactly one wheel layout in the site-packages
    folders with NVRTC and the CUDA headers, and NVRTC from it -- or, as cuda-pathfinder does, the one NVRTC
    library already loaded in the process (``loaded``: torch loads its own); CCCL from the wheel, else (no CCCL
    wheel, no conda) from the CUDA roots as the full search takes it. None when anything is missing or ambiguous
    (several layouts, several loaded NVRTCs, JITKERNEL_NVRTC_PATH, no cuda-pathfinder): search() then asks
    cuda-pathfinder itself."""
    if os.environ.get("JITKERNEL_NVRTC_PATH") or os.environ.get("JITKERNEL_NO_PATHFINDER", "") not in ("", "0"):
        return None
    loaded = list({identity: path for path, identity in loaded}.items())  # one per file, whatever its paths
    if len(loaded) > 1 or not _pathfinder_installed():
        return None
    found = {}  # by the library's real path: site folders may name one folder twice (a lib64 -> lib link)
    for folder in _site_folders():
        for lib, cudart, cccl in _WHEEL_LAYOUTS:
            lib, cudart, cccl = (os.path.join(folder, "nvidia", p) for p in (lib, cudart, cccl))
            if os.path.isfile(lib) and os.path.isfile(os.path.join(cudart, "cuda_fp16.h")):
                has_cccl = os.path.isfile(os.path.join(cccl, "cuda", "std", "version"))
                found.setdefault(os.path.realpath(lib), (lib, cudart, cccl if has_cccl else None))
    if len(found) != 1:
        return None
    ((lib, cudart, cccl),) = found.values()
    if cccl is None:
        # Without the CCCL wheel, the full search takes CCCL from the CUDA roots, unless conda (where
        # cuda-pathfinder looks before them) may have it.
        if os.environ.get("CONDA_PREFIX"):
            return None
        in_roots = [(c, root) for _, root in _cuda_roots() for c in [_headers_in_root(root)[1]] if c]
        if not in_roots:
            return None
        cccl, root = in_roots[0]
        cccl_via = f"CUDA toolkit {root}"
    else:
        cccl_via = _WHEEL_VIA
    tk = Toolkit(include_dirs=[d for d in os.environ.get("JITKERNEL_INCLUDE_PATH", "").split(os.pathsep) if d])
    tk.include_found_via = ["JITKERNEL_INCLUDE_PATH"] * len(tk.include_dirs)
    if loaded:
        tk.nvrtc_library, tk.nvrtc_found_via = loaded[0][1], "already-loaded in this process (cuda-pathfinder's rule)"
    else:
        tk.nvrtc_library, tk.nvrtc_found_via = lib, _WHEEL_VIA
    tk.nvrtc_preload = _builtins_for(tk.nvrtc_library)
    tk.include_dirs += [cudart, cccl]
    tk.include_found_via += [_WHEEL_VIA, cccl_via]
    return tk


def search(loaded: list | None = None) -> Toolkit:
    """Finds NVRTC and the include folders (without loading anything but what cuda-pathfinder loads); ``loaded``
    is the NVRTC libraries the process has loaded (``_core._toolkit_loaded_nvrtc()``, read when None)."""
    wheels = _wheel_toolkit(_core._toolkit_loaded_nvrtc() if loaded is None else loaded)
    if wheels is not None:
        return wheels
    tk = Toolkit()
    pathfinder, skipped = _pathfinder()
    nvrtc_root = None

    env = os.environ.get("JITKERNEL_NVRTC_PATH")
    if env:
        tk.nvrtc_library, tk.nvrtc_found_via = env, "JITKERNEL_NVRTC_PATH"
        if not os.path.isfile(env):
            tk.nvrtc_missing = True
            why = "not a regular file" if os.path.exists(env) else "no such file"
            tk.notes.append(f"JITKERNEL_NVRTC_PATH={env}: {why} (unset it to search elsewhere)")
    if not tk.nvrtc_library and pathfinder is not None:
        try:
            loaded = pathfinder.load_nvidia_dynamic_lib("nvrtc")
            tk.nvrtc_library = loaded.abs_path or "libnvrtc.so.13"
            tk.nvrtc_found_via = f"cuda-pathfinder ({loaded.found_via})"
        except Exception as e:
            tk.notes.append(f"cuda-pathfinder: {type(e).__name__}: {_first_line(e)}")
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


# --- the persisted search result (cpp/jitkernel/cuda/toolkit/toolkit_record.hpp) -------------------------------------

_RECORD_VERSION = "toolkit search 3"  # bump when search() changes what it finds or how it reports it
# Environment variables that choose where search() and cuda-pathfinder look (and which cuda-pathfinder is imported).
# PYTHONUSERBASE and HOME place the user's site-packages folder.
_INPUT_VARIABLES = ("JITKERNEL_NVRTC_PATH", "JITKERNEL_NO_PATHFINDER", "JITKERNEL_INCLUDE_PATH", "CUDA_HOME",
                    "CUDA_PATH", "CONDA_PREFIX", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONNOUSERSITE",
                    "PYTHONUSERBASE", "HOME")
_LOADER_CACHE = "/etc/ld.so.cache"  # where the system loader finds libraries (rewritten by ldconfig)


def _site_folders() -> list[str]:
    """The site-packages folders cuda-pathfinder searches for NVIDIA wheels (the user's one included)."""
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return folders


def _search_inputs() -> str:
    """What chooses where search() looks, besides the _INPUT_VARIABLES (the core adds their values): the record's
    key. The interpreter and its prefixes (with the variables) determine the site-packages folders, which are not
    computed here (that is slower)."""
    site = sys.modules.get("site")
    return "\n".join((_RECORD_VERSION, sys.version, sys.executable, sys.prefix, sys.exec_prefix, sys.base_prefix,
                      sys.platlibdir, f"user site {getattr(site, 'ENABLE_USER_SITE', None)}"))


def _places() -> list[str]:
    """What search() looks at besides the files it finds: a change in any of them can change its result."""
    places = []
    for folder in _site_folders():  # installing or removing a wheel adds or removes a .dist-info folder there
        places += [folder, os.path.join(folder, "nvidia")]
    conda = os.environ.get("CONDA_PREFIX")
    if conda:
        places.append(os.path.join(conda, "conda-meta"))  # changes with every conda install and removal
    for _, root in _cuda_roots():
        places += [root, *(os.path.join(root, sub) for sub in ("lib64", "lib", "include", "targets"))]
    places.append(_LOADER_CACHE)
    places += [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    return list(dict.fromkeys(places))


def _record_notes(tk: Toolkit) -> list[str]:
    """How each piece was found and the search's notes, as the record's note lines ("<kind>\t<text>"; the record
    refuses a line break)."""
    return ([f"nvrtc_found_via\t{tk.nvrtc_found_via}"]
            + [f"include_found_via\t{via}" for via in tk.include_found_via]
            + [f"note\t{note}" for note in tk.notes])


def _from_record(library: str, preload: list, include_dirs: list, notes: list) -> Toolkit:
    tk = Toolkit(nvrtc_library=library, nvrtc_preload=list(preload), include_dirs=list(include_dirs),
                 from_record=True)
    for line in notes:
        kind, _, text = line.partition("\t")
        if kind == "nvrtc_found_via":
            tk.nvrtc_found_via = text
        elif kind == "include_found_via":
            tk.include_found_via.append(text)
        else:
            tk.notes.append(text)
    return tk


def _is_loaded(library: str, loaded: list) -> bool:
    """Whether ``library`` is the file of one of the ``loaded`` NVRTC libraries (by stat identity)."""
    ((_, identity),) = _core._toolkit_watch([library])
    return identity != "missing" and any(identity == other for _, other in loaded)


def _search_and_record(inputs: str, loaded: list) -> Toolkit:
    """search(), recorded under ``inputs`` and ``loaded`` (the NVRTC libraries loaded before it)."""
    # The places are stat'ed before the search: a change during it makes the record stale, never wrong.
    places = _core._toolkit_watch(_places())
    tk = search(loaded)
    # Failures are searched again next time (with their notes). An NVRTC cuda-pathfinder found loaded already is
    # recorded only when it is one the key names (not one loaded during the search).
    already_loaded = "already-loaded" in tk.nvrtc_found_via
    if not tk.nvrtc_missing and (not already_loaded or _is_loaded(tk.nvrtc_library, loaded)):
        _core._toolkit_record_store(inputs, _INPUT_VARIABLES, loaded, tk.nvrtc_library, tk.nvrtc_preload,
                                    tk.include_dirs, _record_notes(tk), places)
    return tk


def _resolve(rediscover: bool) -> Toolkit:
    """What this process found already, else the persisted record when it is still valid, else a search (recorded).
    ``rediscover=True`` searches in any case (toolkit_info, error messages)."""
    global _found
    if _found is not None and not (rediscover and _found.from_record):
        return _found
    inputs = _search_inputs()
    loaded = _core._toolkit_loaded_nvrtc()  # before searching (cuda-pathfinder loads NVRTC)
    recorded = None if rediscover else _core._toolkit_record_load(inputs, _INPUT_VARIABLES, loaded)
    _found = _from_record(*recorded) if recorded is not None else _search_and_record(inputs, loaded)
    return _found


def resolve() -> tuple[str, list, list]:
    """(nvrtc_library, nvrtc_preload, include_dirs) for the core, which calls this once, the first time it needs
    NVRTC or the CUDA headers, and keeps the answer."""
    tk = _resolve(rediscover=False)
    return tk.nvrtc_library, list(tk.nvrtc_preload), list(tk.include_dirs)


def configure(rediscover: bool = False) -> Toolkit:
    """Resolves as ``resolve()`` does (``rediscover=True``: by a new search) and hands the result to the core now."""
    tk = _resolve(rediscover)
    _core.configure_toolkit(tk.nvrtc_library, tk.nvrtc_preload, tk.include_dirs)
    return tk


def search_notes(with_hint: bool = True) -> str:
    """Where the NVRTC search looked and what it found wrong (appended to CudaNotAvailableError messages)."""
    tk = _found if _found is not None and not _found.from_record else search()
    lines = [f"NVRTC: tried {tk.nvrtc_library} (from {tk.nvrtc_found_via})"]
    lines += [f"  {note}" for note in tk.notes]
    if with_hint:
        lines.append(INSTALL_HINT)
    return "\n".join(lines)


def toolkit_info() -> dict:
    """What jitkernel found: NVRTC (path, how it was found, version), include folders, the driver and GPUs.

    Never raises for a missing piece: it is reported under the ``*_error`` keys instead.
    """
    tk = configure(rediscover=True)  # a real search, not the record (and the record refreshed)
    info: dict = {}
    try:
        major, minor = _core.nvrtc_version()  # loads NVRTC if needed
        info["nvrtc_version"], info["nvrtc_error"] = f"{major}.{minor}", None
    except JitKernelError as e:
        info["nvrtc_version"], info["nvrtc_error"] = None, str(e).splitlines()[0]
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
