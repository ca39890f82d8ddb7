"""Step 31: several supervisors on one run. Each slot is run by one of them, under a lease.

What it adds: ``lease`` (seconds). A supervisor given a ``journal`` and a ``run_id`` that others
share (replicas of a deploy, workers of a queue of runs, a resume started while the first process
is only slow) claims each slot in the journal for ``lease`` seconds before its worker is called,
renews the claim every third of it while the slot runs, and skips a slot another holds: it reads
its result from the journal once its holder is done, or takes it over once the lease ran out (its
holder was killed, or hung). So each slot's worker is called once across the supervisors, but for
a killed one's slots, run again only after its lease ran out; each returns the answer one
supervisor alone would. ``lease=None`` shares nothing, as the step before.

What is still wrong: the supervisors share the run's slots, but each keeps its own limits:
three supervisors of ``max_workers=4`` (or ``rate=10``) call one endpoint twelve at once (thirty
a second). And the course's journal is a SQLite file, shared only on one machine.
"""

from __future__ import annotations

from typing import Any

from lessons import step30_typed_replies as step30
from lessons.step30_typed_replies import check_task as check_task
from lessons.step30_typed_replies import open_worker as open_worker  # unchanged since step 30
from lessons.step30_typed_replies import supervise_broken as supervise_broken
from trio_supervisor import Answer, Journal, Strategy, Trace, Worker

LEASE = 30.0  # step 31: seconds a supervisor holds a slot before another may take it over


async def supervise(
    task: str,
    worker: Worker[str, Any],
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
    planner: str = "scripted",
    endpoint: str | None = None,
    model: str | None = None,
    strategy: Strategy = "one_for_one",
    hedge: float | str | None = None,
    need: int | None = None,
    budget_tokens: int | None = None,
    journal: Journal | None = None,
    run_id: str | None = None,
    lease: float | None = LEASE,
    trace: Trace | None = None,
) -> Answer[str, str]:
    if journal is not None:  # step 31: the supervisors on this run share its slots
        journal.lease = lease  # each slot this one runs is claimed for lease seconds first
    return await step30.supervise(
        task,
        worker,
        max_workers=max_workers,
        worker_timeout=worker_timeout,
        attempts=attempts,
        intensity=intensity,
        backoff=backoff,
        seed=seed,
        rate=rate,
        adaptive=adaptive,
        max_rounds=max_rounds,
        max_subtasks=max_subtasks,
        max_stalls=max_stalls,
        max_resets=max_resets,
        deadline=deadline,
        planner=planner,
        endpoint=endpoint,
        model=model,
        strategy=strategy,
        hedge=hedge,
        need=need,
        budget_tokens=budget_tokens,
        journal=journal,
        run_id=run_id,
        trace=trace,
    )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
