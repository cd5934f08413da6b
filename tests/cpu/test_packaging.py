"""Packaging: the extension links no CUDA library, ``import jitkernel`` loads nothing CUDA and imports no array
framework, a missing NVRTC is a clear CudaNotAvailableError on first use (never at import), the toolkit search
honours JITKERNEL_NVRTC_PATH / CUDA_HOME, and the dtype table is what the docs say.
"""
from __future__ import annotations

import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

CUDA_LIBRARIES = ("libcuda.", "libnvrtc", "libcudart", "libnvJitLink", "libnvptxcompiler")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(jk.__file__)))


def elf_needed(path: str) -> list[str]:
    """DT_NEEDED entries of a 64-bit little-endian ELF shared object (parsed directly: no readelf needed)."""
    data = Path(path).read_bytes()
    assert data[:4] == b"\x7fELF", f"{path} is not an ELF file"
    if data[4] != 2 or data[5] != 1:
        pytest.skip("only 64-bit little-endian ELF is parsed here")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        base = shoff + i * shentsize
        _, sh_type = struct.unpack_from("<II", data, base)
        offset, size = struct.unpack_from("<QQ", data, base + 24)
        link, = struct.unpack_from("<I", data, base + 40)
        sections.append((sh_type, offset, size, link))
    needed = []
    for sh_type, offset, size, link in sections:
        if sh_type != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][1]
        for pos in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                start = strtab + value
                needed.append(data[start:data.index(b"\0", start)].decode())
    return needed


def test_extension_links_no_cuda_library():
    needed = elf_needed(_core.__file__)
    assert any(name.startswith("libc.so") for name in needed), needed  # the parser found the real entries
    linked = [name for name in needed if name.startswith(CUDA_LIBRARIES)]
    assert not linked, f"{_core.__file__} links {linked}; CUDA libraries must be dlopen'ed at run time"


def python_process(code: str, **env_overrides) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter that imports this jitkernel; asserts it exits 0."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_PARENT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for key, value in env_overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def run_python(code: str, **env_overrides) -> dict:
    """Runs `code` in a fresh interpreter that imports this jitkernel; returns the JSON it prints last."""
    return json.loads(python_process(code, **env_overrides).stdout.strip().splitlines()[-1])


def test_import_loads_no_cuda_and_no_framework():
    out = run_python("""
        import json, sys
        import jitkernel as jk
        maps = open("/proc/self/maps").read() if sys.platform == "linux" else ""
        print(json.dumps({
            "libs": sorted({line.split()[-1] for line in maps.splitlines()
                            if any(n in line for n in ("libcuda.", "libnvrtc", "libcudart"))}),
            "modules": sorted(m for m in sys.modules
                              if m.split(".")[0] in ("numpy", "torch", "cupy", "jax", "ml_dtypes")
                              or m.startswith("cuda.")),
        }))
    """)
    assert out == {"libs": [], "modules": []}


MISSING_NVRTC = """
    import json
    import jitkernel as jk
    k = jk.cuda_kernel(name="k", input_names=["a"], output_names=["out"], source="out[0] = a[0];")
    result = {"source": "const float* a" in k.source(inputs=[1.5], output_dtypes=[jk.float32])}
    for what, fn in [("compile", lambda: k.compile(inputs=[1.5], output_dtypes=[jk.float32])),
                     ("compile_cuda", lambda: jk.compile_cuda("__global__ void f() {}"))]:
        try:
            fn()
            result[what] = None
        except jk.JitKernelError as e:
            result[what] = [type(e).__name__, str(e)]
    result["info"] = jk.toolkit_info()
    print(json.dumps(result))
"""


def test_missing_nvrtc_is_a_clear_error_on_first_use():
    out = run_python(MISSING_NVRTC, JITKERNEL_NVRTC_PATH="/nonexistent/libnvrtc.so.13")
    assert out["source"], "source() must work without NVRTC"
    for what in ("compile", "compile_cuda"):
        name, message = out[what]
        assert name == "CudaNotAvailableError"
        assert "/nonexistent/libnvrtc.so.13" in message
        assert "JITKERNEL_NVRTC_PATH" in message and 'pip install "jitkernel[cuda]"' in message
    info = out["info"]
    assert info["nvrtc_version"] is None and "/nonexistent" in info["nvrtc_error"]
    assert info["nvrtc_found_via"] == "JITKERNEL_NVRTC_PATH"


