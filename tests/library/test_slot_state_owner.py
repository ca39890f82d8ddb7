"""A slot's state has one owner: only the methods of ``Running`` (``_engine/attempt.py``) write
its fields. The lanes, the restarting path, hedging and places read them, and say what happened
(an attempt started, ended, timed out; a slot admitted, parked, resumed) through a method, so
that what each field means, and when it changes, is written in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "src" / "trio_supervisor" / "_engine"
OWNER = "Running"
_NAMED = re.compile(rf"\b{OWNER}\b")


def slots(tree: ast.Module) -> dict[str, set[str]]:
    """Each class of ``tree`` with its ``__slots__``."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__slots__"
                for target in statement.targets
            ):
                found.setdefault(node.name, set()).update(
                    item.value
                    for item in ast.walk(statement.value)
                    if isinstance(item, ast.Constant) and isinstance(item.value, str)
                )
    return found


def holders(function: ast.AST) -> set[str]:
    """The names that hold a ``Running`` in ``function`` (or a module): ``running``, and the
    parameters and variables annotated with it or made by calling it."""
    names = {"running"}
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = function.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if argument.annotation is not None and _NAMED.search(ast.unparse(argument.annotation)):
                names.add(argument.arg)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _NAMED.search(ast.unparse(node.annotation))
        ):
            names.add(node.target.id)
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == OWNER
        ):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def writes(where: str, code: str, owned: set[str], elsewhere: set[str]) -> list[str]:
    """Where the module ``where``, whose source is ``code``, writes a field of a ``Running``
    (one of ``owned``) outside ``Running``'s methods. A field no other class has (not in
    ``elsewhere``) is a ``Running``'s whatever holds it; one that others have too (``failure``,
    ``output``...) is when a name that holds a ``Running`` does (see ``holders``)."""
    found: list[str] = []

    def visit(node: ast.AST, owner: bool, names: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            owner = node.name == OWNER
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names = names | holders(node)
        said = check(node, owner, names)
        if said is not None:
            found.append(f"{where}:{getattr(node, 'lineno', '?')}: {said}")
        for child in ast.iter_child_nodes(node):
            visit(child, owner, names)

    def check(node: ast.AST, owner: bool, names: set[str]) -> str | None:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            target, attr = node.value, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            target, attr = node.args[0], node.args[1].value
        else:
            return None
        if attr not in owned:
            return None
        name = target.id if isinstance(target, ast.Name) else None
        if owner and name == "self":
            return None  # Running's own method
        if attr in elsewhere and name not in names:
            return None  # another class's field of that name
        return f"writes {ast.unparse(target)}.{attr}"

    tree = ast.parse(code)
    visit(tree, False, holders(tree))
    return found


def fields() -> tuple[set[str], set[str]]:
    """``Running``'s fields, and those of every other class of the engine."""
    owned: set[str] = set()
    elsewhere: set[str] = set()
    for path in ENGINE.glob("*.py"):
        for name, names in slots(ast.parse(path.read_text("utf-8"))).items():
            (owned if name == OWNER else elsewhere).update(names)
    return owned, elsewhere


def test_only_runnings_methods_write_a_slots_state() -> None:
    owned, elsewhere = fields()
    assert {"slot", "attempts", "failure", "placed", "serial"} <= owned  # Running was found
    found = [
        line
        for path in sorted(ENGINE.glob("*.py"))
        for line in writes(path.name, path.read_text("utf-8"), owned, elsewhere)
    ]
    assert found == []


def test_the_check_finds_a_write_from_outside() -> None:
    code = (
        "class Running:\n"
        "    __slots__ = ('failure', 'placed', 'slot')\n"
        "    def leave(self):\n"
        "        self.slot = None\n"
        "class Call:\n"
        "    __slots__ = ('failure',)\n"
        "    def __init__(self):\n"
        "        self.failure = None\n"
        "def lane(running, call, lot: Running | None, other):\n"
        "    running.slot = 1\n"
        "    call.failure = None\n"
        "    lot.failure, x = None, 2\n"
        "    other.failure = None\n"
        "    setattr(running, 'slot', 2)\n"
        "    fresh = Running()\n"
        "    fresh.failure += 1\n"
        "def reclaim(borrower):\n"
        "    borrower.placed = False\n"
        "    self.slot = 3\n"
    )
    owned = {"failure", "placed", "slot"}
    assert writes("sample.py", code, owned, {"failure"}) == [
        "sample.py:10: writes running.slot",
        "sample.py:12: writes lot.failure",
        "sample.py:14: writes running.slot",
        "sample.py:16: writes fresh.failure",
        "sample.py:18: writes borrower.placed",
        "sample.py:19: writes self.slot",
    ]
