"""Step 33: several supervisors on one run. Each slot is run by one of them, under a lease.

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

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step24_escalation import Escalated, digest, subtasks_of, supervisor
from lessons.step32_typed_replies import THROTTLE, worst_case
from lessons.step32_typed_replies import check_task as check_task
from lessons.step32_typed_replies import open_worker as open_worker  # unchanged since step 32
from lessons.step32_typed_replies import supervise_broken as supervise_broken
from trio_supervisor import (
    Aggregate,
    Answer,
    AwaitingApproval,
    Budget,
    Capacity,
    Durable,
    Hedge,
    Journal,
    ReplanLimits,
    Restarts,
    Status,
    Strategy,
    Trace,
    Worker,
)

LEASE = 30.0  # step 33: seconds a supervisor holds a slot before another may take it over


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
    check_task(task)  # a malformed company is refused before any work starts
    metered = supervisor(worker, max_workers=max_workers, rate=rate, adaptive=adaptive)
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
    shared = [leaves, *metered.meters]  # and one rate and adaptive limit for the tree
    restarts, within = (None, None) if intensity is None else intensity
    bound = Restarts(max_restarts=restarts, within=within, strategy=strategy)
    budget = None if budget_tokens is None else Budget(tokens=budget_tokens, reserve=worst_case)

    def durable(name: str | None) -> Durable | None:  # step 33: the run's slots, shared
        # each slot this supervisor runs is claimed for lease seconds first
        return None if name is None else Durable(name, journal, lease=lease)

    async def research(company: str) -> str:
        child = supervisor(  # a child supervisor, as the chain builds one
            worker,
            max_workers=max_workers,
            worker_timeout=worker_timeout,
            attempts=attempts,
            backoff=backoff,
            seed=seed,
            # a leaf holds a place while it works; one token budget for the tree's leaves
            meters=shared if budget is None else [*shared, budget],
            restarts=bound,  # the child's own intensity and strategy
            hedge=None if hedge is None else Hedge(hedge, throttle=THROTTLE),  # step 29
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        name = None if run_id is None else f"{run_id}/{company}"  # step 27: the child's own
        leaves_of = subtasks_of(company)
        first = None if need is None else min(need, len(leaves_of))  # step 30: first k of n
        aggregate = await child.run(leaves_of, trace=nested, durable=durable(name), need=first)
        if aggregate.gave_up is not None:  # escalation, the child's reason
            raise Escalated(f"{company.partition(':')[0]}: {aggregate.gave_up}")
        for result in aggregate.results:  # step 27: a company is final once its leaves are
            if result.status is Status.AWAITING_APPROVAL:  # a leaf parked: a resume runs it
                raise AwaitingApproval(str(result.error).removeprefix("AwaitingApproval: "))
        if first is not None:  # step 30: the leaves not needed are left out of the digest
            kept = [r for r in aggregate.results if r.status is not Status.CANCELLED]
            aggregate = Aggregate(kept, aggregate.gave_up, first)
        return digest(aggregate)  # step 32: each leaf's Finding read by its fields

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
            durable=durable(run_id),  # each decision and each round's results, kept (step 27)
        )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
