"""Step 18: a rate limit. At most ``rate`` requests start a second, whatever the workers.

What it adds: a *meter*, something each attempt waits on before it starts, besides a free
worker. ``rate`` is a token bucket (``RateLimit``): at most ``rate`` attempts start a second,
retries included, taking turns, to stay under an endpoint's budget of requests. A dozen at two
a second through a server that takes two at once meet no 429 at all, where step 17 sent four at
once and met one on most attempts.

What is still wrong: the rate is a number the caller must know, and it says nothing of how many
are in flight. A server that takes two at once refuses a third whatever the rate, and one that
queues instead of refusing answers each request later the more are sent: step 19 fits the
workers to what the server takes.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import trio

from lessons import step17_http_subagents
from lessons.step17_http_subagents import open_worker as open_worker
from lessons.step17_http_subagents import synthesize as synthesize
from trio_supervisor import Aggregate, Meter, RateLimit, SubResult, Supervisor, Worker


def supervisor(
    worker: Worker[str, str],
    *,
    max_workers: int,
    rate: float | None = None,
    meters: Iterable[Meter] = (),
    **knobs: Any,
) -> Supervisor[str, str]:
    """Step 17's supervisor, each attempt waiting on the token bucket asked for as well (and on
    ``meters``, those a later step brings)."""
    meters = list(meters)
    if rate is not None:  # at most `rate` attempts start a second, in turn
        meters.append(RateLimit(rate))
    return step17_http_subagents.supervisor(worker, max_workers=max_workers, meters=meters, **knobs)


@asynccontextmanager
async def stream(
    task: str | Iterable[str] | AsyncIterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    window: int | None = None,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 4,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
    rate: float | None = None,
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
        rate=rate,
    )
    with trio.move_on_after(math.inf if deadline is None else deadline):  # the caller's block
        async with chosen.stream(task, window=window) as results:  # None: 4 * max_workers
            yield results


async def supervise(
    task: str | Iterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 4,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
    rate: float | None = None,
) -> Aggregate[str, str]:
    chosen = supervisor(
        worker,
        max_workers=max_workers,
        worker_timeout=worker_timeout,
        attempts=attempts,
        intensity=intensity,
        backoff=backoff,
        seed=seed,
        rate=rate,
    )
    return await chosen.run(task, deadline=deadline)


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
