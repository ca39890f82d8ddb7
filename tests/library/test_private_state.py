"""No module of the library reads or writes private state of trio, of a dependency, or of another
of its modules: a release that renames what it keeps for itself must not break the supervisor
silently. The few needs nothing public meets are each one function, named here, whose fallback
is run below."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "trio_supervisor"

# The functions allowed to reach into a dependency, each because nothing public does the job
# (their docstrings say why, and what happens where the private name is gone).
ALLOWED = {
    ("agents/_sdk.py", "know_platform"),
    ("ray/_worker.py", "_no_cluster_address"),
}
# Public names that merely start with an underscore.
PUBLIC = {("os", "_exit")}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def own_names(tree: ast.Module) -> set[str]:
    """The private names a module defines itself: its functions and classes, their attributes
    and fields, and what its methods assign to ``self``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            names.update(
                item.value
                for item in ast.walk(node.value)
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    return {name for name in names if private(name)}


def reaches(where: str, code: str) -> list[str]:
    """Where the module ``where`` (its path in the package), whose source is ``code``, touches
    private state it does not define."""
    tree = ast.parse(code)
    own = own_names(tree)
    found: list[str] = []

    def visit(node: ast.AST, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if (where, function) not in ALLOWED:
            said = check(node)
            if said is not None:
                found.append(f"{where}:{getattr(node, 'lineno', '?')} ({function}): {said}")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    def check(node: ast.AST) -> str | None:
        if isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in own:
            base = node.value
            if isinstance(base, ast.Name) and (base.id, node.attr) in PUBLIC:
                return None
            if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                return f"reads .{node.attr}"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and private(node.args[1].value)
            and node.args[1].value not in own
        ):
            return f"{node.func.id}(..., {node.args[1].value!r})"
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            if any(private(part) for part in node.module.split(".")):
                return f"imports from {node.module}"
            if any(private(alias.name) for alias in node.names):
                return f"imports a private name of {node.module}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if any(private(part) for part in alias.name.split(".")):
                    return f"imports {alias.name}"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and any(private(part) for part in node.args[0].value.split("."))
        ):
            return f"imports {node.args[0].value}"
        return None

    visit(tree, "<module>")
    return found


def test_no_module_touches_private_state_it_does_not_define() -> None:
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in reaches(path.relative_to(PACKAGE).as_posix(), path.read_text("utf-8"))
    ]
    assert found == []


def test_the_check_finds_a_read_of_trios_private_state() -> None:
    code = (
        "import trio\n"
        "from openai import _base_client\n"
        "def f(task, limiter):\n"
        "    return task._cancel_status, getattr(limiter, '_lot'), limiter._own\n"
        "class Own:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
    )
    assert reaches("_engine/sample.py", code) == [
        "_engine/sample.py:2 (<module>): imports a private name of openai",
        "_engine/sample.py:4 (f): reads ._cancel_status",
        "_engine/sample.py:4 (f): getattr(..., '_lot')",
    ]


def test_each_allowed_function_exists() -> None:
    for where, function in ALLOWED:
        tree = ast.parse((PACKAGE / where).read_text(encoding="utf-8"))
        names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert function in names, f"{where} has no {function}: update ALLOWED"


# -- the fallbacks ------------------------------------------------------------------------------


def test_a_chat_agent_answers_with_an_sdk_that_has_no_platform_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("openai")
    import httpx2

    from trio_supervisor.agents import ChatAgent
    from trio_supervisor.agents._sdk import know_platform

    # an SDK without the private function: the client is left to read its platform itself,
    # in a worker thread at its first request (virtual time here does not move while it does)
    real = sys.modules["openai._base_client"]
    stub = types.ModuleType(real.__name__)
    stub.__dict__.update({k: v for k, v in vars(real).items() if k != "get_platform"})
    monkeypatch.setitem(sys.modules, real.__name__, stub)
    seen: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers["x-stainless-os"])
        message = {"role": "assistant", "content": "an answer"}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
        return httpx2.Response(200, json={**body, "choices": [choice]})

    async def main() -> Any:
        async with ChatAgent(
            "m",
            base_url="http://127.0.0.1:9/v1",
            api_key="sk-test",
            transport=httpx2.MockTransport(handler),
        ) as worker:
            return await worker("a question")

    assert trio.run(main, clock=trio.testing.MockClock()) == "an answer"
    assert len(seen) == 1
    assert seen[0]  # the platform was read, by the SDK itself, and sent
    know_platform(types.SimpleNamespace())  # a client without the attribute: left alone


@pytest.mark.parametrize("missing", ["module", "constant"])
def test_a_local_ray_cluster_is_told_so_by_the_environment_alone_without_the_constant(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    pytest.importorskip("ray")
    import os

    from trio_supervisor.ray._worker import _LOCAL_ENV, _no_cluster_address

    name = "ray._private.ray_constants"
    stub = types.ModuleType(name)  # a Ray whose constants lack the setting
    monkeypatch.setitem(sys.modules, name, None if missing == "module" else stub)
    for variable in _LOCAL_ENV:
        monkeypatch.delenv(variable, raising=False)
    with _no_cluster_address():
        assert {variable: os.environ.get(variable) for variable in _LOCAL_ENV} == _LOCAL_ENV
    assert not set(_LOCAL_ENV) & set(os.environ)  # given back as it was
    assert vars(stub).keys() == {"__name__", "__doc__", "__package__", "__loader__", "__spec__"}
