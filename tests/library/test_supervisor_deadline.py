"""Supervisor.run's deadline: the run returns what it has when time is up, every slot accounted,
on either path a run takes (``PATHS``). Nothing here is retried, so no strategy restarts a slot
and every path follows one schedule."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import (
    PATHS,
    Script,
    behaviours,
    hang,
    live_tasks,
    occupancy,
    odd_64ths,
    odd_128ths,
    ok,
    plain_behaviours,
)
from tests.library.virtual_time import list_schedule, run_virtual
from trio_supervisor import Aggregate, Status, Supervisor, Trace


@settings(max_examples=80, deadline=None)
@given(data=st.data(), k=st.integers(min_value=1, max_value=6), path=st.sampled_from(list(PATHS)))
def test_a_deadline_keeps_finished_results_and_cancels_the_rest_once(
    data: st.DataObject, k: int, path: str
) -> None:
    timeout = data.draw(st.none() | odd_64ths, label="timeout")
    deadline = data.draw(odd_128ths, label="deadline")
    pool = plain_behaviours if timeout is None else behaviours
    script = Script(data.draw(st.lists(pool, max_size=16), label="behaviours"))
    n = len(script.behaviours)
    supervisor = Supervisor(script, max_workers=k, timeout=timeout, **PATHS[path])

    async def main() -> tuple[Aggregate[int, str], Aggregate[int, str], float, float]:
        start = trio.current_time()
        baseline = live_tasks()
        cut = await supervisor.run(range(n), deadline=deadline)
        wall = trio.current_time() - start
        assert live_tasks() == baseline  # no task outlives the run
        assert script.in_flight == 0
        script.calls.clear()
        unlimited = await Supervisor(script, max_workers=k, timeout=timeout, **PATHS[path]).run(
            range(n)
        )
        return cut, unlimited, start, wall

    cut, unlimited, start, wall = run_virtual(main)
    schedule = list_schedule([occupancy(b, timeout) for b in script.behaviours], k)
    assert wall == min(deadline, schedule.makespan)
    assert [result.subtask for result in cut.results] == list(range(n))
    for slot, result in enumerate(cut.results):
        if schedule.ends[slot] < deadline:  # finished in time: kept as it was
            kept = unlimited.results[slot]
            assert (result.status, result.output, result.error, result.attempts) == (
                kept.status,
                kept.output,
                kept.error,
                kept.attempts,
            )
            assert (result.started, result.finished) == (
                start + schedule.starts[slot],
                start + schedule.ends[slot],
            )
        elif schedule.starts[slot] < deadline:  # running when time ran out
            assert result.status is Status.CANCELLED
            assert result.error == (
                f"Cancelled: the run's deadline of {deadline:g}s expired before it finished"
            )
            assert (result.attempts, result.started, result.finished) == (
                1,
                start + schedule.starts[slot],
                start + deadline,
            )
        else:  # never started
            assert result.status is Status.CANCELLED
            assert result.error == (
                f"Cancelled: the run's deadline of {deadline:g}s expired before it started"
            )
            assert (result.attempts, result.started, result.finished) == (0, None, None)
    statuses = [result.status for result in cut.results]
    assert sum(statuses.count(status) for status in Status) == n


@pytest.mark.parametrize("path", PATHS)
async def test_the_run_returns_at_the_deadline_with_what_it_has(
    autojump_clock: Any, path: str
) -> None:
    script = Script([ok(8), hang(), ok(32), ok(16), ok(1)])
    plan = list(range(5))
    trace = Trace(plan)
    start = trio.current_time()
    supervisor = Supervisor(script, max_workers=2, **PATHS[path])
    aggregate = await supervisor.run(plan, deadline=1.5, trace=trace)
    assert trio.current_time() - start == 1.5
    assert [result.status for result in aggregate.results] == [
        Status.OK,
        Status.CANCELLED,
        Status.OK,
        Status.CANCELLED,
        Status.CANCELLED,
    ]
    assert aggregate.results[2].output == "output 2"
    assert [result.attempts for result in aggregate.results] == [1, 1, 1, 1, 0]
    assert (aggregate.succeeded, aggregate.failed) == (2, 3)
    assert [slot.status for slot in trace.slots] == [
        Status.OK,
        Status.CANCELLED,
        Status.OK,
        Status.CANCELLED,
        None,
    ]
    assert script.cancelled == 2
    assert trace.wall == 1.5


@pytest.mark.parametrize("deadline", [0, -1.0, float("nan")])
async def test_a_deadline_must_be_positive(deadline: float) -> None:
    script = Script([ok(1)])
    with pytest.raises(ValueError, match=r"^deadline must be a positive number, got "):
        await Supervisor(script, max_workers=1).run([0], deadline=deadline)
    assert not script.calls
