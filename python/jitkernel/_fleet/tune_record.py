"""The tuned call record an autotuned call writes to ``JITKERNEL_RECORD`` once per decided key bucket, so that
``precompile --record`` compiles every candidate and, on the target GPU, decides the bucket (tune_ahead.py).

A record is data, never code: the grid, threadgroup and key functions are code, so the line holds what the live
process computed with them: each candidate's launch for the recorded shapes, the tuned object's static key (the
functions' code enters it as a digest) and the bucket's text, beside the kernel and the call (fixed shapes, scalar
values). The core checks the line and writes it in canonical form (cpp/jitkernel/engine/tuned_record.hpp).
"""
from __future__ import annotations

import json
import warnings

from .. import _core
from .._errors import JitKernelError
from .cache import CacheWarning

__all__ = ["record"]

_warned: list = []


def _entry(x):
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ("array", x.dtype, tuple(x.shape))
    return ("scalar", x)


def record(tuned, bucket: str, inputs, shapes, call) -> None:
    """Writes the tuned call record of a decided bucket when calls are recorded (``JITKERNEL_RECORD``); the core
    writes each line once per process. A call the record format cannot hold is reported once (CacheWarning)."""
    if not _core._recording():
        return
    try:
        if call["outputs"] is not None:
            outputs = [(o.dtype, tuple(o.shape)) for o in call["outputs"]]
        else:
            outputs = [(d, tuple(s)) for d, s in zip(call["output_dtypes"], call["output_shapes"])]
        template = call["template"]
        template = list(template.items()) if isinstance(template, dict) else list(template or ())
        kernel = tuned.kernel
        call_text = _core.encode_call(list(kernel.input_names), list(kernel.output_names),
                                      [_entry(x) for x in inputs], outputs, template, None, None, call["init_value"],
                                      False, False, 0, True)
        launches = []
        for i in range(len(tuned.configs)):
            launch = tuned._launch(i, shapes, call["grid"], call["threadgroup"], call["template"])
            launches.append([list(launch["grid"]), list(launch["threadgroup"])])
        _core._record_tuned(json.dumps({
            "jitkernel_tuned": 2, "record": _core.encode_record(kernel._spec, call_text), "static": tuned._static,
            "bucket": bucket, "space": tuned._space, "launches": launches, "warmup": tuned.warmup,
            "reps": tuned.reps}))
    except (JitKernelError, TypeError, ValueError) as e:
        if not _warned:
            _warned.append(True)
            warnings.warn(f"JITKERNEL_RECORD: an autotuned call of {tuned.kernel.name!r} cannot be recorded ({e}); "
                          f"precompile --record will not tune it", CacheWarning, stacklevel=6)
