"""A cache bundle file named in JITKERNEL_CACHE_READONLY_DIRS is a read-only tier served in place (no import, no
copy): it answers a fresh process whose writable folder is empty (tier hits, no compile), and it is refused -- with
one warning saying why, the kernel then compiled as without it, never a wrong binary -- when its group or others
may write it or its folder, when it is a symbolic link, or when its bytes were changed (the whole-file check)."""
from __future__ import annotations

import os

import pytest

import jitkernel as jk
from _cache_runs import run


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """factor -> SHA-256 of the cubin NVRTC makes without any cache."""
    result = run(tmp_path_factory.mktemp("none"), factors=(2, 3), JITKERNEL_CACHE="0")
    return dict(zip((2, 3), result["shas"]))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A bundle of the entries a process compiled for factors 2 and 3."""
    cache = tmp_path_factory.mktemp("filled") / "cache"
    assert run(cache, factors=(2, 3))["stores"] == 2
    folder = tmp_path_factory.mktemp("shipped")
    os.chmod(folder, 0o755)
    path = folder / "kernels.jkb"
    assert jk.export_cache(path, directory=cache).entries == 2
    return path


@pytest.fixture
def bundle(made, tmp_path):
    """A private copy of the bundle in a folder only its owner may write (tests may damage it)."""
    folder = tmp_path / "shipped"
    folder.mkdir(mode=0o755)
    copy = folder / "kernels.jkb"
    copy.write_bytes(made.read_bytes())
    os.chmod(copy, 0o644)
    return copy


def test_bundle_tier_answers_a_fresh_process(bundle, tmp_path, reference):
    before = bundle.read_bytes()
    result = run(tmp_path / "writable", factors=(2, 3), JITKERNEL_CACHE_READONLY_DIRS=bundle)
    assert result["shas"] == [reference[2], reference[3]]
    assert (result["misses"], result["compiles"], result["readonly_hits"], result["stores"]) == (0, 0, 2, 0), result
    assert result["warnings"] == []
    assert bundle.read_bytes() == before
    assert not list((tmp_path / "writable" / "kernels").glob("*.jkc"))  # served in place, not copied


@pytest.mark.parametrize("target,mode,word", [("file", 0o664, "its group"), ("file", 0o646, "others"),
                                              ("folder", 0o775, "its group")])
def test_writable_bundle_or_folder_is_refused(bundle, tmp_path, reference, target, mode, word):
    os.chmod(bundle if target == "file" else bundle.parent, mode)
    result = run(tmp_path / "writable", factors=(2,), JITKERNEL_CACHE_READONLY_DIRS=bundle)
    assert result["shas"] == [reference[2]] and result["readonly_hits"] == 0 and result["compiles"] == 1
    assert len(result["warnings"]) == 1, result["warnings"]
    assert f"writable by {word}" in result["warnings"][0] and "plant" in result["warnings"][0]


def test_linked_bundle_is_refused(bundle, tmp_path, reference):
    link = bundle.parent / "link.jkb"
    link.symlink_to(bundle)
    result = run(tmp_path / "writable", factors=(2,), JITKERNEL_CACHE_READONLY_DIRS=link)
    assert result["shas"] == [reference[2]] and result["readonly_hits"] == 0
    assert "symbolic link" in result["warnings"][0]


def test_changed_bundle_is_refused(bundle, tmp_path, reference):
    data = bytearray(bundle.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bundle.write_bytes(bytes(data))
    result = run(tmp_path / "writable", factors=(2,), JITKERNEL_CACHE_READONLY_DIRS=bundle)
    assert result["shas"] == [reference[2]] and result["readonly_hits"] == 0 and result["compiles"] == 1
    assert len(result["warnings"]) == 1 and str(bundle) in result["warnings"][0], result["warnings"]
