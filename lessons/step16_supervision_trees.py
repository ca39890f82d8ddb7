"""Step 16: supervision trees. A worker may itself be a supervisor, one budget bounds the leaves.

What it adds: each company (``acme: pricing, reviews``) is a child supervisor over its own
subtasks, and its aggregate, digested, is its parent slot's output. Cancel scopes nest, so no
child outlives its parent's timeout or deadline. A child that gives up fails its parent's slot
with its reason (escalation), and children that depend on each other restart together
(``strategy="rest_for_one"``). One ``Capacity`` bounds the leaf workers of the whole tree, and
only the leaves draw from it: a parent that held a place while it waited on its children would,
with enough companies, leave none for them, and never end (``supervise_broken``).

What is still wrong: every fault contained here is a Python exception. A worker that crashes
its process (``os._exit``, a segfault in a C extension, the out-of-memory killer) takes every
sibling, every parent and the caller down with it.
"""

from __future__ import annotations

import math

from lessons.step13_lazy_input import synthesize as synthesize  # unchanged since step 5
from trio_supervisor import (
    Aggregate,
    Backoff,
    Capacity,
    Restarts,
    Strategy,
    Supervisor,
    Trace,
    Worker,
    decompose,
)

NO_WAIT = Backoff(initial=0, maximum=0)  # restarts at once: the course's runs stay short


class Escalated(Exception):
    """A child supervisor gave up, or found nothing: its parent's slot fails with the reason."""


def subtasks_of(company: str) -> list[str]:
    """``"acme: pricing, reviews"`` -> ``["acme pricing", "acme reviews"]``; ``"acme"`` ->
    ``["acme"]``.

    Raises:
      ValueError: for a company without a name (``": x, y"``), or whose colon lists nothing
        (``"acme: "``).
    """
    name, colon, listed = company.partition(":")
    aspects = [aspect.strip() for aspect in listed.split(",") if aspect.strip()]
    rule = "a company is 'name' or 'name: subtask, subtask'"
    if not name.strip():
        raise ValueError(f"{rule}, got {company.strip()!r}: it has no name")
    if colon and not aspects:
        raise ValueError(f"{rule}, got {company.strip()!r}: nothing follows its colon")
    return [f"{name.strip()} {aspect}" for aspect in aspects] or [name.strip()]


def check_task(task: str) -> None:
    """Refuse a task whose companies are not each ``name`` or ``name: a, b`` (see
    ``subtasks_of``), before any work starts.

    Raises:
      ValueError: naming the first malformed company, and the rule.
    """
    for company in decompose(task):
        subtasks_of(company)


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float = math.inf,
    deadline: float = math.inf,
    attempts: int = 1,
    intensity: tuple[int, float] | None = None,
    strategy: Strategy = "one_for_one",
    company_attempts: int = 2,
    company_timeout: float = math.inf,
    trace: Trace | None = None,
) -> Aggregate[str, str]:
    check_task(task)  # a malformed company is refused before any work starts
    leaves = Capacity(max_workers)  # step 16: one budget for every leaf worker of the tree
    restarts, within = (None, None) if intensity is None else intensity
    # step 16: which children a restart takes
    bound = Restarts(max_restarts=restarts, within=within, strategy=strategy)

    async def research(company: str) -> str:
        child = Supervisor(
            worker,
            max_workers=max_workers,
            capacity=leaves,  # step 16: a leaf holds a place while it works
            timeout=None if math.isinf(worker_timeout) else worker_timeout,
            attempts=attempts,
            restarts=bound,
            backoff=NO_WAIT,
        )
        nested = None if trace is None else trace.nest(company)  # step 16: drawn under it
        aggregate = await child.run(subtasks_of(company), trace=nested)
        if aggregate.gave_up is not None:  # step 16: escalation, the child's reason
            raise Escalated(f"{company.partition(':')[0]}: {aggregate.gave_up}")
        return digest(aggregate)

    parent = Supervisor(  # step 16: no capacity, a parent only waits on its children
        research,
        max_workers=max_workers,
        timeout=None if math.isinf(company_timeout) else company_timeout,
        attempts=company_attempts,
        backoff=NO_WAIT,
    )
    limit = None if math.isinf(deadline) else deadline
    return await parent.run(decompose(task), deadline=limit, trace=trace)


async def supervise_broken(task: str, worker: Worker[str, str], *, max_workers: int) -> None:
    """The shared-budget deadlock: parents and leaves draw from one ``Capacity``. With at least
    ``max_workers`` companies, the parents hold every place and the run never ends."""
    shared = Capacity(max_workers)

    async def research(company: str) -> str:
        child = Supervisor(worker, max_workers=max_workers, capacity=shared)
        return digest(await child.run(subtasks_of(company)))

    parent = Supervisor(research, max_workers=max_workers, capacity=shared)
    await parent.run(decompose(task))


def digest(aggregate: Aggregate[str, str]) -> str:
    """A child's aggregate as its parent slot's output: one line, each subtask found or not;
    a child that found nothing has no answer, not a degraded one: its parent's slot fails."""
    if not aggregate.succeeded:
        raise Escalated(f"nothing found: {aggregate.results[0].error}")
    if len(aggregate) == 1:
        return str(aggregate.results[0].output)
    return "; ".join(
        f"{result.subtask}: {result.output if result.ok else 'missing'}"
        for result in aggregate.results
    )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
