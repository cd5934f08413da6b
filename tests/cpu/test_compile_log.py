"""Compiles are reported to the ``jitkernel`` logger: each request for a binary (a kernel's first launch on a device,
``kernel.compile()``, ``compile_cuda``) gets one INFO line with the kernel, the seconds and where the binary came
from (memory cache hit, disk cache hit, NVRTC compile), a WARNING instead when it took more than a second; DEBUG
lines when NVRTC starts (name, architecture, source size) and ends. Compiles are never timed out (NVRTC cannot be
interrupted inside a process), so this report is how a user sees one that takes minutes."""
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
    assert level == logging.DEBUG and seconds >= 0  # the request's own line is the INFO/WARNING one


def test_a_failed_compile_is_reported(records):
    with pytest.raises(jk.CompileError):
        jk.compile_cuda("this is not CUDA", name="broken_for_log.cu")
    assert any(r.getMessage().startswith("NVRTC: compiling broken_for_log.cu for sm_90a failed after ")
               for r in records), [r.getMessage() for r in records]


def test_nothing_is_logged_when_the_logger_is_quiet(no_disk_cache):
    with jitkernel_log(logging.WARNING) as seen:
        jk.compile_cuda('extern "C" __global__ void quiet_k(int* p) { *p = 2; }', name="quiet.cu")
    assert seen == []


def answered(records):
    return [r for r in records if hasattr(r, "jitkernel_cache")]


def test_each_request_gets_one_info_line_saying_where_the_binary_came_from(caplog):
    body = "out[0] = a[0] * 3; // answered-%s" % id(caplog)
    with caplog.at_level(logging.INFO, logger="jitkernel"):
        for _ in range(2):  # an NVRTC compile, then the disk cache's entry
            jk.cuda_kernel("logged_answer", ["a"], ["out"], body).compile(
                inputs=[np.zeros(2, np.float32)], output_dtypes=[np.float32], arch="sm_90a")
    lines = answered(caplog.records)
    assert [r.jitkernel_cache for r in lines] == ["compile", "disk"], [r.getMessage() for r in caplog.records]
    assert all(r.jitkernel_kernel == "logged_answer.cu" for r in lines)
    assert "logged_answer.cu for sm_90a: NVRTC compile, " in lines[0].getMessage()
    assert "logged_answer.cu for sm_90a: disk cache hit, " in lines[1].getMessage()
    for r in lines:  # a request of more than a second is a WARNING, with its time
        assert r.levelno == (logging.WARNING if r.jitkernel_seconds > 1.0 else logging.INFO)
        assert r.getMessage().endswith(" s") and r.jitkernel_seconds >= 0
    assert not [r for r in caplog.records if r.levelno < logging.INFO]  # start/end lines are DEBUG


def test_compile_cuda_requests_are_logged(caplog, no_disk_cache):
    with caplog.at_level(logging.INFO, logger="jitkernel"):
        jk.compile_cuda('extern "C" __global__ void answered_k(int* p) { *p = 3; }', name="answered.cu")
    assert [(r.jitkernel_kernel, r.jitkernel_cache) for r in answered(caplog.records)] == [("answered.cu", "compile")]


def test_a_program_that_never_configured_logging_prints_nothing(tmp_path):
    # Once a compile is reported, the logger has a NullHandler: a slow compile's WARNING must not reach stderr
    # through Python's last-resort handler in a program that configured no logging.
    import subprocess
    import sys

    code = ("import logging, numpy as np, jitkernel as jk\n"
            "k = jk.cuda_kernel(name='k', input_names=['a'], output_names=['b'], source='b[0] = a[0];')\n"
            "k.compile(inputs=[np.zeros(4, np.float32)], output_dtypes=[np.float32], arch='sm_80')\n"
            "log = logging.getLogger('jitkernel')\n"
            "assert [type(h).__name__ for h in log.handlers] == ['NullHandler'], log.handlers\n"
            "log.warning('compiling k took 2.0 s')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "JITKERNEL_CACHE": "0"})
    assert done.returncode == 0, done.stderr
    assert "took" not in done.stderr and done.stderr.strip() == "", done.stderr
