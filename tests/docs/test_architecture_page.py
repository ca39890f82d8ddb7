"""The architecture page describes every module of the library: a module added to
``src/trio_supervisor/`` (or one of its packages) without its row on ``docs/architecture.md``
fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.docs.imports import circles, facades, floors, imports, module_name

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


def table_order(page: str) -> list[str]:
    """The modules of the page's table of modules, top to bottom, as dotted names
    (``_engine/places.py`` -> ``trio_supervisor._engine.places``; a row naming a package and
    its file, as `` `trio_supervisor.agents` (`agents/_output.py`) ``, gives the file)."""
    table = page[page.index("## The modules") : page.index("## Where each feature hooks in")]
    order = []
    for match in ROW.finditer(table):
        files = [
            name for name in re.findall(r"`([\w./]+)`", match["first"]) if name.endswith(".py")
        ]
        order += [module_name(PACKAGE / file) for file in files]
    return order


def test_the_library_imports_in_no_circle_and_no_module_imports_one_below_it_on_the_page() -> None:
    """The page says "a module imports only those above it in this table, never the other way":
    the import graph, read from the code (deferred imports too), has no circle, and every
    import of a module (a package's ``__init__`` gathers its own and stands on top) points at a
    row above its own."""
    graph = imports()
    assert circles(graph) == []
    order = table_order(PAGE.read_text())
    tops = facades(graph)
    up = [
        f"{name} imports {target}, which is below it on the page"
        for name in order
        if name not in tops
        for target in sorted(graph[name] - tops)
        if target in order and order.index(target) > order.index(name)
    ]
    assert up == []


def test_the_layer_check_sees_a_circle_and_an_arrow_up() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert floors({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == {"a": 3, "b": 2, "c": 1}
    page = "## The modules\n| `_b.py` | x |\n| `_a.py` | y |\n## Where each feature hooks in\n"
    assert table_order(page) == ["trio_supervisor._b", "trio_supervisor._a"]
