"""Measures the repository's sources for tests/cpu/test_layout.py: which files to check, how long each function is.

Python functions come from the ``ast`` module. C++ function bodies come from a small scanner: it blanks comments,
string/char literals (raw strings too) and preprocessor lines, then walks the braces, and at namespace or class scope
calls a ``{`` a function body when the declaration before it has a parameter list followed only by qualifiers
(``const``, ``noexcept``, ``override``, ``-> type`` ...) or a constructor's member-initialiser list. Braces after
``=``, of enums, of brace-initialised variables and of member initialisers are not bodies; everything inside a body
(lambdas, nested blocks) counts as part of it.
"""
from __future__ import annotations

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (folder, file suffixes) pairs that are checked; paths relative to the repository root.
CHECKED = [
    ("cpp", (".cpp", ".hpp")),
    ("benchmarks/cpp", (".cpp", ".hpp")),
    ("python", (".py",)),
    ("tests", (".py",)),
    ("benchmarks", (".py",)),
]
# Folders never walked into: build trees, virtual environments, caches, and the Metal shim's vendored stubs.
SKIPPED_DIRS = {"tests/metal_shim"}


def _skipped_dir(rel: str, name: str) -> bool:
    return name.startswith((".", "build", "_skbuild", "__pycache__")) or rel in SKIPPED_DIRS


def source_files() -> list[str]:
    """Every checked source file, as a path relative to the repository root with '/' separators."""
    found = set()
    for folder, suffixes in CHECKED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            rel_dir = os.path.relpath(dirpath, ROOT).replace(os.sep, "/")
            dirnames[:] = [d for d in dirnames if not _skipped_dir(f"{rel_dir}/{d}", d)]
            found.update(f"{rel_dir}/{f}" for f in filenames if f.endswith(suffixes))
    return sorted(found)


def count_lines(text: str) -> int:
    return len(text.splitlines())


def python_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, length in lines) of every function, nested ones counted on their own."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node.lineno, node.end_lineno - node.lineno + 1))
    return out


# --- C++ -------------------------------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z0-9_]")
_RAW_PREFIX = re.compile(r"(?:^|[^A-Za-z0-9_])(?:u8|u|U|L)?R$")


def _skip_string(text: str, i: int, quote: str) -> int:
    """Index just past the literal whose opening quote is at i (escapes honoured)."""
    j = i + 1
    while j < len(text) and text[j] != quote:
        if text[j] == "\\":
            j += 1
        elif text[j] == "\n" and quote == "'":
            break  # a stray apostrophe: do not swallow the rest of the file
        j += 1
    return j + 1


def _skip_raw_string(text: str, i: int) -> int:
    """Index just past the raw string R"delim( ... )delim" whose quote is at i."""
    open_paren = text.index("(", i)
    delim = text[i + 1:open_paren]
    end = text.find(")" + delim + '"', open_paren)
    return len(text) if end < 0 else end + len(delim) + 2


def _is_digit_separator(text: str, i: int) -> bool:
    """True for the ' in 1'000'000: the word before it starts with a digit."""
    j = i
    while j > 0 and _IDENT.match(text[j - 1]):
        j -= 1
    return j < i and text[j].isdigit()


def _blank(chunk: str, keep: str = "") -> str:
    """keep, then the chunk's newlines (so line numbers survive)."""
    return keep + "\n" * chunk.count("\n")


def strip_cpp(text: str) -> str:
    """The text with comments, literals (as "" / '') and preprocessor lines blanked; newlines are kept."""
    out, i, n, line_start = [], 0, len(text), True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(_blank(text[i:j]))
            i = j
            continue
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(_blank(text[i:j], " "))
            i = j
            continue
        if c == '"':
            raw = _RAW_PREFIX.search(text, 0, i) is not None and text[i - 1] == "R"
            j = _skip_raw_string(text, i) if raw else _skip_string(text, i, '"')
            out.append(_blank(text[i:j], '""'))
            i = j
            continue
        if c == "'" and not _is_digit_separator(text, i):
            j = _skip_string(text, i, "'")
            out.append(_blank(text[i:j], "''"))
            i = j
            continue
        if c == "\n":
            line_start = True
        elif not c.isspace():
            line_start = False
        out.append(c)
        i += 1
    return "".join(out)


_QUALIFIERS = re.compile(
    r"^\s*(?:(?:const|volatile|override|final|noexcept|mutable|try|&&|&)\s*)*(?:->[^{;]*)?$")
_OPERATOR = re.compile(r"\boperator\s*(?:\(\s*\)|\[\s*\]|[^\sA-Za-z0-9_(]+)")
_ACCESS = re.compile(r"\b(?:public|private|protected)\s*:(?!:)")


def _strip_template_prefix(h: str) -> str:
    """The header without its leading template<...> clauses (they may hold '=' and parentheses)."""
    while True:
        m = re.match(r"\s*template\s*<", h)
        if not m:
            return h
        depth, j = 1, m.end()
        while j < len(h) and depth:
            depth += {"<": 1, ">": -1}.get(h[j], 0)
            j += 1
        h = h[j:]


def _top_level(h: str) -> str:
    """The header with every parenthesised group replaced by ()."""
    out, depth = [], 0
    for c in h:
        if c == "(":
            if depth == 0:
                out.append("(")
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                out.append(")")
        elif depth == 0:
            out.append(c)
    return "".join(out)


def classify_brace(header: str) -> str:
    """What the { after this declaration header opens: 'ns', 'class', 'func', 'init' or 'other'."""
    if header.count("(") > header.count(")"):
        return "init"  # a brace inside an argument or default-argument list
    h = _ACCESS.sub(" ", _OPERATOR.sub("operator_", _strip_template_prefix(header)))
    top = _top_level(h)
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", top)
    if "namespace" in words or re.fullmatch(r'\s*extern\s*""\s*', top):
        return "ns"
    if re.search(r"(?<![=!<>])=(?!=)", top) or "enum" in words:
        return "other"
    first_paren = top.find("(")
    if re.search(r"\b(?:class|struct|union)\b", top[:first_paren if first_paren >= 0 else len(top)]):
        return "class"
    if first_paren < 0:
        return "other"
    after_params = top[top.find(")", first_paren) + 1:]
    if re.match(r"\s*(?:noexcept\s*(?:\(\))?\s*)?:(?!:)", after_params):  # a constructor's initialiser list
        return "func" if top.rstrip()[-1:] in ")}" else "init"
    return "func" if _QUALIFIERS.match(top[top.rfind(")") + 1:]) else "other"


def _function_name(header: str) -> str:
    top = _top_level(_OPERATOR.sub("operator_", _strip_template_prefix(header)))
    m = re.search(r"([A-Za-z_~][A-Za-z0-9_:~]*)\s*\(", top)
    return m.group(1) if m else "?"


def cpp_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, line of its {, body length in lines from { to }) of every function body at namespace/class scope."""
    code = strip_cpp(text)
    out, stack, header, line = [], [], [], 1
    for c in code:
        if c == "\n":
            line += 1
        scope = stack[-1][0] if stack else "ns"
        if c == "{":
            if scope in ("ns", "class"):
                kind = classify_brace("".join(header))
                stack.append((kind, line, "".join(header)))
                if kind != "init":
                    header = []
            else:
                stack.append(("inner", line, ""))
        elif c == "}" and stack:
            kind, start, head = stack.pop()
            if kind == "func":
                out.append((_function_name(head), start, line - start + 1))
            if kind == "init":
                header.append("{}")
            elif kind != "inner":
                header = []
        elif scope in ("ns", "class"):
            if c == ";":
                header = []
            else:
                header.append(c)
    return out
