"""The architecture page describes every module of the library: a module added to
``src/trio_supervisor/`` (or one of its packages) without its row on ``docs/architecture.md``
fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "trio_supervisor"
PAGE = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| (?P<first>[^|]+?) \|", re.MULTILINE)


def described(page: str) -> set[str]:
    """The module files the page's tables give a row, by their path in the package:
    ``_trace.py`` for a row that starts with `` `_trace.py` ``, ``timeline/_render.py`` for
    `` `trio_supervisor.timeline` (`timeline/_render.py`) ``, which also names the package's
    ``timeline/__init__.py``."""
    found = set()
    for match in ROW.finditer(page):
        for name in re.findall(r"`([\w./]+)`", match["first"]):
            if name.endswith(".py"):
                found.add(name)
            elif name.startswith("trio_supervisor."):
                found.add(name.removeprefix("trio_supervisor.").replace(".", "/") + "/__init__.py")
    return found


MODULES = sorted(
    path.relative_to(PACKAGE).as_posix()
    for path in PACKAGE.rglob("*.py")
    if path.relative_to(PACKAGE).as_posix() not in {"__init__.py", "_engine/__init__.py"}
)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_of_the_library_has_its_row_on_the_architecture_page(module: str) -> None:
    assert module in described(PAGE.read_text()), (
        f"docs/architecture.md: say what src/trio_supervisor/{module} owns in the modules table"
    )


def test_a_row_names_a_module_by_its_file_or_its_public_path() -> None:
    page = (
        "| module | owns |\n|---|---|\n| `_trace.py` | runs |\n"
        "| `trio_supervisor.timeline` (`timeline/_render.py`) | drawing |\n"
        "| a rate limit | a meter, see `_meters.py` |\n"
    )
    assert described(page) == {"_trace.py", "timeline/__init__.py", "timeline/_render.py"}
