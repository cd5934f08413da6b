"""Autotuning ahead of time without a GPU: ``jk.precompile(fn, archs, tune=True)`` decides the buckets a function
reaches (its interception suspended for the tuning launches only) so a later process loads the decision and times
nothing, and refuses to tune without a GPU of one of ``archs``; tuned calls in call records (JITKERNEL_RECORD) and
their replay by ``precompile --record`` under the key the live program computes; hostile tuned record lines; and the
per-process decision memory keyed by the GPU model. Timing is faked (``tune_call._set_measure``, the fixtures of
test_autotune.py); code that must launch runs against the mock driver (benchmarks/host_only/mock_libcuda.c)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core
from jitkernel._fleet import tune_call
from jitkernel._kernels import call_routes
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name
from test_autotune import CALL, GPU, X, configs, fake, fresh_cache, grid, make_kernel  # noqa: F401 - fixtures

# A process on the mock driver (a GPU named "Mock GPU (no kernels run)", sm_90a): fake timing, real launches.
MOCK_PRELUDE = """
import json
import numpy as np
import jitkernel as jk
from jitkernel._fleet import tune_call
from jitkernel._kernels import call_routes
timed = []
def measure(candidates, warmup, reps):
    timed.append([type(x).__name__ for x in candidates.calls[0]["inputs"]])
    return [3.0, 1.0, 2.0][:len(candidates.calls)], [None] * len(candidates.calls)
tune_call._set_measure(measure)
tune_call._measure = measure  # fake timing, the mock's real identity and capture query
tune_call._device_identity = None
tune_call._capturing = lambda stream, device: False
SRC = "size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x; if (i < inp_shape[0]) out[i] = inp[i] * 2;"
k = jk.cuda_kernel(name="ahead", input_names=["inp"], output_names=["out"], source=SRC)
space = [jk.Config(template={"BLOCK": b}, threadgroup=(b, 1, 1)) for b in (64, 128, 256)]
def tuned_object():
    return jk.autotune(k, configs=space, grid=lambda shapes, cfg: (shapes[0][0], 1, 1))
CALL = dict(output_shapes=[(1000,)], output_dtypes=[jk.float32])
"""


def test_precompile_tunes_and_a_later_process_times_nothing(mock_driver, tmp_path):
    proc = run_with_mock(mock_driver, MOCK_PRELUDE + """
tuned = tuned_object()
outs = []
def warm_up():
    outs.append(tuned(inputs=[jk.ShapeDtype((1000,), jk.float32)], **CALL)[0])
    outs.append(tuned(inputs=[np.ones(1000, np.float32)], **CALL)[0])  # decided: memory
report = jk.precompile(warm_up, ["sm_80", "sm_90a"], tune=True)
again = tuned_object()
chosen = again.tune(inputs=[np.zeros(1000, np.float32)], **CALL)
print(json.dumps(dict(report=[report.kernels, report.binaries, report.compiled, report.decisions, report.tuned],
                      timed=timed, again=again.stats, chosen=space.index(chosen),
                      outs=[type(o).__name__ for o in outs], session=call_routes.precompile_session is None)))
""", tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["report"] == [3, 6, 6, 1, 1], r  # 3 candidates x 2 archs; the tuning's helper kernels not counted
    assert r["timed"] == [["Array"]], r  # one tuning, on a GPU array of zeros for the ShapeDtype
    assert r["outs"] == ["ndarray", "ndarray"] and r["session"], r  # the calls still compiled (placeholders)
    assert r["again"] == {"tuned": 0, "loaded": 1, "candidates_timed": 0} and r["chosen"] == 1, r


def test_tune_needs_a_gpu_of_the_archs(fresh_cache):
    fake([3.0, 1.0, 2.0])  # a fake sm_90a GPU
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    for archs in (["sm_80"], "sm_80,sm_100a"):
        with pytest.raises(jk.ArgumentError, match="Fake GPU") as e:
            jk.precompile(lambda: tuned(inputs=[X], **CALL), archs, tune=True)
        assert e.value.argument == "tune"
    with pytest.raises(jk.ArgumentTypeError) as e:
        jk.precompile(lambda: None, ["sm_90a"], tune="yes")
    assert e.value.argument == "tune"
    assert call_routes.precompile_session is None and not tuned.decisions
    tune_call._set_measure(None)
    if jk.device_count() == 0:  # this machine: no GPU at all
        with pytest.raises(jk.ArgumentError, match="needs this machine's GPU") as e:
            jk.precompile(lambda: None, ["sm_90a"], tune=True)
        assert e.value.argument == "tune"
