"""The persistent compile cache without a GPU, through ``kernel.compile(...)`` / ``jk.compile_cuda`` (which go through
it like every launch does): hits and misses across processes, damaged entries of every kind recompiled and replaced,
folders that must not be used (another user's, writable by others, not creatable, read-only, a full disk) turning the
cache off with exactly one CacheWarning, the size cap with least-recently-used eviction, stale temp files, the
environment settings and default folders, ``cache_info`` / ``clear_cache`` / ``python -m jitkernel cache``, threads,
and 16 processes started at once on one empty folder.

Each test gets its own folder (JITKERNEL_CACHE_DIR, re-read by the core after ``_core._cache_reset()``); the session's
folder (tests/conftest.py) is restored afterwards.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import jitkernel as jk
from _processes import WAIT_FOR_GO, run_together
from jitkernel import _core

F32 = np.zeros(8, np.float32)
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def kernel(factor: int = 2):
    """A small kernel; each factor is a different source, so a different entry."""
    return jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                          source=f"auto i = threadIdx.x; out[i] = inp[i] * {factor};")


def compile_kernel(factor: int = 2) -> bytes:
    return kernel(factor).compile(inputs=[F32], output_dtypes=[np.float32])


def entry_files(folder):
    return sorted((folder / "kernels").glob("*.jkc"))


def temp_files(folder):
    return sorted((folder / "kernels").glob("*.tmp"))


class Cache:
    """Points the compile cache at a folder with given settings (the core re-reads them)."""

    def __init__(self, monkeypatch, folder):
        self.monkeypatch = monkeypatch
        self.folder = folder

    def configure(self, folder=None, **env):
        self.folder = self.folder if folder is None else folder
        self.monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(self.folder))
        for name in ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES"):
            self.monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            self.monkeypatch.setenv(name, value)
        _core._cache_reset()
        return self.folder


@pytest.fixture
def cache(tmp_path, monkeypatch):
    c = Cache(monkeypatch, tmp_path / "cache")
    c.configure()
    yield c
    monkeypatch.undo()
    _core._cache_reset()


@pytest.fixture(scope="module")
def reference():
    """factor -> the cubin NVRTC makes without any cache (JITKERNEL_CACHE=0)."""
    saved = os.environ.get("JITKERNEL_CACHE")
    os.environ["JITKERNEL_CACHE"] = "0"
    _core._cache_reset()
    try:
        return {f: compile_kernel(f) for f in (2, 3, 4, 5)}
    finally:
        if saved is None:
            del os.environ["JITKERNEL_CACHE"]
        else:
            os.environ["JITKERNEL_CACHE"] = saved
        _core._cache_reset()


def cache_warnings(record):
    return [w for w in record if issubclass(w.category, jk.CacheWarning)]


# ---- hits, misses, info, clear -------------------------------------------------------------------------------------

def test_miss_then_hit_in_one_process(cache, reference):
    assert compile_kernel() == reference[2]
    info = jk.cache_info()
    assert (info.misses, info.stores, info.hits) == (1, 1, 0)
    assert info.enabled and info.path == str(cache.folder) and info.entries == 1
    (alias,) = (cache.folder / "kernels").glob("*.jka")  # the serving alias stored beside it (docs/deploying.md)
    assert info.bytes == entry_files(cache.folder)[0].stat().st_size + alias.stat().st_size
    assert compile_kernel() == reference[2]
    assert jk.cache_info().hits == 1


def test_folder_is_private(cache):
    compile_kernel()
    for folder in (cache.folder, cache.folder / "kernels"):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert entry_files(cache.folder)[0].stat().st_mode & 0o777 == 0o600


def test_missing_parents_are_created(cache, tmp_path):
    folder = cache.configure(tmp_path / "a" / "b" / "c")
    compile_kernel()
    assert len(entry_files(folder)) == 1
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o700


def test_clear_cache(cache, reference):
    compile_kernel(2)
    compile_kernel(3)
    assert jk.clear_cache() == 2
    assert entry_files(cache.folder) == [] and jk.cache_info().entries == 0
    assert compile_kernel(2) == reference[2]  # recompiled
    assert jk.cache_info().misses == 3


def test_cache_info_fields(cache):
    info = jk.cache_info()
    assert isinstance(info, jk.CacheInfo)
    assert info.max_bytes == 1 << 30
    assert all(isinstance(getattr(info, f), int) for f in ("entries", "bytes", "hits", "misses", "stores"))


SCRIPT = """
import hashlib, json, os, sys, time, warnings
warnings.simplefilter("always")
import numpy as np
import jitkernel as jk
""" + WAIT_FOR_GO + """
limit = os.environ.get("JK_TEST_FSIZE")
if limit:  # writes of more than this many bytes fail with EFBIG, like on a full disk
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
shas = []
with warnings.catch_warnings(record=True) as record:
    for factor in os.environ.get("JK_TEST_FACTORS", "2").split(","):
        k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                           source=f"auto i = threadIdx.x; out[i] = inp[i] * {factor};")
        b = k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        shas.append(hashlib.sha256(b).hexdigest())
