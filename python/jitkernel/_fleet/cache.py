"""The persistent compile cache: ``jitkernel.cache_info()``, ``clear_cache()``, ``cache_path()`` and
``CacheWarning``.

Compiled kernels are stored in a private per-user folder so that a new process runs a kernel compiled before without
calling NVRTC: ``$JITKERNEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/jitkernel`` or ``~/.cache/jitkernel`` (macOS:
``~/Library/Caches/jitkernel``). ``JITKERNEL_CACHE=0`` turns it off; ``JITKERNEL_CACHE_MAX_BYTES`` caps the size of
everything it stores (default 1 GiB, e.g. ``512M``); least recently used entries are evicted. The cache lives in the C++ core
(cpp/jitkernel/cache/); when it cannot be used (a folder another user owns or others may write to, a read-only or
full disk) kernels are kept in memory only and a ``CacheWarning`` is issued once per cause and process.

``JITKERNEL_CACHE_READONLY_DIRS`` (``:``-separated) names read-only tiers looked in after that folder (a shared file
system, an image layer), never written to; processes starting together on an empty folder compile each kernel about
once (claims: ``JITKERNEL_CACHE_CLAIM=0`` turns them off, ``JITKERNEL_CACHE_CLAIM_WAIT`` bounds the wait, default
30 s). See docs/cache_tiers.md.
"""
from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass

from .. import _core

__all__ = ["CacheInfo", "CacheWarning", "ReadOnlyTier", "cache_info", "cache_path", "clear_cache"]


class CacheWarning(RuntimeWarning):
    """Something the compile cache could not do: its folder cannot be used (kernels are then compiled and kept in
    memory only), one entry could not be stored, or a kernel cannot be cached on disk because its source names a
    header through a macro (its compile is then kept in memory only). Each cause is reported once per process."""


CacheWarning.__module__ = "jitkernel"


@dataclass(frozen=True)
class ReadOnlyTier:
    """A folder of ``JITKERNEL_CACHE_READONLY_DIRS``: looked in after the writable folder, never written to."""

    path: str
    used: bool  # it passed the checks (a directory only its owner may write to, with a "kernels" subfolder)
    reason: str  # why not, when not used
    entries: int  # compiled kernels in it now
    bytes: int


@dataclass(frozen=True)
class CacheInfo:
    """State of the compile cache. ``hits`` ... ``evictions`` count this process's disk cache activity."""

    path: str  # the configured folder ("" when there is no home folder)
    enabled: bool  # the folder is in use
    disabled_reason: str  # why not, when not enabled
    entries: int  # compiled kernels stored in the folder now
    records: int  # toolkit records stored there now (records/: where NVRTC and the CUDA headers were found)
    bytes: int  # size of everything the cap counts (kernels, toolkit records, files being written)
    max_bytes: int  # the cap (JITKERNEL_CACHE_MAX_BYTES)
    hits: int  # kernels this process loaded from the folder
    misses: int  # lookups that found no usable entry (so NVRTC compiled)
    corrupt: int  # misses that found a damaged or foreign entry (it is replaced)
    stores: int  # entries this process wrote
    evictions: int  # entries this process removed to stay under max_bytes
    readonly: tuple[ReadOnlyTier, ...] = ()  # JITKERNEL_CACHE_READONLY_DIRS, in lookup order
    readonly_hits: int = 0  # hits (counted in hits too) answered by a read-only tier
    claims: bool = False  # processes wait for another's compile of the same kernel (JITKERNEL_CACHE_CLAIM)
    claim_wait_seconds: float = 0.0  # how long at most (JITKERNEL_CACHE_CLAIM_WAIT)
    claim_waits: int = 0  # lookups that waited for another process's compile (a hit when it stored the kernel)
    claim_timeouts: int = 0  # ... and gave up after claim_wait_seconds (then compiled themselves)


def cache_info() -> CacheInfo:
    """Where the compile cache is, whether it is in use, how big it is, its read-only tiers, and this process's hits
    and misses."""
    info = _core._cache_info()
    info["readonly"] = tuple(ReadOnlyTier(**tier) for tier in info["readonly"])
    return CacheInfo(**info)


def clear_cache() -> int:
    """Removes every compiled kernel (and toolkit record) jitkernel stored in the cache folder, and the compile
    claims of dead owners (never a live one), and nothing else: no file of another format, no symbolic link, nothing
    a link points to. Returns how many compiled kernels were removed."""
    return _core._cache_clear()[0]


def cache_path() -> str:
    """The compile cache folder the environment names (whether or not it is enabled or usable)."""
    return _core._cache_path()


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # jitkernel/, above _fleet/


def _warn(message: str) -> None:
    """The core's warning hook: attributes the warning to the first caller outside jitkernel."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, CacheWarning, stacklevel=level)


_core._cache_set_warning_hook(_warn)
