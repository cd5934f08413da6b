"""Autotuning decisions on disk: which configuration won for a (GPU, kernel and configuration space, key bucket),
and how long each candidate took.

A decision is a compile cache entry of its own kind ("<key>.jkt": cpp/bindings/services/autotune.cpp; not a
compiled kernel to ``cache info``) under its own key: the SHA-256 of the
tuned object's static part (a domain tag, the kernel's serialised spec, the configuration space, the grid,
threadgroup and key functions' code: ``static_key``, hashed once per object), the GPU's name and architecture,
and the key bucket. Being an entry, it gets everything entries have: the private folder's checks, checksums,
atomic replace, the size cap, read-only tiers (checked by the core where they are read), bundles
(``export_cache`` ships decisions with the binaries), and compile claims (one process tunes a key while the
others wait and read its decision).

The payload is ``MAGIC``, a head line ``"<chosen index> <SHA-256 of the configuration space>"``, then the whole
decision as UTF-8 JSON. A tuned call reads only the head line (``chosen_of``: bounded, no JSON, no hashing of the
space), so a second process's first call costs one small read more than an untuned call; the key, the read and
the head line's check are done by the core (cpp/bindings/services/tune_lookup.cpp, which owns the head line's
format and the size bound; a tuned call's warm path, tune_table.cpp, calls it). Listings and ``Autotuned.decisions`` decode the JSON (``decode``). What is read is never trusted: it is bounded (``MAX_BYTES``;
longer is refused unread), parsed once (linear), and checked (the head must name this space and an index it
has; ``decode`` checks every field and that the head agrees with the body); anything else is a foreign or
damaged decision, reported with one ``CacheWarning`` when the bucket is tuned again (the new decision replaces it
in the writable folder).
"""
from __future__ import annotations

import json
import math
import time
import warnings

from .. import _core
from .._errors import ArgumentError
from .cache import CacheWarning, cache_info

MAGIC: bytes = _core._tune_decision_magic
MAX_BYTES: int = _core._tune_decision_max_bytes  # a space of MAX_CONFIGS candidates with their errors fits
MAX_ERROR_CHARS = 500  # of each failed candidate's message, as stored
_DOMAIN = "jitkernel autotuning decision 2"
DECISION_SUFFIX = ".jkt"  # the entry file kind of decisions (cpp/jitkernel/cache/store.hpp's EntryKind::Decision)


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))


def space_digest(space: list) -> str:
    """The SHA-256 (hex) of a configuration space, written in each decision's head line."""
    return _core._sha256(_canonical(space).encode())


def static_key(spec: str, space: list, code: str) -> str:
    """The part of a decision key one tuned object shares by all its buckets (made once, with the object)."""
    return _core._sha256(_canonical({"domain": _DOMAIN, "kernel": spec, "space": space, "code": code}).encode())


def identity_text(device: dict) -> str:
    """The GPU's part of a decision key: its name and architecture, length-prefixed (no separator is ambiguous)."""
    return _core._tune_identity_text(device["name"], device["arch"])


def decision_key(static: str, identity: str, bucket: str) -> str:
    """The cache key (hex) of a decision: the SHA-256 of the three parts, one per line. Nothing process-specific
    goes in (no id(), no salted hash())."""
    return _core._tune_decision_key(static, identity, bucket)


def encode(kernel_name: str, device: dict, space: list, bucket: str, times: list, errors: list,
           chosen: int) -> bytes:
    """The payload of a decision: ``MAGIC``, a head line ``"<chosen> <space digest>"`` (what a call reads), then
    the whole decision as JSON (what listings and ``Autotuned.decisions`` read)."""
    body = {"kernel": kernel_name, "device": device["name"], "arch": device["arch"], "key": bucket,
            "configs": space, "times_ms": times, "errors": [None if e is None else e[:MAX_ERROR_CHARS] for e in errors],
            "chosen": chosen, "tuned_at": int(time.time())}
    head = f"{chosen} {space_digest(space)}\n".encode()
    return MAGIC + head + json.dumps(body, sort_keys=True, allow_nan=False).encode()


