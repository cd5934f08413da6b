"""Fuzz test of every public entry point: whatever the arguments, a call returns or raises a ``jk.JitKernelError``;
it never raises another exception type, crashes the interpreter or hangs.

Hypothesis draws the calls (tests/cpu/_fuzz_targets.py says what each target covers: the factories and their kernels'
``source`` / ``compile`` / calls in list and dict form, Metal, ``compile_cuda``, ``precompiled_cuda_kernel`` and the
binary parser with mutated NVRTC output, dtypes and ``jk.Array``, the compile cache with a damaged folder, hostile
protocol objects everywhere an array or a stream goes, and the XLA handler's stages given edited call text). The
calls run in child processes, a batch of cases per process, so that a crash or a hang is one failure with its input,
not the end of pytest: the child logs each input before calling, and when it dies the parent reports the last input
and reruns the rest of the batch.

Reproducible: the seeds are fixed (``JITKERNEL_FUZZ_SEED`` changes them). ``JITKERNEL_FUZZ_EXAMPLES`` sets the total
number of cases (default about 5,000, a minute on two cores) for longer local runs, ``JITKERNEL_FUZZ_REPORT`` a path
for the JSON summary (calls fuzzed, failures with their inputs), which ``pytest -s`` also prints.
"""
from __future__ import annotations

import concurrent.futures
import json
import math
import os
import re
import signal
import subprocess
import sys
import zlib

import pytest

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fuzz_child.py")

# Cases per target in the default run, in proportion to what each target covers; compile and cache run NVRTC.
DEFAULT_EXAMPLES = {"protocols": 1200, "source": 700, "call": 700, "factory": 500, "metal": 700, "compile": 100,
                    "precompiled": 800, "arrays_dtypes": 400, "cache": 120, "xla": 1500}
BATCH = 400  # cases per child process (batches of one target get different seeds)
# Seconds one call may take before it counts as a hang. A hang never ends; the slowest honest call (a compile that
# parses CCCL, about a second alone) takes 10-20 times longer on a loaded 2-core machine, so the bound is far above.
CALL_TIMEOUT = float(os.environ.get("JITKERNEL_FUZZ_CALL_TIMEOUT", "60"))
MAX_RESTARTS = 8  # per batch: after that many crashes the rest of the batch is not run (and that is a failure)


def _plan() -> list:
    total = os.environ.get("JITKERNEL_FUZZ_EXAMPLES")
    scale = int(total) / sum(DEFAULT_EXAMPLES.values()) if total else 1.0
    base_seed = int(os.environ.get("JITKERNEL_FUZZ_SEED", "0"))
    jobs = []
    for target, default in DEFAULT_EXAMPLES.items():
        n = max(1, round(default * scale))
        batches = math.ceil(n / BATCH)
        for k in range(batches):
            examples = n // batches + (1 if k < n % batches else 0)
            seed = (base_seed * 1_000_003 + zlib.crc32(f"{target}:{k}".encode())) % 2**32
            jobs.append((target, k, examples, seed))
    return jobs


def _read_log(path: str, offset: int):
    """The JSON lines of ``path`` from ``offset`` on (a line cut short by a crash is dropped)."""
    with open(path, "rb") as f:
        f.seek(offset)
        lines = f.read().decode("utf-8", "replace").splitlines()
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def _run_batch(target: str, k: int, examples: int, seed: int, folder: str) -> dict:
    """Runs one batch, rerunning the rest of it after each crash or hang; returns its summary."""
    log = os.path.join(folder, f"{target}-{k}.log")
    open(log, "w").close()
    result = {"target": target, "batch": k, "seed": seed, "examples": examples, "calls": 0, "propagated": 0,
              "failures": [], "clean_exit": False}
    skip, restarts = -1, 0
    while True:
        cache = os.path.join(folder, f"cache-{target}-{k}-{restarts}")
        os.mkdir(cache, 0o700)
        env = dict(os.environ, JITKERNEL_CACHE_DIR=cache, CUDA_VISIBLE_DEVICES="")
        for name in ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES"):
            env.pop(name, None)
        offset = os.path.getsize(log)
        cmd = [sys.executable, CHILD, target, "--examples", str(examples), "--seed", str(seed), "--skip-through",
               str(skip), "--log", log, "--call-timeout", str(CALL_TIMEOUT)]
        try:
            proc = subprocess.run(cmd, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=120 + examples * CALL_TIMEOUT / 4)
            rc, stderr = proc.returncode, proc.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, stderr = None, (e.stderr or b"").decode("utf-8", "replace")
        last_input = None
        done = None
        for entry in _read_log(log, offset):
            if "input" in entry:
                last_input = entry
                result["calls"] += 1
            elif "failure" in entry:
                result["failures"].append(dict(entry["failure"], input=last_input["input"], index=entry["i"]))
                last_input = None
            elif "done" in entry:
                done = entry
        if done is not None and rc == 0:
            result["propagated"] += done["propagated"]
            result["clean_exit"] = True
            return result
        if rc is None or (rc == 1 and "Timeout (" in stderr):
            kind, symptom = "hang", f"no answer within {CALL_TIMEOUT:g} s"
        elif rc < 0:
            kind, symptom = "crash", f"killed by {signal.Signals(-rc).name}"
        else:
            kind, symptom = "crash", f"the process exited with status {rc}"
        if last_input is None:  # died outside a call: the harness itself, or start-up
            result["failures"].append({"kind": "child", "type": symptom, "message": stderr[-3000:], "entry": "",
                                       "input": "", "index": -1, "traceback": ""})
            return result
        result["failures"].append({"kind": kind, "type": symptom, "message": stderr[-1500:],
                                   "entry": _entry(last_input["input"]), "input": last_input["input"],
                                   "index": last_input["i"], "traceback": ""})
        skip = last_input["i"]
        restarts += 1
        if restarts > MAX_RESTARTS:
            result["failures"].append({"kind": "gave up", "type": f"more than {MAX_RESTARTS} crashes or hangs",
                                       "message": f"cases after {skip} of this batch were not run", "entry": "",
                                       "input": "", "index": skip, "traceback": ""})
            return result


