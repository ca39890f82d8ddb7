"""Step 5: fault isolation. A failing worker fails its own slot, and only that.

What it adds: each worker's ``Exception`` is caught inside its own task and becomes its slot's
``error`` (type and message), so its siblings finish and the run returns every result in plan
order, with ``succeeded`` and ``failed`` counted, and ``synthesize``'s answer says what is
missing. Only ``Exception`` is caught: ``trio.Cancelled``, ``KeyboardInterrupt`` and
``SystemExit`` pass through, so the run can still be cancelled.

What is still wrong: nothing bounds how long a worker may take. One worker that hangs is enough:
it holds its slot and its capacity token forever, the nursery waits for it, and the run never
returns.
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
        except Exception as exc:
            results[slot] = SubResult.from_exception(subtask, exc)
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