def choose(kernel_name: str, device: dict, space: list, bucket: str, times: list, errors: list) -> tuple:
    """(payload, chosen index) of a tuning's results: the fastest candidate that ran; ``ArgumentError("configs")``
    listing each candidate's error when none ran."""
    ran = [i for i, t in enumerate(times) if t is not None]
    if not ran:
        detail = "; ".join(f"{i} {c}: {e}" for i, (c, e) in enumerate(zip(space, errors)))
        raise ArgumentError("configs", f"no configuration of {kernel_name!r} ran on {device['name']}: {detail}")
    chosen = min(ran, key=lambda i: times[i])
    return encode(kernel_name, device, space, bucket, times, errors, chosen), chosen


def chosen_of(payload: bytes, digest: str, count: int) -> int | None:
    """The chosen index from a decision's head line, when the payload is a decision for the space whose digest is
    ``digest`` (``count`` configurations); else None. Reads the head line only (bounded, in the core)."""
    return _core._tune_chosen(payload, digest, count)


def decode(payload: bytes) -> dict | None:
    """The decision in ``payload`` with every field checked (its types and lengths, and that the head line
    agrees with the body), or None when it is not one."""
    if len(payload) > MAX_BYTES or not payload.startswith(MAGIC):
        return None
    end = payload.find(b"\n", len(MAGIC))  # the head line's own bounds are chosen_of's, checked below
    if end < 0:
        return None
    try:
        body = json.loads(payload[end + 1:].decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    configs, times, errors, chosen = (body.get(k) for k in ("configs", "times_ms", "errors", "chosen"))
    if not (isinstance(configs, list) and isinstance(times, list) and isinstance(errors, list) and configs
            and len(times) == len(configs) == len(errors)):
        return None
    if isinstance(chosen, bool) or not isinstance(chosen, int) or not 0 <= chosen < len(configs):
        return None
    if not all(t is None or (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t >= 0)
               for t in times) or times[chosen] is None:
        return None
    if not all(e is None or isinstance(e, str) for e in errors):
        return None
    if not all(isinstance(body.get(k), str) for k in ("kernel", "device", "arch", "key")):
        return None
    try:
        if chosen_of(payload, space_digest(configs), len(configs)) != chosen:
            return None
    except (TypeError, ValueError, RecursionError):  # a space that cannot be written canonically
        return None
    return body


def load(key: str, digest: str, count: int, claim: bool, warn: bool = True):
    """(payload, chosen index, claim): the stored decision for ``key`` when there is one for the space of
    ``digest`` (``space_digest``) and ``count`` configurations, else (None, None, claim); a damaged or foreign one
    is treated as none (with one CacheWarning when ``warn``). Only the head line is read (``chosen_of``).
    ``claim``: on a miss, wait for another process tuning the key or claim it (the claim is returned; release
    it after storing)."""
    if claim:
        payload, held = _core._decision_load_or_claim(key)
    else:
        payload, held = _core._decision_load(key), None
    if payload is None:
        return None, None, held
    chosen = chosen_of(payload, digest, count)
    if chosen is None:
        if warn:
            _warn_bad(key)
        return None, None, held
    return payload, chosen, held


def _warn_bad(key: str) -> None:
    warnings.warn(f"autotuning decision {key[:16]}... in the compile cache is damaged or not one this jitkernel "
                  f"wrote for this configuration space: ignored, the kernel is tuned again", CacheWarning,
                  stacklevel=4)


def store(key: str, payload: bytes) -> None:
    _core._decision_store(key, payload)


def listing() -> list:
    """Every valid decision in the compile cache folder and its read-only tiers: dicts with ``kernel``,
    ``device``, ``arch``, ``key``, ``configs``, ``times_ms``, ``errors``, ``chosen``, ``tuned_at`` and ``where``
    (the folder). Only decision entries ("<key>.jkt") are read, none larger than a decision can be."""
    info = cache_info()
    folders = ([info.path] if info.enabled else []) + [t.path for t in info.readonly if t.used]
    found = []
    limit = MAX_BYTES + _core._cache_entry_header_size
    for directory in folders:
        folder = _core._CacheFolder(directory)
        if folder.problem:
            continue
        for name, size in folder.entries():
            if size > limit or not name.endswith(DECISION_SUFFIX):
                continue
            data = folder.read(name, limit)
            if data is None:
                continue
            decision = decode(bytes(data[_core._cache_entry_header_size:]))
            if decision is not None:
                found.append(dict(decision, where=folder.where, entry=name))
    return found
