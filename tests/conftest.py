"""Shared pytest setup: the ``gpu`` marker.

Tests marked ``@pytest.mark.gpu`` are skipped when ``jk.cuda_available()`` is False (no driver or no device), with
the reason jitkernel gives. With ``JITKERNEL_REQUIRE_GPU=1`` (set on the GPU machine) a missing GPU fails them
instead, so a broken driver setup cannot pass as a run of skipped tests.
"""
from __future__ import annotations

import os

import pytest

import jitkernel as jk


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped when none is found)")


def _no_gpu_reason() -> str:
    try:
        jk.synchronize()
    except jk.JitKernelError as e:
        return str(e).strip().splitlines()[0]
    return "the CUDA driver reports no device"


def pytest_runtest_setup(item):
    if item.get_closest_marker("gpu") is None or jk.cuda_available():
        return
    reason = _no_gpu_reason()
    if os.environ.get("JITKERNEL_REQUIRE_GPU") == "1":
        pytest.fail(f"JITKERNEL_REQUIRE_GPU=1 but no CUDA GPU is usable: {reason}", pytrace=False)
    pytest.skip(f"no CUDA GPU: {reason}")
