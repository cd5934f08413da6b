"""The C++ API's CMake package, the fast checks (.ci/cpp_api.sh builds and runs a program against both forms):
`python -m jitkernel --cmake-dir` finds the package the wheel ships; that package holds every source the core
compiles and every header they include; the headers `cmake --install` installs (all of cpp/jitkernel's) include
nothing outside themselves; and a project configures against the wheel's package (no build)."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jitkernel
from jitkernel import __main__ as cli

REPO = Path(__file__).resolve().parents[2]
CPP = REPO / "cpp"
# What a C++ user includes (README's C++ API section, tests/cpp_api/main.cpp).
PUBLIC_HEADERS = ["jitkernel/engine/kernel.hpp", "jitkernel/engine/backend.hpp",
                  "jitkernel/cuda/launch/precompiled_kernel.hpp", "jitkernel/cuda/nvrtc/compile.hpp",
                  "jitkernel/cuda/memory/memory.hpp", "jitkernel/cuda/toolkit/toolkit_provider.hpp",
                  "jitkernel/core/errors.hpp"]
# The Metal runtime needs metal-cpp and builds on Apple only; neither package form ships its sources.
METAL_RUNTIME = {"buffers.cpp", "device.cpp", "metal_cpp.cpp", "pipelines.cpp", "runtime.cpp"}
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# The package is what `pip install` (wheel or source tree) installs next to the Python files; an editable
# install imports the files of python/jitkernel/, which has none.
pytestmark = pytest.mark.skipif(Path(jitkernel.__file__).resolve().parent == REPO / "python" / "jitkernel",
                                reason="jitkernel is an editable install: no CMake package next to it")


def package_dir() -> Path:
    return Path(jitkernel.__file__).resolve().parent


def unresolved_includes(files, roots):
    """(file, include) for each quoted #include of `files` found neither next to the file nor under a root."""
    missing = []
    for f in files:
        for name in QUOTED_INCLUDE.findall(f.read_text(encoding="utf-8")):
            if not any((d / name).is_file() for d in [f.parent, *roots]):
                missing.append((str(f), name))
    return missing


def include_closure(roots, names):
    """The headers `names` include, transitively (relative names), resolved under `roots`."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = next((r / name for r in roots if (r / name).is_file()), None)
        assert path is not None, f"{name} is not under {roots}"
        todo.extend(QUOTED_INCLUDE.findall(path.read_text(encoding="utf-8")))
    return seen


def test_cmake_dir_prints_the_package_folder():
    out = subprocess.run([sys.executable, "-m", "jitkernel", "--cmake-dir"], capture_output=True, text=True,
                         check=True).stdout.strip()
    folder = Path(out)
    assert folder == package_dir() / "cmake"
    for name in ("jitkernelConfig.cmake", "jitkernelConfigVersion.cmake", "jitkernel_core.cmake"):
        assert (folder / name).is_file(), name
    version = (folder / "jitkernelConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{jitkernel.__version__}")' in version


def test_cmake_dir_without_a_package_fails_with_a_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "__main__.py"))
    assert cli.main(["--cmake-dir"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "no CMake package" in captured.err and "cmake --install" in captured.err


def test_wheel_package_ships_every_core_source():
    shipped = package_dir() / "cpp"
    want = {p.relative_to(CPP) for p in (CPP / "jitkernel").rglob("*.cpp")
            if not (p.parent.name == "metal" and p.name in METAL_RUNTIME)}
    have = {p.relative_to(shipped) for p in (shipped / "jitkernel").rglob("*.cpp")}
    assert have == want
    headers = {p.relative_to(CPP) for p in (CPP / "jitkernel").rglob("*.hpp")}
    assert {p.relative_to(shipped) for p in (shipped / "jitkernel").rglob("*.hpp")} == headers
    assert (shipped / "generated" / "metal_utils_text.inc").stat().st_size > 1000


def test_wheel_package_includes_resolve():
    shipped = package_dir() / "cpp"
    files = [*shipped.rglob("*.cpp"), *shipped.rglob("*.hpp")]
    assert len(files) > 100
    assert unresolved_includes(files, [shipped, shipped / "generated", shipped / "third_party"]) == []


def test_wheel_package_ships_the_vendored_xla_header_and_its_licence():
    shipped = package_dir() / "cpp" / "third_party" / "xla"
    for name in ("ffi/api/c_api.h", "LICENSE", "README.md"):
        assert (shipped / name).read_bytes() == (CPP / "third_party" / "xla" / name).read_bytes(), name


def test_installed_headers_are_self_contained():
    # `cmake --install` installs every cpp/jitkernel header and the vendored XLA FFI header (an include root of its
    # own, cpp/third_party): they must include only each other.
    headers = list((CPP / "jitkernel").rglob("*.hpp"))
    assert unresolved_includes(headers, [CPP, CPP / "third_party"]) == []
    vendored = {name for h in headers for name in QUOTED_INCLUDE.findall(h.read_text(encoding="utf-8"))
                if (CPP / "third_party" / name).is_file()}
    assert vendored == {"xla/ffi/api/c_api.h"}
    closure = include_closure([CPP], PUBLIC_HEADERS)
    assert set(PUBLIC_HEADERS) <= closure and all(n.startswith("jitkernel/") for n in closure)


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None, reason="needs cmake and c++")
def test_project_configures_against_the_wheel_package(tmp_path):
    # Configure only: the package defines jitkernel::core from its shipped paths; .ci/cpp_api.sh builds it.
    result = subprocess.run(["cmake", "-S", str(REPO / "tests" / "cpp_api"), "-B", str(tmp_path),
                             f"-Djitkernel_DIR={package_dir() / 'cmake'}"],
                            capture_output=True, text=True, env={**os.environ, "CMAKE_PREFIX_PATH": ""})
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"jitkernel {jitkernel.__version__} from {package_dir() / 'cmake'}" in result.stdout


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None, reason="needs cmake and c++")
def test_package_version_compatibility(tmp_path):
    # Below 1.0 a minor release may change the API: a request is met by the same major.minor only.
    major, minor, _ = (int(x) for x in jitkernel.__version__.split("."))
    requests = {f"{major}.{minor}": "1", f"{major}.{minor + 1}": "0", f"{major + 1}.0": "0"}
    if major == 0 and minor > 0:
        requests[f"0.{minor - 1}"] = "0"
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(version_check LANGUAGES CXX)\n"
        f"foreach(request IN ITEMS {' '.join(requests)})\n"
        "  find_package(jitkernel ${request} CONFIG QUIET)\n"
        "  if(jitkernel_FOUND)\n    set(found 1)\n  else()\n    set(found 0)\n  endif()\n"
        "  message(STATUS \"request ${request}: ${found}\")\n"
        "endforeach()\n")
    result = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build"),
                             f"-Djitkernel_DIR={package_dir() / 'cmake'}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    for request, found in requests.items():
        assert f"request {request}: {found}" in result.stdout, result.stdout
