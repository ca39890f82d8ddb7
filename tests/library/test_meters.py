"""Meters: what every attempt waits on before it starts, such as a capacity that can change.

Every attempt waits on its meters on either path a run takes (``PATHS``: the lanes, and the
restarting path with a bound or a strategy), so every test of a run's meters runs on each.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Protocol

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_supervisor
from tests.library.scripted_worker import PATHS, Behaviour, Script, ok
from tests.library.virtual_time import exact_latencies, run_virtual
from trio_supervisor import Backoff, Retry, Status, Supervisor

if TYPE_CHECKING:  # at run time they are looked up when used: a missing one fails its test only
    from trio_supervisor import Capacity


WRONG_TYPES: tuple[Any, ...] = (2.5, "3", None)


def capacity(limit: Any) -> Capacity:
    made: Capacity = trio_supervisor.Capacity(limit)
    return made


def test_a_capacity_limit_is_validated_when_made() -> None:
    assert capacity(3).limit == 3
    with pytest.raises(ValueError, match=r"^limit must be >= 1, got 0$"):
        capacity(0)
    with pytest.raises(ValueError, match=r"^limit must be >= 1, got -2$"):
        capacity(-2)
    for wrong in WRONG_TYPES:
        with pytest.raises(TypeError, match=r"limit"):
            capacity(wrong)


def test_a_capacity_limit_is_validated_when_set() -> None:
    cap = capacity(3)
    cap.limit = 5
    assert cap.limit == 5
    with pytest.raises(ValueError, match=r"^limit must be >= 1, got 0$"):
        cap.limit = 0
    for wrong in WRONG_TYPES:
        with pytest.raises(TypeError, match=r"limit"):
            cap.limit = wrong
    assert cap.limit == 5  # a refused value changes nothing


def test_meter_is_a_protocol_of_acquire_and_release() -> None:
    meter = trio_supervisor.Meter
    assert Protocol in meter.__bases__
    assert inspect.iscoroutinefunction(meter.acquire)
    assert not inspect.iscoroutinefunction(meter.release)


class Spy:
    """A worker that records how many calls run at once, at most (as aiometer's tests do)."""

    def __init__(self, latencies: list[float]) -> None:
        self.latencies = latencies
        self.running = 0
        self.max_running = 0

    async def __call__(self, subtask: int) -> int:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        try:
            await trio.sleep(self.latencies[subtask])
        finally:
            self.running -= 1
        return subtask


@settings(max_examples=80, deadline=None)
@given(
    latencies=exact_latencies(12),
    c=st.integers(min_value=1, max_value=5),
    k=st.integers(min_value=1, max_value=5),
    path=st.sampled_from(list(PATHS)),
)
def test_at_most_min_of_capacity_and_max_workers_run_at_once(
    latencies: list[float], c: int, k: int, path: str
) -> None:
    spy = Spy(latencies)

    async def main() -> list[Status]:
        supervisor = Supervisor(spy, max_workers=k, meters=[capacity(c)], **PATHS[path])
        aggregate = await supervisor.run(range(len(latencies)))
        return [result.status for result in aggregate.results]

    assert run_virtual(main) == [Status.OK] * len(latencies)
    assert 0 < spy.max_running <= min(c, k)


@settings(max_examples=80, deadline=None)
@given(
    latencies=exact_latencies(12),
    c=st.integers(min_value=1, max_value=5),
    k=st.integers(min_value=1, max_value=5),
    changes=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=200).map(lambda n: (2 * n - 1) / 64),
            st.integers(min_value=1, max_value=5),
        ),
        max_size=4,
        unique_by=lambda change: change[0],
    ),
    path=st.sampled_from(list(PATHS)),
)
def test_a_capacity_changed_during_a_run_is_honoured(
    latencies: list[float], c: int, k: int, changes: list[tuple[float, int]], path: str
) -> None:
    """Each attempt starts only while fewer than the current limit (and max_workers) run."""
    cap = capacity(c)
    running = 0
    over: list[tuple[float, int, int]] = []

    async def worker(subtask: int) -> int:
        nonlocal running
        running += 1
        if running > min(cap.limit, k):
            over.append((trio.current_time(), running, cap.limit))
        try:
            await trio.sleep(latencies[subtask])
        finally:
            running -= 1
        return subtask

    async def main() -> list[Status]:
        async def change_limits() -> None:
            start = trio.current_time()
            for at, limit in sorted(changes):
                await trio.sleep_until(start + at)
                cap.limit = limit

        supervisor = Supervisor(worker, max_workers=k, meters=[cap], **PATHS[path])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(change_limits)
            aggregate = await supervisor.run(range(len(latencies)))
            nursery.cancel_scope.cancel()
        return [result.status for result in aggregate.results]

    assert run_virtual(main) == [Status.OK] * len(latencies)
    assert over == []


