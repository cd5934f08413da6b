"""Shared pytest setup: the ``gpu`` marker, and a private compile cache folder.

Tests marked ``@pytest.mark.gpu`` are skipped when ``jk.cuda_available()`` is False (no driver or no device), with
the reason jitkernel gives. With ``JITKERNEL_REQUIRE_GPU=1`` (set on the GPU machine) a missing GPU fails them
instead, so a broken driver setup cannot pass as a run of skipped tests.

The compile cache of the session (and of every subprocess a test starts, which inherits the environment) is a fresh
temporary folder, never the user's ~/.cache/jitkernel; it is set before jitkernel first reads the environment.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE_DIR = tempfile.mkdtemp(prefix="jitkernel-test-cache-")
os.environ["JITKERNEL_CACHE_DIR"] = _CACHE_DIR
for _name in ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES"):
    os.environ.pop(_name, None)

import jitkernel as jk  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped when none is found)")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture
def no_disk_cache(monkeypatch):
    """Turns the compile cache off for one test that must see NVRTC compile (JITKERNEL_CACHE=0, re-read by the core)."""
    monkeypatch.setenv("JITKERNEL_CACHE", "0")
    jk._core._cache_reset()
    yield
    monkeypatch.undo()
    jk._core._cache_reset()


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
