"""`python -m jitkernel demo` on a machine without a GPU: it shows the kernel from its generated signature down (the
user's body under it), with the preamble's size and how to see it (`--full-source` prints the whole text), and says
where the binary came from: NVRTC on an empty cache, the disk cache (and its folder) the second time."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import jitkernel as jk

pytestmark = pytest.mark.skipif(jk.cuda_available(), reason="the GPU demo launches instead (tests/gpu)")


def demo(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITKERNEL_CACHE")}
    env["JITKERNEL_CACHE_DIR"] = str(tmp_path / "cache")
    done = subprocess.run([sys.executable, "-m", "jitkernel", "demo", *args], env=env, capture_output=True,
                          text=True, timeout=300)
    if "FAIL" in done.stdout + done.stderr and "NVRTC" in done.stdout + done.stderr and done.returncode != 0:
        pytest.skip("no NVRTC here: " + done.stderr.strip()[-200:])
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_demo_shows_the_body_in_its_signature_and_where_the_binary_came_from(tmp_path):
    first = demo(tmp_path)
    lines = first.splitlines()
    preamble = [n for n, line in enumerate(lines) if "lines of jitkernel's preamble" in line]
    assert len(preamble) == 1 and "--full-source" in lines[preamble[0]], first
    assert lines[preamble[0] + 1].startswith('extern "C" __global__ void myexp_'), first
    assert "out[elem] = exp(tmp);" in first and "compiled by NVRTC in" in first, first
    again = demo(tmp_path)
    assert f"loaded from the disk cache ({tmp_path / 'cache'}) in" in again, again
    full = demo(tmp_path, "--full-source")
    assert "lines of jitkernel's preamble" not in full and len(full.splitlines()) > len(lines) + 50
