"""Step 5 (step05_fault_isolation), wrongly: it catches failures around the nursery, in its caller:
by then the first failure has cancelled every sibling, so one failure still sinks the run's other
slots.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 5`` must fail
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
        except Exception as exc:
            results[slot] = SubResult.from_exception(subtask, exc)
            raise
        finally:
            limiter.release_on_behalf_of(slot)

    try:
        async with trio.open_nursery() as nursery:
            for slot, subtask in enumerate(plan):
                await limiter.acquire_on_behalf_of(slot)
                nursery.start_soon(run_one, slot, subtask)
    except* Exception:  # the failures are in their slots already
        pass
    return Aggregate([result for result in results if result is not None])


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)
