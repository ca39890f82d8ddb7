"""Step 23: a tree of supervisors. A company is a child supervisor; one budget bounds the leaves.

What it adds: a subtask ``acme: pricing, reviews`` is a company, and its parent slot's worker is a
child supervisor over its own subtasks (``acme pricing``, ``acme reviews``), built as the chain
builds every supervisor (step 19's: HTTP sub-agents, retries). The child's aggregate, digested to
one line, is its parent slot's output. The parent is step 22's re-planning supervisor, so rounds,
the ledger and every budget hold over companies; its deadline is a cancel scope, and scopes nest,
so no child outlives it. One ``Capacity`` (and one rate) bounds the leaf workers of the whole
tree, and only the leaves draw from it: a parent that held a place while it waited on its
children would, with as many companies as places, leave none for them, and never end
(``supervise_broken``). How a company is written is the course's format (``lessons/companies``).

What is still wrong: a child always answers its parent, whatever happened below. A child that
gave up past its restart intensity, its leaves cancelled, still hands up a line of missing
results as if it had done its work, and a leaf that fails makes its siblings neither restart
nor stop.
"""

from __future__ import annotations

from lessons.companies import check_task as check_task  # the course's format of a company
from lessons.companies import subtasks_of as subtasks_of
from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step22_llm_planner import open_worker as open_worker  # unchanged since step 18
from lessons.step22_llm_planner import supervisor as supervisor
from trio_supervisor import Aggregate, Answer, Capacity, ReplanLimits, Trace, Worker


def digest(aggregate: Aggregate[str, str]) -> str:
    """A child's aggregate as its parent slot's output: one line, each subtask found or not."""
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
    leaves = Capacity(max_workers)  # step 23: one budget for every leaf worker of the tree
    shared = [leaves, *metered.meters]  # step 23: and one rate and adaptive limit for the tree

    async def research(company: str) -> str:
        child = supervisor(  # step 23: a child supervisor, as the chain builds one
            worker,
            max_workers=max_workers,
            worker_timeout=worker_timeout,
            attempts=attempts,
            intensity=intensity,
            backoff=backoff,
            seed=seed,
            meters=shared,  # step 23: a leaf holds a place, and the tree's rate, as it works
        )
        nested = None if trace is None else trace.nest(company)  # step 23: drawn under it
        return digest(await child.run(subtasks_of(company), trace=nested))

    # step 23: the parent is step 22's, over the children; it only waits on them, and a
    # company is not retried (its leaves were)
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


async def supervise_broken(task: str, worker: Worker[str, str], *, max_workers: int) -> None:
    """The shared-budget deadlock: parents and leaves draw from one ``Capacity``. With at least
    ``max_workers`` companies, the parents hold every place and the run never ends."""
    shared = Capacity(max_workers)

    async def research(company: str) -> str:
        child = supervisor(worker, max_workers=max_workers, meters=[shared])
        return digest(await child.run(subtasks_of(company)))

    await supervisor(research, max_workers=max_workers, meters=[shared]).run(task)


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
