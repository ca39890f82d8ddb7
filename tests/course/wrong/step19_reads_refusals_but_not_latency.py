"""Step 19 (step19_adaptive), wrongly: its adaptive limit is the rule of refusals
alone (``Adaptive(max_workers, latency=False)``): it ends the 429s, but against a server that
queues and never refuses it grows to ``max_workers`` and stays there, every request waiting
behind the others, as step 17's fixed workers do.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 19`` must fail
on it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lessons import step17_http_subagents
from lessons.step17_http_subagents import open_worker as open_worker
from lessons.step17_http_subagents import synthesize as synthesize
from trio_supervisor import Adaptive, Aggregate, Meter, RateLimit, Supervisor, Worker


def supervisor(
    worker: Worker[str, str],
    *,
    max_workers: int,
    rate: float | None = None,
    adaptive: bool = False,
    meters: Iterable[Meter] = (),
    **knobs: Any,
) -> Supervisor[str, str]:
    """Step 17's supervisor, each attempt waiting on the meters asked for as well (and on
    ``meters``, those a later step brings)."""
    meters = list(meters)
    if rate is not None:  # at most `rate` attempts start a second, in turn
        meters.append(RateLimit(rate))
    if adaptive:  # the old rule: cut on a 429, grown on answers, their latency never read
        meters.append(Adaptive(max_workers, latency=False))
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
