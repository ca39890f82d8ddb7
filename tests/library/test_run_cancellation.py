"""Supervisor.run and stream under cancellation: deadlines stop admission, groups are split."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import PATHS, odd_128ths
from tests.library.virtual_time import list_schedule, run_virtual
from trio_supervisor import Aggregate, Retry, Status, SubResult, Supervisor


@settings(max_examples=80, deadline=None)
@given(
    k=st.integers(min_value=1, max_value=4),
    latencies=st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=12),
    deadline=odd_128ths,
    path=st.sampled_from(sorted(PATHS)),
)
def test_after_the_deadline_no_worker_is_called(
    k: int, latencies: list[int], deadline: float, path: str
) -> None:
    called: list[int] = []

    async def turns_cancellation_into_an_error(subtask: int) -> int:
        """A worker written to misbehave: it turns its cancellation into an ordinary exception."""
        called.append(subtask)
        try:
            await trio.sleep(latencies[subtask] / 32)
        except trio.Cancelled:
            raise RuntimeError("cancelled, but says otherwise") from None
        return subtask

    async def main() -> Aggregate[int, int]:
        supervisor = Supervisor(turns_cancellation_into_an_error, max_workers=k, **PATHS[path])
        return await supervisor.run(range(len(latencies)), deadline=deadline)

    aggregate = run_virtual(main)
    starts = list_schedule([latency / 32 for latency in latencies], k).starts
    started = [slot for slot, start in enumerate(starts) if start < deadline]
    assert sorted(called) == started  # each slot started in time called once, no other
    for slot, result in enumerate(aggregate.results):
        if slot not in started:
            assert (result.status, result.attempts) == (Status.CANCELLED, 0)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("k", [1, 3])
async def test_a_worker_that_never_awaits_cannot_hold_the_scheduler_for_the_whole_run(
    autojump_clock: Any, k: int, path: str
) -> None:
    n = 100
    calls = 0
    first_call = trio.Event()

    async def never_awaits(subtask: int) -> int:
        nonlocal calls
        calls += 1
        first_call.set()
        return subtask

    scope = trio.CancelScope()

    async def run() -> None:
        with scope:
            await Supervisor(never_awaits, max_workers=k, **PATHS[path]).run(range(n))

    async def cancel_after_the_first_call() -> None:
        await first_call.wait()
        scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_after_the_first_call)
        nursery.start_soon(run)
    assert 1 <= calls < n  # the sibling ran between two calls, and stopped the run


async def fails_while_cancelled(subtask: str) -> str:
    """A worker whose own nursery raises a group of Cancelled and ValueError once cancelled."""

    async def raises_on_the_way_out() -> None:
        try:
            await trio.sleep_forever()
        finally:
            raise ValueError("boom")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(raises_on_the_way_out)
        nursery.start_soon(trio.sleep_forever)
    return subtask


ON_EVERY_PATH = pytest.mark.parametrize("path", sorted(PATHS))


@ON_EVERY_PATH
async def test_a_workers_nursery_failing_under_the_deadline_does_not_escape_run(
    autojump_clock: Any, path: str
) -> None:
    async def quick(subtask: str) -> str:
        await trio.sleep(0.25)
        return subtask

    async def worker(subtask: str) -> str:
        return await (quick if subtask == "quick" else fails_while_cancelled)(subtask)

    supervisor = Supervisor(worker, max_workers=2, **PATHS[path])
    aggregate = await supervisor.run(["quick", "stuck"], deadline=1.5)
    quick_result, stuck = aggregate.results
    assert quick_result.status is Status.OK
    assert stuck.status is Status.CANCELLED
    assert stuck.error is not None
    assert "boom" in stuck.error
    assert isinstance(stuck.exception, ExceptionGroup)  # the Exception part, kept
    assert not any(isinstance(e, trio.Cancelled) for e in stuck.exception.exceptions)


@ON_EVERY_PATH
async def test_a_workers_nursery_failing_under_a_timeout_is_timed_out(
    autojump_clock: Any, path: str
) -> None:
    supervisor = Supervisor(fails_while_cancelled, max_workers=1, timeout=0.5, **PATHS[path])
    aggregate = await supervisor.run(["x"])
    result = aggregate.results[0]
    assert result.status is Status.TIMED_OUT
    assert result.error is not None
    assert "boom" in result.error
    assert isinstance(result.exception, trio.TooSlowError)
    assert isinstance(result.exception.__context__, ExceptionGroup)  # the worker's own failure


@ON_EVERY_PATH
async def test_a_workers_nursery_failing_under_a_timeout_is_retried_as_a_timeout(
    autojump_clock: Any, path: str
) -> None:
    supervisor = Supervisor(
        fails_while_cancelled, max_workers=1, timeout=0.5, retry=Retry(attempts=3), **PATHS[path]
    )
    aggregate = await supervisor.run(["x"])
    assert [(r.status, r.attempts) for r in aggregate] == [(Status.TIMED_OUT, 3)]


async def test_leaving_a_stream_while_a_workers_nursery_fails_raises_nothing(
    autojump_clock: Any,
) -> None:
    async def worker(subtask: str) -> str:
        if subtask == "first":
            await trio.sleep(0.25)
            return subtask
        return await fails_while_cancelled(subtask)

    async with Supervisor(worker, max_workers=2).stream(["first", "stuck"]) as results:
        async for result in results:
            assert result.subtask == "first"
            break


async def raises_a_stray_cancelled(subtask: int) -> int:
    """A worker that re-raises, outside its own cancelled scope, the Cancelled it caught there."""
    if subtask == 0:
        await trio.sleep(0.25)
        with trio.CancelScope() as inner:
            inner.cancel()
            try:
                await trio.sleep(1)
            except trio.Cancelled as exc:
                stray = exc
        raise stray
    await trio.sleep(1)
    return subtask


@ON_EVERY_PATH
@pytest.mark.parametrize("deadline", [None, 10.0])
async def test_a_stray_cancelled_from_a_worker_leaves_no_slot_empty(
    autojump_clock: Any, deadline: float | None, path: str
) -> None:
    """The run may return (every slot then holds a SubResult) or raise the stray Cancelled; with
    a deadline it must return."""
    supervisor = Supervisor(raises_a_stray_cancelled, max_workers=2, **PATHS[path])
    returned: Aggregate[int, int] | None = None
    try:
        returned = await supervisor.run(range(4), deadline=deadline)
    except* trio.Cancelled:
        assert deadline is None, "with a deadline, the run returns its aggregate"
    if returned is not None:
        assert all(isinstance(result, SubResult) for result in returned.results)
        assert [result.subtask for result in returned.results] == [0, 1, 2, 3]
        assert returned.results[0].status is not Status.OK
        assert returned.succeeded + returned.failed == 4


@pytest.mark.parametrize("window", [None, 2, 4])
def test_a_stray_cancelled_from_a_worker_does_not_escape_a_streams_block(
    window: int | None,
) -> None:
    """The Cancelled the body gets because a lane raised belongs to the stream's own scope: the
    block ends, as trio's own nursery would end, and nothing reaches the program around it (run
    by ``trio.run`` itself here, where an escaping Cancelled would surface)."""

    async def main() -> list[SubResult[int, int]]:
        delivered: list[SubResult[int, int]] = []
        supervisor = Supervisor(raises_a_stray_cancelled, max_workers=2)
        async with supervisor.stream(range(4), window=window) as results:
            async for result in results:
                delivered.append(result)
        await trio.lowlevel.checkpoint()  # the program goes on: no cancellation is pending
        return delivered

    delivered = run_virtual(main)
    # slot 0 raised it before any other slot finished: at most slot 0, cut short, came out
    assert [(r.subtask, r.status) for r in delivered] in ([], [(0, Status.CANCELLED)])
