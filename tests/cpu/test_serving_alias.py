"""Serving a kernel where NVRTC is missing (cpp/jitkernel/cache/serving_alias.hpp, docs/deploying.md): every binary the
cache stores gets a serving alias ("<serving key>.jka", naming the binary's compile key), which bundles and read-only
tiers carry. A process that cannot load NVRTC finds the binary through it, byte for byte the one compiled, with no
miss; without a matching alias it raises CudaNotAvailableError saying so. A kernel with other compile options, a
damaged alias, or an alias whose binary is gone serves nothing.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

SCRIPT = r"""
import hashlib, json, sys, numpy as np, jitkernel as jk
options = json.loads(sys.argv[1])
k = jk.cuda_kernel(name="twice", input_names=["x"], output_names=["y"], compile_options=options,
                   source="unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < x_shape[0]) y[i] = 2 * x[i];")
try:
    binary = k.compile(inputs=[np.zeros(16, np.float32)], output_dtypes=[np.float32], arch="sm_90a")
    i = jk.cache_info()
    print(json.dumps({"sha": hashlib.sha256(binary).hexdigest(), "misses": i.misses, "hits": i.hits,
                      "stores": i.stores}))
except jk.CudaNotAvailableError as e:
    print(json.dumps({"error": str(e)}))
"""


def compile_in_child(cache, options=None, nvrtc=True, tiers=None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITKERNEL_")}
    env["JITKERNEL_CACHE_DIR"] = str(cache)
    if not nvrtc:  # authoritative: the toolkit search does not look elsewhere
        env["JITKERNEL_NVRTC_PATH"] = str(cache.parent / "no-nvrtc" / "libnvrtc.so.13")
    if tiers is not None:
        env["JITKERNEL_CACHE_READONLY_DIRS"] = str(tiers)
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(options or {})], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def built(tmp_path):
    """A cache with one compiled kernel, its bundle, and the reference result."""
    cache = tmp_path / "build_cache"
    reference = compile_in_child(cache)
    assert reference["misses"] == 1 and reference["stores"] == 1
    bundle = tmp_path / "kernels.jkb"
    report = jk.export_cache(bundle, directory=cache)
    assert (report.entries, report.aliases) == (1, 1)
    return cache, bundle, reference


def test_each_stored_binary_gets_an_alias_naming_it(built):
    cache, _, _ = built
    (binary,) = (cache / "kernels").glob("*.jkc")
    (alias,) = (cache / "kernels").glob("*.jka")
    payload = alias.read_bytes()[_core._cache_entry_header_size:]
    assert _core._cache_alias_target(payload) == binary.name[:64]
    assert alias.name[:64] != binary.name[:64]


def test_a_process_without_nvrtc_is_served_from_a_bundle(built, tmp_path):
    _, bundle, reference = built
    served = compile_in_child(tmp_path / "server_cache", nvrtc=False, tiers=bundle)
    assert served == {"sha": reference["sha"], "misses": 0, "hits": 1, "stores": 0}


def test_a_process_without_nvrtc_is_served_from_an_imported_folder_tier(built, tmp_path):
    _, bundle, reference = built
    tier = tmp_path / "tier"
    assert jk.import_cache(bundle, into=tier).stored == 1
    served = compile_in_child(tmp_path / "server_cache", nvrtc=False, tiers=tier)
    assert served["sha"] == reference["sha"] and served["misses"] == 0


def test_without_nvrtc_or_a_binary_the_error_says_both(tmp_path):
    found = compile_in_child(tmp_path / "empty_cache", nvrtc=False)
    assert "NVRTC" in found["error"] and "No compiled binary of 'twice.cu' for sm_90a" in found["error"]
    assert "docs/deploying.md" in found["error"]


def test_other_compile_options_are_not_served_by_the_alias(built, tmp_path):
    _, bundle, _ = built
    found = compile_in_child(tmp_path / "server_cache", {"math_mode": "fast"}, nvrtc=False, tiers=bundle)
    assert "No compiled binary" in found["error"]


def test_a_damaged_or_dangling_alias_serves_nothing(built, tmp_path):
    _, bundle, _ = built
    tier = tmp_path / "tier"
    jk.import_cache(bundle, into=tier)
    (binary,) = (tier / "kernels").glob("*.jkc")
    (alias,) = (tier / "kernels").glob("*.jka")
    good = alias.read_bytes()
    # The binary's entry file under the alias's name: its header names another key, so it is not an alias.
    alias.write_bytes(binary.read_bytes())
    assert "No compiled binary" in compile_in_child(tmp_path / "c1", nvrtc=False, tiers=tier)["error"]
    # A valid alias whose binary is gone.
    alias.write_bytes(good)
    binary.unlink()
    assert "No compiled binary" in compile_in_child(tmp_path / "c2", nvrtc=False, tiers=tier)["error"]


@pytest.mark.parametrize("payload", [b"", b"jitkernel serving alias 1\n" + b"0" * 63 + b"\n",
                                     b"jitkernel serving alias 1\n" + b"0" * 64 + b"\n\n",
                                     b"jitkernel serving alias 2\n" + b"0" * 64 + b"\n",
                                     b"jitkernel serving alias 1\n" + b"G" * 64 + b"\n",
                                     b"jitkernel serving alias 1\n" + b"A" * 64 + b"\n"])
def test_alias_payloads_are_parsed_exactly(payload):
    assert _core._cache_alias_target(payload) is None
    key = hashlib.sha256(b"x").hexdigest()
    assert _core._cache_alias_target(b"jitkernel serving alias 1\n" + key.encode() + b"\n") == key


def test_export_of_chosen_keys_takes_their_aliases(built, tmp_path):
    cache, _, _ = built
    (binary,) = (cache / "kernels").glob("*.jkc")
    report = jk.export_cache(tmp_path / "one.jkb", keys=[binary.name[:64]], directory=cache)
    assert (report.entries, report.aliases) == (1, 1)
