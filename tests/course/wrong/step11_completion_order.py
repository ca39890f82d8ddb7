"""Step 11 (step11_streaming), wrongly: it hands results over in the order they complete, through a
second channel, instead of in plan order.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 11`` must fail
on it."""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from trio_supervisor import Aggregate, Status, SubResult, Worker, decompose


@asynccontextmanager
async def stream(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 1,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> AsyncIterator[trio.MemoryReceiveChannel[SubResult[str, str]]]:
    if worker_timeout is not None and not worker_timeout > 0:  # also refuses NaN
        raise ValueError(f"worker_timeout must be > 0 seconds, got {worker_timeout}")
    if deadline is not None and not deadline > 0:
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    timeout = math.inf if worker_timeout is None else worker_timeout  # None: no limit
    budget = math.inf if deadline is None else deadline  # None: no deadline
    if not attempts >= 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    if intensity is not None and not (intensity[0] >= 0 and intensity[1] > 0):
        raise ValueError(f"intensity must be (R >= 0 restarts, T > 0 seconds), got {intensity}")
    if not 0 <= backoff[0] <= backoff[1]:
        raise ValueError(f"backoff must be (first, most) with 0 <= first <= most, got {backoff}")
    max_restarts, period = intensity if intensity is not None else (math.inf, math.inf)
    plan = decompose(task)
    results: list[SubResult[str, str] | None] = [None] * len(plan)
    calls = [0] * len(plan)  # how many times each slot's worker was called
    final = [trio.Event() for _ in plan]  # set once a slot's result will not change any more
    ready_send, ready_receive = trio.open_memory_channel[int](math.inf)  # slots, as they end
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)
    jitter = random.Random(seed)  # the backoffs' draws: the same seed replays the same run
    restarts: deque[float] = deque()  # when each restart of the last `period` seconds happened
    gave_up = False
    nursery: trio.Nursery  # the work's: the dispatcher, its workers and their retries

    async def run_one(slot: int, subtask: str) -> None:
        nonlocal gave_up
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
        if result is not None and not result.ok and calls[slot] < attempts:
            now = trio.current_time()
            while restarts and restarts[0] <= now - period:  # forget what is older than T
                restarts.popleft()
            if len(restarts) >= max_restarts:  # one restart too many: give up on the run
                gave_up = True
                nursery.cancel_scope.cancel()
                return
            restarts.append(now)
            results[slot] = None  # unfinished again, until its next attempt ends
            nursery.start_soon(retry, slot, subtask)
        else:
            final[slot].set()
            ready_send.send_nowait(slot)  # handed over as it completes

    async def retry(slot: int, subtask: str) -> None:
        bound = min(backoff[1], backoff[0] * 2.0 ** min(calls[slot] - 1, 64))
        await trio.sleep(jitter.uniform(0, bound))  # full jitter: anywhere below the bound
        await limiter.acquire_on_behalf_of(slot)
        nursery.start_soon(run_one, slot, subtask)

    async def work() -> None:
        nonlocal nursery
        with trio.move_on_after(budget):  # cancels whatever still runs or waits, then returns
            async with trio.open_nursery() as nursery:
                for slot, subtask in enumerate(plan):
                    await limiter.acquire_on_behalf_of(slot)
                    nursery.start_soon(run_one, slot, subtask)
        for slot, event in enumerate(final):  # the work is over: the slots left come out
            if not event.is_set():
                event.set()
                ready_send.send_nowait(slot)

    async def deliver() -> None:
        async with send:  # closing it ends the caller's `async for`
            for _ in plan:
                slot = await ready_receive.receive()  # whichever slot completed next
                subtask = plan[slot]
                result = results[slot]
                if result is None:  # the work ended before this slot did
                    cut_short = f"cancelled: the run's deadline of {budget:g}s passed first"
                    if gave_up:  # past the restart intensity: every slot that did not finish failed
                        cut_short = f"gave up: more than {max_restarts} restarts within {period:g}s"
                    result = SubResult(
                        subtask,
                        error=cut_short,
                        status=Status.FAILED if gave_up else Status.CANCELLED,
                        attempts=calls[slot],
                    )
                try:
                    await send.send(result)
                except trio.BrokenResourceError:  # the caller left: nobody takes the rest
                    return

    send, receive = trio.open_memory_channel[SubResult[str, str]](0)
    async with trio.open_nursery() as outer:
        outer.start_soon(work)
        outer.start_soon(deliver)
        async with receive:  # closed when the caller leaves the block
            yield receive


async def supervise(
    task: str, worker: Worker[str, str], *, max_workers: int, **options: Any
) -> Aggregate[str, str]:
    async with stream(task, worker, max_workers=max_workers, **options) as results:
        return Aggregate([result async for result in results])


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)
