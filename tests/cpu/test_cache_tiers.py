"""Read-only tiers of the compile cache (JITKERNEL_CACHE_READONLY_DIRS) without a GPU: a tier answers a fresh process
whose writable folder is empty (hits counted as tier hits, no compile, nothing copied), is never modified (bytes,
modes and mtimes compared, also after clear_cache and eviction pressure), works on a read-only mount, and a hostile
tier (bad checksum, another key's entry, a symbolic link, a group- or other-writable folder or entry) gives misses
and a correct binary, never a wrong one; the command line lists the tiers. Also the network file system rule: a read
failing with ESTALE or EIO is a plain miss, without a warning.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jitkernel as jk
from _cache_runs import environment, run, snapshot
from jitkernel import _core

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """factor -> SHA-256 of the cubin NVRTC makes without any cache."""
    result = run(tmp_path_factory.mktemp("none"), factors=(2, 3, 4, 5), JITKERNEL_CACHE="0")
    return dict(zip((2, 3, 4, 5), result["shas"]))


@pytest.fixture(scope="module")
def filled(tmp_path_factory, reference):
    """A tier filled by a process that compiled factors 2 and 3 into it (then used read-only)."""
    folder = tmp_path_factory.mktemp("tier") / "cache"
    result = run(folder, factors=(2, 3))
    assert result["stores"] == 2
    return folder


@pytest.fixture
def tier(filled, tmp_path):
    """A private copy of the filled tier (tests may damage it)."""
    copy = tmp_path / "tier"
    shutil.copytree(filled, copy, symlinks=True)
    return copy


def entries(folder):
    return sorted((folder / "kernels").glob("*.jkc"))


def test_tier_answers_a_fresh_process_with_an_empty_folder(tier, tmp_path, reference):
    before = snapshot(tier)
    writable = tmp_path / "writable"
    result = run(writable, factors=(2, 3), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[2], reference[3]]
    assert (result["misses"], result["compiles"], result["hits"], result["readonly_hits"]) == (0, 0, 2, 2), result
    assert result["warnings"] == [] and result["stores"] == 0
    assert entries(writable) == []  # a tier hit is not copied into the writable folder
    assert snapshot(tier) == before


def test_tier_answering_every_kernel_writes_only_the_toolkit_record(tier, tmp_path, reference):
    # Issue 24, item 11: two processes (one per GPU) answered wholly by the tier (no miss, no compile) leave no
    # kernel in the writable folder; the one file there is the toolkit search's record (records/: where NVRTC and
    # the headers were found, docs/cache_tiers.md), which cache_info() counts apart from kernels.
    writable = tmp_path / "writable"
    for device in ("0", "1"):
        result = run(writable, factors=(2, 3), JITKERNEL_CACHE_READONLY_DIRS=tier, CUDA_VISIBLE_DEVICES=device)
        assert (result["misses"], result["compiles"], result["stores"], result["readonly_hits"]) == (0, 0, 0, 2)
    files = sorted(p.relative_to(writable) for p in writable.rglob("*") if not p.is_dir())
    assert [p.parent.name for p in files] == ["records"], files  # no kernels/, claims/ or temp file
    assert files[0].suffix == ".jkc" and (writable / files[0]).read_bytes()[96:].startswith(b"jitkernel toolkit")
    info = subprocess.run([sys.executable, "-c", "import jitkernel as jk; i = jk.cache_info(); "
                           "print(i.entries, i.records, i.bytes == sum(f.stat().st_size for f in "
                           f"__import__('pathlib').Path({str(writable)!r}).rglob('*.jkc')))"],
                          env=environment(writable, JITKERNEL_CACHE_READONLY_DIRS=tier), capture_output=True, text=True,
                          timeout=120)
    assert info.returncode == 0, info.stderr
    assert info.stdout.split() == ["0", "1", "True"]
    cli = subprocess.run([sys.executable, "-W", "ignore", "-m", "jitkernel", "cache", "info"],
                         env=environment(writable, JITKERNEL_CACHE_READONLY_DIRS=tier), capture_output=True,
                         text=True, timeout=120)
    assert "entries: 0 compiled kernels, 1 toolkit record" in cli.stdout, cli.stdout


def test_miss_compiles_into_the_writable_folder_only(tier, tmp_path, reference):
    before = snapshot(tier)
    writable = tmp_path / "writable"
    result = run(writable, factors=(2, 4), JITKERNEL_CACHE_READONLY_DIRS=f"{tmp_path / 'absent'}:{tier}")
    assert result["shas"] == [reference[2], reference[4]]
    assert (result["hits"], result["readonly_hits"], result["misses"], result["compiles"]) == (1, 1, 1, 1)
    assert len(entries(writable)) == 1 and snapshot(tier) == before
    assert len(result["warnings"]) == 1 and "absent" in result["warnings"][0]  # the missing tier, once
    again = run(writable, factors=(4,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert (again["hits"], again["readonly_hits"], again["compiles"]) == (1, 0, 0)  # the writable folder first


def test_tier_is_never_modified_by_clear_or_eviction(tier, tmp_path, monkeypatch, reference):
    before = snapshot(tier)
    entry_size = entries(tier)[0].stat().st_size
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "writable"))
    monkeypatch.setenv("JITKERNEL_CACHE_READONLY_DIRS", str(tier))
    monkeypatch.setenv("JITKERNEL_CACHE_MAX_BYTES", str(entry_size * 3 // 2))  # one entry fits, not two
    _core._cache_reset()
    try:
        for factor in (2, 3, 4, 5, 2, 4, 5):
            k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                               source=f"auto i = threadIdx.x; out[i] = inp[i] * {factor};")
            k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        info = jk.cache_info()
        assert info.readonly_hits == 3 and info.evictions >= 1, info  # 2, 3 and 2 again
        assert [(t.path, t.used, t.entries) for t in info.readonly] == [(str(tier), True, 2)]
        assert jk.clear_cache() >= 1
        assert snapshot(tier) == before
    finally:
        monkeypatch.undo()
        _core._cache_reset()


def damage_checksum(path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def other_key(path):
    """Puts the tier's other entry (a valid entry of another key) in this entry's name."""
    other = next(p for p in entries(path.parent.parent) if p != path)
    path.write_bytes(other.read_bytes())


def symlink(path):
    """The entry becomes a link to a valid copy of itself outside the tier."""
    target = path.parent.parent.parent / "elsewhere.jkc"
    shutil.copy(path, target)
    path.unlink()
    path.symlink_to(target)


def writable_entry(path):
    os.chmod(path, 0o666)


@pytest.mark.parametrize("damage", [damage_checksum, other_key, symlink, writable_entry])
def test_hostile_entry_is_a_miss(tier, tmp_path, reference, damage):
    factor2 = sorted(entries(tier), key=lambda p: p.stat().st_mtime_ns)[0]  # compiled first: factor 2
    damage(factor2)
    before = snapshot(tier)
    result = run(tmp_path / "writable", factors=(2, 3), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[2], reference[3]]  # never a wrong binary
    assert (result["readonly_hits"], result["misses"], result["compiles"]) == (1, 1, 1), result
    assert result["corrupt"] == (0 if damage is symlink else 1)  # a link is never opened: no entry
    assert snapshot(tier) == before  # not replaced there: the new entry goes to the writable folder


@pytest.mark.parametrize("where,mode,word", [("", 0o770, "its group"), ("", 0o757, "others"),
                                             ("kernels", 0o720, "its group")])
def test_writable_tier_folder_is_refused(tier, tmp_path, reference, where, mode, word):
    os.chmod(tier / where, mode)
    result = run(tmp_path / "writable", factors=(2,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[2]] and result["readonly_hits"] == 0 and result["compiles"] == 1
    assert len(result["warnings"]) == 1 and f"writable by {word}" in result["warnings"][0], result["warnings"]
    assert "plant" in result["warnings"][0]


def test_linked_kernels_folder_is_refused(tier, tmp_path, reference):
    moved = tmp_path / "moved"
    (tier / "kernels").rename(moved)
    (tier / "kernels").symlink_to(moved)
    result = run(tmp_path / "writable", factors=(2,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["readonly_hits"] == 0 and result["shas"] == [reference[2]]
    assert "symbolic link" in result["warnings"][0]


def test_tier_owned_by_another_user_is_used(tier, tmp_path, reference):
    if not IS_ROOT:
        pytest.skip("chown to another user needs root")
    for root, dirs, files in os.walk(tier):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, 12345, 12345)
    os.chmod(tier, 0o755)
    os.chmod(tier / "kernels", 0o755)
    result = run(tmp_path / "writable", factors=(2,), JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["readonly_hits"] == 1 and result["compiles"] == 0 and result["warnings"] == []


def test_tier_on_a_read_only_mount(tier, tmp_path, reference):
    # A bind mount remounted read-only in a private mount namespace (as root in a container that allows it, or as
    # a user with user namespaces); permission bits do not stop root, a read-only mount does.
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is missing")
    mount = f"mount --bind '{tier}' '{tier}' && mount -o remount,bind,ro '{tier}'"
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"{mount} && ! touch '{tier}/x' 2>/dev/null"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {probe.stderr.strip() or 'touch succeeded'}")
    before = snapshot(tier)
    command = ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$0" "$@"']
    writable = tmp_path / "writable"
    result = run(writable, factors=(2, 3, 4), prefix=command, JITKERNEL_CACHE_READONLY_DIRS=tier)
    assert result["shas"] == [reference[2], reference[3], reference[4]]
    assert (result["readonly_hits"], result["compiles"], result["stores"]) == (2, 1, 1), result
    assert result["warnings"] == []
    assert snapshot(tier) == before and len(entries(writable)) == 1


def test_command_line_lists_tiers(tier, tmp_path):
    env = environment(tmp_path / "writable", JITKERNEL_CACHE_READONLY_DIRS=f"{tier}:{tmp_path / 'absent'}")
    cli = [sys.executable, "-W", "ignore", "-m", "jitkernel", "cache"]
    info = subprocess.run([*cli, "info"], env=env, capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    assert f"read-only: {tier} (2 entries" in info.stdout
    assert f"read-only: {tmp_path / 'absent'} (not used: No such file or directory)" in info.stdout
    assert "claims: on, waiting up to 30 s" in info.stdout
    path = subprocess.run([*cli, "path"], env=env, capture_output=True, text=True, timeout=120)
    assert path.stdout.splitlines() == [str(tmp_path / "writable"), f"read-only: {tier}",
                                        f"read-only: {tmp_path / 'absent'}"]


@pytest.mark.parametrize("error", [errno.ESTALE, errno.EIO])
def test_network_read_error_is_a_plain_miss(tmp_path, monkeypatch, reference, error):
    # On NFS a read may fail with ESTALE (another host replaced the file) or EIO: a miss, not an error or a warning.
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITKERNEL_CACHE_CLAIM", "0")  # else the claim's second look finds the entry
    _core._cache_reset()
    k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                       source="auto i = threadIdx.x; out[i] = inp[i] * 2;")
    try:
        k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        _core._cache_fail_next_read(error)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        info = jk.cache_info()
        assert (info.misses, info.corrupt, info.hits) == (2, 0, 0)
        k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        assert jk.cache_info().hits == 1
    finally:
        _core._cache_fail_next_read(0)
        monkeypatch.undo()
        _core._cache_reset()
