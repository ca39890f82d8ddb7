"""Step 16: the library. Step 15's stream, rewritten on the library's ``Supervisor``.

What it adds: nothing a reader of Part I has not written. ``supervisor`` turns Part I's knobs into
the library's: ``worker_timeout`` is ``timeout`` (None for no limit in both), the backoff tuple a
``Backoff``, the restart intensity a ``Restarts``. ``stream`` is the library's stream under a
deadline (a ``trio.move_on_after`` around the caller's block: the library's stream has none),
``supervise`` the library's ``run``, which has one. Part I's laws hold, but one on step 15's own
jitter sequence (the library draws its waits from a seeded generator of its own); what differs is
what step 15 got wrong: with an endless input a deadline ends the stream, and an
exception raised in the caller's block comes out as it was raised, not in an exception group.

What is still wrong: the sub-agent is a simulation in this process. A real sub-agent is an LLM
call across a network, with costs, rate limits and failures that no simulation here has; the
next step puts one behind the worker.
"""

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
            seed=seed,  # the jitter's own random.Random, seeded
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


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
