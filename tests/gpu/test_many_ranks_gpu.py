"""Many ranks on real GPUs: processes started together on an empty compile cache launch the same kernels and
compile each about once (the cache's claims), with correct results in every process; one process per GPU on a
read-only tier filled from a bundle compiles nothing. The one-GPU test runs several ranks on device 0; the one-per-GPU
tests need two GPUs, or four (they skip with fewer).

The torch tests start their ranks with torchrun (tests/gpu/distributed/cache_ranks.py: RMSNorm and GELU forward and
backward kernels on torch tensors, checked against torch): one rank per GPU on 2 and 4 GPUs, and 8 ranks on 2 GPUs;
and one rank per GPU calling an autotuned kernel at once (tuned_ranks.py): the bucket is tuned by one rank, read by
the others, and every rank runs the same configuration."""
from __future__ import annotations

import os
import sys

import pytest

import jitkernel as jk
from _gpu_util import need
from _processes import WAIT_FOR_GO, run_together

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed"))
from _launch import MULTI_GPU_ENV, assert_checks_ok, need_gpus, torchrun  # noqa: E402

pytestmark = pytest.mark.gpu

RANK = WAIT_FOR_GO + '''
import json, numpy as np, jitkernel as jk
x = np.arange(4096, dtype=np.float32)
ok = True
for factor in (2, 3, 5):
    k = jk.cuda_kernel(name=f"rank_scale{factor}", input_names=["x"], output_names=["y"],
                       source=f"uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; if (i < x_shape[0]) y[i] = x[i] * {factor};")
    (y,) = k(inputs=[x], output_shapes=[x.shape], output_dtypes=[np.float32], grid=(4096, 1, 1),
             threadgroup=(256, 1, 1))
    ok = ok and bool(np.array_equal(np.asarray(y), x * factor))
i = jk.cache_info()
print(json.dumps({"ok": ok, "hits": i.hits, "misses": i.misses, "stores": i.stores,
                  "readonly_hits": i.readonly_hits, "claim_waits": i.claim_waits}))
'''


def rank_envs(tmp_path, ranks, devices, **extra):
    base = dict(os.environ, **MULTI_GPU_ENV, JITKERNEL_CACHE_DIR=str(tmp_path / "cache"), **extra)
    # Each rank sees one GPU (as launchers such as torchrun arrange), so its device 0 is its own GPU.
    return [dict(base, CUDA_VISIBLE_DEVICES=str(devices[r % len(devices)])) for r in range(ranks)]


def test_ranks_on_one_gpu_compile_each_kernel_about_once(tmp_path):
    scratch = tmp_path / "start"
    scratch.mkdir()
    results = run_together(RANK, rank_envs(tmp_path, 8, [0]), scratch)
    assert all(r["ok"] for r in results), results
    stores = sum(r["stores"] for r in results)
    # 3 kernels: each compiled by the rank that claimed it; a few extra compiles are allowed only if a claim
    # timed out, which does not happen within the default bound here.
    assert 3 <= stores <= 6, f"{stores} compiles for 3 kernels over 8 ranks: {results}"
    assert sum(r["hits"] for r in results) + stores >= 8 * 3 - 3, results


def test_one_rank_per_gpu_on_a_bundle_compiles_nothing(tmp_path):
    count = jk.device_count()
    if count < 2:
        pytest.skip(f"needs two GPUs, found {count}")
    # Fill a cache by running one rank on GPU 0, export it, import it as a read-only tier for the others.
    scratch = tmp_path / "warm"
    scratch.mkdir()
    (first,) = run_together(RANK, rank_envs(tmp_path / "build", 1, [0]), scratch)
    assert first["ok"] and first["stores"] == 3, first
    bundle = tmp_path / "kernels.jkbundle"
    jk.export_cache(str(bundle), directory=str(tmp_path / "build" / "cache"))
    jk.import_cache(str(bundle), into=str(tmp_path / "tier"))
    scratch = tmp_path / "start"
    scratch.mkdir()
    envs = rank_envs(tmp_path / "node", count, list(range(count)),
                     JITKERNEL_CACHE_READONLY_DIRS=str(tmp_path / "tier"))
    results = run_together(RANK, envs, scratch)
    assert all(r["ok"] and r["misses"] == 0 and r["readonly_hits"] == 3 for r in results), results


