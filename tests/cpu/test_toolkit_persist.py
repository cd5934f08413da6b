"""The toolkit record (cpp/jitkernel/cuda/toolkit/toolkit_record.hpp, python/jitkernel/_toolkit_search.py): a process
whose compile cache is warm finds NVRTC and the headers from the record of an earlier search, so a cache hit imports no
cuda-pathfinder and loads no NVRTC; the record is the search's exact result; it is searched again (never used stale)
when the variables that steer the search change, when the NVRTC file found is modified or replaced, when a place the
search looked at changes, when it is damaged or its folder is not private; the compile key still tells NVRTC builds
apart; nothing is recorded with the cache off or when NVRTC is missing; clear_cache removes records; the folder keeps
at most 64.

Every check runs in fresh processes (the record is read once per process), each test on its own cache folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import jitkernel as jk
from jitkernel import _core, _toolkit_search

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(jk.__file__)))
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="NVRTC records and /proc/self/maps: Linux only")

# One compile through kernel.compile (the disk cache), then what the process loaded and how it found the toolkit.
PROBE = textwrap.dedent("""
    import ctypes, hashlib, json, os, sys
    for path in filter(None, os.environ.get("JK_TEST_PRELOAD", "").split(os.pathsep)):
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # a library another package loaded first
    import numpy as np
    import jitkernel as jk
    from jitkernel import _core, _toolkit_search
    k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                       source="auto i = threadIdx.x; out[i] = inp[i] * 2;")
    cubin = k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
    key = _core._cache_compile_key('extern "C" __global__ void f() {}', "f.cu", "sm_90a", "cubin")
    with open("/proc/self/maps") as maps:
        nvrtc_mapped = any("libnvrtc" in line for line in maps)
    tk, info = _toolkit_search._found, jk.cache_info()
    result = dict(sha=hashlib.sha256(cubin).hexdigest(), key=key, hits=info.hits, misses=info.misses,
                  pathfinder="cuda.pathfinder" in sys.modules, nvrtc_mapped=nvrtc_mapped, from_record=tk.from_record,
                  found=[tk.nvrtc_library, tk.nvrtc_found_via, tk.nvrtc_preload, tk.include_dirs,
                         tk.include_found_via, tk.notes])
    if "--info" in sys.argv:
        result["info"] = jk.toolkit_info()
        result["from_record_after_info"] = _toolkit_search._found.from_record
    print(json.dumps(result))
""")


def probe(folder, *args, **env_overrides) -> dict:
    """Runs PROBE (with ``args``) in a fresh interpreter with the compile cache in ``folder``; its result."""
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(folder))
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_PARENT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("JITKERNEL_CACHE", None)
    env.update(env_overrides)
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def records(folder):
    return sorted((folder / "records").glob("*.jkc"))


@pytest.fixture(scope="module")
def toolkit():
    """This machine's toolkit as a search finds it (the tests need a real NVRTC, like test_packaging)."""
    tk = _toolkit_search.search()
    if tk.nvrtc_missing or not os.path.isfile(tk.nvrtc_library):
        pytest.fail(f"NVRTC is not installed ({_toolkit_search.search_notes()}): pip install \"jitkernel[cuda]\"")
    return tk


def nvrtc_folder(folder, toolkit, copy: bool):
    """``folder`` with the NVRTC library (a copy, or a link to it) and a link to the builtins library it preloads;
    returns the library's path there."""
    folder.mkdir()
    lib = folder / "libnvrtc.so.13"
    if copy:
        shutil.copyfile(os.path.realpath(toolkit.nvrtc_library), lib)
    else:
        lib.symlink_to(os.path.realpath(toolkit.nvrtc_library))
    for pre in toolkit.nvrtc_preload:
        (folder / os.path.basename(pre)).symlink_to(os.path.realpath(pre))
    return lib