def _real_toolkit() -> dict:
    info = jk.toolkit_info()
    if info["nvrtc_version"] is None or not os.path.isfile(info["nvrtc_library"]):
        pytest.fail(f"NVRTC is not installed ({info['nvrtc_error']}): pip install \"jitkernel[cuda]\"")
    return info


def test_cuda_home_layout_is_found_without_pathfinder(tmp_path):
    info = _real_toolkit()
    include = next(d for d in info["include_dirs"] if os.path.isfile(os.path.join(d, "cuda_fp16.h")))
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64" / "libnvrtc.so.13").symlink_to(os.path.realpath(info["nvrtc_library"]))
    (tmp_path / "include").symlink_to(include)
    out = run_python("""
        import json
        import jitkernel as jk
        k = jk.cuda_kernel(name="k", input_names=["a"], output_names=["out"], source="out[0] = a[0];")
        cubin = k.compile(inputs=[__import__("numpy").zeros(1, "float16")], output_dtypes=[jk.float16])
        info = jk.toolkit_info()
        print(json.dumps({"elf": cubin[:4] == b"\\x7fELF", "via": info["nvrtc_found_via"],
                          "library": info["nvrtc_library"], "include": info["include_dirs"],
                          "include_via": info["include_found_via"]}))
    """, JITKERNEL_NO_PATHFINDER="1", CUDA_HOME=str(tmp_path), CUDA_PATH=None, JITKERNEL_NVRTC_PATH=None)
    assert out["elf"]
    assert out["via"] == "CUDA_HOME" and out["library"].startswith(str(tmp_path))
    assert out["include"] and out["include"][0] == str(tmp_path / "include")
    assert out["include_via"][0] == f"CUDA toolkit {tmp_path}"


def test_nothing_found_lists_where_it_looked(tmp_path):
    out = run_python("""
        import ctypes, json
        try:
            ctypes.CDLL("libnvrtc.so.13")
            system = True
        except OSError:
            system = False
        import jitkernel as jk
        try:
            jk.compile_cuda("__global__ void f() {}")
            error = None
        except jk.CudaNotAvailableError as e:
            error = str(e)
        print(json.dumps({"system": system, "error": error}))
    """, JITKERNEL_NO_PATHFINDER="1", CUDA_HOME=str(tmp_path), CUDA_PATH=None, JITKERNEL_NVRTC_PATH=None)
    if out["system"]:
        pytest.skip("the system loader finds libnvrtc.so.13 here")
    assert out["error"] is not None
    for expected in ("JITKERNEL_NO_PATHFINDER", f"CUDA_HOME={tmp_path}", 'pip install "jitkernel[cuda]"'):
        assert expected in out["error"], out["error"]


def test_package_ships_type_marker():
    # (The version's single source is checked in test_project_metadata.py.)
    assert (Path(jk.__file__).parent / "py.typed").is_file()


# --- the dtype table -------------------------------------------------------------------------------------------

# name: (itemsize, CUDA spelling, DLPack (code, bits)) from the DLPack spec and cuda_fp16/bf16/cuComplex headers.
TABLE = {
    "bool": (1, "bool", (6, 8)),
    "int8": (1, "int8_t", (0, 8)), "int16": (2, "int16_t", (0, 16)),
    "int32": (4, "int32_t", (0, 32)), "int64": (8, "int64_t", (0, 64)),
    "uint8": (1, "uint8_t", (1, 8)), "uint16": (2, "uint16_t", (1, 16)),
    "uint32": (4, "uint32_t", (1, 32)), "uint64": (8, "uint64_t", (1, 64)),
    "float16": (2, "__half", (2, 16)), "bfloat16": (2, "__nv_bfloat16", (4, 16)),
    "float32": (4, "float", (2, 32)), "float64": (8, "double", (2, 64)),
    "complex64": (8, "cuComplex", (5, 64)),
}


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


