"""The wheel build's settings agree with each other (no wheel is built here: .ci/wheel.sh builds one, installs it and
runs the CPU tests against it): tools/build_wheel.sh exists and CI runs it, the abi3 settings are all on or all off,
the manylinux target is glibc 2.28 or older, the default Pythons start at requires-python's floor, and the sdist
keeps what the build needs (docs/packaging.md)."""
import os
import re
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "build_wheel.sh")
CI_SCRIPT = os.path.join(ROOT, ".ci", "wheel.sh")


def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def scikit_build_setting(name: str):
    """The value of `name` in pyproject.toml's [tool.scikit-build] table (a string or list literal), or None."""
    table = re.search(r"^\[tool\.scikit-build\]\n(.*?)(?=^\[)", read("pyproject.toml"), re.M | re.S).group(1)
    match = re.search(rf"^{re.escape(name)}\s*=\s*(.+)$", table, re.M)
    return match.group(1).strip() if match else None


def test_the_scripts_exist_parse_and_ci_runs_them():
    for script in (SCRIPT, CI_SCRIPT):
        assert os.access(script, os.X_OK), f"{script} is not executable"
        # .ci/wheel.sh runs this file with nothing but a venv on PATH
        subprocess.run([shutil.which("bash") or "/bin/bash", "-n", script], check=True, timeout=60)
    assert re.search(r"^tools/build_wheel\.sh ", read(".ci", "wheel.sh"), re.M)
    assert re.search(r"^(bash )?\.ci/wheel\.sh\b", read(".ci", "run"), re.M), ".ci/run does not run .ci/wheel.sh"


def test_abi3_is_the_wheel_scripts_choice_alone():
    """A build from source and each version's wheel use the full API (faster calls); the abi3 wheel is built by
    tools/build_wheel.sh with wheel.py-api=cp312, which the CMake side turns into the limited API."""
    cmake = read("cpp", "CMakeLists.txt")  # where the extension is defined (the top-level file adds cpp/)
    module = re.search(r"nanobind_add_module\(_core [^)]*\)", cmake).group(0)
    python = re.search(r"find_package\(Python [^)]*\)", cmake).group(0)
    assert "STABLE_ABI" in module and "${SKBUILD_SABI_COMPONENT}" in python, (module, python)
    assert scikit_build_setting("wheel.py-api") is None, "a from-source build would be the slower limited-API one"
    script = read("tools", "build_wheel.sh")
    assert '"--config-settings=wheel.py-api=cp312"' in script  # nanobind's stable-ABI mode starts at 3.12


def test_manylinux_target_and_default_pythons():
    script = read("tools", "build_wheel.sh")
    glibc = re.search(r"glibc=\$\{JITKERNEL_WHEEL_GLIBC:-2\.(\d+)\}", script)
    assert glibc and int(glibc.group(1)) <= 28, "the wheels must be manylinux_2_28 or older"
    defaults = re.search(r"pythons=\(([0-9a-z. ]+)\)", script).group(1).split()
    assert defaults[-1] == "abi3", defaults
    defaults = defaults[:-1]
    floor = re.search(r'^requires-python = ">=(3\.\d+)"', read("pyproject.toml"), re.M).group(1)
    assert defaults[0] == floor, (defaults, floor)
    minors = [int(v.split(".")[1]) for v in defaults]
    assert minors == list(range(minors[0], minors[0] + len(minors))) and minors[-1] >= 13, defaults  # no gap


def test_sdist_keeps_what_the_build_needs():
    excluded = scikit_build_setting("sdist.exclude") or "[]"
    for needed in ("cpp", "python", "cmake", "metal_utils", "CMakeLists.txt", "LICENSE", "README.md"):
        assert os.path.exists(os.path.join(ROOT, needed)), needed
        assert not re.search(rf'"{re.escape(needed)}/?"', excluded), f"the sdist leaves out {needed}"
    ignored = read(".gitignore").split()
    assert "build/" in ignored and "/.venv/" in ignored, "build/ and .venv must stay out of the sdist"


def test_no_wheel_listing_is_piped_into_grep_q():
    """Under pipefail, `zipfile -l WHEEL | grep -q NAME` fails when grep finds NAME (it stops reading and the lister
    dies of a broken pipe): the vendored-library check missed what it looked for, and the stub check failed CI at
    random. The scripts read a wheel's names whole first (build_wheel.sh's wheel_names)."""
    for path in (SCRIPT, CI_SCRIPT, os.path.join(ROOT, ".ci", "aarch64.sh")):
        for number, line in enumerate(read(os.path.relpath(path, ROOT)).splitlines(), 1):
            code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
            assert not re.search(r"zipfile -l[^|]*\|\s*grep -q", code), f"{path}:{number}: {line.strip()}"
