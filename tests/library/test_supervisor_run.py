"""Supervisor.run: the laws every step of the course proved, proved again, plus timeouts, on
either path a run takes (``PATHS``). Nothing here is retried, so no strategy restarts a slot and
every path follows one schedule."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import (
    PATHS,
    Behaviour,
    Script,
    behaviours,
    fail,
    hang,
    live_tasks,
    occupancy,
    odd_64ths,
    ok,
    plain_behaviours,
)
from tests.library.virtual_time import list_schedule, run_virtual
from trio_supervisor import Aggregate, Retry, Status, SubResult, Supervisor
from trio_supervisor._contract import describe
from trio_supervisor.testing import SimulatedAgent


def expected(slot: int, behaviour: Behaviour, timeout: float | None) -> tuple[Status, str]:
    """A single-attempt slot's status, and its output or error."""
    if behaviour.outcome(1) == "hang" or (timeout is not None and behaviour.seconds > timeout):
        return Status.TIMED_OUT, f"TooSlowError: the attempt ran past its timeout of {timeout:g}s"
    if behaviour.outcome(1) == "fail":
        return Status.FAILED, f"SubAgentError: slot {slot} failed on call 1"
    return Status.OK, f"output {slot}"


@settings(max_examples=80, deadline=None)
@given(data=st.data(), k=st.integers(min_value=1, max_value=6), path=st.sampled_from(list(PATHS)))
def test_run_follows_the_schedule_in_plan_order_and_isolates_failures(
    data: st.DataObject, k: int, path: str
) -> None:
    timeout = data.draw(st.none() | odd_64ths, label="timeout")
    pool = plain_behaviours if timeout is None else behaviours
    script = Script(data.draw(st.lists(pool, max_size=16), label="behaviours"))
    n = len(script.behaviours)

    async def main() -> tuple[Aggregate[int, str], float, float]:
        start = trio.current_time()
        supervisor = Supervisor(script, max_workers=k, timeout=timeout, **PATHS[path])
        aggregate = await supervisor.run(range(n))
        return aggregate, start, trio.current_time() - start

    aggregate, start, wall = run_virtual(main)
    schedule = list_schedule([occupancy(b, timeout) for b in script.behaviours], k)
    assert wall == schedule.makespan
    assert script.peak == min(k, n)
    assert [result.subtask for result in aggregate.results] == list(range(n))
    for slot, (behaviour, result) in enumerate(
        zip(script.behaviours, aggregate.results, strict=True)
    ):
        status, shown = expected(slot, behaviour, timeout)
        assert result.status is status
        assert (result.output if result.ok else result.error) == shown
        assert result.attempts == script.calls[slot] == 1
        assert result.started == start + schedule.starts[slot]
        assert result.finished == start + schedule.ends[slot]
    failed = sum(
        expected(slot, b, timeout)[0] is not Status.OK for slot, b in enumerate(script.behaviours)
    )
    assert (aggregate.succeeded, aggregate.failed) == (n - failed, failed)


ON_EVERY_PATH = pytest.mark.parametrize("path", PATHS)


@ON_EVERY_PATH
async def test_a_hung_worker_times_out_and_frees_its_slot(autojump_clock: Any, path: str) -> None:
    script = Script([hang(), ok(8), ok(8)])
    start = trio.current_time()
    supervisor = Supervisor(script, max_workers=1, timeout=0.5, **PATHS[path])
    aggregate = await supervisor.run(range(3))
    assert [result.status for result in aggregate.results] == [
        Status.TIMED_OUT,
        Status.OK,
        Status.OK,
    ]
    assert aggregate.results[0].error == "TooSlowError: the attempt ran past its timeout of 0.5s"
    assert isinstance(aggregate.results[0].exception, trio.TooSlowError)
    assert (aggregate.results[0].started, aggregate.results[0].finished) == (start, start + 0.5)
    assert aggregate.results[1].started == start + 0.5  # the slot it held is free again
    assert trio.current_time() - start == 0.5 + 0.25 + 0.25
    assert script.cancelled == 1


@ON_EVERY_PATH
async def test_a_worker_raising_its_own_timeout_fails_rather_than_times_out(
    autojump_clock: Any, path: str
) -> None:
    async def impatient(subtask: str) -> str:
        with trio.fail_after(0.25):
            await trio.sleep(1)
        return subtask

    aggregate = await Supervisor(impatient, max_workers=1, timeout=10, **PATHS[path]).run(["x"])
    assert aggregate.results[0].status is Status.FAILED
    assert aggregate.results[0].error == "TooSlowError: "


