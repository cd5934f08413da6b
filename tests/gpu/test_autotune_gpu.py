"""Autotuning on a GPU: the tuned kernel picks the truly fastest of a deliberately slow and a fast configuration;
the caller's outputs are written once (a kernel that accumulates into its output shows it); an input the kernel
modifies in place and that the call declares (restore_inputs) is modified once; a second process reads the decision
and times nothing; a build machine decides the buckets ahead of time (``precompile(..., tune=True)``, or a call record
replayed with ``precompile --record --tune``) and a fleet that imports its bundle times nothing; jk arrays (NumPy
inputs), torch and CuPy all work; under torch.compile and during CUDA graph
capture the stored decision is used (and without one, the first configuration with a TuningWarning).
Each test uses a cache folder of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX, need, to_device, to_numpy
from _processes import WAIT_FOR_GO, run_together

pytestmark = pytest.mark.gpu

# SLOW_US microseconds of spinning per block before the work: configurations differ only in speed.
SPIN = INDEX + """
if (SLOW_US > 0 && threadIdx.x == 0) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < SLOW_US * 1000ull);
}
__syncthreads();
"""
SPACE = [jk.Config(template={"SLOW_US": us}, threadgroup=(tg, 1, 1)) for us, tg in ((40, 256), (0, 128), (20, 64))]
FASTEST = SPACE[1]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    jk._core._cache_reset()
    yield
    monkeypatch.undo()
    jk._core._cache_reset()


def grid(shapes, cfg):
    return (shapes[0][0], 1, 1)


def plus_one(name="tuned_plus_one"):
    k = jk.cuda_kernel(name=name, input_names=["inp"], output_names=["out"],
                       source=SPIN + "if (i < inp_shape[0]) out[i] = inp[i] + 1;")
    return jk.autotune(k, configs=SPACE, grid=grid)


@pytest.mark.parametrize("framework", ["numpy", "torch", "cupy"])
def test_picks_the_fastest_and_runs_it(framework):
    x0 = np.arange(4096, dtype=np.float32)
    x = to_device(framework, x0)
    tuned = plus_one()
    (y,) = tuned(inputs=[x], output_shapes=[x0.shape], output_dtypes=[jk.float32])
    np.testing.assert_array_equal(to_numpy(y), x0 + 1)
    (decision,) = tuned.decisions.values()
    times = decision["times_ms"]
    assert tuned.configs[decision["chosen"]] == FASTEST, times
    assert times[1] < times[2] < times[0], times  # 0 us < 20 us < 40 us of spinning
    assert tuned.stats == {"tuned": 1, "loaded": 0, "candidates_timed": 3}
    assert tuned.tune(inputs=[x], output_shapes=[x0.shape], output_dtypes=[jk.float32]) == FASTEST


@pytest.mark.parametrize("framework", ["numpy", "torch", "cupy"])
def test_caller_outputs_written_once(framework):
    k = jk.cuda_kernel(name="tuned_accumulate", input_names=["inp"], output_names=["out"],
                       source=SPIN + "if (i < inp_shape[0]) out[i] += inp[i];")
    tuned = jk.autotune(k, configs=SPACE, grid=grid)
    x0 = np.ones(2048, np.float32)
    x = to_device(framework, x0)
    if framework == "numpy":  # a jk.Array output: made by a kernel call
        (out,) = k(inputs=[x], output_shapes=[x0.shape], output_dtypes=[jk.float32], grid=(1, 1, 1),
                   threadgroup=(1, 1, 1), template={"SLOW_US": 0}, init_value=5)
    else:
        out = to_device(framework, np.full(2048, 5, np.float32))
    expected = to_numpy(out).copy()
    tuned(inputs=[x], outputs=[out])
    np.testing.assert_array_equal(to_numpy(out), expected + 1)  # once, whatever the candidates ran
    assert tuned.stats["candidates_timed"] == 3


def test_in_place_input_modified_once():
    torch = need("torch")
    k = jk.cuda_kernel(name="tuned_in_place", input_names=["inp"], output_names=["out"],
                       source=SPIN + "if (i < inp_shape[0]) { const_cast<float*>(inp)[i] += 1; out[i] = inp[i]; }")
    tuned = jk.autotune(k, configs=SPACE, grid=grid, restore_inputs=["inp"])
    x = torch.arange(1024, dtype=torch.float32, device="cuda")
    before = x.clone()
    (y,) = tuned(inputs=[x], output_shapes=[(1024,)], output_dtypes=[jk.float32])
    torch.testing.assert_close(x, before + 1)
    torch.testing.assert_close(y, before + 1)


HERE = os.path.dirname(os.path.abspath(__file__))
# What a child process needs on sys.path to import this module (tests/gpu and tests).
PATHS = f"import sys; sys.path[:0] = [{HERE!r}, {os.path.dirname(HERE)!r}]"

CHILD = PATHS + """
import json
import numpy as np
import jitkernel as jk
from _gpu_util import to_device, to_numpy
from test_autotune_gpu import plus_one
tuned = plus_one()
x0 = np.arange(4096, dtype=np.float32)
x = to_device(sys.argv[1] if len(sys.argv) > 1 else "numpy", x0)
(y,) = tuned(inputs=[x], output_shapes=[x0.shape], output_dtypes=[jk.float32])
print(json.dumps(dict(stats=tuned.stats, ok=bool(np.array_equal(to_numpy(y), x0 + 1)),
                      chosen=tuned.configs.index(tuned.tune(x, output_shapes=[x0.shape], output_dtypes=[jk.float32])))))
