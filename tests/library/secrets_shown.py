"""Where a secret shows in an error: every exception of its chain (its cause, its context, a
group's members), each one's ``str``, ``repr``, ``args`` and attributes (and theirs, a few levels
down: a request's headers), and the whole chain as a traceback prints it."""

from __future__ import annotations

import contextlib
import traceback
import types
from typing import Any

DEPTH = 6


def places_holding(error: BaseException, secret: str) -> list[str]:
    """The places in ``error``'s chain whose text holds ``secret``, each named by its path from
    ``error`` (``error.__context__.doc``); none when the secret is nowhere to be found."""
    found: list[str] = []
    seen: set[int] = set()

    def visit(value: Any, where: str, depth: int) -> None:
        if isinstance(value, str):
            if secret in value:
                found.append(where)
            return
        if isinstance(value, bytes | bytearray | memoryview):
            if secret.encode() in bytes(value):
                found.append(where)
            return
        if (
            value is None
            or isinstance(value, int | float | type | types.ModuleType | types.FunctionType)
            or depth > DEPTH
            or id(value) in seen
        ):
            return
        seen.add(id(value))
        with contextlib.suppress(Exception):  # an object that cannot show itself shows nothing
            visit(repr(value), f"repr({where})", DEPTH)
        if isinstance(value, BaseException):
            visit(str(value), f"str({where})", DEPTH)
            visit(value.args, f"{where}.args", depth + 1)
            visit(value.__cause__, f"{where}.__cause__", depth + 1)
            visit(value.__context__, f"{where}.__context__", depth + 1)
            for index, member in enumerate(getattr(value, "exceptions", ())):
                visit(member, f"{where}.exceptions[{index}]", depth + 1)
        if isinstance(value, dict):
            for key, item in value.items():
                visit(key, f"{where} key", depth + 1)
                visit(item, f"{where}[{key!r}]", depth + 1)
        elif isinstance(value, list | tuple | set | frozenset):
            for index, item in enumerate(value):
                visit(item, f"{where}[{index}]", depth + 1)
        attributes = dict(getattr(value, "__dict__", {}))
        slots = getattr(type(value), "__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if hasattr(value, name):
                attributes[name] = getattr(value, name)
        for name, item in attributes.items():
            if name != "__traceback__":  # its frames hold every local: not what is shown
                visit(item, f"{where}.{name}", depth + 1)

    visit(error, "error", 0)
    if secret in "".join(traceback.format_exception(error)):
        found.append("the traceback")
    return found
