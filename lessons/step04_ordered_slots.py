"""Step 4: ordered slots. Each result goes into its own slot of a pre-sized list.

What it adds: the plan is made once, a list of ``len(plan)`` empty slots is laid out, and each
worker writes its result at its subtask's own index. The results come back in plan order by
construction, whatever order the workers complete in; nothing needs sorting afterwards.

What is still wrong: one failing worker still cancels all its siblings (a nursery cancels every
task in it when one raises), and the run raises an exception group instead of returning the
results it had.
"""

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
    return Aggregate([result for result in results if result is not None])


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
