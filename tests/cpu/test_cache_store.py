"""The cache's stores as the bundles see them (cpp/jitkernel/cache/store.hpp, entry_folder.hpp; bindings in
cpp/bindings/services/cache_bundle.cpp): the entry layout is the core's alone (name from key and back, header size, checks),
a cache folder's entries are read as the cache reads them (no link, regular files only, checked), and `import_cache(
into=)` writes a folder that the read-only tier accepts, and refuses one the tier would refuse."""
from __future__ import annotations

import hashlib
import os
import struct

import pytest

import jitkernel as jk
from jitkernel import _core
from jitkernel._fleet import bundle as _bundle


def entry_file(key: bytes, payload: bytes) -> bytes:
    """An entry file made by hand (the layout of cpp/jitkernel/cache/entry.hpp)."""
    header = struct.pack("<8sII32sQ32sQ", b"\x89JKC\r\n\x1a\n", 1, 96, key, len(payload),
                         hashlib.sha256(payload).digest(), 0)
    return header + payload


def members(n: int = 2) -> list:
    out = []
    for i in range(n):
        key = hashlib.sha256(b"store %d" % i).digest()
        out.append((key.hex() + ".jkc", entry_file(key, bytes(range(i, i + 50)))))
    return sorted(out)


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A valid bundle of hand-made entries, exported from a folder laid out like the cache's."""
    source = tmp_path / "source"
    (source / "kernels").mkdir(parents=True, mode=0o700)
    for name, data in members():
        (source / "kernels" / name).write_bytes(data)
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    _core._cache_reset()
    path = tmp_path / "b.jkbundle"
    assert jk.export_cache(path, directory=source).entries == 2
    yield path
    monkeypatch.undo()
    _core._cache_reset()


def test_entry_names_and_header_come_from_the_core():
    key = "ab" * 32
    assert _core._cache_entry_name(key) == key + ".jkc"
    assert _core._cache_entry_key(key + ".jkc") == key
    for name in (key, key.upper() + ".jkc", key + ".jkc.tmp", "../" + key + ".jkc", key[:-1] + ".jkc"):
        assert _core._cache_entry_key(name) is None
    with pytest.raises(jk.ArgumentError, match="key"):
        _core._cache_entry_name(key[:-1])
    assert _bundle._ENTRY_HEADER == _core._cache_entry_header_size == 96
    assert not hasattr(_bundle, "_NAME")  # no second spelling of the names


def test_a_cache_folder_is_read_as_the_cache_reads_it(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (name, data), (other, _) = members()
    (kernels / name).write_bytes(data)
    os.symlink(kernels / name, kernels / other)  # a link in an entry's place: never followed
    os.mkfifo(kernels / ("cd" * 32 + ".jkc"))  # never opened blocking, never an entry
    (kernels / ("ef" * 32 + ".jkc")).write_bytes(data)  # another key's bytes: not a valid entry
    folder = _core._CacheFolder(str(tmp_path))
    assert folder.problem == "" and folder.where == str(kernels)
    assert [n for n, _ in folder.entries()] == sorted([name, "ef" * 32 + ".jkc"])
    assert folder.read(name, 1 << 30) == data
    assert folder.read(name, len(data) - 1) is None  # larger than the bound
    assert folder.read(other, 1 << 30) is None
    assert folder.read("cd" * 32 + ".jkc", 1 << 30) is None
    assert folder.read("ef" * 32 + ".jkc", 1 << 30) is None
    assert "No such file" in _core._CacheFolder(str(tmp_path / "missing")).problem


def tier_used(monkeypatch, folder) -> bool:
    """Whether `folder`, named in JITKERNEL_CACHE_READONLY_DIRS, is used as a read-only tier."""
    import warnings

    monkeypatch.setenv("JITKERNEL_CACHE_READONLY_DIRS", str(folder))
    _core._cache_reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jk.CacheWarning)  # the warning of a tier not used
        return jk.cache_info().readonly[0].used


def test_import_into_writes_a_folder_the_tier_accepts(bundle, tmp_path, monkeypatch):
    tier = tmp_path / "deep" / "tier"
    assert jk.import_cache(bundle, into=tier).stored == 2
    assert sorted(p.name for p in (tier / "kernels").iterdir()) == [n for n, _ in members()]
    assert tier_used(monkeypatch, tier)


def test_import_into_refuses_a_folder_the_tier_would_refuse(bundle, tmp_path, monkeypatch):
    # Drift fixed: `into=` checked the folder and its kernels folder for group/others' write access only, while a
    # read-only tier also requires that nobody else can replace them (every folder above owned by root, this user
    # or the tier's owner, writable by nobody else unless sticky: directory.hpp). A folder below one that others
    # may write was filled, then never used as a tier (and another user could have swapped it meanwhile).
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # writable by others, no sticky bit
    with pytest.raises(jk.ArgumentError, match="into: .*enclosing folder .*shared.* writable by others"):
        jk.import_cache(bundle, into=shared / "tier")
    assert not list((shared / "tier").rglob("*.jkc"))  # nothing written
    assert not tier_used(monkeypatch, shared / "tier")  # as the tier refuses it
    os.chmod(shared, 0o777 | 0o1000)  # sticky, as /tmp: nobody else may rename what is ours there
    assert jk.import_cache(bundle, into=shared / "tier").stored == 2
    assert tier_used(monkeypatch, shared / "tier")
