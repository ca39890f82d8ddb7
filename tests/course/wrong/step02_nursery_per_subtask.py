"""Step 2 (step02_fan_out), wrongly: it opens a nursery per subtask inside the loop: each nursery
waits for its one task before the next starts.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 2`` must fail
on it."""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(task: str, worker: Worker[str, str]) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []

    async def run_one(subtask: str) -> None:
        output = await worker(subtask)
        results.append(SubResult(subtask, output=output))

    for subtask in decompose(task):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_one, subtask)
    return Aggregate(results)


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)
