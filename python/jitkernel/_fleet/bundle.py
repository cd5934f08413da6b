"""Cache bundles: ``export_cache(path)`` writes compile cache entries into one file to ship with a container image
or a job; ``import_cache(path)`` checks all of it, then stores each entry through the cache's own atomic store (or
into a folder that can serve as a read-only tier, ``into=``).

Format (all integers little-endian; docs/precompile.md)::

    0      8  magic b"\\x89JKB\\r\\n\\x1a\\n"
    8      4  format version (1)
    12     4  manifest size M
    16     M  manifest: UTF-8 JSON {"format": 1, "jitkernel": version, "total_bytes": N,
              "entries": [{"name": "<64 hex>.jkc", "size": n, "sha256": "<64 hex>"}, ...]}
    16+M  32  SHA-256 of the bytes before it (magic, version, size and manifest)
    ...       the entry files' bytes, in manifest order (N bytes in all)
    end-32 32 SHA-256 of everything before it

Import trusts nothing in the file: the manifest is bounded and checksummed before it is parsed; member names must
be entry names (so no path, no ``..``, no link can be expressed); sizes are bounded per entry and in total, and the
file's size must match them before any entry is read; each entry's SHA-256, its own header and checksum (the cache's
check) and the whole file's checksum are verified, all before the first write. Any violation is a ``BundleError``
naming the file and what was wrong, and nothing is written. Checking streams the file in pieces of ``_CHUNK`` bytes
(memory does not grow with the bundle, even a sparse one declaring gigabytes); writing then reads each entry again
and checks its SHA-256 once more, so an entry changed since the check is never written. ``into=`` streams too; the
cache's own store takes one entry at a time, at most the cache's cap (a larger entry could never be stored, and is
never read).

Every file written (the bundle, each entry of ``into=``) is a new temp file with an unpredictable name, created
exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``: never through a link planted at its name, never failing on a file
left by a killed process that had the same pid), then renamed into place.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import stat
import struct
from dataclasses import dataclass

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError, BundleError
from .. import _strict_json
from .cache import cache_info

MAGIC = b"\x89JKB\r\n\x1a\n"
FORMAT = 1
MAX_MANIFEST_BYTES = 64 << 20
MAX_ENTRY_BYTES = 1 << 30  # the cache's default cap: no larger entry could be stored
MAX_TOTAL_BYTES = 16 << 30
_HEADER = struct.Struct("<8sII")
_DIGEST = 32
_ENTRY_HEADER = 96  # cpp/jitkernel/cache/entry.hpp
_NAME = re.compile(r"[0-9a-f]{64}\.jkc")
_HEX = re.compile(r"[0-9a-f]{64}")
_MANIFEST_KEYS = {"format", "jitkernel", "total_bytes", "entries"}
_MEMBER_KEYS = {"name", "size", "sha256"}
_CHUNK = 1 << 20  # bytes read (and written) at a time while streaming a bundle
_TEMP_TRIES = 16  # names tried before a temp file counts as impossible to create


@dataclass(frozen=True)
class _Member:
    name: str  # "<key hex>.jkc"
    offset: int  # of its bytes in the bundle
    size: int
    sha256: str  # hex


@dataclass(frozen=True)
class BundleReport:
    """What ``export_cache`` / ``import_cache`` did."""

    path: str  # the bundle
    entries: int  # entries in the bundle
    bytes: int  # their bytes
    stored: int  # import: entries written (0 for export)
    jitkernel: str  # the version that wrote the bundle (its entries hit only in that version)


def _read_entry_file(folder_fd: int, name: str, limit: int) -> bytes | None:
    """The bytes of entry file ``name`` when it is a regular file (no link followed, never blocking) of at most
    ``limit`` bytes, else None."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def _cache_entries_folder(directory: str | None) -> str:
    if directory is None:
        directory = _core._cache_active_directory()
        if directory is None:
            raise BundleError("export: the compile cache is off (see python -m jitkernel cache info)")
    return os.path.join(directory, "kernels")


