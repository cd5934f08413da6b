"""Autotuning ahead of time, on a build machine with the target GPU (docs/autotuning.md, "Tuning ahead of time"):
the check that ``precompile(..., tune=True)`` runs where its decisions are valid (decisions are per GPU model), and
the replay by ``precompile --record`` of the tuned call record an autotuned call writes (tune_record.py): every
candidate compiled for the architectures and, with ``tune=True``, timed on zero inputs of the recorded shapes and
decided under the key the live program computes.

The core decodes a line strictly (cpp/jitkernel/engine/tuned_record.hpp) before anything is made of it.
"""
from __future__ import annotations

from .. import _core
from .._dtypes import scalar_value
from .._errors import ArgumentError, JitKernelError
from . import tune_bench, tune_call, tune_decisions
from .tune_config import Config

__all__ = ["check_gpu", "decide", "replayed"]

TUNED_PREFIX = '{"jitkernel_tuned":'  # how a tuned line starts (the canonical form puts the version first)


def check_gpu(archs: tuple) -> dict:
    """The identity ({"name", "arch"}) of the GPU tuning runs on (device 0) when there is one and its architecture
    is one of ``archs``; else ``ArgumentError("tune", ...)``: tuning elsewhere would ship another GPU's decisions."""
    try:
        if tune_call._device_identity is None and _core.device_count() < 1:
            raise JitKernelError("no CUDA GPU is visible")
        identity, _ = tune_call._identity(0)
    except JitKernelError as e:
        raise ArgumentError("tune", f"tuning needs this machine's GPU (decisions are per GPU model): {e}") from None
    if identity["arch"] not in archs:
        raise ArgumentError("tune", f"this machine's GPU, {identity['name']} ({identity['arch']}), is not one of "
                                    f"the architectures built for ({', '.join(archs)}): its decisions would be "
                                    f"shipped to GPUs of another model")
    return identity


def _config(entry: dict) -> Config:
    return Config(template=[(n, v["dtype"] if isinstance(v, dict) else v) for n, v in entry["template"]],
                  threadgroup=entry["threadgroup"], grid=entry["grid"])


def replayed(text: str, decode) -> tuple:
    """(the tuned line's fields, the nested record's (kernel arguments, call), each candidate's template) of a tuned
    call record line; ``decode``: record_replay's decoding of the nested record. ArgumentError when not one."""
    tuned = _core.decode_tuned_record(text.rstrip("\r\n"), "record")
    kernel_args, call = decode(tuned["record"])
    own = list(call["template"])
    templates = [list(_config(entry).template) + own for entry in tuned["space"]]
    return tuned, (kernel_args, call), templates


def decide(kernel, tuned: dict, call: dict, templates: list, compiler) -> None:
    """Decides a replayed tuned line's bucket on this GPU (``precompile --record --tune``): a stored decision is
    kept, else every candidate is timed with its recorded launch on zero inputs of the recorded shapes and the
    decision stored under ``decision_key(static, this GPU, bucket)``, the key the live program computes."""
    identity, identity_key = tune_call._identity(0)
    space, bucket = tuned["space"], tuned["bucket"]
    key = tune_decisions.decision_key(tuned["static"], identity_key, bucket)
    payload, index, claim = tune_decisions.load(key, tune_decisions.space_digest(space), len(space), claim=True)
    try:
        if index is None:
            with compiler.tuning():
                times, errors = tune_call._measure(_candidates(kernel, tuned, call, templates), tuned["warmup"],
                                                   tuned["reps"])
            payload, _ = tune_decisions.choose(kernel.name, identity, space, bucket, times, errors)
            tune_decisions.store(key, payload)
            compiler.tuned += 1
    finally:
        if claim is not None:
            claim.release()
    compiler.decided.add((tuned["static"], bucket))


def _candidates(kernel, tuned: dict, call: dict, templates: list) -> tune_bench.Candidates:
    """The timed runs of a replayed line: zero GPU arrays of the recorded shapes, the recorded scalars."""
    inputs = []
    for kind, dtype, value in call["inputs"]:
        if kind == "array":
            inputs.append(tune_bench.zeros(value, dtype))
        else:
            inputs.append(scalar_value(dtype, value))  # the core refuses a tuned line whose scalars are not fixed
    dtypes = [d for d, _ in call["outputs"]]
    shapes = [s for _, s in call["outputs"]]
    calls, compile_args = [], []
    for (grid, threadgroup), template in zip(tuned["launches"], templates):
        calls.append(dict(inputs=inputs, output_shapes=shapes, output_dtypes=dtypes, outputs=None,
                          init_value=call["init_value"], stream=0, grid=grid, threadgroup=threadgroup,
                          template=template or None))
        compile_args.append(dict(inputs=inputs, output_dtypes=dtypes, template=template or None,
                                 threadgroup=threadgroup, device=0))
    return tune_bench.Candidates(kernel, calls, compile_args, 0, 0)