def build_id_offset(path) -> int:
    """Offset of the GNU build-id bytes in an ELF file (found through its PT_NOTE segments, as the core reads it)."""
    import struct
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        headers = f.read(phentsize * phnum)
        for i in range(phnum):
            p_type, = struct.unpack_from("<I", headers, i * phentsize)
            if p_type != 4:  # PT_NOTE
                continue
            offset, = struct.unpack_from("<Q", headers, i * phentsize + 8)
            size, = struct.unpack_from("<Q", headers, i * phentsize + 32)
            f.seek(offset)
            notes = f.read(size)
            at = 0
            while at + 12 <= len(notes):
                namesz, descsz, kind = struct.unpack_from("<III", notes, at)
                desc = at + 12 + (namesz + 3) // 4 * 4
                if kind == 3 and notes[at + 12:at + 16] == b"GNU\0":
                    return offset + desc
                at = desc + (descsz + 3) // 4 * 4
    pytest.fail(f"{path} has no GNU build-id note")


# ---- the warm process ----------------------------------------------------------------------------------------------

def test_warm_process_loads_neither_pathfinder_nor_nvrtc(tmp_path, toolkit):
    cold = probe(tmp_path / "cache")
    assert not cold["from_record"] and cold["misses"] == 1 and cold["nvrtc_mapped"]
    assert len(records(tmp_path / "cache")) == 1
    warm = probe(tmp_path / "cache", "--info")
    assert warm["from_record"] and warm["hits"] == 1 and warm["misses"] == 0
    assert not warm["pathfinder"] and not warm["nvrtc_mapped"]  # ... even after computing a compile key
    assert warm["sha"] == cold["sha"] and warm["key"] == cold["key"]  # the recorded NVRTC identity is the file's
    # The record gives back exactly what the search found; toolkit_info() searches again and agrees.
    assert warm["found"] == cold["found"]
    info = warm["info"]
    assert not warm["from_record_after_info"] and info["nvrtc_version"] and info["nvrtc_error"] is None
    assert [info["nvrtc_library"], info["nvrtc_found_via"], info["nvrtc_preload"], info["include_dirs"],
            info["include_found_via"], info["notes"]] == warm["found"]


def test_record_layout(tmp_path, toolkit):
    folder = tmp_path / "cache"
    probe(folder)
    (record,) = records(folder)
    assert (folder / "records").stat().st_mode & 0o777 == 0o700
    assert record.stat().st_mode & 0o777 == 0o600
    text = record.read_bytes()[96:].decode()
    assert text.startswith("jitkernel toolkit record\n")
    lines = [line.split("\t", 1) for line in text.splitlines()[1:]]
    assert ["library", toolkit.nvrtc_library] in lines
    assert [value for name, value in lines if name == "include"] == toolkit.include_dirs
    assert [value for name, value in lines if name == "identity"][0].startswith("build-id ")
    watched = [value.split("\t", 1)[1] for name, value in lines if name == "watch"]
    for path in [toolkit.nvrtc_library, *toolkit.nvrtc_preload, *toolkit.include_dirs, "/etc/ld.so.cache"]:
        assert path in watched
    # The heads of the headers that fingerprint each include folder in compile keys, each header watched.
    heads = dict(reversed(value.split("\t", 1)) for name, value in lines if name == "head")
    for folder_path in toolkit.include_dirs:
        for header in ("cuda_fp16.hpp", "cuda_bf16.hpp", "cuda_runtime_api.h", "cuda/std/__cccl/version.h"):
            path = os.path.join(folder_path, header)
            assert heads[path] == head_fingerprint(path) and path in watched


def head_fingerprint(path) -> str:
    """What the core's compile keys fingerprint a toolkit header by: its size and the SHA-256 of its first 16 KiB."""
    if not os.path.isfile(path):
        return "missing"
    with open(path, "rb") as f:
        return f"size {os.path.getsize(path)} head {hashlib.sha256(f.read(16 * 1024)).hexdigest()}"


def test_records_are_not_entries_and_are_cleared(tmp_path, monkeypatch, toolkit):
    folder = tmp_path / "cache"
    probe(folder)
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(folder))
    _core._cache_reset()
    try:
        assert jk.cache_info().entries == 1  # the kernel; the record is not counted
        assert jk.clear_cache() == 1
        assert records(folder) == []
    finally:
        monkeypatch.undo()
        _core._cache_reset()


