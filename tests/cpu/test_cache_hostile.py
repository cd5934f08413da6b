"""The compile cache against whatever its folder holds: a FIFO in place of an entry or a toolkit record (never
blocks), a directory in place of one entry (that entry is not stored, every other one is), foreign files and links in
the folder (clear_cache removes only jitkernel's own entries and never follows a link out), an entry whose valid
header claims a huge payload (a miss, nothing allocated), and the size cap counting everything the cache stores
(records too) and holding while several processes write at once.

Anything that could hang or exhaust memory before the fix runs in a child process with a time or memory limit. The
helpers and fixtures are test_cache.py's: each test gets its own cache folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
import warnings

import pytest

import jitkernel as jk
from _cache_runs import environment
from _processes import run_together
from test_cache import SCRIPT, cache, cache_warnings, compile_kernel, entry_files, reference, shas  # noqa: F401

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, sparse files, rlimits: Linux")

MAGIC = b"\x89JKC\r\n\x1a\n"


def run_child(folder, factors=(2,), timeout=300, memory_limit=None, **env):
    """test_cache.SCRIPT (compile each factor) in a fresh process on `folder`, with only the cache settings given
    (none the test run's environment holds); its JSON result. A process that hangs fails the test after `timeout`
    seconds (a hang guard: a compile takes seconds even on a loaded machine); `memory_limit` caps its address space
    (RLIMIT_AS)."""
    full_env = environment(folder, factors, **env)
    code = SCRIPT
    if memory_limit:
        code = f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({memory_limit}, {memory_limit}))\n" + code
    try:
        proc = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the process did not finish in {timeout} s (blocked on something in the cache folder)")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def records(folder):
    return sorted((folder / "records").glob("*.jkc"))


def our_files(folder):
    """Every regular file under the cache folder (what the cap must bound), path -> size."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            st = os.lstat(os.path.join(root, name))
            if stat.S_ISREG(st.st_mode):
                out[os.path.join(root, name)] = st.st_size
    return out


# ---- never block on what is in the folder ----------------------------------------------------------------------------

def test_fifo_in_place_of_an_entry_is_a_miss_and_is_replaced(cache, reference):
    compile_kernel(2)
    (path,) = entry_files(cache.folder)
    path.unlink()
    os.mkfifo(path, 0o600)
    result = run_child(cache.folder)
    assert result["shas"] == shas(reference, 2) and result["hits"] == 0 and result["corrupt"] == 1
    assert result["stores"] == 1 and result["warnings"] == []
    assert stat.S_ISREG(path.lstat().st_mode)  # the store replaced the FIFO with the entry
    assert run_child(cache.folder)["hits"] == 1


def test_fifo_in_place_of_a_toolkit_record_is_a_miss_and_is_replaced(tmp_path, reference):
    folder = tmp_path / "cache"
    run_child(folder)  # a fresh process searches for the toolkit and records the result
    (record,) = records(folder)
    record.unlink()
    os.mkfifo(record, 0o600)
    result = run_child(folder)
    assert result["shas"] == shas(reference, 2) and result["hits"] == 1
    assert stat.S_ISREG(record.lstat().st_mode)  # searched again and recorded in its place


# ---- one bad entry does not stop the others ----------------------------------------------------------------------------

def test_directory_in_place_of_one_entry_does_not_stop_other_stores(cache, reference):
    compile_kernel(2)
    (path,) = entry_files(cache.folder)
    path.unlink()
    path.mkdir()
    (path / "something").write_bytes(b"not ours")  # a folder that cannot be replaced
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]  # a miss; storing it fails
        assert compile_kernel(3) == reference[3]  # stored
        assert compile_kernel(4) == reference[4]  # stored
    found = cache_warnings(record)
    assert len(found) == 1 and path.name in str(found[0].message), [str(w.message) for w in found]
    info = jk.cache_info()
    assert info.enabled and info.stores == 3  # the first two compiles of 2, then 3 and 4
    assert len(entry_files(cache.folder)) == 3  # 3, 4 and the folder named like 2's entry
    assert (path / "something").read_bytes() == b"not ours"
    assert compile_kernel(3) == reference[3] and jk.cache_info().hits == 1