# --- torch ranks under torchrun ----------------------------------------------------------------------------------

KERNELS = 4  # the kernels cache_ranks.py launches: GELU and RMSNorm, forward and backward


def _torch_ranks(tmp_path, ranks: int, **env) -> list:
    """cache_ranks.py on ``ranks`` ranks with a cache folder of their own under tmp_path (and ``env``); checks that
    every rank's kernels were right and that each looked every kernel up once; returns the reports."""
    reports = torchrun("cache_ranks.py", ranks, tmp_path, env=dict(JITKERNEL_CACHE_DIR=str(tmp_path / "cache"), **env))
    assert_checks_ok(reports, ["kernels"])
    assert all(r["hits"] + r["misses"] == KERNELS for r in reports), reports
    return reports


def _assert_compiled_about_once(reports) -> None:
    stores = sum(r["stores"] for r in reports)
    # Each kernel compiled by the rank that claimed it; a little slack as in the tests above.
    assert KERNELS <= stores <= KERNELS + 2, f"{stores} compiles for {KERNELS} kernels over {len(reports)} ranks: " \
                                             f"{reports}"


@pytest.mark.parametrize("ranks", [2, 4])
def test_torchrun_one_rank_per_gpu_on_an_empty_shared_cache(tmp_path, ranks):
    need("torch")
    need_gpus(ranks)
    reports = _torch_ranks(tmp_path, ranks)
    assert sorted(r["device"] for r in reports) == [f"cuda:{d}" for d in range(ranks)], reports
    _assert_compiled_about_once(reports)


def test_torchrun_eight_ranks_on_two_gpus(tmp_path):
    need("torch")
    need_gpus(2)
    reports = _torch_ranks(tmp_path, 8, CUDA_VISIBLE_DEVICES="0,1")
    devices = [r["device"] for r in reports]
    assert devices.count("cuda:0") == 4 and devices.count("cuda:1") == 4, reports
    _assert_compiled_about_once(reports)


@pytest.fixture(scope="module")
def bundle_tier(tmp_path_factory):
    """A function returning a read-only tier imported from a bundle of the kernels (made once, on first use, by one
    rank on GPU 0 with an empty cache)."""
    made = []

    def tier():
        if not made:
            folder = tmp_path_factory.mktemp("bundle")
            (first,) = _torch_ranks(folder, 1, CUDA_VISIBLE_DEVICES="0")
            assert first["stores"] == KERNELS, first
            bundle = str(folder / "kernels.jkbundle")
            jk.export_cache(bundle, directory=str(folder / "cache"))
            jk.import_cache(bundle, into=str(folder / "tier"))
            made.append(str(folder / "tier"))
        return made[0]
    return tier


@pytest.mark.parametrize("ranks", [2, 4])
def test_torchrun_one_rank_per_gpu_on_a_bundle_tier_compiles_nothing(tmp_path, ranks, bundle_tier):
    need("torch")
    need_gpus(ranks)
    reports = _torch_ranks(tmp_path, ranks, JITKERNEL_CACHE_READONLY_DIRS=bundle_tier())
    assert all(r["misses"] == 0 and r["stores"] == 0 and r["readonly_hits"] == KERNELS for r in reports), reports


@pytest.mark.parametrize("ranks", [2, 4])
def test_torchrun_ranks_tune_a_bucket_once_and_agree(tmp_path, ranks):
    """One rank per GPU calls an autotuned kernel at once on an empty cache (tests/gpu/distributed/tuned_ranks.py):
    one rank times the candidates, the others read its decision; all run the fastest configuration."""
    need("torch")
    need_gpus(ranks)
    reports = torchrun("tuned_ranks.py", ranks, tmp_path, env=dict(JITKERNEL_CACHE_DIR=str(tmp_path / "cache")))
    assert_checks_ok(reports, ["output", "ranks agree", "stored decision"])
    assert sum(r["stats"]["tuned"] for r in reports) == 1, reports
    assert sum(r["stats"]["loaded"] for r in reports) == ranks - 1, reports
    assert {r["chosen"] for r in reports} == {1}, reports  # the configuration without spinning
    assert len({r["device"] for r in reports}) == ranks, reports  # one GPU each
