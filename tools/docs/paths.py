"""Where the docs tooling finds the course, the library, the docs and the tests."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
TOOLS = ROOT / "tools"
DOCS = ROOT / "docs"
GENERATED = DOCS / "generated"
TESTS = ROOT / "tests"
#: Where the Makefile puts mermaid.min.js, vendored from its npm package (see ``make docs``).
MERMAID = GENERATED / "vendor" / "mermaid.min.js"
WIDTH = 88  # terminal columns of the sample output, as in the steps' docstrings
