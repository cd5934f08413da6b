"""The documentation's examples without a GPU (docs/examples_runner.py): every doctest page and every marked README
example runs as far as it can here. What needs no GPU (making kernels, kernel.source, compiling to PTX/cubin, the
error examples) must run and show what the page shows; what needs a GPU is reported as a skip whose reason counts
the steps (pytest -rs). tests/gpu/test_docs_examples.py runs the same pages fully on a GPU."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "docs"))
import examples_runner as runner  # noqa: E402

PAGES = runner.doctest_pages()
GROUPS = sorted(runner.readme_groups())


def _report_skips(tally):
    if tally.skipped:
        pytest.skip(f"{tally.skipped} of {tally.ran + tally.skipped} steps need what is missing here: "
                    + "; ".join(tally.skipped_steps))


def test_pages_and_groups_are_found():
    # The pages this site documents with examples, and the README's marked example groups.
    assert {"examples.md", "mlx_examples.md", "cache.md", "errors.md", "frameworks.md"} <= set(PAGES)
    assert set(GROUPS) == {"example", "pytorch", "jax", "many-gpus-jax"}
    assert len(runner.readme_groups()["example"]) == 2
    assert set(runner.readme_scripts()) == {"many-gpus-torch"}


@pytest.mark.parametrize("name", sorted(runner.readme_scripts()))
def test_readme_programs_parse(name):
    # Whole programs (torchrun) run on GPUs only (tests/gpu/test_docs_examples.py); here they must at least parse.
    compile(runner.readme_scripts()[name], f"README.md:{name}", "exec")


@pytest.mark.parametrize("page", PAGES)
def test_doctest_page_gpu_free_parts(page):
    tally = runner.run_doctest_page(page, gpu=False)
    assert not tally.failures, tally.failures
    assert tally.ran > 0


@pytest.mark.parametrize("page", PAGES)
def test_doctest_page_gpu_parts(page):
    _report_skips(runner.run_doctest_page(page, gpu=False))


@pytest.mark.parametrize("group", GROUPS)
def test_readme_example_gpu_free_parts(group):
    tally = runner.run_readme_group(group, gpu=False)
    assert not tally.failures, tally.failures
    _report_skips(tally)


def test_readme_example_runs_its_gpu_free_prefix():
    # The README's NumPy example defines its function and input without a GPU; the call is what needs one.
    tally = runner.run_readme_group("example", gpu=False)
    assert callable(tally.namespace["exp_elementwise"]) and tally.namespace["a"].shape == (16, 16)


def test_runner_catches_a_wrong_shown_output(tmp_path, monkeypatch):
    (tmp_path / "page.md").write_text("```python\n>>> 1 + 1\n3\n\n```\n")
    monkeypatch.setattr(runner, "DOCS", tmp_path)
    tally = runner.run_doctest_page("page.md", gpu=False)
    assert "Expected:\n    3\nGot:\n    2" in tally.failures


def test_runner_skips_only_marked_steps(tmp_path, monkeypatch):
    page = "```python\n>>> x = 1\n>>> y = undefined_name  # doctest: +GPU\n>>> x\n1\n\n```\n"
    (tmp_path / "page.md").write_text(page)
    monkeypatch.setattr(runner, "DOCS", tmp_path)
    tally = runner.run_doctest_page("page.md", gpu=False)
    assert (tally.ran, tally.skipped, tally.failures) == (2, 1, "")
    assert "NameError" in runner.run_doctest_page("page.md", gpu=True).failures


def test_readme_script_failure_is_reported(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- docs-example: g -->\n```python\nx = 1\ny = x / 0\n```\n<!-- /docs-example -->\n")
    monkeypatch.setattr(runner, "README", readme)
    tally = runner.run_readme_group("g", gpu=False)
    assert tally.ran == 1 and "README.md:4: ZeroDivisionError" in tally.failures
