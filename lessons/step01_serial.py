"""Step 1: serial. The plan runs one subtask after another.

What it adds: a plan (``decompose``), a loop that awaits each worker in turn, and
``synthesize``, which merges the results into one answer in plan order and says when it is
degraded (every later step keeps it as it is). The results come back in plan order because
nothing ever runs at the same time, and the first failure ends the run: its exception escapes,
and no subtask after it runs.

What is still wrong: the subtasks are independent, yet each one waits for the one before it, so
the wall time is the sum of every latency.
"""

from __future__ import annotations

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(task: str, worker: Worker[str, str]) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []

    async def run_one(subtask: str) -> None:
        output = await worker(subtask)
        results.append(SubResult(subtask, output=output))

    for subtask in decompose(task):
        await run_one(subtask)
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
