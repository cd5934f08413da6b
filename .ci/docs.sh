#!/usr/bin/env bash
# CI for the documentation site: builds it with Sphinx, every warning an error (-W), from docs/ (which includes parts
# of README.md and documents the installed package through autodoc), and runs the examples of its pages and the
# README's marked examples without a GPU (tests/cpu/test_docs_pages.py: what needs no GPU runs and its output is
# compared; what needs one is skipped, and -rs prints how many steps each page skipped).
# Uses the .venv the README's commands made (jitkernel installed there), adding the `docs` extra's packages.
# Usage: bash .ci/docs.sh [OUTDIR]   (the HTML goes to OUTDIR, e.g. build/docs; default: a temporary folder)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ -x .venv/bin/python ] || { echo ".venv is missing: run the README's install command first" >&2; exit 1; }
# Only the extra's own packages: jitkernel itself stays as installed (no rebuild).
mapfile -t docs_requirements < <(sed -n '/^docs = \[/,/^\]/p' pyproject.toml | grep -o '"[^"]*"' | tr -d '"')
[ "${#docs_requirements[@]}" -gt 0 ] || { echo "pyproject.toml has no docs extra" >&2; exit 1; }
.venv/bin/python -m pip install -q "${docs_requirements[@]}"

if [ $# -ge 1 ]; then
  html=$1
else
  html=$(mktemp -d)
  trap 'rm -rf "$html"' EXIT
fi
.venv/bin/python -m sphinx -W --keep-going -q -b html docs "$html"
echo "docs: built $(find "$html" -maxdepth 1 -name '*.html' | wc -l) HTML pages into $html with no warning"
.venv/bin/python -m pytest -q -rs -p no:cacheprovider tests/cpu/test_docs_pages.py
