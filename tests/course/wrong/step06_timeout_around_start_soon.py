"""Step 6 (step06_worker_timeout), wrongly: it puts the timeout around ``start_soon`` in the loop:
``start_soon`` returns at once, so the timeout bounds nothing, and a hung worker holds its slot
forever.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 6`` must fail
on it."""

from __future__ import annotations

import math

import trio

from trio_supervisor import Aggregate, Status, SubResult, Worker, decompose


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
) -> Aggregate[str, str]:
    if worker_timeout is not None and not worker_timeout > 0:  # also refuses NaN
        raise ValueError(f"worker_timeout must be > 0 seconds, got {worker_timeout}")
    timeout = math.inf if worker_timeout is None else worker_timeout  # None: no limit
    plan = decompose(task)
    results: list[SubResult[str, str] | None] = [None] * len(plan)
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)

    async def run_one(slot: int, subtask: str) -> None:
        try:
            output = await worker(subtask)
            results[slot] = SubResult(subtask, output=output)
        except trio.TooSlowError:
            error = f"timed out: no result within {worker_timeout:g}s"
            results[slot] = SubResult(subtask, error=error, status=Status.TIMED_OUT)
        except Exception as exc:
            results[slot] = SubResult.from_exception(subtask, exc)
        finally:
            limiter.release_on_behalf_of(slot)

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(plan):
            await limiter.acquire_on_behalf_of(slot)
            with trio.fail_after(timeout):  # noqa: ASYNC100 (the mistake: nothing awaits here)
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