# ---- when the record must not be used --------------------------------------------------------------------------------

def test_other_nvrtc_path_is_searched(tmp_path, toolkit):
    folder = tmp_path / "cache"
    assert probe(folder)["from_record"] is False
    other = str(nvrtc_folder(tmp_path / "nvrtc", toolkit, copy=False))
    first = probe(folder, JITKERNEL_NVRTC_PATH=other)
    assert not first["from_record"] and first["found"][0] == other
    again = probe(folder, JITKERNEL_NVRTC_PATH=other)
    assert again["from_record"] and again["found"][0] == other and not again["nvrtc_mapped"]
    assert again["hits"] == 1  # the same library file: the same key
    assert len(records(folder)) == 2  # one per search inputs
    assert probe(folder)["from_record"]  # the first record is still good


def test_modified_nvrtc_is_searched_and_keyed_anew(tmp_path, toolkit):
    folder = tmp_path / "cache"
    lib = nvrtc_folder(tmp_path / "nvrtc", toolkit, copy=True)
    env = dict(JITKERNEL_NVRTC_PATH=str(lib))
    cold = probe(folder, **env)
    warm = probe(folder, **env)
    assert warm["from_record"] and warm["hits"] == 1 and warm["key"] == cold["key"]

    # Another NVRTC build in place of the file (its build-id differs; same size, loads and compiles the same).
    at = build_id_offset(lib)
    with open(lib, "r+b") as f:
        f.seek(at)
        old = f.read(4)
        f.seek(at)
        f.write(bytes(b ^ 0xFF for b in old))
    changed = probe(folder, **env)
    assert not changed["from_record"]  # the record saw the file change
    assert changed["key"] != cold["key"]  # a new NVRTC identity: a new key ...
    assert changed["misses"] == 1 and changed["hits"] == 0 and changed["nvrtc_mapped"]  # ... so NVRTC compiled
    assert changed["sha"] == cold["sha"]
    assert probe(folder, **env)["from_record"]  # and the record was rewritten

    # The same bytes as a new file (a reinstall): searched again, and the same key (same build).
    replacement = lib.parent / "replacement"
    shutil.copyfile(lib, replacement)
    os.replace(replacement, lib)
    reinstalled = probe(folder, **env)
    assert not reinstalled["from_record"] and reinstalled["key"] == changed["key"] and reinstalled["hits"] == 1


def test_changed_toolkit_header_is_searched_and_keyed_anew(tmp_path, toolkit):
    """The heads of the toolkit headers come from the record only while each header is unchanged: a header edited in
    place (same size) makes the next process search again and key anew (a miss), and the record is rewritten."""
    folder, headers = tmp_path / "cache", tmp_path / "headers"
    headers.mkdir()
    cudart = next(d for d in toolkit.include_dirs if os.path.isfile(os.path.join(d, "cuda_runtime_api.h")))
    header = headers / "cuda_runtime_api.h"  # makes the folder a toolkit folder, fingerprinted by heads
    shutil.copyfile(os.path.join(cudart, "cuda_runtime_api.h"), header)
    env = dict(JITKERNEL_INCLUDE_PATH=str(headers))
    cold = probe(folder, **env)
    warm = probe(folder, **env)
    assert warm["from_record"] and warm["hits"] == 1 and warm["key"] == cold["key"]

    data = bytearray(header.read_bytes())
    at = data.index(b"Copyright")
    data[at] = ord("c")  # inside the first comment: the same size, another head
    header.write_bytes(bytes(data))
    changed = probe(folder, **env)
    assert not changed["from_record"] and changed["key"] != cold["key"]
    assert changed["misses"] == 1 and changed["hits"] == 0 and changed["sha"] == cold["sha"]
    again = probe(folder, **env)
    assert again["from_record"] and again["key"] == changed["key"] and again["hits"] == 1