@pytest.mark.parametrize("path", PATHS)
async def test_raising_the_limit_wakes_waiting_attempts_at_once(
    autojump_clock: Any, path: str
) -> None:
    script = Script([ok(32)] * 3)
    cap = capacity(1)
    start = trio.current_time()

    async def raise_the_limit() -> None:
        await trio.sleep(0.25)
        cap.limit = 3

    async with trio.open_nursery() as nursery:
        nursery.start_soon(raise_the_limit)
        await Supervisor(script, max_workers=3, meters=[cap], **PATHS[path]).run(range(3))
    starts = sorted(spans[0][0] - start for spans in script.spans.values())
    assert starts == [0, 0.25, 0.25]


@pytest.mark.parametrize("path", PATHS)
async def test_lowering_the_limit_lets_running_attempts_finish_and_starts_none_until_below(
    autojump_clock: Any, path: str
) -> None:
    script = Script([ok(32)] * 6)
    cap = capacity(3)
    start = trio.current_time()

    async def lower_the_limit() -> None:
        await trio.sleep(0.25)
        cap.limit = 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lower_the_limit)
        supervisor = Supervisor(script, max_workers=3, meters=[cap], **PATHS[path])
        aggregate = await supervisor.run(range(6))
    assert script.cancelled == 0  # the three running when it was lowered finished
    assert aggregate.succeeded == 6
    starts = sorted(spans[0][0] - start for spans in script.spans.values())
    assert starts == [0, 0, 0, 1, 2, 3]


class Recording:
    """A meter that lets everything through and records when it was acquired and released."""

    def __init__(self) -> None:
        self.held = 0
        self.acquired = 0
        self.released = 0

    async def acquire(self) -> None:
        await trio.lowlevel.checkpoint()
        self.held += 1
        self.acquired += 1

    def release(self) -> None:
        self.held -= 1
        self.released += 1


ONE_BY_ONE = ("lanes", "intensity")
"""The paths where a failure restarts its own slot alone: under one_for_all and rest_for_one a
failure restarts its siblings too, which then make calls of their own (by design)."""


@pytest.mark.parametrize(
    ("path", "streamed"),
    # a stream has no restarting path: it refuses restarts that take other slots or are bounded
    [("lanes", True)] + [(path, False) for path in PATHS],
)
async def test_every_attempt_waits_on_every_meter_and_releases_it_after(
    autojump_clock: Any, path: str, streamed: bool
) -> None:
    first, second = Recording(), Recording()
    script = Script([Behaviour(1 + slot % 3, ("fail", "ok")) for slot in range(6)])

    async def worker(subtask: int) -> str:
        # this attempt holds both meters, as does every other attempt running now
        assert first.held >= script.in_flight + 1
        assert second.held >= script.in_flight + 1
        return await script(subtask)

    supervisor = Supervisor(
        worker,
        max_workers=3,
        retry=Retry(attempts=2, backoff=Backoff(0, 0)),
        meters=[first, second],
        **PATHS[path],
    )
    if streamed:
        async with supervisor.stream(range(6)) as results:
            statuses = [result.status async for result in results]
    else:
        statuses = [result.status for result in (await supervisor.run(range(6))).results]
    assert statuses == [Status.OK] * 6
    calls = sum(script.calls.values())
    if path in ONE_BY_ONE:
        assert calls == 12  # every slot was retried once
    else:
        assert calls >= 12  # and slots restarted with a sibling called again
    for meter in (first, second):
        assert (meter.acquired, meter.released, meter.held) == (calls, calls, 0)


async def test_a_slot_waiting_to_retry_lets_another_take_its_meter(autojump_clock: Any) -> None:
    """On the lanes only: on the restarting path the attempts that start at one instant take a
    meter in the order trio runs their tasks, and under one_for_all or rest_for_one slot 0's
    restart takes slot 1 too (the next test holds every path to the law itself)."""
    script = Script([Behaviour(32, ("fail", "ok")), ok(32)])
    start = trio.current_time()
    supervisor = Supervisor(
        script,
        max_workers=2,
        retry=Retry(attempts=2, backoff=Backoff(4, 4, 1), seed=0),
        meters=[capacity(1)],
    )
    aggregate = await supervisor.run(range(2))
    assert aggregate.succeeded == 2
    # slot 0's first attempt holds the capacity from 0 to 1 s; slot 1 takes it as soon as that
    # attempt ends, while slot 0 waits for its retry
    assert script.spans[1][0][0] - start == 1.0


@pytest.mark.parametrize("path", PATHS)
async def test_a_slot_waiting_to_retry_holds_no_meter(autojump_clock: Any, path: str) -> None:
    recording = Recording()
    held: list[int] = []
    script = Script([Behaviour(32, ("fail", "ok"))])
    supervisor = Supervisor(
        script,
        max_workers=1,
        retry=Retry(attempts=2, backoff=Backoff(4, 4, 1), seed=0),  # a wait of about 3 s
        meters=[recording],
        **PATHS[path],
    )

    async def look_during_the_wait() -> None:
        await trio.sleep(1 + 1 / 64)  # the attempt failed at 1 s, and waits
        held.append(recording.held)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(look_during_the_wait)
        aggregate = await supervisor.run([0])
    assert aggregate.results[0].ok
    assert script.spans[0][1][0] > 1 + 1 / 64  # it still waited when looked at
    assert held == [0]
    assert (recording.acquired, recording.released) == (2, 2)
