"""The package's metadata as an installer and a user see it: one version everywhere (CMakeLists.txt's project()
line -> the wheel's metadata -> jitkernel.__version__ -> python -m jitkernel --version), the license file in the
wheel, and `python -m jitkernel doctor --json` as machine-readable output."""
import importlib.metadata
import json
import os
import re
import subprocess
import sys

import jitkernel as jk

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_one_version_everywhere():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        cmake = re.search(r"project\(jitkernel LANGUAGES CXX VERSION ([0-9.]+)\)", f.read()).group(1)
    assert importlib.metadata.version("jitkernel") == jk.__version__ == cmake
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        assert not re.search(r'^version\s*=', f.read(), re.M), "the version is written in pyproject.toml again"


def test_license_ships_in_the_wheel():
    # PEP 639: the licence is an SPDX expression (License-Expression), with no License field or licence classifier.
    files = [str(f) for f in importlib.metadata.distribution("jitkernel").files]
    assert any(f.endswith("licenses/LICENSE") for f in files), files
    metadata = importlib.metadata.metadata("jitkernel")
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["License"] is None and not [c for c in metadata.get_all("Classifier") if c.startswith("License")]


def test_a_jitkernel_command_runs_the_command_line():
    (script,) = [e for e in importlib.metadata.entry_points(group="console_scripts") if e.name == "jitkernel"]
    assert script.value == "jitkernel.__main__:main"
    from jitkernel.__main__ import main

    assert script.load() is main


def test_doctor_json():
    proc = subprocess.run([sys.executable, "-m", "jitkernel", "doctor", "--json"], capture_output=True, text=True,
                          timeout=120)
    report = json.loads(proc.stdout)
    assert report["jitkernel"]["version"] == jk.__version__
    assert set(report) == {"jitkernel", "python", "toolkit", "cache", "frameworks", "devices", "ok"}
    assert "nvrtc_library" in report["toolkit"] and isinstance(report["devices"], list)
    assert report["cache"]["path"] == jk.cache_path() and isinstance(report["cache"]["tiers"], list)
    assert report["frameworks"].get("numpy") == importlib.metadata.version("numpy")  # versions from metadata
    assert proc.returncode == (0 if report["ok"] else 1)
    assert report["ok"] == (report["toolkit"]["nvrtc_error"] is None
                            and not any("error" in d for d in report["devices"]))
