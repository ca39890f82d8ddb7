"""How the course words an exception: as a slot's ``error`` says it, type and message."""

from __future__ import annotations

from trio_supervisor import SubResult


def describe(exc: BaseException) -> str:
    """``exc``'s type and message (a group's with every exception it holds), word for word what
    a slot whose worker raised it would hold as its ``error``."""
    error = SubResult[str, str].from_exception("", exc).error
    assert error is not None  # a failed result always holds its error
    return error