"""


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_second_process_reads_the_decision(tmp_path, framework):
    """The first process tunes with NumPy inputs; the second calls with ``framework``'s arrays (torch: described
    through torch's DLPack exchange API, not its attributes) and finds the same bucket's decision."""
    need(framework)
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "shared"))
    runs = []
    for name in ("numpy", framework):
        p = subprocess.run([sys.executable, "-c", CHILD, name], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["ok"] and second["ok"]
    assert first["stats"]["tuned"] == 1 and first["stats"]["candidates_timed"] == 3
    assert second["stats"] == {"tuned": 0, "loaded": 1, "candidates_timed": 0}
    assert first["chosen"] == second["chosen"] == 1
    out = subprocess.run([sys.executable, "-m", "jitkernel", "cache", "tuned"], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "tuned_plus_one" in out and "* 1: SLOW_US=0" in out
    # The decision is an entry of its own kind: one .jkt beside the candidates' binaries (.jkc) and aliases.
    kinds = sorted(p.suffix for p in (tmp_path / "shared" / "kernels").iterdir())
    assert kinds.count(".jkt") == 1 and ".jkc" in kinds


def test_device_arrays_are_described_as_their_attributes_say():
    """A tuned call reads a device array's shape, dtype and device the way a kernel call does (a jk.Array's view,
    torch's DLPack exchange API), not through its Python attributes; the answers must be the attributes'."""
    torch = need("torch")
    base = torch.arange(24, device="cuda", dtype=torch.float32).reshape(2, 3, 4)
    arrays = [base, base.transpose(0, 2), base[:, 1], torch.tensor(3.0, device="cuda"), base.to(torch.bfloat16),
              base.to(torch.int64)[0], torch.zeros(0, 5, device="cuda", dtype=torch.bool), base.cpu()]
    if torch.cuda.device_count() > 1:
        arrays.append(base.to("cuda:1"))
    for t in arrays:
        assert jk._core._tune_describe([t, 2.0]) == ((tuple(t.shape), None),
                                                      (jk._core._tune_dtype(t.dtype), "float"))
        assert jk._core._tune_device_of([1.0, t]) == (t.device.index or 0)
    (a,) = plus_one("describe_me").kernel(inputs=[np.zeros(6, np.float32)], output_shapes=[(2, 3)],
                                         output_dtypes=[jk.float32], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                                         template={"SLOW_US": 0})
    assert isinstance(a, jk.Array)
    assert jk._core._tune_describe([a]) == (((2, 3),), (jk.float32,))
    assert jk._core._tune_device_of([a]) == 0


BUILD = PATHS + """
import json, sys
import jitkernel as jk
from test_autotune_gpu import plus_one
tuned = plus_one()
def warm_up():
    tuned(inputs=[jk.ShapeDtype((4096,), jk.float32)], output_shapes=[(4096,)], output_dtypes=[jk.float32])
report = jk.precompile(warm_up, [jk.device_info(0)["arch"]], tune=True)
bundle = jk.export_cache(sys.argv[1])
print(json.dumps(dict(decisions=report.decisions, tuned=report.tuned, exported=bundle.decisions,
                      stats=tuned.stats)))
