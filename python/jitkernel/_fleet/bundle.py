"""Cache bundles: ``export_cache(path)`` writes compile cache entries into one file to ship with a container image
or a job; ``import_cache(path)`` checks all of it, then stores each entry through the cache's own atomic store (or
into a folder that can serve as a read-only tier, ``into=``).

Format (all integers little-endian; docs/precompile.md)::

    0      8  magic b"\\x89JKB\\r\\n\\x1a\\n"
    8      4  format version (1)
    12     4  manifest size M
    16     M  manifest: UTF-8 JSON {"format": 1, "jitkernel": version, "total_bytes": N,
              "entries": [{"name": "<64 hex>.jkc", "size": n, "sha256": "<64 hex>"}, ...]}
              (".jka" names are serving aliases: cpp/jitkernel/cache/serving_alias.hpp; ".jkt" names are
              autotuning decisions: tune_decisions.py)
    16+M  32  SHA-256 of the bytes before it (magic, version, size and manifest)
    ...       the entry files' bytes, in manifest order (N bytes in all)
    end-32 32 SHA-256 of everything before it

Import trusts nothing in the file. The core's bundle store reads it (cpp/jitkernel/cache/bundle_file.hpp, the same
store a C++ program serves kernels from): the manifest is bounded and checksummed before it is parsed; member names
must be entry names (so no path, no ``..``, no link can be expressed); sizes are bounded per entry and in total, and
the file's size must match them before any entry is read; each entry's SHA-256, its own header and checksum (the
cache's check) and the whole file's checksum are verified, all before the first write. Any violation is a
``BundleError`` naming the file and what was wrong, and nothing is written. Checking streams the file in 1 MiB
pieces (memory does not grow with the bundle, even a sparse one declaring gigabytes) and keeps it open; writing then
reads each entry again through that descriptor and checks its SHA-256 once more, so an entry changed since the check
is never written. ``into=`` streams too; the
cache's own store takes one entry at a time, at most the cache's cap (a larger entry could never be stored, and is
never read).

Every file written (the bundle, each entry of ``into=``) is a new temp file with an unpredictable name, created
exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``: never through a link planted at its name, never failing on a file
left by a killed process that had the same pid), then renamed into place.

Everything about one entry (its file name from its key, its header, its checks, reading the entries of a cache
folder, writing entry files into a folder laid out as a read-only tier) and reading a bundle is the C++ core's
(cpp/jitkernel/cache/: entry.hpp, entry_folder.hpp, bundle_file.hpp), reached through ``_core._cache_entry_*``,
``_CacheFolder``, ``_CacheTierWriter`` and ``_CacheBundle``; this module writes bundle files.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import struct
from dataclasses import dataclass

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError, BundleError
from .cache import cache_info

MAGIC = b"\x89JKB\r\n\x1a\n"
FORMAT = 1
MAX_ENTRY_BYTES = 1 << 30  # the cache's default cap: no larger entry could be stored
MAX_TOTAL_BYTES = 16 << 30
_HEADER = struct.Struct("<8sII")
_ENTRY_HEADER = _core._cache_entry_header_size  # the smallest entry file
_HEX = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20  # bytes read (and written) at a time while streaming a bundle
_TEMP_TRIES = 16  # names tried before a temp file counts as impossible to create


@dataclass(frozen=True)
class _Member:
    name: str  # "<key hex>.jkc", ".jka" for a serving alias, ".jkt" for an autotuning decision
    size: int
    sha256: str  # hex


@dataclass(frozen=True)
class BundleReport:
    """What ``export_cache`` / ``import_cache`` did."""

    path: str  # the bundle
    entries: int  # compiled binaries in the bundle
    bytes: int  # the bytes of its entry files (binaries, aliases and decisions)
    stored: int  # import: binaries written (0 for export)
    jitkernel: str  # the version that wrote the bundle (its entries hit only in that version)
    # Serving aliases in the bundle: how a machine without NVRTC finds each binary (docs/deploying.md).
    aliases: int = 0
    decisions: int = 0  # autotuning decisions in the bundle (docs/autotuning.md)


def _is_entry_name(name) -> bool:
    return isinstance(name, str) and name.isascii() and _core._cache_entry_key(name) is not None


def _is_alias(name: str) -> bool:
    return name.endswith(".jka")


def _is_binary(name: str) -> bool:
    return name.endswith(".jkc")


def _report(path: str, names_sizes, stored: int, version: str) -> BundleReport:
    names = [name for name, _ in names_sizes]
    aliases = sum(1 for name in names if _is_alias(name))
    binaries = sum(1 for name in names if _is_binary(name))
    return BundleReport(path, binaries, sum(size for _, size in names_sizes), stored, version, aliases,
                        len(names) - binaries - aliases)


def _cache_folder(directory: str | None):
    """The cache folder ``directory`` (else the active cache's) as the core reads it: its entries, checked."""
    if directory is None:
        directory = _core._cache_active_directory()
        if directory is None:
            raise BundleError("export: the compile cache is off (see python -m jitkernel cache info)")
    return _core._CacheFolder(directory)


def export_cache(path, keys=None, directory=None) -> BundleReport:
    """Writes the valid entries of the compile cache (or of the cache folder ``directory``) into the bundle at
    ``path`` (replaced atomically), with their serving aliases. ``keys``: only these (hex keys or entry names) and
    the aliases naming them; a key with no valid entry is an ArgumentError. Damaged entries are left out."""
    path = os.fspath(path)
    folder = _cache_folder(None if directory is None else os.fspath(directory))
    wanted = None if keys is None else [_key_name(k) for k in keys]
    if folder.problem and wanted:
        raise ArgumentError("keys", f"no entry for {wanted[0]} ({folder.where}: {folder.problem})")
    members = []
    names = wanted if wanted is not None else [name for name, _ in folder.entries()]
    for name in dict.fromkeys(names):
        data = folder.read(name, MAX_ENTRY_BYTES)
        if data is not None:
            members.append((name, data))
        elif wanted is not None:
            raise ArgumentError("keys", f"no valid entry {name} in {folder.where}")
    if wanted is not None:
        members += _aliases_of(folder, {name[:64] for name, _ in members})
    _write_bundle(path, members)
    return _report(path, [(name, len(data)) for name, data in members], 0, _core.__version__)


def _aliases_of(folder, keys: set) -> list:
    """(name, entry file) of each valid serving alias in ``folder`` that names one of ``keys`` (hex)."""
    out = []
    for name, _ in folder.entries():
        data = folder.read(name, MAX_ENTRY_BYTES) if _is_alias(name) else None
        if data is not None and _core._cache_alias_target(data[_ENTRY_HEADER:]) in keys:
            out.append((name, data))
    return out


def _key_name(key) -> str:
    if not isinstance(key, str):
        raise ArgumentTypeError("keys", f"expected hex keys or entry names (strings), got {type(key).__name__}")
    if _is_entry_name(key):
        return key
    if not _HEX.fullmatch(key):
        raise ArgumentError("keys", f"expected a 64-digit lowercase hex key or '<key>.jkc', got {key!r}")
    return _core._cache_entry_name(key)


def _create_temp(dir_fd: int, stem: str, mode: int) -> tuple:
    """(descriptor open for writing, name) of a new file ``<stem>.<pid>.<16 random hex digits>.tmp`` in the folder
    open as ``dir_fd``. Created exclusively and without following a link, so nothing planted at a name (a link to a
    victim file, a file left by a killed process that had our pid) is ever written through or fails the write: a
    taken name is skipped for another (OSError when ``_TEMP_TRIES`` names were all taken)."""
    for _ in range(_TEMP_TRIES):
        name = f"{stem}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                         dir_fd=dir_fd)
        except FileExistsError:
            continue
        return fd, name
    raise FileExistsError(errno.EEXIST, f"no free temp file name after {_TEMP_TRIES} tries", stem)


def _publish(dir_fd: int, name: str, stem: str, mode: int, write) -> None:
    """Creates ``name`` in the folder open as ``dir_fd`` atomically: ``write(file)`` fills a new temp file
    (_create_temp), which is then renamed over ``name``. Whatever fails (OSError, or what ``write`` raises), the
    temp file is removed and the error raised."""
    fd, temp = _create_temp(dir_fd, stem, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _write_bundle(path: str, members) -> None:
    manifest = json.dumps({
        "format": FORMAT, "jitkernel": _core.__version__, "total_bytes": sum(len(d) for _, d in members),
        "entries": [{"name": n, "size": len(d), "sha256": hashlib.sha256(d).hexdigest()} for n, d in members],
    }, sort_keys=True).encode()
    head = _HEADER.pack(MAGIC, FORMAT, len(manifest)) + manifest

    def write(f):
        whole = hashlib.sha256()
        for chunk in (head, hashlib.sha256(head).digest(), *(d for _, d in members)):
            f.write(chunk)
            whole.update(chunk)
        f.write(whole.digest())

    folder, name = os.path.split(path)
    if not name:
        raise ArgumentError("path", f"{path!r} names a folder, not a bundle file")
    try:
        dir_fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            _publish(dir_fd, name, name, 0o666, write)
        finally:
            os.close(dir_fd)
    except OSError as e:
        raise BundleError(f"{path}: cannot be written ({e.strerror or e})") from None


def _pieces(bundle, index: int, member: _Member):
    """The bytes of ``member`` (the ``index``-th) of the checked bundle, in pieces of at most ``_CHUNK`` bytes."""
    done = 0
    while done < member.size:
        n = min(member.size - done, _CHUNK)
        yield bundle.read(index, done, n)
        done += n


def _verified(path: str, max_bytes: int) -> tuple:
    """(the core's open bundle, jitkernel version, [_Member]) of the bundle at ``path``, every check passed
    (cpp/jitkernel/cache/bundle_file.hpp; BundleError naming what failed), streamed: memory does not grow with the
    bundle. The bundle stays open: the file checked is the one read."""
    bundle = _core._CacheBundle(path, max_bytes)
    if bundle.problem:
        raise BundleError(f"{path}: {bundle.problem}")
    return bundle, bundle.version, [_Member(name, size, digest) for name, size, digest in bundle.members()]


def _changed(path: str, member: _Member) -> BundleError:
    return BundleError(f"{path}: member {member.name}: changed while being imported (checksum mismatch); not "
                       f"written")


def import_cache(path, into=None, max_bytes: int = MAX_TOTAL_BYTES) -> BundleReport:
    """Checks the whole bundle at ``path`` (BundleError, nothing written), then stores its entries: through the
    compile cache's own store (its folder, cap and atomic writes), or with ``into`` as entry files of the folder
    ``into`` (``into/kernels/<key>.jkc``, created 0755/0644 less the umask: a folder to name in
    ``JITKERNEL_CACHE_READONLY_DIRS``). ``max_bytes``: the most entry bytes a bundle may hold."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ArgumentTypeError("max_bytes", f"expected a non-negative int, got {max_bytes!r}")
    path = os.fspath(path)
    bundle, version, members = _verified(path, max_bytes)
    if into is not None:
        stored = _write_into(path, bundle, os.fspath(into), members)
    else:
        stored = _store(path, bundle, members)
    return _report(path, [(m.name, m.size) for m in members], stored, version)


def _store(path: str, bundle, members) -> int:
    """Stores each member through the compile cache's own store, one at a time; returns how many were stored."""
    if _core._cache_active_directory() is None:
        raise BundleError(f"{path}: cannot import: the compile cache is off (see python -m jitkernel cache info)")
    before = cache_info()
    for i, m in enumerate(members):
        if m.size > before.max_bytes:
            continue  # could never stay under the cap (the store would skip it): not even read
        data = b"".join(_pieces(bundle, i, m))
        if hashlib.sha256(data).hexdigest() != m.sha256:
            raise _changed(path, m)
        _core._cache_store_entry(m.name, data)
        del data  # before the next read: one entry in memory at a time, not two
    return cache_info().stores - before.stores


def _write_into(path: str, bundle, directory: str, members) -> int:
    """Writes each member of the checked bundle as an entry file of the folder ``directory``, laid out as a
    read-only tier (the core's ``_CacheTierWriter``: temp file + rename, never through a link), streamed, checking
    each member's SHA-256 again (BundleError when it changed since the bundle was checked); returns how many binaries were
    written."""
    writer = _core._CacheTierWriter(directory)
    if writer.problem:
        raise ArgumentError("into", writer.problem)
    for i, m in enumerate(members):
        try:
            writer.begin(m.name, m.size)
            digest = hashlib.sha256()
            for chunk in _pieces(bundle, i, m):
                digest.update(chunk)
                writer.write(chunk)
            if digest.hexdigest() != m.sha256 or writer.commit():
                raise _changed(path, m)
        except OSError as e:
            raise BundleError(f"{writer.where}/{m.name}: cannot be written ({e.strerror or e})") from None
        finally:
            writer.abort()
    return sum(1 for m in members if _is_binary(m.name))
