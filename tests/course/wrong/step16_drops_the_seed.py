"""Step 16 (step16_library), wrongly: its supervisor never passes the seed on to the library:
the waits are drawn from an unseeded generator, and a run cannot be replayed.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 16`` must fail
on it."""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import trio

from lessons.step15_async_input import synthesize as synthesize  # unchanged since step 1
from trio_supervisor import Aggregate, Backoff, Restarts, Retry, SubResult, Supervisor, Worker


def supervisor(
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    attempts: int = 1,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
    retry_on: type[Exception] | tuple[type[Exception], ...] = Exception,
    **more: Any,
) -> Supervisor[str, str]:
    """Part I's knobs as the library takes them; ``more`` goes to ``Supervisor`` as it is (a
    ``restarts=`` there wins over ``intensity``)."""
    if intensity is not None:  # R restarts within T seconds, then the run gives up
        more.setdefault("restarts", Restarts(max_restarts=intensity[0], within=intensity[1]))
    return Supervisor(
        worker,
        max_workers=max_workers,
        timeout=worker_timeout,  # None: no limit, in the library too
        retry=Retry(
            attempts=attempts,
            on=retry_on,  # which failures are retried: every Exception, unless told
            backoff=Backoff(*backoff),  # full jitter below min(most, first * 2 ** (n - 1))
        ),
        **more,
    )


@asynccontextmanager
async def stream(
    task: str | Iterable[str] | AsyncIterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    window: int | None = None,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 1,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> AsyncIterator[AsyncIterator[SubResult[str, str]]]:
    if deadline is not None and not deadline > 0:  # also refuses NaN
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    chosen = supervisor(
        worker,
        max_workers=max_workers,
        worker_timeout=worker_timeout,
        attempts=attempts,
        intensity=intensity,  # a stream refuses it: a result handed over cannot fail later
        backoff=backoff,
        seed=seed,
    )
    with trio.move_on_after(math.inf if deadline is None else deadline):  # the caller's block
        async with chosen.stream(task, window=window) as results:  # None: 4 * max_workers
            yield results


async def supervise(
    task: str | Iterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    window: int | None = None,
    deadline: float | None = None,
    **knobs: Any,
) -> Aggregate[str, str]:
    del window  # a run reads its plan whole: no window holds it back
    chosen = supervisor(worker, max_workers=max_workers, **knobs)
    return await chosen.run(task, deadline=deadline)