async def test_the_course_task_runs_through_the_simulated_agent(autojump_clock: Any) -> None:
    agent = SimulatedAgent(0)
    task = "competitor pricing; customer reviews failing; inventory"
    aggregate = await Supervisor(agent, max_workers=2).run(task)
    assert [result.subtask for result in aggregate.results] == [
        "competitor pricing",
        "customer reviews failing",
        "inventory",
    ]
    assert [result.status for result in aggregate.results] == [
        Status.OK,
        Status.FAILED,
        Status.OK,
    ]
    assert aggregate.results[0].output == "findings on competitor pricing"
    assert aggregate.results[1].error == (
        "SubAgentError: sub-agent failed on 'customer reviews failing'"
    )
    assert aggregate.degraded


@ON_EVERY_PATH
async def test_an_exception_group_from_the_workers_nursery_is_recorded_whole(
    autojump_clock: Any, path: str
) -> None:
    async def fans_out(subtask: str) -> str:
        async def boom(exc: Exception) -> None:
            raise exc

        async with trio.open_nursery() as nursery:
            nursery.start_soon(boom, ValueError("first"))
            nursery.start_soon(boom, KeyError("second"))
        return subtask

    aggregate = await Supervisor(fans_out, max_workers=2, **PATHS[path]).run(["a", "b"])
    for result in aggregate.results:
        assert result.status is Status.FAILED
        assert isinstance(result.exception, ExceptionGroup)
        assert result.error == describe(result.exception)
        assert "ValueError: first" in result.error
        assert "KeyError: 'second'" in result.error


@ON_EVERY_PATH
async def test_cancelling_the_run_cancels_every_worker_and_passes_through(
    autojump_clock: Any, path: str
) -> None:
    script = Script([ok(64)] * 6)
    baseline = live_tasks()
    with trio.move_on_after(1) as scope:
        await Supervisor(script, max_workers=4, **PATHS[path]).run(range(6))
        pytest.fail("the run returned under a cancelled scope")
    assert scope.cancelled_caught
    assert script.cancelled == 4
    assert script.in_flight == 0
    assert live_tasks() == baseline


@ON_EVERY_PATH
@pytest.mark.parametrize("attempts", [1, 3])
@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
async def test_keyboard_interrupt_and_system_exit_are_never_isolated_nor_retried(
    autojump_clock: Any, exc_type: type[BaseException], attempts: int, path: str
) -> None:
    script = Script([ok(64)] * 3)
    raised = 0

    async def worker(subtask: int) -> str:
        nonlocal raised
        if subtask == 0:
            raised += 1
            await trio.sleep(0.25)
            raise exc_type("stop")
        return await script(subtask)

    with pytest.raises(exc_type) as raised_out:  # bare, not in an exception group
        await Supervisor(worker, max_workers=3, retry=Retry(attempts=attempts), **PATHS[path]).run(
            range(3)
        )
    assert type(raised_out.value) is exc_type
    assert script.cancelled == 2  # the siblings were cancelled, not left running
    assert raised == 1


async def test_an_empty_plan_returns_an_empty_aggregate(autojump_clock: Any) -> None:
    aggregate: Aggregate[int, str] = await Supervisor(Script([]), max_workers=3).run([])
    assert aggregate.results == []
    assert not aggregate.degraded


async def test_subtasks_of_any_type_keep_their_identity(autojump_clock: Any) -> None:
    async def double(subtask: tuple[int, int]) -> int:
        await trio.sleep(subtask[1] / 32)
        return subtask[0] * 2

    plan = [(1, 3), (2, 1), (3, 2)]
    t = trio.current_time()
    aggregate = await Supervisor(double, max_workers=3).run(iter(plan))
    assert aggregate.results == [
        SubResult((1, 3), output=2, started=t, finished=t + 3 / 32),
        SubResult((2, 1), output=4, started=t, finished=t + 1 / 32),
        SubResult((3, 2), output=6, started=t, finished=t + 2 / 32),
    ]


@ON_EVERY_PATH
async def test_a_failed_slot_keeps_its_exception(autojump_clock: Any, path: str) -> None:
    aggregate = await Supervisor(Script([fail(1)]), max_workers=1, **PATHS[path]).run([0])
    result = aggregate.results[0]
    assert result.status is Status.FAILED
    assert str(result.exception) == "slot 0 failed on call 1"
