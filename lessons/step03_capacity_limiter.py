"""Step 3: a capacity limiter. At most ``max_workers`` workers run at once.

What it adds: a ``trio.CapacityLimiter``. The supervisor acquires a token *before* it starts a
task, on behalf of the slot (another task, the worker's, gives it back), so at most
``max_workers`` worker tasks are alive at any instant and subtasks start in plan order. The
worker's task releases the token when it ends, however it ends. ``max_workers`` below 1 is
refused: a limiter with no token would admit nobody, and the run would never end.

What is still wrong: results are still appended as workers complete, so a fast late subtask comes
back before a slow early one: completion order leaks into the result order.
"""

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
        try:
            output = await worker(subtask)
            results.append(SubResult(subtask, output=output))
        finally:
            limiter.release_on_behalf_of(slot)

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(decompose(task)):
            await limiter.acquire_on_behalf_of(slot)
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


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
