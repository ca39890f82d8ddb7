"""Step 24: escalation. A child that gives up fails its parent's slot.

What it adds: a child supervisor that gives up (past its restart intensity, ``intensity=(R,
T)``), or that found nothing at all, does not answer its parent: it raises ``Escalated`` with its
reason, and its parent's slot fails with it, as an OTP supervisor that passes its restart
intensity terminates and leaves its own supervisor to decide. Here the parent is a re-planning
supervisor, so the ledger keeps the failure, the planner may reroute it, and the answer is
degraded if nothing settles it.

What is still wrong: a restart takes the failed leaf alone, whatever its siblings made of it. A
leaf that read what a sibling wrote before that sibling failed keeps a stale note, and a company
whose leaves only make sense together cannot say so: step 25 names which leaves a restart takes.
"""

from __future__ import annotations

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step23_trees import check_task as check_task
from lessons.step23_trees import open_worker as open_worker  # unchanged since step 18
from lessons.step23_trees import subtasks_of as subtasks_of
from lessons.step23_trees import supervise_broken as supervise_broken
from lessons.step23_trees import supervisor as supervisor
from trio_supervisor import Aggregate, Answer, Capacity, ReplanLimits, Trace, Worker


class Escalated(Exception):
    """A child supervisor gave up, or found nothing: its parent's slot fails with the reason."""


def digest(aggregate: Aggregate[str, str]) -> str:
    """A child's aggregate as its parent slot's output: one line, each subtask found or not;
    a child that found nothing has no answer, not a degraded one: its parent's slot fails."""
    if not aggregate.succeeded:  # step 24: nothing to hand up
        raise Escalated(f"nothing found: {aggregate.results[0].error}")
    if len(aggregate) == 1 and aggregate.results[0].ok:  # a bare name: its leaf's own output
        return str(aggregate.results[0].output)
    return "; ".join(
        f"{result.subtask}: {result.output if result.ok else 'missing'}"
        for result in aggregate.results
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
    trace: Trace | None = None,
) -> Answer[str, str]:
    check_task(task)  # a malformed company is refused before any work starts
    metered = supervisor(worker, max_workers=max_workers, rate=rate, adaptive=adaptive)
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
    shared = [leaves, *metered.meters]  # and one rate and adaptive limit for the tree

    async def research(company: str) -> str:
        child = supervisor(  # a child supervisor, as the chain builds one
            worker,
            max_workers=max_workers,
            worker_timeout=worker_timeout,
            attempts=attempts,
            intensity=intensity,  # at most R restarts in T s, then the child gives up
            backoff=backoff,
            seed=seed,
            meters=shared,  # a leaf holds a place, and the tree's rate, as it works
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        aggregate = await child.run(subtasks_of(company), trace=nested)
        if aggregate.gave_up is not None:  # step 24: escalation, the child's reason
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