def _entry(text: str) -> str:
    """The entry point a logged input calls last (``jk.cuda_kernel(...).source(...)`` -> ``.source``)."""
    calls = re.findall(r"(?:^|\))\s*(\.?[A-Za-z_][\w.]*)\(", text)
    return calls[-1] if calls else text[:40]


def _signature(failure: dict) -> tuple:
    """What makes two failures the same defect, for the report: the entry point (any of the test kernels), the
    kind of failure, the exception type and its message without names and numbers."""
    entry = re.sub(r"^K_\w+", "kernel", re.sub(r"^M_\w+", "metal_kernel", failure["entry"]))
    message = failure["message"] if failure["kind"] in ("exception", "invariant") else ""
    first = message.strip().splitlines()[0] if message.strip() else ""
    first = re.sub(r"\d+", "N", re.sub(r"'[^']*'", "'…'", first))
    return (entry, failure["kind"], failure["type"], first[:120])


@pytest.fixture(scope="module")
def fuzz_results(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("fuzz"))
    jobs = _plan()
    workers = max(1, min(2, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        results = list(pool.map(lambda job: _run_batch(*job, folder), jobs))
    by_target: dict = {}
    for r in results:
        t = by_target.setdefault(r["target"], {"calls": 0, "propagated": 0, "failures": [], "batches": 0,
                                               "clean_exits": 0})
        t["calls"] += r["calls"]
        t["propagated"] += r["propagated"]
        t["failures"] += r["failures"]
        t["batches"] += 1
        t["clean_exits"] += r["clean_exit"]
    distinct = {}
    for target, t in by_target.items():
        groups: dict = {}
        for f in t["failures"]:
            g = groups.setdefault(_signature(f), dict(f, count=0))
            g["count"] += 1
        t["distinct_failures"] = list(groups.values())
        distinct[target] = len(groups)
    summary = {"calls": sum(t["calls"] for t in by_target.values()),
               "failures": sum(len(t["failures"]) for t in by_target.values()),
               "crashes_and_hangs": sum(f["kind"] in ("crash", "hang") for t in by_target.values()
                                        for f in t["failures"]),
               "seed": int(os.environ.get("JITKERNEL_FUZZ_SEED", "0")), "targets": by_target}
    report = os.environ.get("JITKERNEL_FUZZ_REPORT") or os.path.join(folder, "fuzz_report.json")
    with open(report, "w") as f:
        json.dump(summary, f, indent=1, default=repr)
    print(f"\nfuzz: {summary['calls']} calls fuzzed, {summary['failures']} failures "
          f"({summary['crashes_and_hangs']} crashes or hangs), distinct per target {distinct}; report: {report}")
    return summary


def _describe(failures: list) -> str:
    lines = []
    for f in failures:
        message = f["message"].strip().splitlines()
        lines.append(f"- [{f['kind']}] {f['entry']}: {f['type']}: {message[0][:300] if message else ''} "
                     f"(x{f['count']})\n    input: {f['input'][:1500]}")
        if f["kind"] in ("crash", "hang") and f["message"]:
            lines.append("    stderr: " + f["message"][-600:].replace("\n", "\n    "))
        elif f["traceback"]:
            lines.append("    " + f["traceback"][-800:].replace("\n", "\n    "))
    return "\n".join(lines)


@pytest.mark.parametrize("target", list(DEFAULT_EXAMPLES))
def test_fuzz(fuzz_results, target):
    t = fuzz_results["targets"][target]
    assert t["calls"] > 0, "no call was made"
    if t["distinct_failures"]:
        pytest.fail(f"{target}: {len(t['failures'])} of {t['calls']} fuzzed calls failed, "
                    f"{len(t['distinct_failures'])} distinct (each input is a repr that the builders in "
                    f"tests/cpu/_fuzz_hostile.py and _fuzz_child.py rebuild):\n" + _describe(t["distinct_failures"]),
                    pytrace=False)
    assert t["clean_exits"] == t["batches"], "a child process did not exit cleanly"
