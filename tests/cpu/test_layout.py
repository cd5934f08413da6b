"""The layout rules the repository's own sources keep: no C++ or Python source file over 500 lines and no function
over 80 lines (tables and generated data aside, each named below with its reason).

Checked: *.cpp / *.hpp under cpp/ and benchmarks/cpp/, *.py under python/, tests/ and benchmarks/ (the Metal shim's
vendored stubs, build folders and virtual environments skipped). Python functions are measured with ``ast`` (from
``def`` to the last line, nested functions on their own); C++ function bodies with the scanner of _layout_scan.py
(from ``{`` to ``}``, lambdas inside a function counted as part of it). The scanner has its own tests below, so that
a scanner that finds nothing cannot pass for a clean tree.
"""
from __future__ import annotations

import os

import pytest

from _layout_scan import ROOT, count_lines, cpp_functions, python_functions, source_files

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80

# Files allowed over MAX_FILE_LINES: tables and data, not logic.
LONG_FILES = {
    # The Metal cases as plain data (ids, sources, inputs, expected differences from MLX), one entry per case.
    "tests/cpu/_metal_cases.py",
}
# Functions allowed over MAX_FUNCTION_LINES, as "path:name": tables and data, not logic.
LONG_FUNCTIONS: set[str] = set()


def _read(rel: str) -> str:
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def _functions(rel: str, text: str):
    return python_functions(text) if rel.endswith(".py") else cpp_functions(text)


def test_sources_are_found():
    files = source_files()
    assert "tests/cpu/test_layout.py" in files
    assert any(f.startswith("cpp/") and f.endswith(".cpp") for f in files)
    assert not any(f.startswith(("tests/metal_shim/", ".venv/", "build/")) for f in files)


def test_no_file_over_500_lines():
    long = {}
    for rel in source_files():
        n = count_lines(_read(rel))
        if n > MAX_FILE_LINES and rel not in LONG_FILES:
            long[rel] = n
    assert not long, f"files over {MAX_FILE_LINES} lines (split them by topic):\n" + "\n".join(
        f"  {rel}: {n} lines" for rel, n in sorted(long.items()))


def test_no_function_over_80_lines():
    long, seen = [], set()
    for rel in source_files():
        for name, line, n in _functions(rel, _read(rel)):
            key = f"{rel}:{name}"
            if n > MAX_FUNCTION_LINES:
                seen.add(key)
                if key not in LONG_FUNCTIONS:
                    long.append(f"  {rel}:{line} {name}: {n} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named helpers):\n" + "\n".join(long)
    stale = sorted((LONG_FUNCTIONS) - seen)
    assert not stale, "allowed long functions that are no longer long (remove them from the lists): " + str(stale)


def test_allowed_long_files_exist():
    files = set(source_files())
    assert not LONG_FILES - files, f"LONG_FILES names missing files: {sorted(LONG_FILES - files)}"


# --- the C++ scanner on synthetic text -------------------------------------------------------------------------

def _body(lines: int, indent: str = "  ") -> str:
    return "".join(f"{indent}x += {i};\n" for i in range(lines))


def test_scanner_flags_a_long_function():
    text = "namespace jk {\nint f(int x) {\n" + _body(90) + "  return x;\n}\n}  // namespace jk\n"
    assert cpp_functions(text) == [("f", 2, 93)]


def test_scanner_ignores_tables_and_string_literals():
    table = "constexpr int kTable[] = {\n" + "".join(f"  {i},\n" for i in range(100)) + "};\n"
    raw = 'const char* kSource = R"src(\n' + "void g() {\n" * 100 + ')src";\n'
    quoted = 'const char* kText = "void h() { {";\n'
    short = "void k() {\n  auto l = [](int a) { return a; };\n  if (l(1)) { l(2); }\n}\n"
    assert cpp_functions(table + raw + quoted + short) == [("k", 206, 4)]


@pytest.mark.parametrize("header, kind", [
    ("int f(int a) const noexcept", "func"),
    ("auto Foo::g() -> std::vector<int>", "func"),
    ("Foo::Foo(int a) : a_(a), b_(2)", "func"),
    ("Foo::Foo(int a) : a_", "init"),
    ("Foo::Foo() : a_{}, b_(1)", "func"),
    ("template <typename T, typename = void> T h(T x)", "func"),
    ("Foo& operator=(const Foo&)", "func"),
    ("NB_MODULE(_core, m)", "func"),
    ("namespace jk::cache", "ns"),
    ('extern ""', "ns"),
    ("struct Foo final : Base", "class"),
    ("enum class Kind : int", "other"),
    ("std::array<int, 3> a =", "other"),
    ("std::function<void(int)> cb", "other"),
    ("int x", "other"),
    ("void f(Opts o = Opts", "init"),
])
def test_scanner_classifies_braces(header, kind):
    from _layout_scan import classify_brace
    assert classify_brace(header) == kind


def test_scanner_skips_comments_char_literals_and_digit_separators():
    text = ("// void a() {\n/* void b() { */\nint c() {\n  char q = '{';\n  long n = 1'000'000;\n"
            "  const char* s = \"}\";\n  return q;\n}\n#define D() {\n")
    assert cpp_functions(text) == [("c", 3, 6)]
