"""The import structure of ``src/trio_supervisor``, read from the code: which module imports
which (module-level and deferred imports alike), for the architecture page's table of floors and
for the test that keeps the layers (no circle, no arrow up the page's table of modules)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "trio_supervisor"
NAME = "trio_supervisor"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``src/trio_supervisor/_engine/attempt.py`` -> ``trio_supervisor._engine.attempt``; a
    package's ``__init__.py`` is the package."""
    parts = [NAME, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package, by its dotted name."""
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def _target(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The dotted module an ``from ... import`` names (relative ones resolved)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module -> the modules of the package it imports (a name imported from a package
    counts as its submodule when there is one: ``from . import _x``)."""
    found = modules(package)
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            targets: Iterable[str] = ()
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _target(node, name, path.name == "__init__.py")
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in found else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in found:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(f"{target}."):
                    graph[name].add(target)
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every import circle, each as the modules along it (empty when the graph has none)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def facades(graph: Mapping[str, set[str]]) -> set[str]:
    """The packages' ``__init__`` modules (and ``__main__``): they gather their package's public
    names, so they sit on top of what they gather; the layers are the modules below them."""

    def is_package(name: str) -> bool:
        return (PACKAGE.joinpath(*name.split(".")[1:]) / "__init__.py").exists()

    return {name for name in graph if name.endswith(".__main__") or is_package(name)}


def layered(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The graph without its facades (an import of a subpackage that is a facade, as
    ``trio_supervisor.processes`` from the Ray worker, points at what it gathers) and without
    the arrows another path implies: each module -> the modules it stands on directly."""
    tops = facades(graph)
    inner = {name: {t for t in graph[name] if t not in tops} for name in graph if name not in tops}
    for name in graph:
        if name in tops:
            continue
        for target in graph[name] & tops:  # a facade imported: the modules it gathers
            inner[name] |= {t for t in graph[target] if t.startswith(f"{target}.")}
    below: dict[str, set[str]] = {}

    def reach(name: str) -> set[str]:
        if name not in below:
            below[name] = set()
            for target in inner[name]:
                below[name] |= {target} | reach(target)
        return below[name]

    return {
        name: {t for t in targets if not any(t in reach(o) for o in targets - {t})}
        for name, targets in inner.items()
    }


def floors(graph: Mapping[str, set[str]]) -> dict[str, int]:
    """Each module's floor: 1 for one that imports no module of the package, else one above the
    highest floor it stands on."""
    found: dict[str, int] = {}

    def floor(name: str) -> int:
        if name not in found:
            found[name] = 1 + max((floor(t) for t in graph[name]), default=0)
        return found[name]

    for name in graph:
        floor(name)
    return found


def drawing() -> str:
    """The architecture page's layers, from the code, as a Markdown table: each floor's modules
    (by their path in the package), the top floor first; a module stands only on floors below
    its own."""
    graph = layered(imports())
    by_floor: dict[int, list[str]] = {}
    for name, floor in floors(graph).items():
        path = "/".join(name.split(".")[1:]) + ".py"
        by_floor.setdefault(floor, []).append(f"`{path}`")
    rows = ["| floor | its modules, each standing only on floors below |", "|---|---|"]
    rows += [
        f"| {floor} | {', '.join(sorted(by_floor[floor]))} |"
        for floor in sorted(by_floor, reverse=True)
    ]
    return "\n".join(rows) + "\n"
