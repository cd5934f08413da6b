"""The tuned call's warm path in the core (cpp/bindings/services/tune_table.cpp): a decided bucket (in this process's
memory or stored) is answered in one call, with the same memory keys, payloads, counts and launch keywords as the
Python slow path (tune_call.py), so what one path decides the other finds; every case it does not cover (another
argument form, no stored decision, a bucket its JSON writer does not cover, calls being recorded) is left to the
slow path (None), never answered differently; the table's references are seen by the garbage collector, so a tuned
kernel whose grid function refers back to it is collected and the process exits clean. Timing and the GPU's
identity are faked (test_autotune.py's fixtures)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel import _core
from jitkernel._fleet import tune_call
from test_autotune import CALL, GPU, X, configs, fake, fresh_cache, grid, make_kernel  # noqa: F401 - fixtures
from test_tune_lookup import buckets


def tuned_twice(key=None):
    """A bucket tuned by one object, then a second object of the same kernel and space (a second process)."""
    fake([3.0, 1.0, 2.0])
    first = jk.autotune(make_kernel(), configs=configs(), grid=grid, key=key)
    first.tune(inputs=[X], **CALL)
    assert first.stats["tuned"] == 1
    return first, jk.autotune(make_kernel(), configs=configs(), grid=grid, key=key)


@pytest.mark.parametrize("key", [None, lambda shapes, dtypes: (shapes[0][0] // 256, dtypes[0])])
def test_a_stored_decision_is_found_by_the_warm_path_as_the_slow_path_keeps_it(fresh_cache, key):
    first, second = tuned_twice(key)
    found = second._table.warm((), [X], CALL["output_dtypes"], None)
    assert found is not None
    inputs, index, launch = found
    assert inputs == [X] and index == 1
    assert launch == {"grid": (1000, 1, 1), "threadgroup": (128, 1, 1), "template": [("BLOCK", 128)]}
    assert second.stats == {"tuned": 0, "loaded": 1, "candidates_timed": 0}
    assert second._chosen == first._chosen  # the same memory key as the slow path's
    assert list(second._payloads) == list(first._payloads)  # the same bucket text
    assert second.decisions[next(iter(first._payloads))]["chosen"] == 1
    assert second._table.warm((X,), None, CALL["output_dtypes"], None)[1] == 1  # positional inputs
    assert second.stats["loaded"] == 1  # from memory the second time


def test_the_warm_path_leaves_what_it_does_not_cover_to_the_slow_path(fresh_cache, tmp_path):
    first, second = tuned_twice()
    table = second._table
    assert table.warm((X,), [X], CALL["output_dtypes"], None) is None  # inputs twice: the slow path's error
    assert table.warm((), "not a list", CALL["output_dtypes"], None) is None
    assert table.warm((), [np.zeros(7, np.float32)], CALL["output_dtypes"], None) is None  # not decided: tuning
    _core._set_call_record(str(tmp_path / "calls.jsonl"))
    try:
        assert table.warm((), [X], CALL["output_dtypes"], None) is None  # the slow path writes the record line
    finally:
        _core._set_call_record("")
    assert second.stats["loaded"] == 0
    with pytest.raises(jk.ArgumentTypeError) as e:
        second(X, inputs=[X], **CALL)
    assert e.value.argument == "inputs"


def test_a_decision_made_by_the_slow_path_is_found_by_the_warm_path(fresh_cache):
    fake([3.0, 1.0, 2.0])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert tuned.tune(inputs=[X], **CALL) == configs()[1]  # tuned here (the slow path)
    assert tuned._table.warm((), [X], CALL["output_dtypes"], None)[1] == 1
    assert tuned.stats == {"tuned": 1, "loaded": 0, "candidates_timed": 3}


@pytest.mark.parametrize("returned", [(0, 1, 1), (1, 2, 3, 4), "abc", (1.5,), (True,)])
def test_a_grid_function_returning_no_dims_is_named(fresh_cache, returned):
    fake([1.0, 2.0, 3.0])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=lambda shapes, cfg: returned)
    with pytest.raises(jk.ArgumentTypeError) as e:
        tuned(inputs=[X], **CALL)
    assert e.value.argument == "grid" and "the grid function returned" in str(e.value)


def test_launch_keywords_are_kept_per_shapes_and_the_call_may_give_its_own(fresh_cache):
    fake([1.0, 2.0, 3.0])
    tuned = jk.autotune(make_kernel(), configs=configs())
    with pytest.raises(jk.ArgumentTypeError, match="no grid for"):
        tuned._table.launch(0, ((10,),), None, None)
    assert tuned._table.launch(0, ((10,),), (5,), None)["grid"] == (5,)  # the call's, not kept
    assert tuned._launches == {}
    with pytest.raises(jk.ArgumentError):
        tuned._table.launch(3, ((10,),), (5,), None)  # no such configuration


def test_a_tuned_kernel_referred_to_by_its_own_grid_function_exits_clean(tmp_path):
    """The grid function is a closure over the tuned object: a reference cycle through the core's table. Before the
    table told the garbage collector its references, the process ended with nanobind's leak report."""
    code = textwrap.dedent("""
        import jitkernel as jk
        k = jk.cuda_kernel(name="cycle", input_names=["inp"], output_names=["out"], source="out[0] = inp[0];")
        def make():
            holder = {}
            holder["tuned"] = jk.autotune(k, configs=[jk.Config(threadgroup=(32, 1, 1))],
                                          grid=lambda shapes, cfg: (len(holder), 1, 1))
            return holder["tuned"]
        tuned = make()
        del tuned
        import gc; gc.collect()
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    assert "leaked" not in proc.stderr, proc.stderr


def test_gpu_identities_live_in_the_core_and_tests_can_replace_them(fresh_cache):
    fake([1.0])
    assert tune_call._identity(0) == (GPU, _core._tune_identity_text(GPU["name"], GPU["arch"]))
    assert _core._tune_device_of([1.0, X]) == 0
    _core._tune_settle_gpus(tune_call._identity(0)[1])
    assert _core._tune_one_gpu() == tune_call._identity(0)[1]
    tune_call._set_measure(None)
    assert _core._tune_one_gpu() is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=buckets.filter(lambda v: _hashable(v)))
def test_the_warm_path_never_answers_otherwise_than_the_slow_path(fresh_cache, value):
    """Whatever a key function returns, a second object's warm path either finds the decision the first object's
    slow path stored, under the same memory key, or leaves the call to the slow path; never another index."""
    _core._cache_reset()
    fake([3.0, 1.0, 2.0])
    key = lambda shapes, dtypes: value  # noqa: E731 - one bucket, the value drawn
    first = jk.autotune(make_kernel(), configs=configs(), grid=grid, key=key)
    first.tune(inputs=[X], **CALL)
    second = jk.autotune(make_kernel(), configs=configs(), grid=grid, key=key)
    found = second._table.warm((), [X], CALL["output_dtypes"], None)
    if found is None:  # a bucket the core does not write (floats, non-ASCII text): the slow path finds it
        assert second.tune(inputs=[X], **CALL) == configs()[1] and second.stats["tuned"] == 0
    else:
        assert found[1] == 1 and second._chosen == first._chosen


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
