"""Runs the documentation's examples, read from the pages themselves (one source for each example):

- doctest blocks: every ```python fence of docs/*.md whose first line starts with ``>>>``. Their shown output is
  compared (ELLIPSIS and NORMALIZE_WHITESPACE on). A step that needs a GPU carries ``# doctest: +GPU`` (Metal:
  ``+METAL``); Sphinx hides these flags in the rendered page.
- README scripts: the README's ```python blocks between ``<!-- docs-example: GROUP -->`` and
  ``<!-- /docs-example -->`` (HTML comments: the README renders as before). The blocks of one group run in order in
  one namespace, top-level statement by statement.
- README programs: ```python blocks between ``<!-- docs-script: NAME -->`` and ``<!-- /docs-script -->``, whole
  programs that a launcher starts (``torchrun``): ``readme_scripts`` hands them to the GPU tests, which run them in
  processes of their own; here they are only parsed.

With ``gpu=False`` (no GPU here) the examples run as far as they can: marked doctest steps are skipped; a script
statement that fails only because no GPU is usable (``_needs_gpu``) is skipped, and so is every later statement that
uses a name it would have set. Everything else must run and pass, and the tally counts what ran and what was skipped.
With ``gpu=True`` nothing is skipped (Metal steps only run where Metal does).
tests/cpu/test_docs_pages.py and tests/gpu/test_docs_examples.py are the two callers.
"""
from __future__ import annotations

import ast
import contextlib
import doctest
import io
import pathlib
import re
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

GPU = doctest.register_optionflag("GPU")
METAL = doctest.register_optionflag("METAL")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
FRAMEWORKS = ("torch", "jax", "jaxlib", "cupy", "mlx")

_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
_MARKED = re.compile(r"^<!-- docs-example: ([\w-]+) -->\n(.*?)^<!-- /docs-example -->$", re.S | re.M)
_SCRIPT = re.compile(r"^<!-- docs-script: ([\w-]+) -->\n(.*?)^<!-- /docs-script -->$", re.S | re.M)


@dataclass
class Tally:
    """What one page or group did: steps run, steps skipped (and why), and a failure report ('' when none)."""

    ran: int = 0
    skipped: int = 0
    failures: str = ""
    output: str = ""  # what the scripts printed (kept out of the test log)
    skipped_steps: list = field(default_factory=list)
    namespace: dict = field(default_factory=dict)


def doctest_pages() -> list[str]:
    """Names (relative to docs/) of the pages that hold doctest blocks."""
    return sorted(p.name for p in DOCS.glob("*.md") if _doctest_text(p.read_text()).strip())


def readme_groups() -> dict[str, list[tuple[int, str]]]:
    """The README's marked examples: group -> [(line of the code, code)], in README order."""
    text = README.read_text()
    groups: dict[str, list[tuple[int, str]]] = {}
    for m in _MARKED.finditer(text):
        fence = _FENCE.search(m.group(2))
        if fence is None:
            raise ValueError(f"README.md: docs-example {m.group(1)!r} holds no ```python block")
        line = text.count("\n", 0, m.start(2) + fence.start(1)) + 1
        groups.setdefault(m.group(1), []).append((line, fence.group(1)))
    return groups


def readme_scripts() -> dict[str, str]:
    """The README's whole programs: name -> code (one ```python block each)."""
    scripts = {}
    for m in _SCRIPT.finditer(README.read_text()):
        fence = _FENCE.search(m.group(2))
        if fence is None or m.group(1) in scripts:
            raise ValueError(f"README.md: docs-script {m.group(1)!r} must hold one ```python block, once")
        scripts[m.group(1)] = fence.group(1)
    return scripts


def _doctest_text(text: str) -> str:
    """The page with everything but its doctest fences blanked (line numbers kept for failure reports)."""
    out = [""] * (text.count("\n") + 1)
    for m in _FENCE.finditer(text):
        if not m.group(1).lstrip().startswith(">>>"):
            continue
        first = text.count("\n", 0, m.start(1))
        for i, line in enumerate(m.group(1).split("\n")):
            out[first + i] = line
    return "\n".join(out)


def run_doctest_page(name: str, *, gpu: bool, metal: bool = False) -> Tally:
    """Runs the doctest blocks of docs/NAME; steps marked +GPU (+METAL) are skipped unless gpu (metal)."""
    path = DOCS / name
    test = doctest.DocTestParser().get_doctest(_doctest_text(path.read_text()), {}, name, str(path), 0)
    tally = Tally(namespace=test.globs)
    for example in test.examples:
        need = [what for flag, what, here in ((GPU, "GPU", gpu), (METAL, "Metal", metal))
                if example.options.get(flag) and not here]
        if need:
            example.options[doctest.SKIP] = True
            tally.skipped += 1
            tally.skipped_steps.append(f"{name}:{example.lineno + 1} needs {need[0]}")
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    results = runner.run(test, out=report.write, clear_globs=False)
    tally.ran = len(test.examples) - tally.skipped
    tally.failures = report.getvalue() if results.failed else ""
    return tally


def run_readme_group(group: str, *, gpu: bool) -> Tally:
    """Runs the README blocks of one group statement by statement (see the module docstring for what is skipped)."""
    tally = Tally(namespace={"__name__": f"readme_{group}"})
    tainted: set[str] = set()
    for line, code in readme_groups()[group]:
        for stmt in ast.parse(code).body:
            where = f"README.md:{line + stmt.lineno - 1}"
            if not gpu and _names_used(stmt) & tainted:
                tainted |= _names_set(stmt)
                tally.skipped += 1
                tally.skipped_steps.append(f"{where} uses what a skipped step sets")
                continue
            unit = ast.Module(body=[stmt], type_ignores=[])
            printed = io.StringIO()
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(unit, "README.md", "exec"), tally.namespace)
            except Exception as e:  # noqa: BLE001 -- sorted into "needs a GPU" or a failure below
                need = _missing_framework(e) or (None if gpu else _needs_gpu(e))
                if need is None:
                    tally.failures += f"{where}: {type(e).__name__}: {e}\n"
                    return tally
                tainted |= _names_set(stmt)
                tally.skipped += 1
                tally.skipped_steps.append(f"{where} needs {need}")
                continue
            finally:
                tally.output += printed.getvalue()
            tally.ran += 1
    return tally


def _missing_framework(exc: BaseException) -> str | None:
    """'torch (not installed)' when an example imports a framework this environment lacks."""
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in FRAMEWORKS:
        return f"{exc.name} (not installed)"
    return None


def _needs_gpu(exc: BaseException) -> str | None:
    """'a GPU (...)' for what a call raises only because no GPU is usable here: jitkernel's 'no CUDA / no Metal'
    errors, a JAX program lowered for the CPU, and a framework's own 'no CUDA device' error; else None."""
    import jitkernel as jk

    reason = f"a GPU ({type(exc).__name__})"
    if isinstance(exc, (jk.CudaNotAvailableError, jk.MetalNotAvailableError)):
        return reason
    if isinstance(exc, jk.ArgumentError) and "run only on CUDA GPUs" in str(exc):
        return reason
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename if tb is not None else ""
    from_framework = re.search(r"[/\\](torch|jax|jaxlib|cupy)[/\\]", where) is not None
    return reason if from_framework and re.search(r"cuda|nvidia|gpu", str(exc), re.I) else None


def _names_set(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds (assignment targets, def/class/import names)."""
    names = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return names


def _names_used(stmt: ast.stmt) -> set[str]:
    """Names a statement reads anywhere in it (also inside function bodies and decorators)."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
