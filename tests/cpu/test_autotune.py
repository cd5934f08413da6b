"""Autotuning without a GPU: ``jk.Config`` / ``jk.autotune`` argument checks (typed errors naming the argument), the
decision's round trip through the compile cache (a second tuned object, as a second process would, times nothing),
key buckets, damaged and hostile decisions (ignored with a CacheWarning, tuned again, never a crash), decisions
travelling in bundles, the rule that nothing is tuned while a graph is captured or a framework traces, `python -m
jitkernel cache tuned`, and several processes on one empty cache tuning a key once (claims). Timing, the GPU's
identity and the capture query are replaced through ``tune_call._set_measure`` (the kernel never runs), except in
the last test, which runs the real timing path against the mock driver (benchmarks/host_only/mock_libcuda.c)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core
from jitkernel._fleet import tune_call, tune_decisions
from jitkernel._kernels import call_routes
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name
from _processes import WAIT_FOR_GO, run_together

GPU = {"name": "Fake GPU", "arch": "sm_90a"}
SOURCE = "size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x; if (i < inp_shape[0]) out[i] = inp[i] * 2;"


def make_kernel(name="twice"):
    return jk.cuda_kernel(name=name, input_names=["inp"], output_names=["out"], source=SOURCE)


def configs(blocks=(64, 128, 256)):
    return [jk.Config(template={"BLOCK": b}, threadgroup=(b, 1, 1)) for b in blocks]


class FakeTimer:
    """Times candidate i as times[i] (None: it failed with errors[i]); counts the tunings."""

    def __init__(self, times, errors=None):
        self.times, self.errors, self.calls = list(times), errors, []

    def __call__(self, candidates, warmup, reps):
        self.calls.append(candidates)
        n = len(candidates.calls)
        errors = self.errors or [None if t is not None else "CompileError: no" for t in self.times]
        return list(self.times[:n]), list(errors[:n])


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    _core._cache_reset()
    yield tmp_path / "cache"
    monkeypatch.undo()
    _core._cache_reset()
    tune_call._set_measure(None)


def fake(times, errors=None, capturing=None) -> FakeTimer:
    timer = FakeTimer(times, errors)
    tune_call._set_measure(timer, lambda device: GPU, capturing)
    return timer


def grid(shapes, cfg):
    return (shapes[0][0], 1, 1)


X = np.zeros(1000, np.float32)
CALL = dict(output_shapes=[(1000,)], output_dtypes=[jk.float32])


# --- arguments -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, argument, error", [
    (dict(template=5), "template", jk.ArgumentTypeError),
    (dict(template={"BLOCK": 1.5}), "template", jk.ArgumentTypeError),
    (dict(template=[("not a name", 1)]), "template", jk.ArgumentTypeError),
    (dict(template=[("A", 1), ("A", 2)]), "template", jk.ArgumentError),
    (dict(threadgroup=(0, 1, 1)), "threadgroup", jk.ArgumentError),
    (dict(threadgroup="x"), "threadgroup", jk.ArgumentTypeError),
    (dict(grid=(1, 2, 3, 4)), "grid", jk.ArgumentTypeError),
])
def test_config_errors_name_the_argument(kwargs, argument, error):
    with pytest.raises(error) as e:
        jk.Config(**kwargs)
    assert e.value.argument == argument


def test_config_is_a_value():
    a = jk.Config(template={"BLOCK": 64, "T": "float32", "FAST": True}, threadgroup=(64,))
    assert a == jk.Config(template=[("BLOCK", 64), ("T", jk.float32), ("FAST", True)], threadgroup=(64, 1, 1))
    assert hash(a) == hash(jk.Config(template={"BLOCK": 64, "T": np.float32, "FAST": True}, threadgroup=(64, 1)))
    assert a.to_json()["template"][1] == ["T", {"dtype": "float32"}]
    with pytest.raises(AttributeError):
        a.grid = (1, 1, 1)
    assert "BLOCK" in repr(a)


@pytest.mark.parametrize("kwargs, argument, error", [
    (dict(configs=[]), "configs", jk.ArgumentError),
    (dict(configs=None), "configs", jk.ArgumentTypeError),
    (dict(configs=[{"BLOCK": 1}]), "configs", jk.ArgumentTypeError),
    (dict(configs=[jk.Config(), jk.Config()]), "configs", jk.ArgumentError),
    (dict(configs=[jk.Config(template={"B": i}) for i in range(257)]), "configs", jk.ArgumentError),
    (dict(configs=configs(), key=5), "key", jk.ArgumentTypeError),
    (dict(configs=configs(), grid=(0,)), "grid", jk.ArgumentError),
    (dict(configs=configs(), restore_inputs=["nope"]), "restore_inputs", jk.ArgumentError),
    (dict(configs=configs(), restore_inputs="inp"), "restore_inputs", jk.ArgumentTypeError),
    (dict(configs=configs(), warmup=-1), "warmup", jk.ArgumentError),
    (dict(configs=configs(), reps=0), "reps", jk.ArgumentError),
])
def test_autotune_errors_name_the_argument(kwargs, argument, error):
    with pytest.raises(error) as e:
        jk.autotune(make_kernel(), **kwargs)
    assert e.value.argument == argument


def test_autotune_needs_a_named_cuda_kernel():
    with pytest.raises(jk.ArgumentTypeError) as e:
        jk.autotune(lambda: None, configs=configs())
    assert e.value.argument == "kernel"
    unnamed = jk.cuda_kernel(name="u", source="out[0] = 1;")
    with pytest.raises(jk.ArgumentError) as e:
        jk.autotune(unnamed, configs=configs())
    assert e.value.argument == "kernel"


def test_call_time_errors(fresh_cache):
    fake([1.0, 2.0, 3.0])
    with pytest.raises(jk.ArgumentTypeError, match="grid") as e:
        jk.autotune(make_kernel(), configs=configs()).tune(inputs=[X], **CALL)  # no grid anywhere
    assert e.value.argument == "grid"
    junk = jk.autotune(make_kernel(), configs=configs(), grid=lambda shapes, cfg: "everything")
    with pytest.raises(jk.ArgumentTypeError, match="grid function returned 'everything'"):
        junk.tune(inputs=[X], **CALL)
    for bad, error in (([1], jk.ArgumentTypeError), ({1: object()}, jk.ArgumentTypeError)):
        tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid, key=lambda shapes, dtypes, b=bad: b)
        with pytest.raises(error) as e:
            tuned.tune(inputs=[X], **CALL)
        assert e.value.argument == "key"
    with pytest.raises(jk.ArgumentTypeError) as e:
        jk.autotune(make_kernel(), configs=configs(), grid=grid).tune(X, inputs=[X], **CALL)
    assert e.value.argument == "inputs"


# --- decisions ---------------------------------------------------------------------------------------------------

def test_fastest_kept_and_read_back_without_timing(fresh_cache):
    timer = fake([3.0, 1.0, 2.0])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert tuned.tune(inputs=[X], **CALL) == configs()[1]
    assert tuned.tune(X, **CALL) == configs()[1]  # memory: no second tuning
    assert len(timer.calls) == 1 and tuned.stats == {"tuned": 1, "loaded": 0, "candidates_timed": 3}
    (decision,) = tuned.decisions.values()
    assert decision["times_ms"] == [3.0, 1.0, 2.0] and decision["chosen"] == 1
    # What a second process does: a new tuned object, same kernel and space, reads the decision and times nothing.
    again = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert again.tune(inputs=[X], **CALL) == configs()[1]
    assert len(timer.calls) == 1 and again.stats["loaded"] == 1 and again.stats["candidates_timed"] == 0
    # Another space, another kernel body or another GPU is another decision.
    assert jk.autotune(make_kernel(), configs=configs((64, 128)), grid=grid).tune(inputs=[X], **CALL)
    other = jk.cuda_kernel(name="twice", input_names=["inp"], output_names=["out"], source=SOURCE + " ")
    jk.autotune(other, configs=configs(), grid=grid).tune(inputs=[X], **CALL)
    tune_call._set_measure(timer, lambda device: {"name": "Other GPU", "arch": "sm_80"})
    jk.autotune(make_kernel(), configs=configs(), grid=grid).tune(inputs=[X], **CALL)
    assert len(timer.calls) == 4


def test_scratch_outputs_and_inputs(fresh_cache):
    timer = fake([2.0, 1.0, 3.0])
    kernel = make_kernel()
    out = np.full(1000, 7, np.float32)
    x = np.ones(1000, np.float32)
    tuned = jk.autotune(kernel, configs=configs(), grid=grid, restore_inputs=["inp"])
    tuned.tune(inputs=[x], outputs=[out])
    (candidates,) = timer.calls
    for call in candidates.calls:
        assert call["outputs"][0] is not out and np.array_equal(call["outputs"][0], out)
        assert call["inputs"][0] is not x and np.array_equal(call["inputs"][0], x)
        assert call["output_shapes"] is None and call["template"] == [("BLOCK", call["threadgroup"][0])]
    assert [a["threadgroup"] for a in candidates.compile_args] == [(64, 1, 1), (128, 1, 1), (256, 1, 1)]


def test_failed_candidates_skipped_and_all_failed_is_an_error(fresh_cache):
    fake([None, 5.0, None])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert tuned.tune(inputs=[X], **CALL) == configs()[1]
    (decision,) = tuned.decisions.values()
    assert decision["errors"][0].startswith("CompileError") and decision["errors"][1] is None
    fake([None, None, None])
    with pytest.raises(jk.ArgumentError, match="no configuration of 'twice2' ran on Fake GPU") as e:
        jk.autotune(make_kernel("twice2"), configs=configs(), grid=grid).tune(inputs=[X], **CALL)
    assert e.value.argument == "configs" and "CompileError" in str(e.value)


def test_key_buckets(fresh_cache):
    timer = fake([1.0, 2.0, 3.0])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid,
                        key=lambda shapes, dtypes: (1 << (shapes[0][0] - 1).bit_length(), dtypes[0]))
    for n in (600, 1000, 1024, 513):  # one power-of-two bucket
        tuned.tune(inputs=[np.zeros(n, np.float32)], output_shapes=[(n,)], output_dtypes=[jk.float32])
    assert len(timer.calls) == 1
    tuned.tune(inputs=[np.zeros(2000, np.float32)], output_shapes=[(2000,)], output_dtypes=[jk.float32])
    tuned.tune(inputs=[np.zeros(1000, np.float16)], output_shapes=[(1000,)], output_dtypes=[jk.float16])
    assert len(timer.calls) == 3
    assert sorted(json.loads(k)[0][0] for k in tuned.decisions) == [1024, 1024, 2048]


ONE = tune_decisions.space_digest([1])
HEAD = b"jitkernel-tune 2\n0 " + ONE.encode() + b"\n"
HOSTILE = [b"", b"jitkernel-tune 2\n", HEAD + b"[" * 100000, HEAD + b"[]", b"jitkernel-tune 1\n0 " + ONE.encode(),
           HEAD + b"{\"configs\": [1], \"times_ms\": [1], \"errors\": [null], \"chosen\": 5}",
           HEAD + b"{\"configs\": [1], \"times_ms\": [NaN], \"errors\": [null], \"chosen\": 0}",
           b"jitkernel-tune 2\n1 " + ONE.encode() + b"\n{\"configs\": [1], \"times_ms\": [1], \"errors\": [null], "
           b"\"chosen\": 0, \"kernel\": \"k\", \"device\": \"d\", \"arch\": \"a\", \"key\": \"b\"}",
           b"jitkernel-tune 2\n" + b"0" * 200 + b" " + ONE.encode() + b"\n{}", b"jitkernel-tune 2\n-0 " + ONE.encode(),
           HEAD + b"\xff\xfe", b"\x7fELF" + bytes(200), HEAD + b" " * (2 << 20)]


@pytest.mark.parametrize("payload", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_payloads_are_not_decisions(payload):
    assert tune_decisions.decode(payload) is None
    chosen = tune_decisions.chosen_of(payload, ONE, 1)  # the warm path reads only the head line
    assert chosen is None or (chosen == 0 and payload.startswith(HEAD))


def test_head_line_is_what_a_call_reads():
    space = [c.to_json() for c in configs()]
    payload = tune_decisions.encode("k", GPU, space, "[1]", [1.0, None, 0.5], [None, "x", None], 2)
    digest = tune_decisions.space_digest(space)
    assert tune_decisions.chosen_of(payload, digest, 3) == 2 == tune_decisions.decode(payload)["chosen"]
    assert tune_decisions.chosen_of(payload, digest, 2) is None  # an index the space does not have
    assert tune_decisions.chosen_of(payload, tune_decisions.space_digest(space[:2]), 3) is None  # another space


def test_round_trip_and_damaged_decision_is_tuned_again(fresh_cache):
    space = [c.to_json() for c in configs()]
    payload = tune_decisions.encode("k", GPU, space, "[1]", [1.0, None, 0.5], [None, "x", None], 2)
    assert tune_decisions.decode(payload)["chosen"] == 2
    timer = fake([3.0, 1.0, 2.0])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    tuned.tune(inputs=[X], **CALL)
    (bucket,) = tuned.decisions
    key = tune_decisions.decision_key(tuned._static, tune_decisions.identity_text(GPU), bucket)
    foreign = tune_decisions.encode("k", GPU, [c.to_json() for c in configs((32, 64, 96))], bucket, [1.0] * 3,
                                    [None] * 3, 0)
    for junk in (b"jitkernel-tune 1\n{", foreign):  # damaged; valid but for another space
        _core._decision_store(key, junk)
        again = jk.autotune(make_kernel(), configs=configs(), grid=grid)
        with pytest.warns(jk.CacheWarning, match="damaged or not one"):
            assert again.tune(inputs=[X], **CALL) == configs()[1]
        assert again.stats["tuned"] == 1
    assert len(timer.calls) == 3


def test_decisions_travel_in_bundles(fresh_cache, tmp_path, monkeypatch):
    timer = fake([3.0, 1.0, 2.0])
    jk.autotune(make_kernel(), configs=configs(), grid=grid).tune(inputs=[X], **CALL)
    report = jk.export_cache(tmp_path / "decisions.jkbundle")
    assert (report.entries, report.aliases, report.decisions) == (0, 0, 1)  # nothing was compiled (fake timing)
    bundle = _core._CacheBundle(str(tmp_path / "decisions.jkbundle"), 1 << 30)
    assert [name[64:] for name, _, _ in bundle.members()] == [".jkt"]
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "fleet"))
    _core._cache_reset()
    jk.import_cache(tmp_path / "decisions.jkbundle")
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert tuned.tune(inputs=[X], **CALL) == configs()[1]
    assert len(timer.calls) == 1 and tuned.stats["loaded"] == 1
    # ... and from a read-only tier made from the bundle.
    jk.import_cache(tmp_path / "decisions.jkbundle", into=tmp_path / "tier")
    assert [p.suffix for p in (tmp_path / "tier" / "kernels").iterdir()] == [".jkt"]
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("JITKERNEL_CACHE_READONLY_DIRS", str(tmp_path / "tier"))
    _core._cache_reset()
    assert jk.autotune(make_kernel(), configs=configs(), grid=grid).tune(inputs=[X], **CALL) == configs()[1]
    assert len(timer.calls) == 1


def test_decisions_are_their_own_entry_kind(fresh_cache):
    """A decision is "<key>.jkt": not a compiled kernel (cache info, hits and misses do not count it), listed by
    name (a binary entry with a decision's bytes is not listed), claimed apart from a compile of the same digest."""
    fake([3.0, 1.0, 2.0])
    before = jk.cache_info()
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    tuned.tune(inputs=[X], **CALL)
    (bucket,) = tuned.decisions
    key = tune_decisions.decision_key(tuned._static, tune_decisions.identity_text(GPU), bucket)
    assert sorted(p.name for p in (fresh_cache / "kernels").iterdir()) == [key + ".jkt"]
    after = jk.cache_info()
    assert after.entries == 0 and (after.hits, after.misses, after.stores) == (before.hits, before.misses, before.stores)
    folder = _core._CacheFolder(str(fresh_cache))
    entry = folder.read(key + ".jkt", 1 << 21)
    assert _core._decision_load(key) is not None and _core._cache_entry_key(key + ".jkt") == key
    _core._cache_store_entry(key + ".jkc", entry)  # the same bytes as a binary: never read as a decision
    assert jk.cache_info().entries == 1 and len(tune_decisions.listing()) == 1
    # Claims: a decision's claim is "<key>.jkt.claim", a compile's "<key>.claim".
    other = "ab" * 32
    payload, claim = _core._decision_load_or_claim(other)
    try:
        assert payload is None and claim.held
        assert [p.name for p in (fresh_cache / "claims").iterdir()] == [other + ".jkt.claim"]
    finally:
        claim.release()
    assert not list((fresh_cache / "claims").iterdir())


# --- never tuning while captured or traced -------------------------------------------------------------------------

def test_no_tuning_while_captured_or_traced(fresh_cache, monkeypatch):
    timer = fake([3.0, 1.0, 2.0], capturing=lambda stream, device: True)
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    with pytest.warns(jk.TuningWarning, match="CUDA graph is being captured"):
        assert tuned.tune(inputs=[X], **CALL) == configs()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per cause
        assert tuned.tune(inputs=[X], **CALL) == configs()[0]
    assert not timer.calls and not tuned.decisions
    monkeypatch.setattr(call_routes, "compiling", lambda: True)
    with pytest.warns(jk.TuningWarning, match="torch.compile is tracing"):
        assert tuned.tune(inputs=[X], **CALL) == configs()[0]
    # A stored decision is used while traced, without a warning.
    monkeypatch.undo()
    fake([3.0, 1.0, 2.0])
    jk.autotune(make_kernel(), configs=configs(), grid=grid).tune(inputs=[X], **CALL)
    monkeypatch.setattr(call_routes, "compiling", lambda: True)
    traced = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert traced.tune(inputs=[X], **CALL) == configs()[1]


def test_precompile_compiles_every_candidate(fresh_cache):
    fake([3.0, 1.0, 2.0])
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    report = jk.precompile(lambda: tuned(inputs=[X], **CALL), ["sm_90a"])
    assert report.kernels == 3 and report.binaries == 3


# --- the command line ---------------------------------------------------------------------------------------------

def test_cache_tuned_lists_decisions(fresh_cache):
    fake([3.0, None, 2.0])
    jk.autotune(make_kernel("listed"), configs=configs(), grid=grid).tune(inputs=[X], **CALL)
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(fresh_cache))
    out = subprocess.run([sys.executable, "-m", "jitkernel", "cache", "tuned"], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "listed on Fake GPU (sm_90a)" in out and "BLOCK=256" in out
    assert "* 2: BLOCK=256 threadgroup=(256, 1, 1): 2000.00 us" in out and "failed: CompileError" in out
    assert len(tune_decisions.listing()) == 1


# --- many processes -----------------------------------------------------------------------------------------------

RANK = """
import json, os, time
import numpy as np
import jitkernel as jk
from jitkernel._fleet import tune_call
""" + WAIT_FOR_GO + """
timed = []
def measure(candidates, warmup, reps):
    timed.append(os.getpid())
    time.sleep(1.0)
    return [3.0, 1.0 + (os.getpid() % 7) / 100, 2.0], [None, None, None]
tune_call._set_measure(measure, lambda device: {"name": "Fake GPU", "arch": "sm_90a"})
k = jk.cuda_kernel(name="ranked", input_names=["inp"], output_names=["out"], source="out[0] = inp[0] * (T)BLOCK;")
tuned = jk.autotune(k, configs=[jk.Config(template={"BLOCK": b, "T": jk.float32}, threadgroup=(b, 1, 1))
                                for b in (64, 128, 256)], grid=(1, 1, 1))
cfg = tuned.tune(inputs=[np.zeros(4, np.float32)], output_shapes=[(4,)], output_dtypes=[jk.float32])
(decision,) = tuned.decisions.values()
print(json.dumps({"timed": len(timed), "block": dict(cfg.template)["BLOCK"], "times": decision["times_ms"]}))
"""


def test_ranks_tune_once_and_agree(tmp_path):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(tmp_path / "cache"))
    results = run_together(RANK, [env] * 4, tmp_path)
    assert sum(r["timed"] for r in results) == 1, results
    assert {r["block"] for r in results} == {128}
    assert len({json.dumps(r["times"]) for r in results}) == 1, results  # everyone read the one decision


