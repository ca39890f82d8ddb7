"""Step 33 (step33_many_supervisors), wrongly: ``lease`` is taken and never given to the
journal, which goes on as one supervisor's: every supervisor on the shared run runs every slot.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 33`` must fail
on it."""

from __future__ import annotations

from lessons import step32_typed_replies as step32
from lessons.step32_typed_replies import check_task as check_task
from lessons.step32_typed_replies import open_worker as open_worker
from lessons.step32_typed_replies import supervise_broken as supervise_broken
from trio_supervisor import Answer, Journal, Strategy, Trace, Worker

LEASE = 30.0  # step 33: seconds a supervisor holds a slot before another may take it over


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
    del lease  # taken, and never given to the journal
    return await step32.supervise(
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
