"""Type checkers see the API: a user's script that uses every kernel kind correctly (typing_samples/good_usage.py)
passes mypy and basedpyright (pyright with its own node, from PyPI) without an error, and a script with known
mistakes (typing_samples/bad_usage.py: a misspelt keyword, a wrong type, a positional call, a missing keyword, one
name where a list of names belongs, a misspelt or mistyped compile option, a result or an output used as the wrong
type) is reported on exactly the lines marked ``# mistake``. The calls run in C or check
their arguments at run time; _kernels/call_types.py and the modules' TYPE_CHECKING blocks declare their signatures, and the
build's jitkernel/_core.pyi types the extension (dtypes, jk.Array). Each checker is skipped when not installed."""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import jitkernel

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "typing_samples")
PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"


def _marked_lines(name: str) -> set:
    with open(os.path.join(SAMPLES, name), encoding="utf-8") as f:
        return {n for n, line in enumerate(f, 1) if re.search(r"#\s*mistake\s*$", line)}


STUB = os.path.join(os.path.dirname(jitkernel.__file__), "_core.pyi")


@pytest.fixture
def samples(tmp_path):
    """The samples copied to a folder of their own (checkers read the installed jitkernel, not the source tree)."""
    if not os.path.exists(STUB):  # the samples use the extension's types (jk.Array, dtypes' attributes)
        pytest.skip("jitkernel was built with JITKERNEL_STUBS=OFF (no _core.pyi)")
    for name in ("good_usage.py", "bad_usage.py"):
        shutil.copy(os.path.join(SAMPLES, name), tmp_path / name)
    return tmp_path


def test_bad_sample_marks_its_mistakes():
    assert len(_marked_lines("bad_usage.py")) >= 15
    assert not _marked_lines("good_usage.py")


def test_mypy_accepts_good_calls_and_reports_bad_ones(samples):
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--python-version", PYTHON_VERSION,
                           "good_usage.py", "bad_usage.py"],
                          capture_output=True, text=True, cwd=samples, timeout=300)
    errors = re.findall(r"^(\w+)\.py:(\d+): error", proc.stdout, re.M)
    assert errors, proc.stdout + proc.stderr
    assert not [line for name, line in errors if name == "good_usage"], proc.stdout
    assert {int(line) for name, line in errors if name == "bad_usage"} == _marked_lines("bad_usage.py"), proc.stdout


def _basedpyright(samples, *files):
    if importlib.util.find_spec("basedpyright") is None:
        pytest.skip("basedpyright is not installed (pip install 'jitkernel[test]')")
    (samples / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "standard"}))
    proc = subprocess.run([sys.executable, "-m", "basedpyright", "--outputjson", "--pythonpath", sys.executable,
                           "--pythonversion", PYTHON_VERSION, *files],
                          capture_output=True, text=True, cwd=samples, timeout=300)
    report = json.loads(proc.stdout)
    return [(os.path.basename(d["file"]), d["range"]["start"]["line"] + 1, d["message"])
            for d in report["generalDiagnostics"] if d["severity"] == "error"]


def test_basedpyright_accepts_good_calls_and_reports_bad_ones(samples):
    errors = _basedpyright(samples, "good_usage.py", "bad_usage.py")
    assert not [e for e in errors if e[0] == "good_usage.py"], errors
    assert {line for name, line, _ in errors if name == "bad_usage.py"} == _marked_lines("bad_usage.py"), errors


def test_extension_stub_is_installed_and_valid(samples):
    """The build installs jitkernel/_core.pyi (nanobind's stubgen); both checkers accept it as it is."""
    with open(STUB, encoding="utf-8") as f:
        text = f.read()
    for declaration in ("class DType:", "class Array:", "class KernelBase:", "def dtype_from_name(name: str) "
                        "-> DType | None", "float32: DType", "def inspect_binary("):
        assert declaration in text, declaration
    os.makedirs(samples / "jitkernel")
    shutil.copy(STUB, samples / "jitkernel" / "_core.pyi")
    if importlib.util.find_spec("mypy") is not None:
        proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "jitkernel/_core.pyi"],
                              capture_output=True, text=True, cwd=samples, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    if importlib.util.find_spec("basedpyright") is not None:
        assert _basedpyright(samples, "jitkernel/_core.pyi") == []


def test_launch_only_keywords_match_the_call():
    """The queries' ignored keywords (LaunchOnly, for type checkers) are the call's keywords but the signature's."""
    from jitkernel._kernels import call_types

    launch_only = set(jitkernel._core._call_keywords) - {"inputs", "output_dtypes", "template"}
    assert set(call_types.LaunchOnly.__optional_keys__) == launch_only


def test_compile_options_types_are_dicts_at_run_time():
    """jk.CudaCompileOptions / jk.MetalCompileOptions are TypedDicts for the checkers and plain dicts when run, so an
    annotation or a call of them costs no typing import and makes what the factories take."""
    options = jitkernel.CudaCompileOptions(math_mode="fast", debug=True)
    assert type(options) is dict and options == {"math_mode": "fast", "debug": True}
    assert jitkernel.MetalCompileOptions is dict


def test_compile_options_type_has_every_option_the_core_takes():
    from jitkernel._kernels import call_types

    with pytest.raises(jitkernel.ArgumentError, match=r"the options are ([\w, ]+)\)") as e:
        jitkernel.cuda_kernel(name="k", source="", compile_options={"no such option": 1})
    taken = set(re.search(r"the options are ([\w, ]+)\)", str(e.value)).group(1).split(", "))
    assert taken <= set(call_types.CudaCompileOptions.__optional_keys__)
    assert set(call_types.MetalCompileOptions.__optional_keys__) == {"math_mode"}


def test_typing_is_not_imported_at_run_time():
    """The declarations cost no import time: neither typing nor _kernels/call_types.py is imported by ``import jitkernel``."""
    # Measured against what NumPy (which jitkernel imports) brings in itself: some NumPy releases import typing.
    code = ("import sys, numpy; before = set(sys.modules); import jitkernel, jitkernel.fast; "
            "print(sorted(m for m in ('typing', 'jitkernel._kernels.call_types') if m in sys.modules and m not in before))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