def test_changed_search_place_is_searched(tmp_path, toolkit):
    folder, libs = tmp_path / "cache", tmp_path / "libs"
    libs.mkdir()
    env = dict(LD_LIBRARY_PATH=str(libs))  # a place the system loader (so cuda-pathfinder) looks at
    assert not probe(folder, **env)["from_record"]
    assert probe(folder, **env)["from_record"]
    (libs / "libsomething.so").write_bytes(b"")  # something was installed there
    assert not probe(folder, **env)["from_record"]
    assert probe(folder, **env)["from_record"]


@pytest.mark.parametrize("how", ["truncated", "wrong checksum", "edited payload", "unwatched head"])
def test_damaged_record_is_searched_and_replaced(tmp_path, toolkit, how):
    folder = tmp_path / "cache"
    probe(folder)
    (record,) = records(folder)
    data = record.read_bytes()
    if how == "truncated":
        record.write_bytes(data[:len(data) // 2])
    elif how == "wrong checksum":
        record.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:  # a valid entry whose record names another library or header head: the checksum is recomputed, the
        # library (the header) is not among the watched files
        if how == "edited payload":
            payload = data[96:].replace(b"library\t", b"library\t/tmp/evil", 1)
        else:
            payload = data[96:] + b"head\tsize 1 head 00\t/tmp/evil/cuda_runtime_api.h\n"
        header = bytearray(data[:96])
        header[48:56] = len(payload).to_bytes(8, "little")
        header[56:88] = hashlib.sha256(payload).digest()
        record.write_bytes(bytes(header) + payload)
    damaged = probe(folder)
    # (An edited record is well formed and checksummed, but the library it names is not among the watched files.)
    assert not damaged["from_record"] and not damaged["found"][0].startswith("/tmp/evil")
    assert damaged["hits"] == 1  # the search found the same toolkit: the same key
    assert probe(folder)["from_record"]  # replaced by a good record


def test_record_folder_writable_by_others_is_not_used(tmp_path, toolkit):
    folder = tmp_path / "cache"
    probe(folder)
    os.chmod(folder / "records", 0o777)
    try:
        assert not probe(folder)["from_record"]
    finally:
        os.chmod(folder / "records", 0o700)
    assert probe(folder)["from_record"]


# ---- when nothing is recorded ----------------------------------------------------------------------------------------

def test_cache_off_records_nothing(tmp_path, toolkit):
    folder = tmp_path / "cache"
    for _ in range(2):
        result = probe(folder, JITKERNEL_CACHE="0")
        assert not result["from_record"] and result["hits"] == 0
    assert not (folder / "records").exists()


@pytest.mark.parametrize("where", ["the library found", "a copy elsewhere"])
def test_nvrtc_another_package_loaded_has_its_own_record(tmp_path, toolkit, where):
    """A process where another package (torch) loaded NVRTC first: cuda-pathfinder returns that library, so the
    search is recorded under it and the next such process uses the record; a process without it never does."""
    folder = tmp_path / "cache"
    lib = toolkit.nvrtc_library if where == "the library found" else str(nvrtc_folder(tmp_path / "nvrtc", toolkit,
                                                                                        copy=True))
    preload = dict(JK_TEST_PRELOAD=os.pathsep.join([*toolkit.nvrtc_preload, lib]))
    cold = probe(folder, **preload)
    if "already" not in cold["found"][1]:
        pytest.skip(f"this cuda-pathfinder does not report libraries loaded before it ({cold['found'][1]})")
    assert not cold["from_record"] and cold["found"][0] == lib and cold["misses"] == 1
    assert len(records(folder)) == 1
    warm = probe(folder, **preload)
    assert warm["from_record"] and not warm["pathfinder"] and warm["hits"] == 1 and warm["misses"] == 0
    assert warm["found"] == cold["found"] and warm["key"] == cold["key"]

    # Without the preload: the search's own answer (not the loaded library's record), then its own record.
    alone = probe(folder)
    assert not alone["from_record"] and "already" not in alone["found"][1]
    assert alone["found"][0] == toolkit.nvrtc_library and alone["sha"] == cold["sha"]
    again = probe(folder)
    assert again["from_record"] and not again["pathfinder"] and not again["nvrtc_mapped"]
    assert again["found"] == alone["found"] and again["hits"] == 1
    assert len(records(folder)) == 2
    assert probe(folder, **preload)["found"] == cold["found"]  # each process its own record


@pytest.mark.parametrize("where", ["the library found", "a copy elsewhere"])
def test_process_with_nvrtc_loaded_shares_the_record_of_that_file(tmp_path, toolkit, where):
    """A process where another package (torch) loaded the very NVRTC file the record of a process without it names
    uses that record (the search would return that file too): no search, the same compile key. Another NVRTC file
    loaded (a copy elsewhere: another inode) never does: it searches and gets its own record."""
    folder = tmp_path / "cache"
    alone = probe(folder)
    assert not alone["from_record"] and len(records(folder)) == 1
    lib = toolkit.nvrtc_library if where == "the library found" else str(nvrtc_folder(tmp_path / "nvrtc", toolkit,
                                                                                        copy=True))
    preload = dict(JK_TEST_PRELOAD=os.pathsep.join([*toolkit.nvrtc_preload, lib]))
    loaded = probe(folder, **preload)
    if where == "the library found":
        assert loaded["from_record"] and not loaded["pathfinder"] and loaded["hits"] == 1 and loaded["misses"] == 0
        assert loaded["found"] == alone["found"] and loaded["key"] == alone["key"]
        assert len(records(folder)) == 1
    else:
        assert not loaded["from_record"]
        if "already" in loaded["found"][1]:  # found and recorded under the library it loaded
            assert loaded["found"][0] == lib and len(records(folder)) == 2


def test_missing_nvrtc_is_not_recorded(tmp_path, toolkit):
    folder = tmp_path / "cache"
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(folder), JITKERNEL_NVRTC_PATH=str(tmp_path / "libnvrtc.so.13"))
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_PARENT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    code = "import jitkernel as jk\ntry:\n    jk.compile_cuda('__global__ void f() {}')\nexcept jk.CudaNotAvailableError:\n" \
           "    print('missing')\n"
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0 and proc.stdout.strip() == "missing", proc.stderr
    assert records(folder) == []


def test_record_store_api(tmp_path, monkeypatch, toolkit):
    """Unrecordable results are refused; the folder keeps at most 64 records, the most recently used."""
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    _core._cache_reset()
    try:
        args = (toolkit.nvrtc_preload, toolkit.include_dirs, ["note\tx"], [])
        assert not _core._toolkit_record_store("t", [], [], "libnvrtc.so.13", *args)  # a soname
        assert not _core._toolkit_record_store("t", [], [], str(tmp_path / "none.so"), *args)  # no such file
        assert not _core._toolkit_record_store("t", [], [], toolkit.nvrtc_library, toolkit.nvrtc_preload,
                                               toolkit.include_dirs, ["two\nlines"], [])
        assert records(tmp_path / "cache") == []
        for n in range(70):
            assert _core._toolkit_record_store(f"inputs {n}", [], [], toolkit.nvrtc_library, *args)
        assert len(records(tmp_path / "cache")) == 64
        assert _core._toolkit_record_load("inputs 69", [], []) is not None
        assert _core._toolkit_record_load("inputs 0", [], []) is None  # evicted first
        # The NVRTC libraries loaded are part of the key.
        loaded = [(toolkit.nvrtc_library, "1 2 3 4 5")]
        assert _core._toolkit_record_load("inputs 69", [], loaded) is None
        assert _core._toolkit_record_store("inputs 69", [], loaded, toolkit.nvrtc_library, *args)
        assert _core._toolkit_record_load("inputs 69", [], loaded) is not None
        assert _core._toolkit_record_load("inputs 69", [], [(toolkit.nvrtc_library, "1 2 3 4 6")]) is None
    finally:
        monkeypatch.undo()
        _core._cache_reset()
        _toolkit_search.configure(rediscover=True)  # the session's toolkit back in the core
