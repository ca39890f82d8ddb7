"""Step 27 (step27_durable_runs), wrongly: each company's child run is journaled under the
parent's own ``run_id``, not ``run_id/company``: the children's results and the parent's rounds
are kept under one name.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 27`` must fail
on it."""

from __future__ import annotations

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
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
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
            rate=rate,
            adaptive=adaptive,
            meters=[leaves],  # a leaf holds a place while it works
            restarts=bound,  # the child's own intensity and strategy
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        name = run_id  # step 27: the child's own
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
