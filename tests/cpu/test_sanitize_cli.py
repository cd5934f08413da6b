"""`python -m jitkernel sanitize` without a GPU: report lines are rewritten to name the jitkernel kernel and the line
of its body (the program's own output untouched); the sanitizer is run with the tool, child processes followed,
device-only backtraces and an error exit code; its exit status is passed on; a missing sanitizer is a message saying
what to install, a missing program or an unknown tool a usage error. A stand-in sanitizer (a shell script named in
JITKERNEL_COMPUTE_SANITIZER) prints a canned report, then runs the program. The real one runs on the GPU
(tests/gpu/test_sanitize_gpu.py)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from jitkernel import _sanitize

REPORT = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at scale_rows_0123456789abcdef+0x1d0 in /tmp/x/source:3
=========     by thread (31,0,0) in block (16,0,0)
=========     Address 0x7f3a00004000 is out of bounds
========= ERROR SUMMARY: 1 error
"""


def test_report_lines_name_the_kernel_and_body_line():
    out = [_sanitize.rewrite(line) for line in REPORT.splitlines(keepends=True)]
    assert out[2] == "=========     at jitkernel kernel 'scale_rows'+0x1d0 in the kernel body, line 3\n"
    assert out[3] == REPORT.splitlines(keepends=True)[3]  # nothing of ours there
    # Only report lines: the program's own output keeps a name that merely looks like an entry point.
    assert _sanitize.rewrite("k_0123456789abcdef in source:3\n") == "k_0123456789abcdef in source:3\n"
    # A demangled signature keeps its parameters; a name with underscores keeps them all.
    line = "=========     at my_k_v2_00000000000000ff(const float *, float *)+0x40 in source:12\n"
    assert _sanitize.rewrite(line) == ("=========     at jitkernel kernel 'my_k_v2'(const float *, float *)+0x40 in "
                                       "the kernel body, line 12\n")


# racecheck's reports, in the forms NVIDIA documents: analysis lines in the memcheck form, the same in the
# file:line:function form of other releases, and a hazard report (--racecheck-report hazard).
RACECHECK = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at race_k_0123456789abcdef+0x90 in /tmp/x/source:2
=========     and Read access at race_k_0123456789abcdef+0xd0 in /tmp/x/source:4 [7936 hazards]
========= ERROR: Race reported between Write access at 0x90 in source:2:race_k_0123456789abcdef
=========     and Read access at 0xd0 in /tmp/x/source:4:race_k_0123456789abcdef [7936 hazards]
=========     and Write access at 0x40 in header:7:race_k_0123456789abcdef [32 hazards]
========= Error: Potential RAW hazard detected at __shared__ 0x80 in block (0,0,0) :
=========     Write Thread (32,0,0) at race_k_0123456789abcdef+0x90 in source:2
=========     Read Thread (0,0,0) at race_k_0123456789abcdef+0xd0 in source:4
=========     Current Value : 0, Incoming Value : 32
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""

RACECHECK_REWRITTEN = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at jitkernel kernel 'race_k'+0x90 in the kernel body, line 2
=========     and Read access at jitkernel kernel 'race_k'+0xd0 in the kernel body, line 4 [7936 hazards]
========= ERROR: Race reported between Write access at 0x90 in the kernel body, line 2 of jitkernel kernel 'race_k'
=========     and Read access at 0xd0 in the kernel body, line 4 of jitkernel kernel 'race_k' [7936 hazards]
=========     and Write access at 0x40 in the kernel header, line 7 of jitkernel kernel 'race_k' [32 hazards]
========= Error: Potential RAW hazard detected at __shared__ 0x80 in block (0,0,0) :
=========     Write Thread (32,0,0) at jitkernel kernel 'race_k'+0x90 in the kernel body, line 2
=========     Read Thread (0,0,0) at jitkernel kernel 'race_k'+0xd0 in the kernel body, line 4
=========     Current Value : 0, Incoming Value : 32
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""


def test_racecheck_reports_name_the_kernel_and_body_lines():
    out = "".join(_sanitize.rewrite(line) for line in RACECHECK.splitlines(keepends=True))
    assert out == RACECHECK_REWRITTEN
    # A file that merely ends in "source" is the user's own, and stays as it was.
    line = "=========     and Read access at 0xd0 in /tmp/mysource:4:race_k_0123456789abcdef\n"
    assert _sanitize.rewrite(line) == ("=========     and Read access at 0xd0 in /tmp/mysource:4:jitkernel kernel "
                                       "'race_k'\n")


def fake_sanitizer(tmp_path, exit_code=1):
    """A stand-in (a Python script: CI's wheel check runs with a PATH of no tools) that records its arguments,
    prints REPORT and runs the command after its eight option words."""
    path = tmp_path / "compute-sanitizer"
    args_file = tmp_path / "args"
    path.write_text(f"#!{sys.executable}\n"
                    "import subprocess, sys\n"
                    f"open({str(args_file)!r}, 'w').write('\\n'.join(sys.argv[1:]) + '\\n')\n"
                    f"sys.stdout.write({REPORT!r})\n"
                    "sys.stdout.flush()\n"
                    "subprocess.run(sys.argv[9:])\n"
                    f"sys.exit({exit_code})\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path, args_file


def cli(tmp_path, *args, sanitizer=None):
    env = dict(os.environ)
    if sanitizer is not None:
        env["JITKERNEL_COMPUTE_SANITIZER"] = str(sanitizer)
    return subprocess.run([sys.executable, "-m", "jitkernel", "sanitize", *args], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def test_runs_the_program_under_the_sanitizer_and_rewrites_its_reports(tmp_path):
    sanitizer, args_file = fake_sanitizer(tmp_path, exit_code=1)
    (tmp_path / "prog.py").write_text("import sys\nprint('program says scale_rows_0123456789abcdef', sys.argv[1:])\n")
    done = cli(tmp_path, "--tool", "racecheck", "--", "prog.py", "a", "--b", sanitizer=sanitizer)
    assert done.returncode == 1, done.stderr
    assert "at jitkernel kernel 'scale_rows'+0x1d0 in the kernel body, line 3" in done.stdout
    assert "program says scale_rows_0123456789abcdef ['a', '--b']" in done.stdout  # the program's output as it was
    assert args_file.read_text().splitlines() == [
        "--tool", "racecheck", "--target-processes", "all", "--show-backtrace", "device", "--error-exitcode", "1",
        sys.executable, "prog.py", "a", "--b"]


def test_usage_errors_and_a_missing_sanitizer(tmp_path, monkeypatch):
    sanitizer, _ = fake_sanitizer(tmp_path)
    assert cli(tmp_path, sanitizer=sanitizer).returncode == 2  # no program
    assert cli(tmp_path, "--tool", "leakcheck", "--", "x.py", sanitizer=sanitizer).returncode == 2
    done = cli(tmp_path, "--", "x.py", sanitizer=tmp_path / "nothing")
    assert done.returncode == 1 and "JITKERNEL_COMPUTE_SANITIZER" in done.stderr
    monkeypatch.delenv("JITKERNEL_COMPUTE_SANITIZER", raising=False)
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.setenv(variable, str(tmp_path / "no_toolkit"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(_sanitize, "_WHEEL_BINARIES", ())
    if os.path.exists("/usr/local/cuda/bin/compute-sanitizer"):
        pytest.skip("this machine has a CUDA toolkit's compute-sanitizer")
    with pytest.raises(_sanitize.SanitizerNotFound, match=r'pip install "jitkernel\[sanitize\]"'):
        _sanitize.find_sanitizer()
