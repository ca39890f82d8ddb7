"""Step 2 (step02_fan_out), wrongly: it starts each worker on its own and returns an aggregate
of nothing: the workers run, and their results are dropped.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 2`` must fail
on it."""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(task: str, worker: Worker[str, str]) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []

    async def run_one(subtask: str) -> None:
        await worker(subtask)  # the output is never kept

    async with trio.open_nursery() as nursery:
        for subtask in decompose(task):
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