@pytest.mark.parametrize("name", list(TABLE))
def test_dtype_table(name):
    itemsize, cuda_type, dlpack = TABLE[name]
    d = getattr(jk, "bool_" if name == "bool" else name)
    assert isinstance(d, jk.DType)
    assert (d.name, str(d), repr(d)) == (name, name, f"jitkernel.{name}")
    assert d.itemsize == itemsize == numpy_dtype(name).itemsize
    assert d.cuda_type == cuda_type
    assert d.dlpack == (*dlpack, 1)
    # Every spelling of the same type gives the same singleton.
    assert jk.dtype(name) is d
    assert jk.dtype(numpy_dtype(name)) is d and jk.dtype(numpy_dtype(name).type) is d
    assert jk.dtype(d) is d
    assert pickle.loads(pickle.dumps(d)) is d
    assert d == jk.dtype(name) and hash(d) == hash(jk.dtype(name))
    assert all(other != d for other in jk._dtypes.ALL_DTYPES if other is not d)
    assert d != name  # a DType is not equal to its name


def test_dtype_table_is_complete_and_aliases():
    assert sorted(d.name for d in jk._dtypes.ALL_DTYPES) == sorted(TABLE)
    aliases = {"half": jk.float16, "float": jk.float32, "double": jk.float64, "int": jk.int32, "long": jk.int64,
               "short": jk.int16, "bf16": jk.bfloat16, "bool_": jk.bool_, "cfloat": jk.complex64}
    for alias, d in aliases.items():
        assert jk.dtype(alias) is d, alias


def test_torch_dtypes_when_torch_is_installed():
    torch = pytest.importorskip("torch")
    for name in TABLE:
        assert jk.dtype(getattr(torch, name)).name == name
    with pytest.raises(jk.ArgumentError, match="PyTorch dtype torch.complex128"):
        jk.dtype(torch.complex128)


def test_no_leak_report_at_exit_when_dtypes_outlive_teardown():
    # nanobind reports its instances still alive at exit as leaks. The dtype singletons are process-lifetime
    # constants that other libraries may hold past interpreter teardown (pytest's session does, with parametrize
    # values like jk.float32, when the hypothesis plugin and torch are both loaded), so they are plain CPython
    # objects: a reference nobody ever drops, conversions from NumPy / ml_dtypes / names, a compile and a
    # jk.Array must leave nothing for that report.
    proc = python_process("""
        import ctypes
        import ml_dtypes, numpy as np
        import jitkernel as jk
        for x in (np.float16, np.dtype("int64"), ml_dtypes.bfloat16, "float32", "half", jk.complex64):
            jk.dtype(x)
        k = jk.cuda_kernel("leak_probe", ["inp"], ["out"], "out[0] = inp[0];")
        k.compile(inputs=[np.zeros(2, ml_dtypes.bfloat16)], output_dtypes=[np.float32], template=[("T", jk.int8)])
        memory = (ctypes.c_float * 6)()
        keep = jk._core._array_view_for_tests(ctypes.addressof(memory), [2, 3], jk.float32, 0, 0)
        assert keep.dtype is jk.float32
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(jk.float16))  # held by "some other library", forever
        print("done")
    """)
    assert proc.stdout.strip() == "done"
    assert "leaked" not in proc.stderr, proc.stderr


def test_dtype_objects_are_final_singletons():
    with pytest.raises(TypeError, match="cannot be instantiated"):
        jk.DType()
    with pytest.raises(TypeError):
        type("Sub", (jk.DType,), {})
    assert jk.dtype("float32") is jk.float32 and jk.float32 == jk.float32 and jk.float32 != jk.float16
    assert jk.float32 != "float32" and jk.float32 != np.float32
    assert {jk.float32: 1}[jk.dtype(np.float32)] == 1
    assert type(jk.float32).__module__ == "jitkernel._core" and repr(jk.bfloat16) == "jitkernel.bfloat16"
