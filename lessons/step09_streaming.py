"""Step 8: ordered streaming. Each result is handed over as soon as every earlier one is.

What it adds: ``stream``, an async context manager that yields a channel of results in plan order:
``async with stream(subtasks, worker, max_workers=4) as results: async for result in results:
...``. Its input may be of unknown length: a ``str`` is decomposed as before, and any iterable or
async iterable is pulled one subtask at a time, only while there is room in the *window*. At most
``window`` slots (by default ``2 * max_workers``; never fewer than ``max_workers``) are pulled and
not yet handed over, whether waiting for a worker, running, backing off or finished and waiting for
an earlier slot; so the supervisor holds at most ``window`` subtasks and results, and at most
``max_workers`` workers run, however long the input. A deliverer hands each result over as soon as
it and every slot before it are done, and forgets it. The price of plan order is *head-of-line
blocking*: while an early slot runs long, later ones finish and wait in the window; once the window
is full nothing more is pulled, and the workers idle until the early slot is done. Leaving the
``async with`` block, early or not, cancels every worker still running, and nothing more is read
from the input: a pull first checks for cancellation, since a puller woken just as the caller left
would otherwise finish its step (an exception raised in the block comes out in an exception group,
as from any nursery). A deadline, or giving up past the restart intensity, ends the work but not
the stream: slots that did not finish come out marked, in order, followed by the rest of the input,
so every subtask is accounted for once. Results handed over are never taken back, so
``one_for_all`` restarts every slot not yet handed over. ``supervise`` is now the stream, collected
into an aggregate.

What is still wrong: a run lives in one process. If it dies, the slots in flight and the window
die with it, and nothing records how far the input got: a new run starts from the first subtask.

Sample run (``python -m lessons 8 --virtual --workers 2 --slow 1:2
--task "review 1; review 2; review 3; review 4; review 5; review 6; review 7"``)::

    step08_streaming · your task, max_workers=2, seed=0
    handed over, in plan order:
        0.69s  slot  0  review 1  ok
        2.00s  slot  1  review 2  ok
        2.00s  slot  2  review 3  ok
        2.00s  slot  3  review 4  ok
        2.16s  slot  4  review 5  ok
        2.50s  slot  5  review 6  ok
        3.09s  slot  6  review 7  ok
    slot  subtask   timeline                      end             done #
       0  review 1  ██████                        ✓ ok 0.69s           1
       1  review 2  ██████████████████            ✓ ok 2.00s           4
       2  review 3  ······██░░░░░░░░░░            ✓ ok 0.97s           2
       3  review 4  ········███░░░░░░░            ✓ ok 1.25s           3
       4  review 5        ·····█████████          ✓ ok 2.16s           5
       5  review 6                    █████       ✓ ok 2.50s           6
       6  review 7                    ·█████████  ✓ ok 3.09s           7
                    0s                     3.09s
    ░ done, held until every earlier slot was handed over
    results, in the order supervise returned them

      slot   subtask    result   output or error        done #
     ──────────────────────────────────────────────────────────
         0   review 1   ok       findings on review 1        1
         1   review 2   ok       findings on review 2        4
         2   review 3   ok       findings on review 3        2
         3   review 4   ok       findings on review 4        3
         4   review 5   ok       findings on review 5        5
         5   review 6   ok       findings on review 6        6
         6   review 7   ok       findings on review 7        7

    answer
    review 1: findings on review 1
    review 2: findings on review 2
    review 3: findings on review 3
    review 4: findings on review 4
    review 5: findings on review 5
    review 6: findings on review 6
    review 7: findings on review 7
    wall 3.09s · serial would take 5.59s · 7 ok, 0 failed

"""

from __future__ import annotations

import itertools
import math
import random
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import trio

from trio_supervisor import Aggregate, Status, SubResult, Worker, decompose

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]
STRATEGIES: tuple[Strategy, ...] = ("one_for_one", "one_for_all", "rest_for_one")


