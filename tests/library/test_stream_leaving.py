"""Supervisor.stream: leaving stops everything, one task pulls, workers start as there is work."""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.virtual_time import run_virtual
from trio_supervisor import Supervisor


class Source:
    """An endless input, sync or async, that counts its pulls."""

    def __init__(self) -> None:
        self.pulled = 0

    def sync(self) -> Iterator[int]:
        for subtask in itertools.count():
            self.pulled += 1
            yield subtask

    async def async_(self) -> AsyncIterator[int]:
        for subtask in itertools.count():
            self.pulled += 1
            yield subtask


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(["sync", "async"]),
    k=st.integers(min_value=1, max_value=4),
    extra=st.none() | st.integers(min_value=0, max_value=4),
    taken=st.integers(min_value=0, max_value=5),
    latencies=st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=6),
)
def test_leaving_a_stream_pulls_nothing_more_and_calls_no_further_worker(
    kind: str, k: int, extra: int | None, taken: int, latencies: list[int]
) -> None:
    source = Source()
    calls = 0

    async def worker(subtask: int) -> int:
        nonlocal calls
        calls += 1  # before any checkpoint: a call made for a cancelled slot counts too
        await trio.sleep(latencies[subtask % len(latencies)] / 32)
        return subtask

    async def main() -> tuple[int, int]:
        window = None if extra is None else k + extra
        subtasks = source.sync() if kind == "sync" else source.async_()
        async with Supervisor(worker, max_workers=k).stream(subtasks, window=window) as results:
            if taken:  # else: leave at once, before any result
                async for result in results:
                    if result.subtask == taken - 1:
                        break
            at_leaving = (source.pulled, calls)
        await trio.sleep(10)  # anything left behind would have all the time it needs
        return at_leaving

    at_leaving = run_virtual(main)
    assert (source.pulled, calls) == at_leaving


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_leaving_after_one_result_with_one_worker_and_a_window_of_one_calls_no_worker(
    autojump_clock: Any, kind: str
) -> None:
    """The smallest case of the law above, kept apart so that it reads as the issue states it."""
    source = Source()
    called: list[int] = []

    async def worker(subtask: int) -> int:
        called.append(subtask)
        await trio.sleep(1)
        return subtask

    subtasks = source.sync() if kind == "sync" else source.async_()
    async with Supervisor(worker, max_workers=1).stream(subtasks, window=1) as results:
        async for _ in results:
            break
    await trio.sleep(10)
    assert (called, source.pulled) == ([0], 1)


request = contextvars.ContextVar[str]("request", default="not set")


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(min_value=1, max_value=6),
    extra=st.integers(min_value=0, max_value=3),
    n=st.integers(min_value=0, max_value=12),
    taken=st.none() | st.integers(min_value=0, max_value=12),
    latencies=st.lists(st.integers(min_value=1, max_value=8), min_size=1, max_size=6),
)
def test_one_task_pulls_the_input(
    k: int, extra: int, n: int, taken: int | None, latencies: list[int]
) -> None:
    pulls: list[tuple[trio.lowlevel.Task, str]] = []  # the task of each pull, what it saw

    async def source() -> AsyncIterator[int]:
        request.set("set by the input")
        # a cancel scope open across `yield`: only sound when one task resumes the generator
        with trio.CancelScope():
            try:
                for subtask in range(n):
                    pulls.append((trio.lowlevel.current_task(), request.get()))
                    yield subtask
            finally:
                pulls.append((trio.lowlevel.current_task(), request.get()))

    async def worker(subtask: int) -> int:
        await trio.sleep(latencies[subtask % len(latencies)] / 32)
        return subtask

    async def main() -> list[int]:
        got = []
        async with Supervisor(worker, max_workers=k).stream(source(), window=k + extra) as results:
            async for result in results:
                if result.subtask == taken:
                    break
                got.append(result.subtask)
        return got

    got = run_virtual(main)
    assert got == list(range(n if taken is None else min(taken, n)))
    assert len({task for task, _ in pulls}) <= 1
    assert all(seen == "set by the input" for _, seen in pulls)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(["sync", "async"]),
    k=st.integers(min_value=1, max_value=12),
    n=st.integers(min_value=0, max_value=8),
)
def test_a_stream_starts_no_more_workers_than_there_is_work(kind: str, k: int, n: int) -> None:
    helpers = 2  # tasks a stream may run besides its workers (one to pull the input, say)
    peaks: list[int] = []
    worker_tasks: set[trio.lowlevel.Task] = set()

    def living() -> int:
        return trio.lowlevel.current_statistics().tasks_living

    async def worker(subtask: int) -> int:
        worker_tasks.add(trio.lowlevel.current_task())
        peaks.append(living())
        await trio.sleep(1 / 32)
        return subtask

    async def async_range() -> AsyncIterator[int]:
        for subtask in range(n):
            yield subtask

    async def main() -> int:
        baseline = living()
        subtasks = range(n) if kind == "sync" else async_range()
        async with Supervisor(worker, max_workers=k).stream(subtasks) as results:
            peaks.append(living())
            async for _ in results:
                peaks.append(living())
        return baseline

    baseline = run_virtual(main)
    assert len(worker_tasks) <= min(k, n)
    assert max(peaks) <= baseline + min(k, n) + helpers


