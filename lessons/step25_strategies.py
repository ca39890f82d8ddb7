"""Step 25: restart strategies. Which of a child's leaves a restart takes.

What it adds: ``strategy`` says which of a child's leaves a restart takes, as OTP's supervisors
name them: ``one_for_one`` the failed leaf alone, ``rest_for_one`` it and every leaf after it
(which may depend on it), ``one_for_all`` every leaf. It goes to each child supervisor's
``Restarts``, with the child's restart intensity.

What is still wrong: every fault contained here is a Python exception. A leaf whose body
crashes its process (``os._exit``, a segfault in a C extension, the out-of-memory killer) takes
every sibling, every parent and the caller down with it.
"""

from __future__ import annotations

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step24_escalation import Escalated as Escalated
from lessons.step24_escalation import check_task as check_task
from lessons.step24_escalation import digest as digest
from lessons.step24_escalation import open_worker as open_worker  # unchanged since step 18
from lessons.step24_escalation import subtasks_of as subtasks_of
from lessons.step24_escalation import supervise_broken as supervise_broken
from lessons.step24_escalation import supervisor as supervisor
from trio_supervisor import Answer, Capacity, ReplanLimits, Restarts, Strategy, Trace, Worker


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
    trace: Trace | None = None,
) -> Answer[str, str]:
    check_task(task)  # a malformed company is refused before any work starts
    metered = supervisor(worker, max_workers=max_workers, rate=rate, adaptive=adaptive)
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
    shared = [leaves, *metered.meters]  # and one rate and adaptive limit for the tree
    restarts, within = (None, None) if intensity is None else intensity
    # step 25: at most R restarts in T s, and which leaves each restart takes
    bound = Restarts(max_restarts=restarts, within=within, strategy=strategy)

    async def research(company: str) -> str:
        child = supervisor(  # a child supervisor, as the chain builds one
            worker,
            max_workers=max_workers,
            worker_timeout=worker_timeout,
            attempts=attempts,
            backoff=backoff,
            seed=seed,
            meters=shared,  # a leaf holds a place, and the tree's rate, as it works
            restarts=bound,  # step 25: the child's own intensity and strategy
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        aggregate = await child.run(subtasks_of(company), trace=nested)
        if aggregate.gave_up is not None:  # escalation, the child's reason
            raise Escalated(f"{company.partition(':')[0]}: {aggregate.gave_up}")
        return digest(aggregate)

    # the parent is step 22's, over the children; it only waits on them, and a company is not
    # retried (its leaves were)
    chosen = supervisor(research, max_workers=max_workers, attempts=1)
    async with open_planner(planner, endpoint, model) as deciding:
        return await chosen.replan(
            task,
            deciding,
            limits=ReplanLimits(
                max_rounds=max_rounds,
                max_subtasks=max_subtasks,
                max_stalls=max_stalls,
                max_resets=max_resets,
            ),
            deadline=deadline,
            trace=trace,
        )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