def export_cache(path, keys=None, directory=None) -> BundleReport:
    """Writes the valid entries of the compile cache (or of the cache folder ``directory``) into the bundle at
    ``path`` (replaced atomically). ``keys``: only these (hex keys or entry names); a key with no valid entry is an
    ArgumentError. Damaged entries are left out."""
    path = os.fspath(path)
    folder = _cache_entries_folder(None if directory is None else os.fspath(directory))
    wanted = None if keys is None else [_key_name(k) for k in keys]
    try:
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if wanted:
            raise ArgumentError("keys", f"no entry for {wanted[0]} ({folder}: {e.strerror})") from None
        folder_fd = None
    members = []
    try:
        names = wanted if wanted is not None else sorted(
            n for n in (os.listdir(folder_fd) if folder_fd is not None else ()) if _NAME.fullmatch(n))
        for name in dict.fromkeys(names):
            data = None if folder_fd is None else _read_entry_file(folder_fd, name, MAX_ENTRY_BYTES)
            if data is not None and _core._cache_entry_check(name[:64], data) == "":
                members.append((name, data))
            elif wanted is not None:
                raise ArgumentError("keys", f"no valid entry {name} in {folder}")
    finally:
        if folder_fd is not None:
            os.close(folder_fd)
    _write_bundle(path, members)
    return BundleReport(path, len(members), sum(len(d) for _, d in members), 0, _core.__version__)


def _key_name(key) -> str:
    if not isinstance(key, str):
        raise ArgumentTypeError("keys", f"expected hex keys or entry names (strings), got {type(key).__name__}")
    name = key if key.endswith(".jkc") else key + ".jkc"
    if not _NAME.fullmatch(name):
        raise ArgumentError("keys", f"expected a 64-digit lowercase hex key or '<key>.jkc', got {key!r}")
    return name


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