async def test_three_subtasks_start_at_most_three_workers_whatever_max_workers(
    autojump_clock: Any,
) -> None:
    worker_tasks: set[trio.lowlevel.Task] = set()
    peak = 0

    async def worker(subtask: int) -> int:
        nonlocal peak
        worker_tasks.add(trio.lowlevel.current_task())
        peak = max(peak, trio.lowlevel.current_statistics().tasks_living)
        await trio.sleep(1)
        return subtask

    baseline = trio.lowlevel.current_statistics().tasks_living
    async with Supervisor(worker, max_workers=100_000).stream(range(3)) as results:
        assert [result.output async for result in results] == [0, 1, 2]
    assert len(worker_tasks) <= 3
    assert peak <= baseline + 3 + 2  # the workers, and at most two helper tasks


async def test_a_second_consumer_gets_busy_resource_error(autojump_clock: Any) -> None:
    async def worker(subtask: int) -> int:
        await trio.sleep(1)
        return subtask

    first: list[int] = []
    with trio.fail_after(60):  # a second consumer that hangs must fail this test, not hang it
        async with Supervisor(worker, max_workers=2).stream(range(3)) as results:

            async def consume() -> None:
                first.extend([result.subtask async for result in results])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(consume)
                await trio.sleep(0.5)  # the first consumer waits for slot 0, due at 1 s
                with pytest.raises(trio.BusyResourceError):
                    await anext(results)
    assert first == [0, 1, 2]  # the first consumer was not disturbed


async def test_a_second_consumer_is_refused_at_every_pass_of_the_first_ones_wait(
    autojump_clock: Any,
) -> None:
    """The consumer yields one pass of the scheduler before it waits to be woken: a second
    consumer is refused during that pass too, not only once the first one waits. Trio runs
    the tasks of a pass in either order, so each case runs 20 times."""
    for passes, _ in itertools.product(range(2, 6), range(20)):
        release = trio.Event()

        async def worker(subtask: int) -> int:
            await release.wait()  # noqa: B023  # awaited within this turn of the loop
            return subtask

        first: list[int] = []
        async with Supervisor(worker, max_workers=1).stream(range(2)) as results:

            async def consume() -> None:
                first.extend([result.subtask async for result in results])  # noqa: B023

            async with trio.open_nursery() as nursery:
                nursery.start_soon(consume)
                for _ in range(passes):  # the consumer has begun its first step by the second
                    await trio.lowlevel.cancel_shielded_checkpoint()
                with trio.fail_after(60), pytest.raises(trio.BusyResourceError):
                    await anext(results)  # a second consumer let in waits for slot 0: fails
                release.set()
        assert first == [0, 1], passes
