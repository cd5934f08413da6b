"""Autotuning decisions on disk: which configuration won for a (GPU, kernel and configuration space, key bucket),
and how long each candidate took.

A decision is a compile cache entry (cpp/bindings/services/autotune.cpp) under its own key: the SHA-256 of a
domain tag, the GPU's name and architecture, the kernel's serialised spec, the configuration space, the grid and
threadgroup functions' code, and the key bucket. Being an entry, it gets everything entries have: the private
folder's checks, checksums, atomic replace, the size cap, read-only tiers (checked by the core where they are
read), bundles (``export_cache`` ships decisions with the binaries; old bundles stay readable), and compile claims
(one process tunes a key while the others wait and read its decision).

The payload is ``MAGIC`` then UTF-8 JSON. What is read is never trusted: it is bounded (``MAX_BYTES``; longer is
refused unread), parsed once (linear), and checked field by field against what this process would have written
(the configuration space must match exactly); anything else is a foreign or damaged decision, reported with one
``CacheWarning`` and tuned again (the new decision replaces it in the writable folder).
"""
from __future__ import annotations

import hashlib
import json
import math
import time
import warnings

from .. import _core
from .cache import CacheWarning, cache_info

MAGIC = b"jitkernel-tune 1\n"
MAX_BYTES = 1 << 20  # a space of MAX_CONFIGS candidates with their errors fits with room to spare
MAX_ERROR_CHARS = 500  # of each failed candidate's message, as stored
_DOMAIN = "jitkernel autotuning decision 1"


def decision_key(device: dict, spec: str, space: list, code: str, bucket: str) -> str:
    """The cache key (hex) of a decision: nothing process-specific goes in (no id(), no salted hash())."""
    text = json.dumps({"domain": _DOMAIN, "device": [device["name"], device["arch"]], "kernel": spec,
                       "space": space, "code": code, "key": bucket}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def encode(kernel_name: str, device: dict, space: list, bucket: str, times: list, errors: list,
           chosen: int) -> bytes:
    """The payload of a decision."""
    body = {"kernel": kernel_name, "device": device["name"], "arch": device["arch"], "key": bucket,
            "configs": space, "times_ms": times, "errors": [None if e is None else e[:MAX_ERROR_CHARS] for e in errors],
            "chosen": chosen, "tuned_at": int(time.time())}
    return MAGIC + json.dumps(body, sort_keys=True, allow_nan=False).encode()


def decode(payload: bytes) -> dict | None:
    """The decision in ``payload`` with every field checked (its types and lengths), or None when it is not one."""
    if len(payload) > MAX_BYTES or not payload.startswith(MAGIC):
        return None
    try:
        body = json.loads(payload[len(MAGIC):].decode("utf-8"))
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
    return body


def load(key: str, space: list, claim: bool):
    """(decision or None, claim or None) for ``key``: the stored decision when there is a valid one for this
    ``space`` (a foreign or damaged one is warned about and treated as none). ``claim``: on a miss, wait for
    another process tuning the key or claim it (the claim is returned; release it after storing)."""
    if claim:
        payload, held = _core._decision_load_or_claim(key)
    else:
        payload, held = _core._decision_load(key), None
    if payload is None:
        return None, held
    decision = decode(payload)
    if decision is None or decision["configs"] != space:
        _warn_bad(key)
        return None, held
    return decision, held


def _warn_bad(key: str) -> None:
    warnings.warn(f"autotuning decision {key[:16]}... in the compile cache is damaged or not one this jitkernel "
                  f"wrote for this configuration space: ignored, the kernel is tuned again", CacheWarning,
                  stacklevel=4)


def store(key: str, payload: bytes) -> None:
    _core._decision_store(key, payload)


def listing() -> list:
    """Every valid decision in the compile cache folder and its read-only tiers: dicts with ``kernel``,
    ``device``, ``arch``, ``key``, ``configs``, ``times_ms``, ``errors``, ``chosen``, ``tuned_at`` and ``where``
    (the folder). Entries larger than a decision can be are not read (compiled kernels)."""
    info = cache_info()
    folders = ([info.path] if info.enabled else []) + [t.path for t in info.readonly if t.used]
    found = []
    limit = MAX_BYTES + _core._cache_entry_header_size
    for directory in folders:
        folder = _core._CacheFolder(directory)
        if folder.problem:
            continue
        for name, size in folder.entries():
            if size > limit:
                continue
            data = folder.read(name, limit)
            if data is None:
                continue
            decision = decode(bytes(data[_core._cache_entry_header_size:]))
            if decision is not None:
                found.append(dict(decision, where=folder.where, entry=name))
    return found
