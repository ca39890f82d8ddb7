"""The first k of n: ``run(..., need=k)`` returns at the instant the k-th success lands,
cancelling exactly the slots that had not finished, its results in plan order.

The laws run on virtual time against the schedule the lanes must follow (each slot taken, in
plan order, by the first free worker): the k-th success lands at a known instant, and which
slots had finished by then is known too.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.virtual_time import exact_latencies, list_schedule, run_virtual
from trio_supervisor import Aggregate, Restarts, Status, Supervisor


class Failed(Exception):
    pass


def worker_for(latency: dict[int, float], fails: set[int]) -> Any:
    async def work(slot: int) -> int:
        await trio.sleep(latency[slot])
        if slot in fails:
            raise Failed(f"slot {slot}")
        return slot

    return work


def decided_at(ends: list[float], fails: set[int], need: int) -> float:
    """When a run that needs ``need`` successes is decided: its k-th success, or the instant
    fewer than ``need`` can still succeed, or its last end."""
    succeeded = failed = 0
    for end, slot in sorted((end, slot) for slot, end in enumerate(ends)):
        if slot in fails:
            failed += 1
        else:
            succeeded += 1
        if succeeded >= need or len(ends) - failed < need:
            return end
    return max(ends)


def law_violations(
    aggregate: Aggregate[int, int], returned: float, ends: list[float], fails: set[int], need: int
) -> list[str]:
    """What a run with ``need=`` did against the laws (empty when it kept them)."""
    broken = []
    instant = decided_at(ends, fails, need)
    if returned != instant:
        broken.append(f"returned at {returned}, decided at {instant}")
    if [result.subtask for result in aggregate] != list(range(len(ends))):
        broken.append("results not in plan order")
    for slot, result in enumerate(aggregate):
        # a slot whose worker returns at the very instant the run is decided may land before
        # the deciding one or after it: trio runs the tasks woken at one instant in an order of
        # its own, so such a slot may be kept or cancelled; every other slot may not
        if ends[slot] < instant and result.status is Status.CANCELLED:
            broken.append(f"slot {slot} had finished at {ends[slot]} but was cancelled")
        if ends[slot] > instant and result.status is not Status.CANCELLED:
            broken.append(f"slot {slot} unfinished at {instant} but {result.status.name}")
    waited = sum(1 for slot, r in enumerate(aggregate) if r.ok and ends[slot] < instant)
    if waited >= need:
        broken.append(f"{waited} successes waited on a slower slot")
    succeeded = aggregate.succeeded
    if aggregate.degraded != (succeeded < need):
        broken.append(f"degraded={aggregate.degraded} with {succeeded} of {need} successes")
    if (aggregate.gave_up is None) != (succeeded >= need):
        broken.append(f"gave_up={aggregate.gave_up!r} with {succeeded} of {need} successes")
    return broken


@st.composite
def quorum_runs(draw: st.DrawFn) -> tuple[list[float], set[int], int, int]:
    latencies = draw(exact_latencies(max_size=12))
    n = len(latencies)
    fails = set(draw(st.lists(st.integers(0, n - 1), max_size=n, unique=True)))
    need = draw(st.integers(1, n))
    workers = draw(st.integers(1, n + 1))
    return latencies, fails, need, workers


def run_quorum(
    latencies: list[float], fails: set[int], need: int | None, workers: int
) -> tuple[Aggregate[int, int], float]:
    async def main() -> tuple[Aggregate[int, int], float]:
        latency = dict(enumerate(latencies))
        supervisor = Supervisor(worker_for(latency, fails), max_workers=workers)
        aggregate = await supervisor.run(range(len(latencies)), need=need)
        return aggregate, trio.current_time()

    return run_virtual(main)


@settings(max_examples=150, deadline=None)
@given(quorum_runs())
def test_a_run_returns_at_the_kth_success_cancelling_exactly_the_unfinished(
    case: tuple[list[float], set[int], int, int],
) -> None:
    latencies, fails, need, workers = case
    ends = list_schedule(latencies, workers).ends
    aggregate, returned = run_quorum(latencies, fails, need, workers)
    assert law_violations(aggregate, returned, ends, fails, need) == []
    for _slot, result in enumerate(aggregate):
        if result.status is Status.CANCELLED:
            assert result.attempts in (0, 1)  # as far as it got
            assert "not needed" in str(result.error) or "could no longer" in str(result.error)


def test_the_law_catches_a_run_that_waits_for_every_slot() -> None:
    latencies, need, workers = [1.0, 3.0, 2.0], 2, 3
    fails: set[int] = set()
    ends = list_schedule(latencies, workers).ends
    aggregate, returned = run_quorum(latencies, fails, None, workers)
    wrapped = Aggregate(aggregate.results, None, need)
    assert law_violations(wrapped, returned, ends, fails, need) != []


def test_the_slots_not_needed_say_so_and_keep_their_attempts() -> None:
    async def main() -> tuple[Aggregate[int, int], float]:
        latency = {0: 3.0, 1: 1.0, 2: 2.0, 3: 5.0}
        aggregate = await Supervisor(worker_for(latency, set()), max_workers=3).run(
            range(4), need=2
        )
        return aggregate, trio.current_time()

    aggregate, returned = run_virtual(main)
    assert returned == 2.0
    assert [r.status for r in aggregate] == [
        Status.CANCELLED,
        Status.OK,
        Status.OK,
        Status.CANCELLED,
    ]
    assert aggregate[0].attempts == 1
    assert aggregate[0].started == 0.0
    assert aggregate[0].error == (
        "Cancelled: not needed, the run had the 2 successes it needed before this slot finished"
    )
    assert aggregate[3].attempts == 1  # taken up at 1.0 when slot 1 freed its worker
    assert not aggregate.degraded
    assert aggregate.gave_up is None
    assert aggregate.need == 2


def test_a_quorum_out_of_reach_ends_the_run_degraded_saying_so() -> None:
    async def main() -> Aggregate[int, int]:
        latency = {0: 1.0, 1: 2.0, 2: 9.0}
        return await Supervisor(worker_for(latency, {0, 1}), max_workers=3).run(range(3), need=2)

    aggregate = run_virtual(main)
    assert [r.status for r in aggregate] == [Status.FAILED, Status.FAILED, Status.CANCELLED]
    assert aggregate.degraded
    assert aggregate.gave_up == "needed 2 successes of 3 slots, got 0 (2 failed)"
    assert "could no longer have them" in str(aggregate[2].error)


@pytest.mark.parametrize(
    ("need", "error", "message"),
    [
        (0, ValueError, r"^need must be between 1 and the plan's 3 subtasks .*got 0$"),
        (4, ValueError, r"^need must be between 1 and the plan's 3 subtasks .*got 4$"),
        (True, TypeError, r"^need must be an int or None, got bool True$"),
        (2.0, TypeError, r"^need must be an int or None, got float 2.0$"),
    ],
)
def test_need_is_refused_outside_the_plan_before_any_work(
    need: Any, error: type[Exception], message: str
) -> None:
    called: list[int] = []

    async def work(n: int) -> int:
        called.append(n)
        return n

    async def main() -> None:
        await Supervisor(work, max_workers=2).run([1, 2, 3], need=need)

    with pytest.raises(error, match=message):
        run_virtual(main)
    assert called == []


def test_need_is_refused_with_counted_restarts() -> None:
    async def work(n: int) -> int:
        return n

    async def main() -> None:
        supervisor = Supervisor(work, max_workers=2, restarts=Restarts(max_restarts=3, within=1))
        await supervisor.run([1, 2], need=1)

    with pytest.raises(ValueError, match=r"^need= ends a run at its k-th success"):
        run_virtual(main)
