"""The Python package's layout: python/jitkernel/ is split by job into layers, and imports run down the layers only.

The layers, bottom to top (a module imports from its own layer and the layers below it, never above):

  base         the extension ``_core`` and the modules every layer shares: ``_errors``, ``_dtypes``, ``_arrays``,
               ``_toolkit_search``
  _kernels     the kernel API: the cuda / metal / precompiled kernels and their factories, the shared front, the
               call types, and ``call_routes``, the registration points the layers above plug into
  _frameworks  torch ops, the JAX call, traced calls, the records of compiled graphs, sharding, post-import hooks
  _fleet       precompile, call-record replay, bundles, the cache API (beside _frameworks: neither imports the other)
  front        the package itself (``__init__``, ``fast``, ``__main__``, ``_demo``): the public names, the command
               line, and the wiring where a lower layer calls a higher one

Every module is parsed with ``ast`` (nothing is imported) and every import statement is read, at any depth: the
graph of imports between jitkernel's modules has no cycle, no function imports a jitkernel module (a cycle broken
by a lazy import is still a cycle), and each function-level import that remains (an optional framework, or a module
that costs import time) says why in a comment. Then the package is imported module by module from where it is
installed, so that a wheel missing a subpackage fails here (.ci/wheel.sh runs these tests against the wheel).
"""
from __future__ import annotations

import ast
import importlib
import os

import pytest

import jitkernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "python", "jitkernel")

# Layer -> the layers its modules may import (its own included).
LAYERS = {
    "base": {"base"},
    "_kernels": {"base", "_kernels"},
    "_frameworks": {"base", "_kernels", "_frameworks"},
    "_fleet": {"base", "_kernels", "_fleet"},
    "front": {"base", "_kernels", "_frameworks", "_fleet", "front"},
}
BASE = {"jitkernel._core", "jitkernel._errors", "jitkernel._dtypes", "jitkernel._arrays", "jitkernel._toolkit_search"}
FRONT = {"jitkernel", "jitkernel.fast", "jitkernel.__main__", "jitkernel._demo", "jitkernel._sanitize"}

# "module -> imported jitkernel module" pairs allowed inside a function, each with its reason. Empty: none is needed.
FUNCTION_LEVEL_ALLOWED: dict[tuple[str, str], str] = {}
# What a function may import itself: optional third-party modules (`import jitkernel` imports no framework, NumPy
# included; "nvidia": the namespace NVIDIA's CUDA wheels install into, where `sanitize` looks for compute-sanitizer)
# and standard modules that cost milliseconds of `import jitkernel` for a rare use (SASS disassembly, a misspelt
# keyword's suggestion).
OPTIONAL = {"torch", "jax", "numpy", "ml_dtypes", "cuda", "nvidia"}
COSTLY = {"subprocess", "tempfile", "shutil", "difflib"}


def _modules() -> dict:
    """Module name -> source path of every module under python/jitkernel (packages as their __init__)."""
    found = {}
    for folder, subfolders, files in os.walk(SOURCE):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith((".", "__pycache__")))
        parts = os.path.relpath(folder, os.path.dirname(SOURCE)).split(os.sep)
        for name in sorted(files):
            if name.endswith(".py"):
                stem = name[:-3]
                found[".".join(parts if stem == "__init__" else parts + [stem])] = os.path.join(folder, name)
    return found


MODULES = _modules()
KNOWN = set(MODULES) | {"jitkernel._core"}  # the extension has no source here


def _layer(module: str) -> str:
    if module in BASE:
        return "base"
    if module in FRONT:
        return "front"
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    raise AssertionError(f"{module} belongs to no layer: put it in a subpackage, or name it in BASE or FRONT")


def _package_of(module: str) -> str:
    is_package = MODULES.get(module, "").endswith("__init__.py")
    return module if is_package else module.rpartition(".")[0]


def _ours(name: str) -> bool:
    return name == "jitkernel" or name.startswith("jitkernel.")


def _from_targets(module: str, node: ast.ImportFrom) -> list:
    """The jitkernel modules a ``from ... import`` imports (``from pkg import name`` imports pkg.name when that is
    a module, else pkg itself)."""
    if node.level:
        base = _package_of(module).split(".")
        base = ".".join(base[:len(base) - node.level + 1])
        source = f"{base}.{node.module}" if node.module else base
    else:
        source = node.module or ""
    names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in KNOWN else source for alias in node.names]
    return [n for n in names if _ours(n)]


class Import:
    """One import statement: the jitkernel module it imports (None: a module outside jitkernel), the name it
    names, its line, and whether it is inside a function."""

    def __init__(self, target, name: str, line: int, in_function: bool):
        self.target, self.name, self.line, self.in_function = target, name, line, in_function


def _read(module: str) -> str:
    with open(MODULES[module], encoding="utf-8") as f:
        return f.read()