"""


def _child(env, *args) -> dict:
    p = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]) if args[0] == "-c" else p.stdout


def test_build_machine_tunes_and_a_fleet_starts_tuned(tmp_path):
    """precompile(tune=True) on the GPU (placeholders tuned as zeros), export, import into a fresh folder: a
    second process's first call loads the decision and times nothing."""
    bundle = str(tmp_path / "tuned.jkbundle")
    built = _child(dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "build")), "-c", BUILD, bundle)
    assert (built["decisions"], built["tuned"], built["exported"]) == (1, 1, 1), built
    assert built["stats"]["candidates_timed"] == 3, built
    fleet = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "fleet"))
    _child(fleet, "-m", "jitkernel", "cache", "import", bundle)
    run = _child(fleet, "-c", CHILD)
    assert run["ok"] and run["stats"] == {"tuned": 0, "loaded": 1, "candidates_timed": 0}, run
    assert run["chosen"] == 1  # SLOW_US=0: the fastest, on zeros as on real data


def test_record_replayed_with_tune_on_the_gpu(tmp_path):
    """A program run with JITKERNEL_RECORD writes its tuned call's line; `precompile --record FILE --tune` in
    another cache folder times the recorded launches and stores the decision under the program's key: the program
    in that folder times nothing."""
    record = str(tmp_path / "calls.jsonl")
    live = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "live"), JITKERNEL_RECORD=record)
    assert _child(live, "-c", CHILD)["stats"]["tuned"] == 1
    build = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "build"))
    out = _child(build, "-m", "jitkernel", "precompile", "--arch", jk.device_info(0)["arch"], "--record", record,
                 "--tune")
    assert "1 bucket decided, 1 timed now" in out, out
    run = _child(build, "-c", CHILD)
    assert run["ok"] and run["stats"] == {"tuned": 0, "loaded": 1, "candidates_timed": 0} and run["chosen"] == 1


def test_torch_compile_uses_the_stored_decision():
    torch = need("torch")
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    plus_one()(inputs=[x], output_shapes=[(4096,)], output_dtypes=[jk.float32])  # tunes and stores
    tuned = plus_one()  # a new object: only the stored decision knows the answer

    def f(t):
        return tuned(inputs=[t], output_shapes=[t.shape], output_dtypes=[jk.float32])[0] * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", jk.TuningWarning)
        y = torch.compile(f)(x)
    torch.testing.assert_close(y, (x + 1) * 2)
    assert tuned.stats["tuned"] == 0 and tuned.stats["candidates_timed"] == 0


def test_graph_capture_never_tunes():
    torch = need("torch")
    tuned = plus_one("tuned_capture")
    x = torch.arange(4096, dtype=torch.float32, device="cuda")
    tuned(inputs=[x], output_shapes=[(4096,)], output_dtypes=[jk.float32])  # warm up the launch path, tunes
    fresh = plus_one("tuned_capture_fresh")
    fresh.kernel(inputs=[x], output_shapes=[(4096,)], output_dtypes=[jk.float32], grid=(4096, 1, 1),
                 threadgroup=(256, 1, 1), template={"SLOW_US": 40})  # compiled before the capture
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), pytest.warns(jk.TuningWarning, match="CUDA graph is being captured"):
        with torch.cuda.graph(graph, stream=stream):
            (a,) = tuned(inputs=[x], output_shapes=[(4096,)], output_dtypes=[jk.float32])  # decided: no warning
            (b,) = fresh(inputs=[x], output_shapes=[(4096,)], output_dtypes=[jk.float32])  # first config
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(a, x + 1)
    torch.testing.assert_close(b, x + 1)
    assert fresh.stats["tuned"] == 0 and not fresh.decisions


RANK = PATHS + """
import json
import numpy as np
import jitkernel as jk
from test_autotune_gpu import plus_one
""" + WAIT_FOR_GO + """
tuned = plus_one("tuned_ranks")
x = np.arange(4096, dtype=np.float32)
(y,) = tuned(inputs=[x], output_shapes=[x.shape], output_dtypes=[jk.float32])
(decision,) = tuned.decisions.values()
print(json.dumps(dict(stats=tuned.stats, ok=bool(np.array_equal(y.numpy(), x + 1)), chosen=decision["chosen"],
                      times=decision["times_ms"])))
"""


def test_ranks_on_one_node_tune_once_and_agree(tmp_path):
    """Four processes started together on one empty cache: one tunes, the others wait on its claim and read the
    decision; all run the same configuration."""
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "shared"))
    results = run_together(RANK, [env] * 4, tmp_path)
    assert all(r["ok"] for r in results)
    assert sum(r["stats"]["tuned"] for r in results) == 1, results
    assert {r["chosen"] for r in results} == {1} and len({json.dumps(r["times"]) for r in results}) == 1
