"""Trace: any subtask, one plan, one run, and no span left open however the run ends."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tests.library.scripted_worker import Script, hang, ok
from trio_supervisor import Status, Supervisor, Trace


async def echo(subtask: dict[str, int]) -> int:
    await trio.sleep(subtask["v"] / 32)
    return subtask["v"]


@pytest.mark.parametrize("planned", [True, False])
async def test_subtasks_need_not_be_hashable(autojump_clock: Any, planned: bool) -> None:
    plan = [{"v": 1}, {"v": 2}, {"v": 1}]
    trace = Trace([{"v": 1}, {"v": 2}, {"v": 1}]) if planned else Trace()
    aggregate = await Supervisor(echo, max_workers=2).run(plan, trace=trace)
    assert [result.output for result in aggregate.results] == [1, 2, 1]
    assert [slot.subtask for slot in trace.slots] == plan
    assert [slot.status for slot in trace.slots] == [Status.OK] * 3


async def test_a_stream_traces_unhashable_subtasks(autojump_clock: Any) -> None:
    trace = Trace()
    async with Supervisor(echo, max_workers=2).stream([{"v": 2}, {"v": 1}], trace=trace) as results:
        assert [result.output async for result in results] == [2, 1]
    assert [slot.subtask for slot in trace.slots] == [{"v": 2}, {"v": 1}]


class Ambiguous:
    """A subtask whose ``==`` answers something with no plain truth value, as a NumPy array's
    does (``bool()`` of it raises)."""

    def __eq__(self, other: object) -> Any:
        return self

    def __ne__(self, other: object) -> Any:
        return self

    def __bool__(self) -> bool:
        raise ValueError("the truth value of this comparison is ambiguous")

    __hash__ = object.__hash__


async def test_a_trace_made_for_the_same_objects_is_accepted_whatever_their_equality(
    autojump_clock: Any,
) -> None:
    """A NaN is not equal to itself and an array's ``==`` has no truth value: the plan's own
    objects are still the plan."""

    async def worker(subtask: object) -> object:
        await trio.sleep(0.25)
        return subtask

    plan: list[object] = [float("nan"), Ambiguous(), "x"]
    trace = Trace(plan)
    aggregate = await Supervisor(worker, max_workers=2).run(plan, trace=trace)
    assert aggregate.succeeded == 3
    assert [slot.status for slot in trace.slots] == [Status.OK] * 3
    with pytest.raises(ValueError, match=r"this trace was made for another plan"):
        await Supervisor(worker, max_workers=2).run([Ambiguous()], trace=Trace([Ambiguous()]))


@pytest.mark.parametrize(
    "planned",
    [[0, 1], [0, 1, 2, 3], [0, 1, 5], [2, 1, 0]],
    ids=["shorter", "longer", "other subtask", "other order"],
)
async def test_a_trace_made_for_another_plan_is_refused_before_any_work(
    autojump_clock: Any, planned: list[int]
) -> None:
    script = Script([ok(1)] * 6)
    trace = Trace(planned)
    with pytest.raises(ValueError, match=r"this trace was made for another plan"):
        await Supervisor(script, max_workers=2).run([0, 1, 2], trace=trace)
    assert not script.calls


async def test_a_trace_that_recorded_a_run_is_refused_by_the_next(autojump_clock: Any) -> None:
    script = Script([ok(1)] * 2)
    supervisor = Supervisor(script, max_workers=2)
    trace = Trace([0, 1])
    await supervisor.run([0, 1], trace=trace)
    script.calls.clear()
    with pytest.raises(ValueError, match=r"already recorded a run"):
        await supervisor.run([0, 1], trace=trace)
    with pytest.raises(ValueError, match=r"already recorded a run"):  # noqa: PT012
        async with supervisor.stream([0, 1], trace=trace) as results:
            async for _ in results:
                pass
    assert not script.calls


def assert_no_span_open(trace: Trace) -> None:
    for slot in trace.slots:
        for span in slot.spans:
            assert span.end is not None, f"slot {slot.slot} has an open span"
            assert span.status is not None


async def test_cancelling_run_from_outside_ends_every_open_span_as_cancelled(
    autojump_clock: Any,
) -> None:
    script = Script([ok(8), hang(), hang(), ok(1)])
    trace = Trace(range(4))
    start = trio.current_time()
    with trio.move_on_after(1):
        await Supervisor(script, max_workers=3).run(range(4), trace=trace)
    assert_no_span_open(trace)
    assert [slot.status for slot in trace.slots] == [
        Status.OK,
        Status.CANCELLED,
        Status.CANCELLED,
        Status.OK,
    ]
    assert [span.end for span in trace.slots[1].spans] == [start + 1]
    assert trace.closed == start + 1


async def test_leaving_a_stream_ends_every_open_span_as_cancelled(autojump_clock: Any) -> None:
    script = Script([ok(8), hang(), ok(1), hang()])
    trace = Trace()
    async with Supervisor(script, max_workers=4).stream(range(4), trace=trace) as results:
        async for _ in results:
            break
        left = trio.current_time()
    assert_no_span_open(trace)
    statuses = {slot.slot: slot.status for slot in trace.slots}
    assert (statuses[1], statuses[3]) == (Status.CANCELLED, Status.CANCELLED)
    assert [span.end for span in trace.slots[1].spans] == [left]


async def test_a_stream_records_when_it_delivered_each_result(autojump_clock: Any) -> None:
    script = Script([ok(8), ok(1), ok(16), hang()])
    trace = Trace()
    delivered: dict[int, float] = {}
    start = trio.current_time()
    with trio.move_on_after(2):
        async with Supervisor(script, max_workers=4).stream(range(4), trace=trace) as results:
            async for result in results:
                delivered[result.subtask] = trio.current_time() - start
    assert delivered == {0: 0.25, 1: 0.25, 2: 0.5}
    assert [None if slot.delivered is None else slot.delivered - start for slot in trace.slots] == [
        0.25,
        0.25,
        0.5,
        None,
    ]
