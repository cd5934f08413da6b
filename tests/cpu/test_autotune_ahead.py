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
from jitkernel._fleet import tune_call, tune_decisions
from jitkernel._kernels import call_routes
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name
from test_autotune import CALL, X, configs, fake, fresh_cache, grid, make_kernel  # noqa: F401 - fixtures

# A process on the mock driver (a GPU named "Mock GPU (no kernels run)", sm_90a): fake timing, real launches.
MOCK_PRELUDE = """
import json
import numpy as np
import jitkernel as jk
from jitkernel._fleet import tune_call, tune_decisions
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


# --- tuned calls in call records --------------------------------------------------------------------------------

SCALED = """
scaled = jk.cuda_kernel(name="scaled", input_names=["inp", "scale"], output_names=["out"],
                        source="size_t i = blockIdx.x * (size_t)BLOCK + threadIdx.x; "
                               "if (i < inp_shape[0]) out[i] = inp[i] * (T)scale[0] * UNROLL;")
space2 = [jk.Config(template={"BLOCK": b, "T": jk.float32}, threadgroup=(b, 1, 1)) for b in (64, 128, 256)]
def scaled_tuned():
    return jk.autotune(scaled, configs=space2, grid=lambda shapes, cfg: (shapes[0][0], 1, 1),
                       key=lambda shapes, dtypes: (1 << (shapes[0][0] - 1).bit_length(), dtypes[0]))
def scaled_call(tuned, n=1000):
    return tuned(inputs=[np.ones(n, np.float32), 3.0], output_shapes=[(n,)], output_dtypes=[jk.float32],
                 template={"UNROLL": 2})
"""


def test_record_replay_decides_under_the_live_key(mock_driver, tmp_path):
    """A live process records its tuned call (one line per decided bucket); precompile --record --tune in a fresh
    cache times the candidates on zero arrays of the recorded shapes and stores the decision under exactly the key
    the live program computes, so a later process finds it without the program's functions."""
    record, build = tmp_path / "calls.jsonl", tmp_path / "build"
    proc = run_with_mock(mock_driver, MOCK_PRELUDE + SCALED + f"""
import os
from jitkernel import _core
from jitkernel._fleet import tune_decisions
_core._set_call_record({str(record)!r})
tuned = scaled_tuned()
scaled_call(tuned)
scaled_call(tuned, 1020)  # the same bucket (1024): no second line
(bucket,) = tuned.decisions
live_key = tune_decisions.decision_key(tuned._static, tune_call._identity(0)[1], bucket)
_core._set_call_record("")
os.environ["JITKERNEL_CACHE_DIR"] = {str(build)!r}
_core._cache_reset()
report = jk.precompile({str(record)!r}, ["sm_90a"], tune=True)
stored = sorted(n[:-4] for n in os.listdir(os.path.join({str(build)!r}, "kernels")) if n.endswith(".jkt"))
again = scaled_tuned()
scaled_call(again)
print(json.dumps(dict(live_key=live_key, stored=stored, timed=timed, again=again.stats,
                      report=[report.kernels, report.decisions, report.tuned])))
""", tmp_path)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["stored"] == [r["live_key"]], r  # replay's key == the live process's key
    assert r["timed"] == [["ndarray", "float"], ["Array", "float32"]], r  # live: the caller's; replay: GPU zeros
    assert r["report"] == [3, 1, 1] and r["again"] == {"tuned": 0, "loaded": 1, "candidates_timed": 0}, r
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    tuned_lines = [line for line in lines if "jitkernel_tuned" in line]
    assert len(tuned_lines) == 1, lines
    (line,) = tuned_lines
    assert [launch[1] for launch in line["launches"]] == [[64, 1, 1], [128, 1, 1], [256, 1, 1]]
    assert line["bucket"] == '[[1024,"float32"],["float32"]]' and len(line["space"]) == 3


_lines = [0]


