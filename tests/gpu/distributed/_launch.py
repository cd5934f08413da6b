"""The test side of the torchrun scripts in this folder: skipping without enough GPUs, starting
``python -m torch.distributed.run`` on a free port with the environment every multi-GPU process here needs (NVLink
multicast off), under a timeout that ends the whole process group, and reading back the ranks' reports
(``JK_TEST_REPORTS``/rank<N>.json, written by _rank.report)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile

import pytest

import jitkernel as jk

HERE = os.path.dirname(os.path.abspath(__file__))
# Every process started on the multi-GPU machines gets these (NVLink SHARP / multicast stays off there).
MULTI_GPU_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def need_gpus(count: int) -> None:
    found = jk.device_count()
    if found < count:
        pytest.skip(f"needs {count} GPUs, found {found}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(text: str, chars: int = 10000) -> str:
    return text if len(text) <= chars else "...\n" + text[-chars:]


def _read_reports(folder: str) -> dict:
    reports = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("rank") and name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                report = json.load(f)
            reports[report["rank"]] = report
    return reports


def torchrun(script: str, nproc: int, tmp_path, *args: str, env: dict | None = None, timeout: float = 240) -> list:
    """Runs ``script`` (a file of this folder) on ``nproc`` ranks of one node; returns the ranks' reports in rank
    order. Fails with the reports and the end of the output when torchrun fails, times out or a rank reports
    nothing."""
    folder = tempfile.mkdtemp(prefix=f"{script[:-3]}-{nproc}-", dir=tmp_path)
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1",
               "--master_addr=127.0.0.1", f"--master_port={free_port()}", os.path.join(HERE, script), *args]
    full_env = dict(os.environ, **MULTI_GPU_ENV, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                    JK_TEST_REPORTS=folder, **(env or {}))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # torchrun and its ranks: the session started above
        output, _ = proc.communicate()
        pytest.fail(f"{script} on {nproc} ranks did not finish in {timeout} s; reports: {_read_reports(folder)}\n"
                    f"{_tail(output)}")
    reports = _read_reports(folder)
    assert proc.returncode == 0 and sorted(reports) == list(range(nproc)), (
        f"{script} on {nproc} ranks: exit status {proc.returncode}, reports from ranks {sorted(reports)}: "
        f"{reports}\n{_tail(output)}")
    return [reports[r] for r in range(nproc)]


def assert_checks_ok(reports: list, expected: list) -> None:
    """Every rank reported exactly the ``expected`` checks (by name, in order), each ``ok``; the message lists
    what every failing rank reported."""
    failures = []
    for report in reports:
        names = [c["check"] for c in report["checks"]]
        if names != expected:
            failures.append(f"rank {report['rank']} ({report['device']}) reported checks {names}, expected {expected}")
        failures += [f"rank {report['rank']} ({report['device']}): {c}" for c in report["checks"] if not c["ok"]]
    assert not failures, "\n".join(failures)
