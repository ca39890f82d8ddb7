"""Step 29: hedged requests. Of two attempts of one leaf, the first to succeed wins.

What it adds: ``hedge`` (seconds, or a percentile such as ``"p95"``) gives each company's child
supervisor a ``Hedge``: a leaf still running after that long gets a second request of the same
subtask, with a place of its own; the first to succeed gives the slot its result, the other is
cancelled at once, and a throttle (``THROTTLE``: half a child's attempts; the library's tenth
would let a child of two leaves hedge none) keeps a slow endpoint from being doubled.

What is still wrong: a company still waits for every one of its leaves, even when fewer answers
would do (ask three sources, two are enough): step 30 keeps the first k of n.
"""

from __future__ import annotations

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step24_escalation import Escalated, digest, subtasks_of, supervisor
from lessons.step28_approval_gate import check_task as check_task
from lessons.step28_approval_gate import open_worker as open_worker  # unchanged since step 28
from lessons.step28_approval_gate import supervise_broken as supervise_broken
from trio_supervisor import (
    Answer,
    AwaitingApproval,
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

THROTTLE = 0.5  # step 29: hedges are at most this fraction of a child's attempts


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
            hedge=None if hedge is None else Hedge(hedge, throttle=THROTTLE),  # step 29
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        name = None if run_id is None else f"{run_id}/{company}"  # step 27: the child's own
        leaves_of = subtasks_of(company)
        durable = None if name is None else Durable(name, journal)  # journaled (step 27)
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
            # each decision and each round's results, kept (step 27)
            durable=None if run_id is None else Durable(run_id, journal),
        )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