# --- the real timing path, through the mock driver ----------------------------------------------------------------

def test_real_timing_path_with_the_mock_driver(mock_driver, tmp_path):
    """Compiles (threads), launches, copies jk.Array outputs, the wait kernel and the event timer, as on a GPU; the
    mock's launches do nothing and every interval is 1 ms, so the first candidate wins; a second tuned object reads
    the decision."""
    proc = run_with_mock(mock_driver, """
        import json
        import numpy as np
        import jitkernel as jk
        k = jk.cuda_kernel(name="mocked", input_names=["inp"], output_names=["out"],
                           source="size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x; if (i < inp_shape[0]) out[i] += inp[i];")
        space = [jk.Config(template={"BLOCK": b}, threadgroup=(b, 1, 1)) for b in (64, 128, 4096)]
        tuned = jk.autotune(k, configs=space, grid=lambda shapes, cfg: (shapes[0][0], 1, 1), reps=3)
        x = np.ones(1000, np.float32)
        (out,) = k(inputs=[x], output_shapes=[(1000,)], output_dtypes=[jk.float32], grid=(1000, 1, 1),
                   threadgroup=(64, 1, 1), template={"BLOCK": 64})
        tuned(inputs=[x], outputs=[out])
        (decision,) = tuned.decisions.values()
        again = jk.autotune(k, configs=space, grid=lambda shapes, cfg: (shapes[0][0], 1, 1), reps=3)
        again.tune(inputs=[x], outputs=[out])
        print(json.dumps(dict(stats=tuned.stats, again=again.stats, times=decision["times_ms"],
                              errors=decision["errors"], chosen=decision["chosen"])))
    """, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["chosen"] == 0 and result["times"][:2] == [1.0 / 3, 1.0 / 3], result
    assert result["times"][2] is None and "threadgroup" in result["errors"][2], result  # 4096 threads: refused
    assert result["stats"] == {"tuned": 1, "loaded": 0, "candidates_timed": 2}
    assert result["again"] == {"tuned": 0, "loaded": 1, "candidates_timed": 0}


def test_numpy_arguments_are_uploaded_once_for_timing(mock_driver, tmp_path):
    """Candidates time kernels on GPU copies of NumPy inputs and outputs (made once), not on the caller's NumPy
    arrays, which every run would copy to and from the GPU; a non-contiguous array stays as it is."""
    result = run_with_mock(mock_driver, """
import numpy as np, jitkernel as jk
from jitkernel._fleet import tune_bench
x, out, strided = np.ones(8, np.float32), np.zeros(8, np.float32), np.ones(16, np.float32)[::2]
calls = [dict(inputs=[x, strided, 3], outputs=[out]), dict(inputs=[x, strided, 3], outputs=[out])]
c = tune_bench.Candidates(None, calls, [dict(inputs=[x, strided, 3])], 0, 0)
tune_bench._stage(c)
a, b = c.calls
assert isinstance(a["inputs"][0], jk.Array) and a["inputs"][0] is b["inputs"][0] is c.compile_args[0]["inputs"][0]
assert isinstance(a["outputs"][0], jk.Array) and tuple(a["outputs"][0].shape) == (8,)
assert a["inputs"][1] is strided and a["inputs"][2] == 3
print("ok")
""", tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
