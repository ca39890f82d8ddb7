"""Step 3 (step03_capacity_limiter), wrongly: it holds the token only around ``start_soon``: it is
given back as soon as the task is scheduled, so nothing bounds the workers.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 3`` must fail
on it."""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(
    task: str, worker: Worker[str, str], *, max_workers: int
) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)

    async def run_one(slot: int, subtask: str) -> None:
        output = await worker(subtask)
        results.append(SubResult(subtask, output=output))

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(decompose(task)):
            async with limiter:
                nursery.start_soon(run_one, slot, subtask)
    return Aggregate(results)


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)
