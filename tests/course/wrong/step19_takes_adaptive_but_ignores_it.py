"""Step 19 (step19_adaptive), wrongly: it takes ``adaptive`` and never adds the meter:
however many 429s come back, the workers allowed stay as many.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 19`` must fail
on it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lessons import step17_http_subagents
from lessons.step18_rate import open_worker as open_worker
from lessons.step18_rate import synthesize as synthesize
from trio_supervisor import Aggregate, Meter, RateLimit, Supervisor, Worker


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
    del adaptive  # the mistake: taken, and the meter never added
    return step17_http_subagents.supervisor(worker, max_workers=max_workers, meters=meters, **knobs)


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
