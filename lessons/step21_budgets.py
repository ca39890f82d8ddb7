"""Step 21: budgets, stalls and resets. Every budget ends the run with an answer that names it.

What it adds: the budgets of a re-planning run besides ``max_rounds`` and the deadline.
``max_subtasks`` bounds the subtasks dispatched in all rounds (a batch that does not fit is
dispatched as far as it fits, and the run ends after it). A round in which nothing succeeded
that had not succeeded before is a *stall*: the count goes up by one on a stall and down by one
on progress; past ``max_stalls`` the planner is asked for a fresh plan (every failure still
unsettled, tried again), at most ``max_resets`` times, and then the run ends. Whatever ended it,
the answer says which budget (``Answer.ended_by``), and its last line why.

What is still wrong: the planner is a set of rules written in advance. It follows up only the
words it was given, and reroutes only the subtasks it knows another source for.
"""

from __future__ import annotations

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
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
        limits=ReplanLimits(
            max_rounds=max_rounds,
            max_subtasks=max_subtasks,  # step 21: subtasks in all rounds
            max_stalls=max_stalls,  # step 21: stalled rounds counted, past it a fresh plan
            max_resets=max_resets,  # step 21: fresh plans at most, then the run ends
        ),
        deadline=deadline,  # the whole run, planning included, as step 19's run had it
        trace=trace,
    )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
