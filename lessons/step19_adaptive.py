"""Step 19: adaptive concurrency. The workers allowed are fitted to what the server takes.

What it adds: ``adaptive`` (``Adaptive``), a second meter: it lets fewer workers run than
``max_workers``, fitted to what the server takes. A 429 takes the limit at once to the requests
still in flight (never below half of it). And it reads how long each answer took, round by
round: it grows while more in flight buys more answers a second, and falls to what the server
works on at once when latency grows without them (a queue filling). So a server that takes two
at once soon sees two at once, and its 429s end, where step 17 went on sending four; and a
server that queues instead of refusing, which step 17 keeps four deep, soon has one or two at a
time, each answered about as fast as alone. Step 18's token bucket is kept, taken first.

What is still wrong: the plan never changes, whatever the sub-agents find. A finding that calls
for another subtask, or makes a planned one pointless, is ignored: the supervisor runs the plan it
was given and stops.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import trio

from lessons import step17_http_subagents
from lessons.step18_rate import open_worker as open_worker
from lessons.step18_rate import synthesize as synthesize
from trio_supervisor import Adaptive, Aggregate, Meter, RateLimit, SubResult, Supervisor, Worker


def supervisor(
    worker: Worker[str, str],
    *,
    max_workers: int,
    rate: float | None = None,
    adaptive: bool = False,
    meters: Iterable[Meter] = (),
    **knobs: Any,
) -> Supervisor[str, str]:
    """Step 18's supervisor (step 17's, with its token bucket), each attempt waiting on the
    adaptive limit as well when asked for, after the bucket (and on ``meters``, those a later
    step brings, first)."""
    meters = list(meters)
    if rate is not None:  # at most `rate` attempts start a second, in turn
        meters.append(RateLimit(rate))
    if adaptive:  # the workers allowed: cut on a 429, grown back one at a time
        meters.append(Adaptive(max_workers))
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
    adaptive: bool = False,
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
        adaptive=adaptive,
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
    adaptive: bool = False,
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
        adaptive=adaptive,
    )
    return await chosen.run(task, deadline=deadline)


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