def tuned_line(fresh_cache, tmp_path, extra_template=None):
    """A live tuned call record line (fake timing: nothing runs), written to a record file (a kernel name of its
    own: a process writes each line once)."""
    record = tmp_path / "live.jsonl"
    _lines[0] += 1
    _core._set_call_record(str(record))
    try:
        fake([3.0, 1.0, 2.0])
        tuned = jk.autotune(make_kernel(f"line{_lines[0]}"), configs=configs(), grid=grid)
        tuned.tune(inputs=[X], template=extra_template, **CALL)
    finally:
        _core._set_call_record("")
    (line,) = [t for t in record.read_text().splitlines() if t.startswith('{"jitkernel_tuned":')]
    return line


def test_tuned_line_compiles_every_candidate_without_a_gpu(fresh_cache, tmp_path):
    line = tuned_line(fresh_cache, tmp_path)
    assert _core.decode_tuned_record(line, "record")["space"] == [c.to_json() for c in configs()]
    (tmp_path / "only.jsonl").write_text(line + "\n")
    report = jk.precompile(str(tmp_path / "only.jsonl"), ["sm_80", "sm_90a"])  # no tune: no GPU needed
    assert (report.kernels, report.binaries, report.decisions, report.tuned) == (3, 6, 0, 0)


def _mutations() -> list:
    """(name, change of the line's fields, the field the error names)."""
    def at(path, value):
        def change(f):
            target = f
            for p in path[:-1]:
                target = target[p]
            target[path[-1]] = value
        return change

    def nested(old, new):
        return lambda f: f.__setitem__("record", f["record"].replace(old, new))

    return [
        ("257 configurations", lambda f: f.update(space=f["space"] * 86, launches=f["launches"] * 86), "space"),
        ("no configurations", lambda f: f.update(space=[], launches=[]), "space"),
        ("zero launch", at(["launches", 0, 1, 0], 0), "launches[0].threadgroup.x"),
        ("negative launch", at(["launches", 2, 0, 1], -4), "launches[2].grid.y"),
        ("launch as text", at(["launches", 1, 0, 0], "1000"), "launches[1].grid.x"),
        ("launch as bool", at(["launches", 1, 1, 2], True), "launches[1].threadgroup.z"),
        ("launch of 2", at(["launches", 0, 1], [64, 1]), "launches[0].threadgroup"),
        ("fewer launches", lambda f: f.update(launches=f["launches"][:2]), "launches"),
        ("zero reps", at(["reps"], 0), "reps"),
        ("negative warmup", at(["warmup"], -1), "warmup"),
        ("warmup as text", at(["warmup"], "2"), "warmup"),
        ("short static", at(["static"], "abc"), "static"),
        ("static not hex", at(["static"], "G" * 64), "static"),
        ("bucket not JSON", at(["bucket"], "[1,"), "bucket"),
        ("unknown field", at(["extra"], 1), "unknown field"),
        ("missing field", lambda f: f.pop("bucket"), "missing field"),
        ("another version", at(["jitkernel_tuned"], 3), "jitkernel_tuned"),
        ("template value as text", at(["space", 0, "template", 0, 1], "64"), "space[0].template[0].value"),
        ("template set twice", at(["space", 1, "template"], [["BLOCK", 1], ["BLOCK", 2]]), "set twice"),
        ("config field", at(["space", 0, "grid"], [1, 0, 1]), "space[0].grid.y"),
        ("record not a record", at(["record"], "{}"), "jitkernel_record"),
        ("record with an open extent", nested('[1000]]]', '[null]]]'), "every extent must be fixed"),
        ("record as a number", at(["record"], 5), "record"),
    ]