@asynccontextmanager
async def stream(
    task: str | Iterable[str] | AsyncIterable[str],
    worker: Worker,
    *,
    max_workers: int,
    window: int | None = None,
    worker_timeout: float = math.inf,
    deadline: float = math.inf,
    attempts: int = 1,
    strategy: Strategy = "one_for_one",
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> AsyncIterator[trio.MemoryReceiveChannel[SubResult[str]]]:
    window = 2 * max_workers if window is None else window
    if not window >= max_workers:
        raise ValueError(f"window must be >= max_workers ({max_workers}), got {window}")
    if not worker_timeout > 0:  # also refuses NaN
        raise ValueError(f"worker_timeout must be > 0 seconds, got {worker_timeout}")
    if not deadline > 0:
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    if not attempts >= 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if intensity is not None and not (intensity[0] >= 0 and intensity[1] > 0):
        raise ValueError(f"intensity must be (R >= 0 restarts, T > 0 seconds), got {intensity}")
    if not 0 <= backoff[0] <= backoff[1]:
        raise ValueError(f"backoff must be (first, most) with 0 <= first <= most, got {backoff}")
    max_restarts, period = intensity if intensity is not None else (math.inf, math.inf)
    plan: Iterator[str] | AsyncIterator[str] = (
        aiter(task)
        if isinstance(task, AsyncIterable)
        else iter(decompose(task) if isinstance(task, str) else task)
    )
    subtasks: dict[int, str] = {}  # slot -> subtask, for every slot pulled and not handed over
    results: dict[int, SubResult[str]] = {}  # slot -> its result, until it is handed over
    calls: dict[int, int] = {}  # how many times each slot's worker was called
    pulled = delivered = 0  # slots pulled from the input; slots handed over, in plan order
    exhausted = over = False  # the input has ended; the work has ended, no result will come
    room = trio.Semaphore(window)  # invariant: pulled - (slots the caller received) <= window
    progress = trio.Event()  # set, then replaced, when a slot is pulled or finishes
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)
    running: dict[int, trio.CancelScope] = {}  # slot -> the scope of its current attempt
    restarts: deque[float] = deque()  # when each restart of the last `period` seconds happened
    jitter = random.Random(seed)
    dispatcher = trio.CancelScope()  # the dispatcher in charge of the plan's later slots
    gave_up = False
    nursery: trio.Nursery  # the work's: the puller, the dispatchers and the workers

    def announce() -> None:
        nonlocal progress
        progress.set()
        progress = trio.Event()

    async def run_one(slot: int, subtask: str, token: object) -> None:
        calls[slot] += 1
        with trio.CancelScope() as scope:  # a restart of its siblings may cancel this attempt
            running[slot] = scope
            try:
                with trio.fail_after(worker_timeout):  # in the worker's own task: times it alone
                    output = await worker(subtask)
                result = SubResult(subtask, output=output, attempts=calls[slot])
            except trio.TooSlowError:
                error = f"timed out: no result within {worker_timeout:g}s"
                result = SubResult(
                    subtask, error=error, status=Status.TIMED_OUT, attempts=calls[slot]
                )
            except Exception as exc:
                result = SubResult.from_exception(subtask, exc, attempts=calls[slot])
            finally:
                limiter.release_on_behalf_of(token)
        if running.get(slot) is not scope:  # a restart cancelled or superseded this attempt
            return
        del running[slot]
        results[slot] = result
        if not result.ok and calls[slot] < attempts:
            restart(slot)
        announce()

    def restart(slot: int) -> None:
        nonlocal dispatcher, gave_up
        now = trio.current_time()
        while restarts and restarts[0] <= now - period:
            restarts.popleft()
        if len(restarts) >= max_restarts:  # past the restart intensity: give up on the run
            gave_up = True
            nursery.cancel_scope.cancel()
            return
        restarts.append(now)
        first, stop = {
            "one_for_one": (slot, slot + 1),
            "one_for_all": (delivered, pulled),  # every slot not yet handed over
            "rest_for_one": (slot, pulled),
        }[strategy]
        for sibling in range(first, stop):
            results.pop(sibling, None)
            if sibling in running:
                running.pop(sibling).cancel()
        bound = min(backoff[1], backoff[0] * 2.0 ** min(calls[slot] - 1, 64))
        scope = trio.CancelScope()
        slots: Iterable[int] = range(first, stop)
        if strategy != "one_for_one":  # the new dispatcher takes over every slot from `first` on
            dispatcher.cancel()
            dispatcher = scope
            slots = itertools.count(first)
        nursery.start_soon(dispatch, slots, jitter.uniform(0, bound), scope)

    async def dispatch(slots: Iterable[int], wait: float, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(wait)
            for slot in slots:
                while slot >= pulled:  # wait for the puller to get this far, or the input to end
                    if exhausted:
                        return
                    await progress.wait()
                token = object()  # one borrower per attempt: a cancelled one may still hold its own
                await limiter.acquire_on_behalf_of(token)
                if scope.cancel_called:  # replaced by a restart just as it got its token
                    limiter.release_on_behalf_of(token)
                    return
                nursery.start_soon(run_one, slot, subtasks[slot], token)

    async def pull() -> bool:
        """Pull the input's next subtask into a new slot; False once the input has ended."""
        nonlocal pulled, exhausted
        await trio.lowlevel.checkpoint_if_cancelled()  # woken just as the caller left: no pull
        if isinstance(plan, AsyncIterator):
            subtask = await anext(plan, None)
        else:
            subtask = next(plan, None)
        if subtask is None:
            exhausted = True
        else:
            subtasks[pulled], calls[pulled] = subtask, 0
            pulled += 1
        announce()
        return not exhausted

    async def puller() -> None:
        while True:
            await room.acquire()  # a place in the window, given back when the slot is received
            if not await pull():
                return

    async def work() -> None:
        nonlocal nursery, over
        with trio.move_on_after(deadline):  # cancels whatever still runs or waits, then returns
            async with trio.open_nursery() as nursery:
                nursery.start_soon(puller)
                nursery.start_soon(dispatch, itertools.count(), 0, dispatcher)
        over = True
        announce()

    async def deliver() -> None:
        nonlocal delivered
        with send:  # closing it ends the caller's `async for`
            while True:
                while delivered not in results and not over:  # head-of-line: wait in order
                    if exhausted and delivered == pulled:
                        return
                    await progress.wait()
                if delivered not in results:  # the work is over and this slot never finished
                    if delivered == pulled and not await pull():
                        return
                    cut_short = f"cancelled: the run's deadline of {deadline:g}s passed first"
                    if gave_up:  # past the restart intensity: every slot that did not finish failed
                        cut_short = f"gave up: more than {max_restarts} restarts within {period:g}s"
                    results[delivered] = SubResult(
                        subtasks[delivered],
                        error=cut_short,
                        status=Status.FAILED if gave_up else Status.CANCELLED,
                        attempts=calls[delivered],
                    )
                result = results.pop(delivered)
                del subtasks[delivered], calls[delivered]
                delivered += 1
                await send.send(result)
                room.release()

    send, receive = trio.open_memory_channel[SubResult[str]](0)
    async with trio.open_nursery() as outer:
        outer.start_soon(work)
        outer.start_soon(deliver)
        yield receive
        outer.cancel_scope.cancel()  # the caller is done with the stream: stop every worker


async def supervise(
    task: str, worker: Worker, *, max_workers: int, **options: Any
) -> Aggregate[str]:
    """Every result of :func:`stream` over ``task``, collected in plan order; ``options`` are
    :func:`stream`'s."""
    async with stream(task, worker, max_workers=max_workers, **options) as results:
        return Aggregate([result async for result in results])


def synthesize(aggregate: Aggregate[str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)


if __name__ == "__main__":
    from lessons._runner import main_for_step

    main_for_step(__file__)