def test_directory_in_place_of_an_alias_warns_about_the_alias(cache, reference):
    compile_kernel(2)
    (alias,) = (cache.folder / "kernels").glob("*.jka")
    (binary,) = entry_files(cache.folder)
    alias.unlink()
    binary.unlink()
    alias.mkdir()
    (alias / "something").write_bytes(b"not ours")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]  # the binary is stored again; its serving alias cannot be
    found = [str(w.message) for w in cache_warnings(record)]
    assert len(found) == 1 and alias.name in found[0] and "serving alias" in found[0], found
    assert "without NVRTC" in found[0] and "compiled kernel" not in found[0]
    assert len(entry_files(cache.folder)) == 1


def test_empty_directory_in_place_of_an_entry_is_replaced(cache, reference):
    compile_kernel(2)
    (path,) = entry_files(cache.folder)
    path.unlink()
    path.mkdir()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]
    assert cache_warnings(record) == []
    assert path.is_file() and compile_kernel(2) == reference[2] and jk.cache_info().hits == 1


# ---- clear_cache removes only jitkernel's entries ----------------------------------------------------------------------

def test_clear_removes_only_our_entries_and_counts_them(cache, reference, tmp_path):
    compile_kernel(2)
    compile_kernel(3)
    kernels = cache.folder / "kernels"
    keep = {
        kernels / "notes.txt": b"a user's file",
        kernels / ("a" * 64 + ".jkc"): b"named like an entry, not one",
        kernels / "README.jkc": MAGIC + b"not an entry name",
        cache.folder / "records" / "mine.txt": b"a user's file",
        cache.folder / "pch" / "something.pch": b"not written by jitkernel",
        cache.folder / "top-level.txt": b"a user's file",
    }
    for path, data in keep.items():
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_bytes(data)
    record = cache.folder / "records" / ("b" * 64 + ".jkc")
    record.write_bytes((cache.folder / entry_files(cache.folder)[0]).read_bytes())  # our format
    assert jk.clear_cache() == 2  # the compiled kernels
    assert entry_files(cache.folder) == [kernels / "README.jkc", kernels / ("a" * 64 + ".jkc")]
    assert not record.exists()
    assert {p: p.read_bytes() for p in keep} == keep


