"""Every NVRTC compile is reported to the ``jitkernel`` logger: DEBUG when it starts (name, architecture, source
size) and when it ends with its duration; a compile of a second or more is reported at INFO, so a long compile is
visible with logging's usual setup. Compiles are never timed out (NVRTC cannot be interrupted inside a process),
so this report is how a user sees one that takes minutes. Disk hits compile nothing and report nothing."""
from __future__ import annotations

import contextlib
import logging

import numpy as np
import pytest

import jitkernel as jk


@contextlib.contextmanager
def jitkernel_log(level):
    """The records the ``jitkernel`` logger passes on while its level is ``level``."""
    logger = logging.getLogger("jitkernel")
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    handler = Keep(level=logging.DEBUG)
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


@pytest.fixture
def records(no_disk_cache):
    with jitkernel_log(logging.DEBUG) as seen:
        yield seen


def test_a_compile_is_reported_when_it_starts_and_ends(records):
    k = jk.cuda_kernel("logged_compile", ["a"], ["out"], "out[0] = a[0] + 1;")
    k.compile(inputs=[np.zeros(2, np.float32)], output_dtypes=[np.float32], arch="sm_90a")
    messages = [r.getMessage() for r in records]
    started = [m for m in messages if m.startswith("NVRTC: compiling logged_compile")]
    finished = [m for m in messages if m.startswith("NVRTC: compiled logged_compile")]
    assert len(started) == 1 and "for sm_90a" in started[0] and "bytes of source" in started[0], messages
    assert len(finished) == 1 and finished[0].endswith(" s"), messages
    seconds = float(finished[0].rsplit(" in ", 1)[1][:-2])
    level = [r.levelno for r in records if r.getMessage() == finished[0]][0]
    assert level == (logging.INFO if seconds >= 1.0 else logging.DEBUG)


def test_a_failed_compile_is_reported(records):
    with pytest.raises(jk.CompileError):
        jk.compile_cuda("this is not CUDA", name="broken_for_log.cu")
    assert any(r.getMessage().startswith("NVRTC: compiling broken_for_log.cu for sm_90a failed after ")
               for r in records), [r.getMessage() for r in records]


def test_nothing_is_logged_when_the_logger_is_quiet(no_disk_cache):
    with jitkernel_log(logging.WARNING) as seen:
        jk.compile_cuda('extern "C" __global__ void quiet_k(int* p) { *p = 2; }', name="quiet.cu")
    assert seen == []
