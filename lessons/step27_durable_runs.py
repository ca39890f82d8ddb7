"""Step 27: durable runs. The run is journaled, so a supervisor killed part way resumes.

What it adds: ``supervise`` takes a ``journal`` (the library's ``Journal``, a SQLite file) and a
``run_id``: the parent's rounds are journaled under ``run_id`` (each decision of the planner, each
round's results), each company's child run under ``run_id/company``, every final result once. A
supervisor killed part way (a deploy, an out-of-memory kill, a laptop lid) and started again with
the same ``run_id`` takes what it had finished from the journal (marked journaled in the trace)
and runs only the rest; the planner is not asked again for a round it had decided, and another
task under that ``run_id`` is refused before any work. The parent is built here, as step 22 does,
to give its ``replan`` the journal. A company is final once its leaves are: a child whose leaf is
parked (step 28) parks its parent's slot too, so that a resume runs both again.

What is still wrong: every slot runs as soon as it can. A slot whose side effect needs a
person's yes (a refund above a threshold) has no way to wait for one: the run can only do it,
or fail it.
"""

from __future__ import annotations

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step24_escalation import Escalated, digest, subtasks_of, supervisor
from lessons.step26_processes import check_task as check_task
from lessons.step26_processes import open_worker as open_worker  # unchanged since step 26
from lessons.step26_processes import supervise_broken as supervise_broken
from trio_supervisor import (
    Answer,
    AwaitingApproval,
    Capacity,
    Durable,
    Journal,
    ReplanLimits,
    Restarts,
    Status,
    Strategy,
    Trace,
    Worker,
)


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
    journal: Journal | None = None,
    run_id: str | None = None,
    trace: Trace | None = None,
) -> Answer[str, str]:
    check_task(task)  # a malformed company is refused before any work starts
    metered = supervisor(worker, max_workers=max_workers, rate=rate, adaptive=adaptive)
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
    shared = [leaves, *metered.meters]  # and one rate and adaptive limit for the tree
    restarts, within = (None, None) if intensity is None else intensity
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
            restarts=bound,  # the child's own intensity and strategy
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        name = None if run_id is None else f"{run_id}/{company}"  # step 27: the child's own
        leaves_of = subtasks_of(company)
        durable = None if name is None else Durable(name, journal)  # step 27: journaled
        aggregate = await child.run(leaves_of, trace=nested, durable=durable)
        if aggregate.gave_up is not None:  # escalation, the child's reason
            raise Escalated(f"{company.partition(':')[0]}: {aggregate.gave_up}")
        for result in aggregate.results:  # step 27: a company is final once its leaves are
            if result.status is Status.AWAITING_APPROVAL:  # a leaf parked: a resume runs it
                raise AwaitingApproval(str(result.error).removeprefix("AwaitingApproval: "))
        return digest(aggregate)

    parent = supervisor(research, max_workers=max_workers, attempts=1)  # step 22's parent
    async with open_planner(planner, endpoint, model) as deciding:
        return await parent.replan(
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
            # step 27: each decision and each round's results, kept
            durable=None if run_id is None else Durable(run_id, journal),
        )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
