"""Step 2: fan out. A nursery starts one task per subtask, all at once.

What it adds: ``trio.open_nursery`` and ``start_soon``. Every worker runs at the same time, so the
wall time falls from the sum of the latencies to the longest one. The nursery waits for all its
tasks before its ``async with`` block ends, so no worker outlives ``supervise``.

What is still wrong: nothing bounds how many workers run at once: a plan of a thousand subtasks
starts a thousand sub-agents together, past any rate limit or memory budget. Two more flaws wait
for later steps: results are appended as workers complete, so completion order leaks into the
result order; and one failing worker cancels its siblings, so the run raises an exception group
and every finished result is lost.
"""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(task: str, worker: Worker[str, str]) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []

    async def run_one(subtask: str) -> None:
        output = await worker(subtask)
        results.append(SubResult(subtask, output=output))

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


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
