"""Step 4 (step04_ordered_slots), wrongly: it appends each result as it completes, then sorts
them by subtask name: the plan's order only where the names happen to sort in it.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 4`` must fail
on it."""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(
    task: str, worker: Worker[str, str], *, max_workers: int
) -> Aggregate[str, str]:
    plan = decompose(task)
    results: list[SubResult[str, str] | None] = [None] * len(plan)
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)

    async def run_one(slot: int, subtask: str) -> None:
        try:
            output = await worker(subtask)
            results[slot] = SubResult(subtask, output=output)
        finally:
            limiter.release_on_behalf_of(slot)

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(plan):
            await limiter.acquire_on_behalf_of(slot)
            nursery.start_soon(run_one, slot, subtask)
    kept = [result for result in results if result is not None]
    return Aggregate(sorted(kept, key=lambda result: result.subtask))


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)
