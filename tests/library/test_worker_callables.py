"""Workers: any callable whose call returns an awaitable; anything else is refused when called."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from tests.library.scripted_worker import PATHS
from trio_supervisor import Retry, Supervisor


async def fetch(subtask: int) -> str:
    await trio.sleep(subtask / 32)
    return f"fetched {subtask}"


def logged(worker: Callable[[int], Awaitable[str]]) -> Callable[[int], Awaitable[str]]:
    """A plain (sync) decorator, without functools.wraps: nothing tells it wraps an async def."""

    def call(subtask: int) -> Awaitable[str]:
        return worker(subtask)

    return call


class Agent:
    """An object with an ``async def __call__`` taking a setting before the subtask."""

    async def __call__(self, prefix: str, subtask: int) -> str:
        await trio.sleep(subtask / 32)
        return f"{prefix} {subtask}"


@pytest.mark.parametrize(
    ("worker", "prefix"),
    [
        (lambda subtask: fetch(subtask), "fetched"),
        (logged(fetch), "fetched"),
        (functools.partial(Agent(), "fetched"), "fetched"),
        (functools.partial(Agent(), "agent"), "agent"),
    ],
    ids=["lambda", "sync decorator", "partial of an async __call__", "partial, other setting"],
)
@pytest.mark.parametrize("path", sorted(PATHS))
async def test_any_callable_returning_an_awaitable_is_a_worker(
    autojump_clock: Any, worker: Callable[[int], Awaitable[str]], prefix: str, path: str
) -> None:
    aggregate = await Supervisor(worker, max_workers=2, **PATHS[path]).run([1, 2, 3])
    assert [result.output for result in aggregate.results] == [f"{prefix} {n}" for n in (1, 2, 3)]
    assert aggregate.succeeded == 3


def returns_the_subtask(subtask: int) -> int:
    return subtask


class SyncCallable:
    def __call__(self, subtask: int) -> int:
        return subtask


NOT_AWAITABLE = pytest.mark.parametrize(
    "worker",
    [
        returns_the_subtask,
        SyncCallable(),
        lambda subtask: subtask,
        functools.partial(returns_the_subtask),
        lambda subtask: None,
        lambda subtask: [fetch],
    ],
    ids=["def", "sync __call__", "lambda", "partial", "returns None", "returns a list"],
)


@NOT_AWAITABLE
def test_a_callable_is_accepted_when_the_supervisor_is_made(worker: Any) -> None:
    assert Supervisor(worker, max_workers=1).worker is worker


@NOT_AWAITABLE
@pytest.mark.parametrize("path", sorted(PATHS))
async def test_a_worker_returning_no_awaitable_fails_the_run_naming_the_fix(
    autojump_clock: Any, worker: Any, path: str
) -> None:
    with pytest.raises(TypeError, match=r"must return an awaitable") as excinfo:
        await Supervisor(worker, max_workers=2, **PATHS[path]).run([1, 2, 3])
    assert type(excinfo.value) is TypeError  # bare: not in an exception group
    assert "async def" in str(excinfo.value)


@NOT_AWAITABLE
async def test_a_worker_returning_no_awaitable_fails_leaving_the_stream_naming_the_fix(
    autojump_clock: Any, worker: Any
) -> None:
    with pytest.raises(TypeError, match=r"must return an awaitable") as excinfo:  # noqa: PT012
        async with Supervisor(worker, max_workers=2).stream([1, 2, 3]) as results:
            async for _ in results:
                pass
    assert type(excinfo.value) is TypeError
    assert "async def" in str(excinfo.value)


@pytest.mark.parametrize("path", sorted(PATHS))
async def test_a_worker_returning_no_awaitable_is_not_a_failed_slot(
    autojump_clock: Any, path: str
) -> None:
    """The misuse is the program's, not one subtask's: it is not isolated into a FAILED slot,
    even with retries, and the other slots' outcomes do not hide it."""
    calls = 0

    def sometimes_sync(subtask: int) -> Any:
        nonlocal calls
        calls += 1
        return fetch(subtask) if subtask != 2 else subtask

    supervisor = Supervisor(sometimes_sync, max_workers=1, retry=Retry(attempts=3), **PATHS[path])
    with pytest.raises(TypeError, match=r"must return an awaitable"):
        await supervisor.run([1, 2, 3])
    assert calls == 2  # slot 2 was not retried, slot 3 never called


async def takes_two(prefix: str, subtask: int) -> str:
    await trio.sleep(subtask / 32)
    return f"{prefix} {subtask}"


async def takes_a_keyword_only(*, subtask: int) -> int:
    return subtask


@pytest.mark.parametrize(
    ("worker", "shown", "why"),
    [
        (lambda: fetch(1), r"<lambda>\(\)", "too many positional arguments"),
        (takes_two, r"takes_two\(prefix, subtask\)", "missing a required argument"),
        (takes_a_keyword_only, r"takes_a_keyword_only\(\*, subtask\)", "too many"),
    ],
    ids=["no parameter", "two parameters", "keyword-only"],
)
def test_a_worker_that_cannot_take_one_subtask_is_refused_when_the_supervisor_is_made(
    worker: Any, shown: str, why: str
) -> None:
    with pytest.raises(
        TypeError,
        match=rf"^worker must be callable with one subtask as its only argument, but {shown} "
        rf"is not \({why}.*\): make it take the subtask, and give any other parameter a "
        r"default or bind it with functools.partial$",
    ):
        Supervisor(worker, max_workers=1)


@pytest.mark.parametrize(
    "worker",
    [
        functools.partial(takes_two, "bound"),
        lambda subtask, prefix="default": takes_two(prefix, subtask),
        lambda *args: takes_two("star", *args),
        print,  # a builtin: its signature is read, and it takes one argument
    ],
    ids=["partial", "a default", "*args", "builtin"],
)
def test_a_worker_that_can_take_one_subtask_is_accepted(worker: Any) -> None:
    assert Supervisor(worker, max_workers=1).worker is worker


def test_a_worker_is_checked_on_its_own_defaults_though_one_of_the_same_code_passed() -> None:
    """A function found callable with one subtask is not read again, but one made from the
    same code with a default fewer, or wrapping another (``functools.wraps``), is."""

    def made(*defaults: Any) -> Any:
        async def worker(prefix: str, subtask: int = 0) -> str:
            return f"{prefix} {subtask}"

        worker.__defaults__ = defaults or None
        return worker

    assert Supervisor(made("bound", 0), max_workers=1)  # both parameters have a default
    with pytest.raises(TypeError, match="missing a required argument: 'subtask'"):
        Supervisor(made(), max_workers=1)  # the same code, no default

    def wrapping(wrapped: Any = None) -> Any:
        async def worker(subtask: int) -> str:
            return await takes_two("wrapped", subtask)

        return worker if wrapped is None else functools.wraps(wrapped)(worker)

    assert Supervisor(wrapping(), max_workers=1)
    with pytest.raises(TypeError, match=r"takes_two\(prefix, subtask\)"):
        Supervisor(wrapping(takes_two), max_workers=1)  # inspect reads takes_two's signature
