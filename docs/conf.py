# Sphinx configuration of jitkernel's documentation site (build: `python -m sphinx -W -b html docs build/docs`,
# or .ci/docs.sh, which also runs the pages' examples).
#
# Why Sphinx (with myst-parser) and not MkDocs: the API reference comes from the docstrings through autodoc, which
# imports the installed package (the extension included) and needs no second docstring parser; myst-parser lets the
# existing Markdown (docs/*.md) and fragments of the README be pages as they are; `-W` turns every warning, from a
# broken cross-reference to a malformed docstring, into an error. Two packages, no theme download: the `docs` extra.
# The pages' examples run through docs/examples_runner.py (pytest: tests/cpu/test_docs_pages.py without a GPU,
# tests/gpu/test_docs_examples.py on one), which reads them from the pages and the README: one source each.
from __future__ import annotations

import jitkernel

project = "jitkernel"
author = "jitkernel contributors"
copyright = "jitkernel contributors, Apache-2.0"  # noqa: A001 -- Sphinx's name
version = release = jitkernel.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc"]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Pages that are not part of the site: the examples runner's module is Python, and metal_codegen_differences.md is
# reached from metal.md as a page of its own below.
exclude_patterns = ["_build"]

# Headings get anchors, so links such as README's `#metal-apple-gpus` and docs/*.md's `#...` resolve.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}

# `# doctest: +GPU` and friends are hidden in the rendered examples (the runner reads them from the source).
trim_doctest_flags = True
html_theme = "alabaster"
html_title = f"jitkernel {release}"

# docs/metal_codegen_differences.md is written for GitHub, where its headings start at level 2; it is linked as it is.
suppress_warnings = ["myst.header"]

# The README's in-page links, in the parts of it that pages include, point to the page that covers the same thing.
# An anchor missing here stays as it is, and -W then fails the build, so a new link cannot break silently.
README_ANCHORS = {"#metal-apple-gpus": "metal.md", "#gpu-tests": "examples.md#how-the-examples-are-tested",
                  "#example": "index.md#example"}


def _readme_links(app, relative_path, parent_docname, content):
    if relative_path.name == "README.md":
        for anchor, page in README_ANCHORS.items():
            content[0] = content[0].replace(f"]({anchor})", f"]({page})")


def setup(app):
    app.connect("include-read", _readme_links)