def _imports(module: str, text: str | None = None) -> list:
    """The import statements of ``module`` (its source, or ``text``), at any depth."""
    found = []

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(alias.name if _ours(alias.name) else None, alias.name, child.lineno,
                                        in_function))
            elif isinstance(child, ast.ImportFrom):
                name = "." * child.level + (child.module or "")
                for target in _from_targets(module, child) or [None]:
                    found.append(Import(target, name, child.lineno, in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(_read(module) if text is None else text), False)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _edges() -> dict:
    """Module -> the jitkernel modules it imports, at any depth (with the subpackages that run first)."""
    edges = {}
    for module, imports in GRAPH.items():
        targets = set()
        for i in imports:
            if i.target is not None:
                parts = i.target.split(".")
                targets.update(".".join(parts[:k]) for k in range(2, len(parts) + 1))
                targets.add(i.target)  # "jitkernel" itself too: `import jitkernel` runs the package's __init__
        edges[module] = targets - {module}
    return edges


def test_the_scan_finds_the_package():
    assert {"jitkernel", "jitkernel._kernels.cuda_kernel", "jitkernel._frameworks.torch_ops",
            "jitkernel._fleet.precompile", "jitkernel._errors"} <= set(MODULES)
    edges = _edges()
    assert "jitkernel._kernels.front" in edges["jitkernel._kernels.cuda_kernel"]
    assert "jitkernel._core" in edges["jitkernel._kernels.front"]


def test_the_scan_reads_imports_at_any_depth():
    text = ("import os, jitkernel.fast\nfrom . import front\nclass K:\n    def f(self):\n"
            "        if True:\n            from .. import _core, __version__\n            import numpy\n")
    found = [(i.target, i.name, i.line, i.in_function) for i in _imports("jitkernel._kernels.cuda_kernel", text)]
    assert found == [(None, "os", 1, False), ("jitkernel.fast", "jitkernel.fast", 1, False),
                     ("jitkernel._kernels.front", ".", 2, False), ("jitkernel._core", "..", 6, True),
                     ("jitkernel", "..", 6, True), (None, "numpy", 7, True)]


def test_every_module_has_a_layer():
    for module in KNOWN:
        assert _layer(module) in LAYERS


def _find_cycle(edges: dict):
    """A cycle of the graph as a list of modules (its first module repeated at the end), or None."""
    state: dict = {}
    for start in sorted(edges):
        stack = [(start, iter(sorted(edges[start])))]
        path = [start]
        state[start] = "open"
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = "done"
                stack.pop()
                path.pop()
            elif state.get(child) == "open":
                return path[path.index(child):] + [child]
            elif child not in state and child in edges:
                state[child] = "open"
                stack.append((child, iter(sorted(edges[child]))))
                path.append(child)
    return None


def test_no_import_cycle():
    cycle = _find_cycle(_edges())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_function_imports_a_jitkernel_module():
    found = [f"{module}:{i.line} imports {i.target} inside a function"
             for module, imports in GRAPH.items() for i in imports
             if i.target is not None and i.in_function and (module, i.target) not in FUNCTION_LEVEL_ALLOWED]
    assert not found, ("break the cycle by design (a registration point in the lower layer, or the function moved "
                       "to the layer it belongs to) and import at module level:\n" + "\n".join(found))
    stale = [pair for pair in FUNCTION_LEVEL_ALLOWED
             if not any(i.target == pair[1] and i.in_function for i in GRAPH.get(pair[0], ()))]
    assert not stale, f"FUNCTION_LEVEL_ALLOWED names imports that are gone: {stale}"


def _commented(lines: list, line: int) -> bool:
    """Whether the import at ``line`` (1-based) has a comment: on its line, or above the block of imports it
    starts or belongs to."""
    at = line - 1
    while at >= 0 and lines[at].lstrip().startswith(("import ", "from ")):
        if "#" in lines[at]:
            return True
        at -= 1
    return at >= 0 and lines[at].lstrip().startswith("#")


def test_function_level_imports_are_optional_or_costly_and_say_why():
    lines = {module: _read(module).splitlines() for module in MODULES}
    inside = [(module, i) for module, imports in GRAPH.items() for i in imports if i.in_function]
    other = [f"{module}:{i.line} imports {i.name}" for module, i in inside
             if i.name.split(".")[0] not in OPTIONAL | COSTLY]
    assert not other, "import these at module level (or name them in OPTIONAL / COSTLY, with why):\n" + "\n".join(other)
    silent = [f"{module}:{i.line} imports {i.name}" for module, i in inside if not _commented(lines[module], i.line)]
    assert not silent, ("an import inside a function needs a comment saying why it is there (an optional "
                        "framework, or import time):\n" + "\n".join(silent))


def test_imports_run_down_the_layers():
    wrong = []
    for module, targets in _edges().items():
        for target in targets:
            if _layer(target) not in LAYERS[_layer(module)]:
                wrong.append(f"{module} ({_layer(module)}) imports {target} ({_layer(target)})")
    assert not wrong, "imports against the layer order:\n" + "\n".join(sorted(wrong))


def test_subpackages_import_nothing_themselves():
    # Importing one module of a layer must not import the whole layer.
    for module in MODULES:
        if module != "jitkernel" and MODULES[module].endswith("__init__.py"):
            assert not GRAPH[module], f"{module} imports {[i.name for i in GRAPH[module]]}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_is_installed(module):
    # From where `jitkernel` is imported (a wheel in CI's wheel job): a subpackage left out of the wheel fails here.
    imported = importlib.import_module(module)
    installed = os.path.realpath(os.path.dirname(jitkernel.__file__)) + os.sep
    assert os.path.realpath(imported.__file__).startswith(installed), (imported.__file__, installed)
