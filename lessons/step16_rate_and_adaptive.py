"""Step 16: a rate and adaptive concurrency. Temporary: the interface of the step, until it lands.

What it adds: ``rate`` spaces attempts with a token bucket, ``adaptive`` fits the workers allowed
to what the server holds on a 429.

What is still wrong: the plan never changes, whatever the sub-agents find.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import trio

from lessons.step13_lazy_input import synthesize as synthesize
from lessons.step14_real_subagents import open_worker as open_worker
from trio_supervisor import (
    Adaptive,
    Aggregate,
    Backoff,
    Meter,
    RateLimit,
    Restarts,
    Supervisor,
    Worker,
)
from trio_supervisor.agents import TRANSIENT


def supervisor(
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    attempts: int = 4,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
    rate: float | None = None,
    adaptive: bool = False,
    **more: Any,
) -> Supervisor[str, str]:
    meters: list[Meter] = []
    if rate is not None:
        meters.append(RateLimit(rate))  # step 16: a token bucket
    if adaptive:
        meters.append(Adaptive(max_workers))  # step 16: fitted to the server on a 429
    if intensity is not None:
        more.setdefault("restarts", Restarts(max_restarts=intensity[0], within=intensity[1]))
    return Supervisor(
        worker,
        max_workers=max_workers,
        timeout=worker_timeout,
        attempts=attempts,
        retry_on=(*TRANSIENT, trio.TooSlowError),
        backoff=Backoff(*backoff),
        seed=seed,
        meters=meters,
        **more,
    )


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
