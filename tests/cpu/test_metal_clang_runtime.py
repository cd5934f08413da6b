"""Check 2 of the Metal backend (docs/metal.md): the Metal runtime's C++ (cpp/jitkernel/metal/*.cpp, which only
macOS builds) compiles on Linux with clang >= 16 (-fblocks, C++17, warnings as errors) against metal-cpp, with
small stubs of the Apple system headers metal-cpp includes (tests/metal_shim/apple); and the Apple-only path of the
Metal backend (cpp/jitkernel/metal/metal_backend.cpp with JITKERNEL_HAVE_METAL) and the Metal binding
(cpp/bindings/metal_kernel.cpp) parse against nanobind. What it
proves: every metal-cpp class, method, enum and signature the runtime uses exists as used, and the code is valid
C++. What it cannot: anything about running (no Objective-C runtime, no GPU; the stubs are never linked).
"""
from __future__ import annotations

import pytest

import _metal_clang as mc

METAL_SOURCES = sorted((mc.REPO / "cpp" / "jitkernel" / "metal").glob("*.cpp"))
APPLE_BINDINGS = [mc.REPO / "cpp" / "jitkernel" / "metal" / "metal_backend.cpp", mc.REPO / "cpp" / "bindings" / "metal_kernel.cpp"]
# The core's include path as jitkernel_add_core sets it (cmake/jitkernel_core.cmake): cpp/ and its vendored headers.
CORE_INCLUDES = ["-I", str(mc.REPO / "cpp"), "-I", str(mc.REPO / "cpp" / "third_party")]
RUNTIME_FLAGS = ["-std=c++17", "-fblocks", "-Wall", "-Wextra", "-Wno-missing-field-initializers", "-Werror"]

# Must not compile: metal-cpp and the stubs do not accept just anything (a misspelt method, a wrong argument
# type, an Objective-C runtime function the stubs do not declare).
BROKEN = {
    "misspelt_method": ("MTL::Device* d = MTL::CreateSystemDefaultDevice(); d->newCommandQeue();",
                        "no member named 'newCommandQeue'"),
    "wrong_argument": ("MTL::ComputeCommandEncoder* e = nullptr; e->setBuffer(nullptr, 0, \"index\");",
                       "no matching member function"),
    "undeclared_runtime_function": ("objc_msgSendSuper();", "undeclared identifier 'objc_msgSendSuper'"),
}


@pytest.fixture(scope="module")
def tools():
    return mc.need(mc.find_clang()), mc.need(mc.find_metal_cpp())


def runtime_command(clang, metal_cpp, source) -> list:
    return [clang, *RUNTIME_FLAGS, "-fsyntax-only", "-isystem", str(mc.APPLE_STUBS),
            "-isystem", str(metal_cpp), *CORE_INCLUDES, str(source)]


@pytest.fixture(scope="module")
def compiled(tools, tmp_path_factory):
    """{name: clang's result} for the runtime's files and the BROKEN snippets, compiled in parallel once."""
    clang, metal_cpp = tools
    jobs = {path.name: runtime_command(clang, metal_cpp, path) for path in METAL_SOURCES}
    folder = tmp_path_factory.mktemp("metal_runtime")
    for name, (body, _) in BROKEN.items():
        path = folder / f"{name}.cpp"
        path.write_text('#include "jitkernel/metal/metal_cpp.hpp"\nvoid broken() {\n  ' + body + "\n}\n")
        jobs[f"broken:{name}"] = runtime_command(clang, metal_cpp, path)
    return mc.run_parallel(jobs)


def test_the_runtime_is_all_there():
    names = {p.name for p in METAL_SOURCES}
    # The one file that instantiates metal-cpp's tables, and the entry point the bindings call.
    assert {"metal_cpp.cpp", "runtime.cpp", "device.cpp"} <= names, names


@pytest.mark.parametrize("name", [p.name for p in METAL_SOURCES])
def test_runtime_source_compiles(compiled, name):
    result = compiled[name]
    assert result.returncode == 0, f"clang rejected cpp/jitkernel/metal/{name}:\n{result.stderr}"


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_code_does_not_compile(compiled, name):
    result = compiled[f"broken:{name}"]
    assert result.returncode != 0, f"{name} compiled: the stubs accept too much"
    assert BROKEN[name][1] in result.stderr, result.stderr


@pytest.mark.parametrize("path", APPLE_BINDINGS, ids=[p.name for p in APPLE_BINDINGS])
def test_apple_bindings_parse(tools, path):
    clang, _ = tools
    nanobind, python = mc.need(mc.find_nanobind()), mc.need(mc.python_include())
    result = mc.run_clang([clang, "-std=c++17", "-fsyntax-only", "-DJITKERNEL_HAVE_METAL", "-isystem", str(nanobind),
                           "-isystem", str(python), *CORE_INCLUDES, "-I", str(path.parent), str(path)])
    assert result.returncode == 0, f"clang rejected {path.name} with JITKERNEL_HAVE_METAL:\n{result.stderr}"