i = jk.cache_info()
print(json.dumps(dict(shas=shas, hits=i.hits, misses=i.misses, stores=i.stores, corrupt=i.corrupt,
                      enabled=i.enabled, warnings=[str(w.message) for w in record if w.category is jk.CacheWarning])))
"""

# As root, permission bits bind only without CAP_DAC_OVERRIDE: the read-only test drops it for its process.
NO_DAC_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def run_script(folder, prefix=(), factors=(2,), **env):
    full_env = dict(os.environ, JITKERNEL_CACHE_DIR=str(folder), JK_TEST_FACTORS=",".join(map(str, factors)), **env)
    for name in ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES"):
        if name not in env:
            full_env.pop(name, None)
    proc = subprocess.run([*prefix, sys.executable, "-c", SCRIPT], env=full_env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def shas(reference, *factors):
    return [hashlib.sha256(reference[f]).hexdigest() for f in factors]


def test_hit_in_a_new_process(cache, reference):
    first = run_script(cache.folder)
    assert (first["shas"], first["misses"], first["stores"], first["hits"]) == (shas(reference, 2), 1, 1, 0)
    second = run_script(cache.folder)
    assert (second["shas"], second["misses"], second["stores"], second["hits"]) == (shas(reference, 2), 0, 0, 1)
    assert len(entry_files(cache.folder)) == 1


def test_16_processes_at_once_on_an_empty_folder(cache, reference, tmp_path):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(cache.folder))
    scratch = tmp_path / "start"
    scratch.mkdir()
    results = run_together(SCRIPT, [env] * 16, scratch)
    assert [r["shas"] for r in results] == [shas(reference, 2)] * 16
    assert all(r["corrupt"] == 0 and r["warnings"] == [] for r in results)
    assert sum(r["stores"] for r in results) >= 1
    assert len(entry_files(cache.folder)) == 1 and temp_files(cache.folder) == []
    assert compile_kernel() == reference[2] and jk.cache_info().hits == 1  # the surviving entry is whole


def test_threads(cache, reference):
    results = {}

    def work(n):
        results[n] = compile_kernel(2 + n % 4)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results[n] == reference[2 + n % 4] for n in range(12))
    assert len(entry_files(cache.folder)) == 4 and temp_files(cache.folder) == []


# ---- damaged entries -------------------------------------------------------------------------------------------------

def damage(path, how, other):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "zero-length":
        path.write_bytes(b"")
    elif how == "header only":
        path.write_bytes(data[:96])
    elif how == "extended":
        path.write_bytes(data + b"\0")
    elif how == "wrong checksum":
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    elif how == "bad magic":
        path.write_bytes(b"X" + data[1:])
    elif how == "another entry":
        path.write_bytes(other.read_bytes())
    elif how == "foreign":
        path.write_bytes(os.urandom(len(data)))
    elif how == "symlink":
        path.unlink()
        path.symlink_to(other)


@pytest.mark.parametrize("how", ["truncated", "zero-length", "header only", "extended", "wrong checksum",
                                 "bad magic", "another entry", "foreign", "symlink"])
def test_damaged_entry_is_recompiled_and_replaced(cache, reference, how):
    compile_kernel(3)
    (other,) = entry_files(cache.folder)
    compile_kernel(2)
    (path,) = set(entry_files(cache.folder)) - {other}
    good = path.read_bytes()
    damage(path, how, other)
    before = jk.cache_info()
    assert compile_kernel(2) == reference[2]
    after = jk.cache_info()
    assert (after.hits - before.hits, after.stores - before.stores) == (0, 1)
    assert after.corrupt - before.corrupt == (0 if how == "symlink" else 1)  # a link is never opened
    assert not path.is_symlink() and path.read_bytes() == good  # replaced by a whole entry
    assert compile_kernel(2) == reference[2] and jk.cache_info().hits == after.hits + 1


# ---- folders that must not be used ---------------------------------------------------------------------------------

def compile_twice_expecting_one_warning(reference, match):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]
        assert compile_kernel(3) == reference[3]
        assert compile_kernel(2) == reference[2]
    found = cache_warnings(record)
    assert len(found) == 1, [str(w.message) for w in found]
    assert match in str(found[0].message)
    assert found[0].filename == __file__  # attributed to the caller's line, not to jitkernel's internals
    return found[0]


def test_world_writable_folder_is_refused(cache, reference):
    cache.folder.mkdir(mode=0o700)
    os.chmod(cache.folder, 0o777)
    w = compile_twice_expecting_one_warning(reference, "writable by others")
    assert str(cache.folder) in str(w.message)
    assert not (cache.folder / "kernels").exists()
    info = jk.cache_info()
    assert not info.enabled and "writable by others" in info.disabled_reason
    assert jk.clear_cache() == 0


def test_group_writable_folder_is_refused(cache, reference):
    cache.folder.mkdir(mode=0o700)
    os.chmod(cache.folder, 0o770)
    compile_twice_expecting_one_warning(reference, "writable by its group")
    assert not (cache.folder / "kernels").exists()


def test_other_users_folder_is_refused(cache, reference):
    if IS_ROOT:
        cache.folder.mkdir(mode=0o700)
        os.chown(cache.folder, 12345, 12345)
    else:  # any folder root owns will do
        cache.configure("/usr")
    compile_twice_expecting_one_warning(reference, "not by this user")
    assert not (cache.folder / "kernels").exists()
    assert not jk.cache_info().enabled


def test_folder_that_cannot_be_created(cache, reference, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache.configure(blocker / "cache")
    compile_twice_expecting_one_warning(reference, "cannot create")
    assert blocker.is_file()
    assert jk.cache_path() == str(blocker / "cache")


def test_read_only_folder(cache, reference):
    if IS_ROOT and shutil.which("setpriv") is None:
        pytest.skip("running as root, where permission bits bind only without CAP_DAC_OVERRIDE, and setpriv "
                    "(util-linux), which drops it, is missing")
    compile_kernel(3)  # creates the folder and one entry
    os.chmod(cache.folder / "kernels", 0o500)
    try:
        result = run_script(cache.folder, NO_DAC_OVERRIDE if IS_ROOT else (), factors=(3, 2, 4))
    finally:
        os.chmod(cache.folder / "kernels", 0o700)
    assert result["shas"] == shas(reference, 3, 2, 4)
    assert len(result["warnings"]) == 1 and "cannot write" in result["warnings"][0], result["warnings"]
    assert "Permission denied" in result["warnings"][0]
    assert result["hits"] == 1 and result["stores"] == 0 and not result["enabled"]  # the entry there is still read
    assert len(entry_files(cache.folder)) == 1 and temp_files(cache.folder) == []


def test_full_disk(cache, reference):
    # The process may not write files over 2 KiB (RLIMIT_FSIZE): each entry write fails like on a full disk.
    result = run_script(cache.folder, factors=(2, 3, 2), JK_TEST_FSIZE="2048")
    assert result["shas"] == shas(reference, 2, 3, 2)
    assert len(result["warnings"]) == 1 and "cannot write" in result["warnings"][0], result["warnings"]
    assert not result["enabled"] and result["stores"] == 0
    assert entry_files(cache.folder) == [] and temp_files(cache.folder) == []


def test_disabled_by_environment(cache, reference):
    cache.configure(JITKERNEL_CACHE="0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_kernel() == reference[2]
    assert not cache.folder.exists()
    info = jk.cache_info()
    assert not info.enabled and "JITKERNEL_CACHE=0" in info.disabled_reason and info.misses == 0


@pytest.mark.parametrize("variable,value,match", [
    ("JITKERNEL_CACHE", "off", "not 0 or 1"),
    ("JITKERNEL_CACHE_MAX_BYTES", "-5", "not a size"),
    ("JITKERNEL_CACHE_MAX_BYTES", "1.5G", "not a size"),
    ("JITKERNEL_CACHE_MAX_BYTES", "99999999999999999999", "not a size"),
    ("JITKERNEL_CACHE_MAX_BYTES", "12 parsecs", "not a size"),
])
def test_bad_settings_warn_once_and_keep_defaults(cache, reference, variable, value, match):
    cache.configure(**{variable: value})
    w = compile_twice_expecting_one_warning(reference, match)
    assert variable in str(w.message)
    info = jk.cache_info()
    assert info.enabled and info.max_bytes == 1 << 30 and info.entries == 2


@pytest.mark.parametrize("value,expected", [("0", 0), ("1000", 1000), ("512M", 512 << 20), ("2GiB", 2 << 30),
                                            ("3k", 3 << 10), ("1TB", 1 << 40)])
def test_max_bytes_spellings(cache, value, expected):
    cache.configure(JITKERNEL_CACHE_MAX_BYTES=value)
    assert jk.cache_info().max_bytes == expected


@pytest.mark.skipif(sys.platform == "darwin", reason="Linux folder conventions")
def test_default_folders(cache, monkeypatch, tmp_path):
    monkeypatch.delenv("JITKERNEL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _core._cache_reset()
    assert jk.cache_path() == str(tmp_path / "xdg" / "jitkernel")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec says relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    _core._cache_reset()
    assert jk.cache_path() == str(tmp_path / "home" / ".cache" / "jitkernel")
    monkeypatch.delenv("XDG_CACHE_HOME")
    _core._cache_reset()
    assert jk.cache_path() == str(tmp_path / "home" / ".cache" / "jitkernel")
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", "relative")
    monkeypatch.chdir(tmp_path)
    _core._cache_reset()
    assert jk.cache_path() == str(tmp_path / "relative")


# ---- size cap and eviction -------------------------------------------------------------------------------------------

def test_least_recently_used_entries_are_evicted(cache, reference):
    names = {}
    for f in (2, 3, 4):
        known = set(entry_files(cache.folder))
        compile_kernel(f)
        (names[f],) = set(entry_files(cache.folder)) - known
    sizes = {f: p.stat().st_size for f, p in names.items()}
    jk.clear_cache()
    cap = sum(sizes.values()) - 1  # the three do not fit together
    cache.configure(JITKERNEL_CACHE_MAX_BYTES=str(cap))
    compile_kernel(2)
    compile_kernel(3)
    now = time.time()
    os.utime(names[2], (now - 1000, now - 1000))
    os.utime(names[3], (now - 500, now - 500))
    assert compile_kernel(2) == reference[2]  # a hit makes 2 the most recently used
    assert names[2].stat().st_mtime > now - 100
    assert compile_kernel(4) == reference[4]  # storing 4 evicts the least recently used: 3
    assert set(entry_files(cache.folder)) == {names[2], names[4]}
    info = jk.cache_info()
    assert info.evictions == 1 and info.bytes <= cap and info.hits == 1


def test_entry_larger_than_the_cap_is_not_stored(cache, reference):
    cache.configure(JITKERNEL_CACHE_MAX_BYTES="100")
    assert compile_kernel() == reference[2]
    assert entry_files(cache.folder) == [] and jk.cache_info().stores == 0


def test_stale_temp_files_are_removed(cache):
    compile_kernel(2)
    kernels = cache.folder / "kernels"
    stale, fresh = kernels / ("0" * 64 + ".999.00.0.tmp"), kernels / ("1" * 64 + ".999.00.1.tmp")
    for p in (stale, fresh):
        p.write_bytes(b"partial")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    compile_kernel(3)  # a store scans the folder
    assert not stale.exists() and fresh.exists()
    assert jk.cache_info().entries == 2  # temp files are not entries
    jk.clear_cache()
    assert not fresh.exists()


# ---- command line ----------------------------------------------------------------------------------------------------

def run_cli(folder, *args):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(folder))
    return subprocess.run([sys.executable, "-m", "jitkernel", "cache", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_command_line(cache):
    compile_kernel(2)
    compile_kernel(3)
    path = run_cli(cache.folder, "path")
    assert path.returncode == 0 and path.stdout.strip() == str(cache.folder)
    info = run_cli(cache.folder, "info")
    assert info.returncode == 0
    assert f"path: {cache.folder}" in info.stdout and "entries: 2" in info.stdout and "enabled: yes" in info.stdout
    cleared = run_cli(cache.folder, "clear")
    assert cleared.returncode == 0 and "removed 2 cached kernels" in cleared.stdout
    assert entry_files(cache.folder) == []
    bad = run_cli(cache.folder, "prune")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
