"""Autotuning ahead of time, on a build machine with the target GPU: the check that ``precompile(..., tune=True)``
runs where its decisions are valid (decisions are per GPU model, so the GPU must be one of the architectures the
build is for). docs/autotuning.md, "Tuning ahead of time".
"""
from __future__ import annotations

from .. import _core
from .._errors import ArgumentError, JitKernelError
from . import tune_call

__all__ = ["check_gpu"]


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