def test_clear_never_follows_links_out_of_the_folder(cache, reference, tmp_path):
    compile_kernel(2)
    (entry,) = entry_files(cache.folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    # Files outside the folder: one a copy of an entry (our format, our name), one anything.
    victims = {outside / entry.name: entry.read_bytes(), outside / "data.bin": b"precious"}
    for path, data in victims.items():
        path.write_bytes(data)
    for sub in ("records", "pch"):
        if (cache.folder / sub).exists():
            for p in (cache.folder / sub).iterdir():
                p.unlink()
            (cache.folder / sub).rmdir()
        (cache.folder / sub).symlink_to(outside)
    link = cache.folder / "kernels" / ("c" * 64 + ".jkc")
    link.symlink_to(outside / entry.name)
    assert jk.clear_cache() == 1
    assert {p: p.read_bytes() for p in victims} == victims
    assert link.is_symlink() and entry_files(cache.folder) == [link]


def test_subfolder_that_is_a_link_is_not_used(cache, reference, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    cache.folder.mkdir(mode=0o700)
    (cache.folder / "kernels").symlink_to(outside)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]
    found = cache_warnings(record)
    assert len(found) == 1 and "symbolic link" in str(found[0].message), [str(w.message) for w in found]
    assert list(outside.iterdir()) == [] and not jk.cache_info().enabled


def test_command_line_reports_what_was_removed(cache, reference):
    record_like = cache.folder / "records" / ("d" * 64 + ".jkc")
    compile_kernel(2)
    compile_kernel(3)
    record_like.parent.mkdir(mode=0o700, exist_ok=True)
    record_like.write_bytes(entry_files(cache.folder)[0].read_bytes())
    (cache.folder / "kernels" / "keep.txt").write_bytes(b"x")
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(cache.folder))
    cleared = subprocess.run([sys.executable, "-m", "jitkernel", "cache", "clear"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert cleared.returncode == 0, cleared.stderr
    assert f"removed 2 cached kernels and 1 toolkit record from {cache.folder}" in cleared.stdout
    assert (cache.folder / "kernels" / "keep.txt").exists()


# ---- folders above the cache folder or a tier (another user's side: test_cache_other_user.py) ----------------------

@pytest.mark.parametrize("mode, problem", [(0o777, "writable by others"), (0o775, "writable by its group"),
                                           (0o1777, None), (0o755, None)])
def test_cache_folder_in_a_parent_others_may_write_is_refused(cache, reference, tmp_path, mode, problem):
    # Whoever may write the parent (without the sticky bit, which /tmp has) could rename the folder away and put
    # their own, with their binaries, in its place.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    cache.configure(shared / "cache")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]
    found = [str(w.message) for w in cache_warnings(record)]
    info = jk.cache_info()
    if problem is None:
        assert found == [] and info.enabled and len(entry_files(cache.folder)) == 1
    else:
        assert len(found) == 1 and f"{shared} is {problem}" in found[0] and "sticky" in found[0], found
        assert not info.enabled and problem in info.disabled_reason
        assert not (shared / "cache").exists()  # nothing is created in such a folder


@pytest.mark.parametrize("mode, used", [(0o777, False), (0o770, False), (0o1777, True)])
def test_tier_in_a_parent_others_may_write_is_refused(cache, reference, tmp_path, mode, used):
    shared = tmp_path / "shared"
    shared.mkdir()
    tier = shared / "tier"
    assert run_child(tier, factors=(2,))["stores"] == 1
    os.chmod(shared, mode)
    cache.configure(tmp_path / "writable", JITKERNEL_CACHE_READONLY_DIRS=str(tier))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert compile_kernel(2) == reference[2]
    found = [str(w.message) for w in cache_warnings(record)]
    (info,) = jk.cache_info().readonly
    assert info.used == used and jk.cache_info().readonly_hits == int(used)
    if not used:
        assert len(found) == 1 and str(shared) in found[0] and str(shared) in info.reason, found


# ---- reads are bounded ---------------------------------------------------------------------------------------------------

HUGE = 6 << 30


def claim_huge_payload(path):
    """Rewrites the entry at `path` as a sparse file whose header is valid and agrees with the file's size: a 6 GiB
    payload (whose checksum cannot match)."""
    header = bytearray(path.read_bytes()[:96])
    header[48:56] = HUGE.to_bytes(8, "little")
    with open(path, "wb") as f:
        f.write(header)
        f.truncate(96 + HUGE)


def test_entry_claiming_a_huge_payload_is_a_miss(cache, reference):
    run_child(cache.folder)  # the entry, and the toolkit record (so that the next process stores nothing first)
    (path,) = entry_files(cache.folder)
    claim_huge_payload(path)
    # With 4 GiB of address space, reading the 6 GiB payload whole fails (MemoryError) instead of taking minutes;
    # the rest is room for what the process maps besides (the interpreter, NVRTC, its threads' stacks and arenas).
    result = run_child(cache.folder, memory_limit=4 << 30)
    assert result["shas"] == shas(reference, 2) and (result["corrupt"], result["stores"]) == (1, 1), result
    assert path.stat().st_size < 1 << 20  # replaced


def test_toolkit_record_claiming_a_huge_payload_is_a_miss(tmp_path, reference):
    folder = tmp_path / "cache"
    run_child(folder)
    (record,) = records(folder)
    claim_huge_payload(record)
    result = run_child(folder, memory_limit=4 << 30)
    assert result["shas"] == shas(reference, 2) and result["hits"] == 1
    assert record.stat().st_size < 1 << 20  # searched again and replaced


def test_file_that_is_not_ours_does_not_block_stores(cache, reference):
    """A file named like an entry but not in the entry format cannot be evicted, so it does not count either."""
    cache.configure(JITKERNEL_CACHE_MAX_BYTES="64K")
    foreign = cache.folder / "kernels" / ("e" * 64 + ".jkc")
    foreign.parent.mkdir(parents=True, mode=0o700)
    foreign.write_bytes(b"\0" * (100 << 10))
    assert compile_kernel(2) == reference[2] and compile_kernel(3) == reference[3]
    assert jk.cache_info().stores == 2 and foreign.stat().st_size == 100 << 10


def test_entry_larger_than_the_cap_is_a_miss(cache, reference):
    """An entry (valid in every other way) bigger than the cap could not have been stored under this cap: a miss."""
    compile_kernel(2)
    (path,) = entry_files(cache.folder)
    size = path.stat().st_size
    cache.configure(JITKERNEL_CACHE_MAX_BYTES=str(size - 1))
    assert compile_kernel(2) == reference[2]
    info = jk.cache_info()
    assert (info.hits, info.corrupt, info.misses) == (0, 1, 1)


# ---- the size cap counts everything -----------------------------------------------------------------------------------

def test_records_count_toward_the_cap(tmp_path, reference):
    sizes = tmp_path / "sizes"
    run_child(sizes, factors=(2, 3, 4))
    (record,) = records(sizes)
    entry = sorted(p.stat().st_size for p in (sizes / "kernels").glob("*.jkc"))
    alias = sorted(p.stat().st_size for p in (sizes / "kernels").glob("*.jka"))  # each kernel's serving alias
    assert len(entry) == 3 and len(alias) == 3 and alias[0] == alias[2]
    # Room for the record and two kernels with their aliases, not three kernels and not the record with the two
    # largest.
    cap = record.stat().st_size + entry[1] + entry[2] + 2 * alias[0] - 1
    folder = tmp_path / "cache"
    result = run_child(folder, factors=(2, 3, 4), JITKERNEL_CACHE_MAX_BYTES=str(cap))
    assert result["shas"] == shas(reference, 2, 3, 4)
    files = our_files(folder)
    assert sum(files.values()) <= cap, files
    kernels = [path for path in files if path.endswith(".jkc") and os.sep + "kernels" + os.sep in path]
    assert result["stores"] == 3 and len(kernels) == 2, files  # the least recently used files made room


def consistent_total(folder):
    """Total size of the regular files under `folder` at one instant, or less (never more): a listing is not atomic, so
    only files seen in a first pass and still the same file (device, inode, ctime) in a second pass are counted, at
    the size the first pass saw (files only grow until they are renamed or removed). None when the folder is gone."""
    seen = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                seen[path] = st
    total, inodes = 0, set()
    for path, st in seen.items():
        try:
            now = os.lstat(path)
        except FileNotFoundError:
            continue
        same = (now.st_dev, now.st_ino, now.st_ctime_ns) == (st.st_dev, st.st_ino, st.st_ctime_ns)
        if same and (st.st_dev, st.st_ino) not in inodes:
            inodes.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def test_cap_holds_while_processes_store_at_once(tmp_path, reference):
    """Four processes each compile and store eight kernels at once into a cap of a few entries while this process
    samples the folder's size: never over the cap, at any sample or at the end."""
    from test_cache import kernel  # noqa: PLC0415
    import numpy as np  # noqa: PLC0415

    factors = [[10 + 8 * p + i for i in range(8)] for p in range(4)]
    saved = os.environ.get("JITKERNEL_CACHE")
    os.environ["JITKERNEL_CACHE"] = "0"
    jk._core._cache_reset()
    try:
        expected = [[hashlib.sha256(kernel(f).compile(inputs=[np.zeros(8, np.float32)],
                                                      output_dtypes=[np.float32])).hexdigest() for f in fs]
                    for fs in factors]
    finally:
        if saved is None:
            del os.environ["JITKERNEL_CACHE"]
        else:
            os.environ["JITKERNEL_CACHE"] = saved
        jk._core._cache_reset()
    folder, scratch = tmp_path / "cache", tmp_path / "start"
    scratch.mkdir()
    cap = 4 * 4096 + 2048  # a few entries (about 4 KiB each) and a toolkit record
    envs = [dict(os.environ, JITKERNEL_CACHE_DIR=str(folder), JITKERNEL_CACHE_MAX_BYTES=str(cap),
                 JK_TEST_FACTORS=",".join(map(str, fs))) for fs in factors]
    out = {}

    def run():
        try:
            out["results"] = run_together(SCRIPT, envs, scratch)
        except BaseException as e:  # reported below
            out["error"] = e

    worker = threading.Thread(target=run)
    worker.start()
    samples = []
    while worker.is_alive():
        if folder.exists():
            samples.append(consistent_total(folder))
    worker.join()
    assert "error" not in out, out.get("error")
    assert [r["shas"] for r in out["results"]] == expected
    assert all(r["warnings"] == [] and r["enabled"] for r in out["results"])
    assert sum(r["stores"] for r in out["results"]) >= 8
    assert len(samples) > 10
    assert max(samples) <= cap, (max(samples), cap, sorted(samples)[-10:])
    assert sum(our_files(folder).values()) <= cap
