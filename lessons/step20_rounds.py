"""Step 20: re-planning rounds. A planner reads what came back and decides the next parallel batch.

What it adds: the plan is made in rounds, each a *superstep*: a batch runs in parallel, and
nothing of the next starts until every result of this one is in. ``Supervisor.replan`` drives
step 19's supervisor: a planner makes the first batch, the batch is one ``run``, and every result
goes into the *ledger* once, with its round and its place in the batch. The planner reads the
ledger and decides: done, or the next batch. Its rules follow up what a result names (the
competitor: ask about its discounts) and reroute a failed subtask (the reviews, from the app
stores). ``max_rounds`` ends what the planner does not, and the run's ``deadline`` is kept; the
run always answers, from the ledger. Step 19's ``stream`` is kept beside the rounds, in every
later step too: a plan known in advance, handed over as each result is final.

What is still wrong: ``max_rounds`` and the deadline are the only budgets the caller sets. A
round that brings nothing new is not noticed, and a planner that asks for ever more subtasks is
not held back: within the deadline, it keeps every worker on subtasks it asks for again and again.
"""

from __future__ import annotations

from lessons.step19_adaptive import open_worker as open_worker  # unchanged since step 17
from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step19_adaptive import supervisor as supervisor
from trio_supervisor import Answer, ReplanLimits, Trace, Worker
from trio_supervisor.testing import ScriptedPlanner

RULES = ScriptedPlanner(
    follow_ups={"competitor": ["competitor discounts"]},  # step 20: a result names it: ask
    reroutes={"reviews": ["customer reviews, from app stores", "customer reviews, from forums"]},
)  # step 20: a failed "reviews" subtask is rerouted to another source, in turn


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
    # step 20: rounds, until the planner is done or max_rounds is reached; the ledger keeps all
    return await chosen.replan(
        task,
        RULES,
        limits=ReplanLimits(max_rounds=max_rounds),
        deadline=deadline,  # the whole run, planning included, as step 19's run had it
        trace=trace,
    )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
