"""Step 21 (step21_budgets), wrongly: it takes ``max_subtasks``, ``max_stalls`` and
``max_resets`` but never passes them to ``replan``: the library's defaults bound the run,
whatever the caller asked.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 21`` must fail
on it."""

from __future__ import annotations

from lessons.step20_rounds import RULES as RULES
from lessons.step20_rounds import open_worker as open_worker  # unchanged since step 18
from lessons.step20_rounds import supervisor as supervisor
from trio_supervisor import Answer, ReplanLimits, Trace, Worker


async def supervise(
    task: str,
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
    max_rounds: int = 5,
    max_subtasks: int = 20,
    max_stalls: int = 2,
    max_resets: int = 1,
    deadline: float | None = None,
    trace: Trace | None = None,
) -> Answer[str, str]:
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
    return await chosen.replan(
        task,
        RULES,
        limits=ReplanLimits(max_rounds=max_rounds),
        deadline=deadline,  # step 21: the whole run, planning included
        trace=trace,
    )