@pytest.mark.parametrize("name, change, field", _mutations(), ids=[m[0] for m in _mutations()])
def test_hostile_tuned_lines_are_typed_errors(fresh_cache, tmp_path, name, change, field):
    line = tuned_line(fresh_cache, tmp_path)
    fields = json.loads(line)
    assert json.dumps(fields, separators=(",", ":")) == line  # the mutations below are canonical otherwise
    change(fields)
    with pytest.raises(jk.ArgumentError, match="not a jitkernel") as e:
        _core.decode_tuned_record(json.dumps(fields, separators=(",", ":")), "record")
    assert e.value.argument == "record" and field in str(e.value), str(e.value)


@pytest.mark.parametrize("text", [
    '{"jitkernel_tuned":2,"record":"', '{"jitkernel_tuned":2', "[" * 100000, '{"jitkernel_tuned":2,"warmup":1' + "0" * 40,
    '{"jitkernel_tuned":"2"}', "{}", "null"])
def test_truncated_and_deep_tuned_lines(text):
    with pytest.raises(jk.ArgumentError) as e:
        _core.decode_tuned_record(text, "record")
    assert e.value.argument == "record"


def test_tuned_line_template_clash_and_canonical_form(fresh_cache, tmp_path):
    line = tuned_line(fresh_cache, tmp_path, {"UNROLL": 2})
    fields = json.loads(line)
    fields["space"][0]["template"].append(["UNROLL", 4])
    with pytest.raises(jk.ArgumentError, match="also the call's template argument"):
        _core.decode_tuned_record(json.dumps(fields, separators=(",", ":")), "record")
    spaced = json.dumps(json.loads(line))  # the same fields, other spacing: refused from a file
    with pytest.raises(jk.ArgumentError, match="not in the form jitkernel writes"):
        _core.decode_tuned_record(spaced, "record")
    (tmp_path / "bad.jsonl").write_text(line + "\n" + spaced + "\n")
    with pytest.raises(jk.RecordError, match="line 2"):
        jk.precompile(str(tmp_path / "bad.jsonl"), ["sm_90a"])


# --- decisions in memory, per GPU model ---------------------------------------------------------------------------

class OnDevice:
    """An array on CUDA device ``ordinal`` as the core sees it (tune_gpus.cpp: device_of) (nothing runs it: timing is faked)."""

    def __init__(self, ordinal):
        self.shape, self.dtype, self.ordinal = (1000,), np.dtype(np.float32), ordinal

    def __dlpack_device__(self):
        return (2, self.ordinal)


def test_decisions_in_memory_are_per_gpu_model(fresh_cache):
    """One tuned object called on two GPU models in one process: each model gets its own decision (before, the
    second GPU ran the first one's choice from memory); GPUs all of one model share it without a device lookup."""
    models = {0: {"name": "GPU A", "arch": "sm_90a"}, 1: {"name": "GPU B", "arch": "sm_80"}}
    timed = []

    def measure(candidates, warmup, reps):
        timed.append(candidates.device)
        return ([3.0, 1.0, 2.0] if candidates.device == 0 else [1.0, 3.0, 2.0]), [None] * 3

    tune_call._set_measure(measure, models.__getitem__, devices=2)
    tuned = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert tuned.tune(inputs=[OnDevice(0)], **CALL) == configs()[1]
    assert tuned.tune(inputs=[OnDevice(1)], **CALL) == configs()[0]
    for _ in range(2):  # from memory now
        assert tuned.tune(inputs=[OnDevice(0)], **CALL) == configs()[1]
        assert tuned.tune(inputs=[OnDevice(1)], **CALL) == configs()[0]
    assert timed == [0, 1] and _core._tune_one_gpu() is None
    tune_call._set_measure(measure, lambda device: models[0], devices=2)  # two GPUs of one model
    again = jk.autotune(make_kernel(), configs=configs(), grid=grid)
    assert again.tune(inputs=[OnDevice(1)], **CALL) == configs()[1]  # GPU A's decision, from disk
    assert again.tune(inputs=[OnDevice(0)], **CALL) == configs()[1] and timed == [0, 1]
    assert _core._tune_one_gpu() == tune_decisions.identity_text(models[0]) and again.stats["loaded"] == 1
