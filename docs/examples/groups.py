"""An exception raised in the caller's block of an ``@asynccontextmanager`` that yields inside a
nursery comes out wrapped in an ExceptionGroup, unless the context manager keeps it out of the
nursery. tests/docs/test_docs_examples.py runs both."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import trio


async def tick(ticks: list[float]) -> None:
    """The background work: note the time once a second, until cancelled."""
    while True:
        await trio.sleep(1)
        ticks.append(trio.current_time())


@asynccontextmanager
async def ticking() -> AsyncIterator[list[float]]:
    """The caller's block runs at the ``yield``, inside the nursery: what it raises is thrown in
    there, and the nursery gathers it, with its tasks' errors, into a group."""
    ticks: list[float] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick, ticks)
        yield ticks
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def ticking_bare() -> AsyncIterator[list[float]]:
    """The same, but the caller's exception is caught at the ``yield``, kept out of the nursery,
    and raised again once the nursery has closed: bare, as it was raised."""
    ticks: list[float] = []
    raised: Exception | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick, ticks)
        try:
            yield ticks
        except Exception as exc:  # not BaseException: a Cancelled goes on into the nursery
            raised = exc
        nursery.cancel_scope.cancel()
    if raised is not None:
        raise raised


async def caller(manager: Callable[[], AbstractAsyncContextManager[list[float]]]) -> None:
    """The caller's block raises a KeyError of its own after 2.5 seconds."""
    async with manager() as ticks:
        await trio.sleep(2.5)
        raise KeyError(f"{len(ticks)} ticks")


async def what_the_caller_catches(
    manager: Callable[[], AbstractAsyncContextManager[list[float]]],
) -> str:
    """What comes out of the caller's ``async with`` block."""
    try:
        await caller(manager)
    except Exception as exc:
        if isinstance(exc, ExceptionGroup):
            inside = ", ".join(repr(inner) for inner in exc.exceptions)
            return f"ExceptionGroup of [{inside}]"
        return repr(exc)
    return "nothing"
