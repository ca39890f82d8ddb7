"""Step 8 (step08_retries), wrongly: it retries a failure but keeps a timeout as final: a call
that hung once is never tried again, though a timeout may pass as well as any failure.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 8`` must fail
on it."""

from __future__ import annotations

import math
import random

import trio

from trio_supervisor import Aggregate, Status, SubResult, Worker, decompose


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 1,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> Aggregate[str, str]:
    if worker_timeout is not None and not worker_timeout > 0:  # also refuses NaN
        raise ValueError(f"worker_timeout must be > 0 seconds, got {worker_timeout}")
    if deadline is not None and not deadline > 0:
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    timeout = math.inf if worker_timeout is None else worker_timeout  # None: no limit
    budget = math.inf if deadline is None else deadline  # None: no deadline
    if not attempts >= 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    if not 0 <= backoff[0] <= backoff[1]:
        raise ValueError(f"backoff must be (first, most) with 0 <= first <= most, got {backoff}")
    plan = decompose(task)
    results: list[SubResult[str, str] | None] = [None] * len(plan)
    calls = [0] * len(plan)  # how many times each slot's worker was called
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)
    jitter = random.Random(seed)  # the backoffs' draws: the same seed replays the same run

    async def run_one(slot: int, subtask: str) -> None:
        calls[slot] += 1
        try:
            with trio.fail_after(timeout):  # in the worker's own task: times it alone
                output = await worker(subtask)
            results[slot] = SubResult(subtask, output=output, attempts=calls[slot])
        except trio.TooSlowError:
            error = f"timed out: no result within {worker_timeout:g}s"
            results[slot] = SubResult(
                subtask, error=error, status=Status.TIMED_OUT, attempts=calls[slot]
            )
        except Exception as exc:
            results[slot] = SubResult.from_exception(subtask, exc, attempts=calls[slot])
        finally:
            limiter.release_on_behalf_of(slot)
        result = results[slot]
        timed_out = result is not None and result.status is Status.TIMED_OUT
        if result is not None and not result.ok and not timed_out and calls[slot] < attempts:
            results[slot] = None  # unfinished again, until its next attempt ends
            nursery.start_soon(retry, slot, subtask)

    async def retry(slot: int, subtask: str) -> None:
        bound = min(backoff[1], backoff[0] * 2.0 ** min(calls[slot] - 1, 64))
        await trio.sleep(jitter.uniform(0, bound))  # full jitter: anywhere below the bound
        await limiter.acquire_on_behalf_of(slot)
        nursery.start_soon(run_one, slot, subtask)

    with trio.move_on_after(budget):  # cancels whatever still runs or waits, then returns
        async with trio.open_nursery() as nursery:
            for slot, subtask in enumerate(plan):
                await limiter.acquire_on_behalf_of(slot)
                nursery.start_soon(run_one, slot, subtask)
    cut_short = f"cancelled: the run's deadline of {budget:g}s passed first"
    return Aggregate(
        [
            SubResult(subtask, error=cut_short, status=Status.CANCELLED, attempts=calls[slot])
            if result is None
            else result
            for slot, (subtask, result) in enumerate(zip(plan, results, strict=True))
        ]
    )


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)