def _manifest(path: str, f, file_size: int, max_bytes: int) -> tuple:
    """(head bytes, version string, members) of the bundle open as ``f``: everything but the entries, checked."""
    def bad(message):
        return BundleError(f"{path}: {message}")

    fixed = f.read(_HEADER.size)
    if len(fixed) < _HEADER.size:
        raise bad("truncated (shorter than a bundle header)")
    magic, version, size = _HEADER.unpack(fixed)
    if magic != MAGIC:
        raise bad("not a jitkernel cache bundle (bad magic)")
    if version != FORMAT:
        raise bad(f"bundle format version {version}; this jitkernel reads version {FORMAT}")
    if size > MAX_MANIFEST_BYTES or _HEADER.size + size + 2 * _DIGEST > file_size:
        raise bad(f"manifest size {size} is larger than the file or than {MAX_MANIFEST_BYTES} bytes")
    head = fixed + f.read(size)
    if hashlib.sha256(head).digest() != f.read(_DIGEST):
        raise bad("manifest checksum mismatch (damaged or altered)")
    try:
        manifest = _strict_json.loads(head[_HEADER.size:].decode("utf-8"))
    except ValueError as e:  # JsonError, or bytes that are not UTF-8
        raise bad(f"manifest is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or set(manifest) != _MANIFEST_KEYS or manifest["format"] != FORMAT \
            or not isinstance(manifest["entries"], list) or not isinstance(manifest["jitkernel"], str):
        raise bad(f"manifest must be an object with the keys {', '.join(sorted(_MANIFEST_KEYS))}")
    members, names, total = [], set(), 0
    for i, m in enumerate(manifest["entries"]):
        if not isinstance(m, dict) or set(m) != _MEMBER_KEYS:
            raise bad(f"manifest entry {i}: expected an object with the keys name, sha256, size")
        name, n, digest = m["name"], m["size"], m["sha256"]
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise bad(f"member {name!r}: not a cache entry name ('<64 hex digits>.jkc'); refused")
        if name in names:
            raise bad(f"member {name}: appears twice")
        if isinstance(n, bool) or not isinstance(n, int) or not _ENTRY_HEADER <= n <= MAX_ENTRY_BYTES:
            raise bad(f"member {name}: size {n!r} is outside {_ENTRY_HEADER}..{MAX_ENTRY_BYTES} bytes")
        if not isinstance(digest, str) or not _HEX.fullmatch(digest):
            raise bad(f"member {name}: sha256 must be 64 lowercase hex digits")
        names.add(name)
        total += n
        members.append((name, n, digest))
    if total != manifest["total_bytes"] or total > max_bytes:
        raise bad(f"entries total {total} bytes; the manifest says {manifest['total_bytes']!r} and the limit is "
                  f"{max_bytes}")
    if file_size != len(head) + _DIGEST + total + _DIGEST:
        raise bad(f"file is {file_size} bytes; its manifest describes {len(head) + 2 * _DIGEST + total} "
                  f"(truncated or extended)")
    return head, manifest["jitkernel"], members


def _pieces(path: str, f, member: _Member):
    """The bytes of ``member`` from the bundle open as ``f``, in pieces of at most ``_CHUNK`` bytes (BundleError
    when the file ends first)."""
    f.seek(member.offset)
    left = member.size
    while left:
        chunk = f.read(min(left, _CHUNK))
        if not chunk:
            raise BundleError(f"{path}: member {member.name}: truncated")
        left -= len(chunk)
        yield chunk


def _verified(path: str, f, file_size: int, max_bytes: int) -> tuple:
    """(jitkernel version, [_Member]) of the bundle open as ``f``, every check passed (BundleError), streamed:
    memory does not grow with the bundle."""
    head, version, listed = _manifest(path, f, file_size, max_bytes)
    whole = hashlib.sha256(head)
    whole.update(hashlib.sha256(head).digest())
    members, offset = [], len(head) + _DIGEST
    for name, size, digest in listed:
        member = _Member(name, offset, size, digest)
        offset += size
        own, check = hashlib.sha256(), _core._CacheEntryCheck(name[:64], size)
        for chunk in _pieces(path, f, member):
            whole.update(chunk)
            own.update(chunk)
            check.update(chunk)
        if own.hexdigest() != digest:
            raise BundleError(f"{path}: member {name}: checksum mismatch")
        why = check.finish()
        if why:
            raise BundleError(f"{path}: member {name}: not a valid cache entry ({why})")
        members.append(member)
    if whole.digest() != f.read(_DIGEST) or f.read(1):
        raise BundleError(f"{path}: file checksum mismatch (damaged or altered)")
    return version, members


def _open_bundle(path: str):
    """The bundle at ``path`` open for reading (a regular file, opened without blocking: a FIFO or device in its
    place is refused, never waited on) and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise BundleError(f"{path}: cannot be read ({e.strerror or e})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise BundleError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb"), st.st_size


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
    f, file_size = _open_bundle(path)
    with f:
        version, members = _verified(path, f, file_size, max_bytes)
        if into is not None:
            stored = _write_into(path, f, os.fspath(into), members)
        else:
            stored = _store(path, f, members)
    return BundleReport(path, len(members), sum(m.size for m in members), stored, version)


def _store(path: str, f, members) -> int:
    """Stores each member through the compile cache's own store, one at a time; returns how many were stored."""
    if _core._cache_active_directory() is None:
        raise BundleError(f"{path}: cannot import: the compile cache is off (see python -m jitkernel cache info)")
    before = cache_info()
    for m in members:
        if m.size > before.max_bytes:
            continue  # could never stay under the cap (the store would skip it): not even read
        f.seek(m.offset)
        data = f.read(m.size)
        if len(data) != m.size or hashlib.sha256(data).hexdigest() != m.sha256:
            raise _changed(path, m)
        _core._cache_store_entry(m.name[:64], data)
        del data  # before the next read: one entry in memory at a time, not two
    return cache_info().stores - before.stores


def _copy(path: str, f, member: _Member, out) -> None:
    """Writes ``member`` of the bundle open as ``f`` to the file ``out``, streamed, checking its SHA-256 again
    (BundleError when it changed since the bundle was checked)."""
    digest = hashlib.sha256()
    for chunk in _pieces(path, f, member):
        digest.update(chunk)
        out.write(chunk)
    if digest.hexdigest() != member.sha256:
        raise _changed(path, member)


def _write_into(path: str, f, directory: str, members) -> int:
    """Writes each member of the bundle open as ``f`` as an entry file of ``directory``/kernels, streamed (temp
    file + rename, never through a link); returns how many were written."""
    kernels = os.path.join(directory, "kernels")
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        try:
            os.mkdir(kernels, 0o755)
        except FileExistsError:
            pass
        fd = os.open(kernels, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise ArgumentError("into", f"{kernels} cannot be used as a folder ({e.strerror or e})") from None
    try:
        for where in (os.stat(directory), os.fstat(fd)):
            if where.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise ArgumentError("into", f"{directory} or its kernels folder is writable by group or others; "
                                            f"a read-only tier refuses such a folder")
        for m in members:
            try:  # "<key>.import.<pid>.<random>.tmp": a temp file name the cache recognises (and tidies)
                _publish(fd, m.name, f"{m.name[:64]}.import", 0o644, lambda out, m=m: _copy(path, f, m, out))
            except OSError as e:
                raise BundleError(f"{kernels}/{m.name}: cannot be written ({e.strerror or e})") from None
    finally:
        os.close(fd)
    return len(members)
