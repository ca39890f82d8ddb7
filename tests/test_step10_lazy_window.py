"""Step 10: a lazy input, pulled only while the window has room; head-of-line blocking.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from types import ModuleType

import pytest
import trio
from course_support import (
    HOUR,
    STEP09,
    STEP10,
    Probe,
    accepted,
    agent_with,
    arrivals,
    task_of,
    tasks_below,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from support import flawed, run_virtual

from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

FLAW = "step 9's flaw: nothing holds the work back while the caller waits for an early slot"


@pytest.mark.parametrize("step", [flawed(STEP09, FLAW), STEP10])
@settings(max_examples=40, deadline=None)
@given(
    latencies=st.lists(st.integers(1, 96), min_size=1, max_size=12),
    workers=st.integers(1, 3),
    extra=st.integers(0, 3),
)
def test_at_most_window_slots_are_started_and_not_yet_handed_over(
    step: ModuleType, latencies: list[int], workers: int, extra: int
) -> None:
    window = workers + extra
    started: set[str] = set()
    received = 0
    ahead = 0  # the most slots started and not yet handed over, at any call

    async def worker(subtask: str) -> str:
        nonlocal ahead
        started.add(subtask)
        ahead = max(ahead, len(started) - received)
        return await agent(subtask)

    agent = agent_with(latencies)

    async def main() -> None:
        nonlocal received
        size = len(latencies)
        options = accepted(step.stream, max_workers=workers, window=window)
        async with step.stream(task_of(size), worker, **options) as results:
            async for result in results:
                assert result.ok
                received += 1
                await trio.sleep(1)  # a slow caller: only the window may run ahead of it
        assert received == size
        assert ahead <= window, f"{ahead} slots started and not handed over, window {window}"

    run_virtual(main)  # not the fixture: a failure must come out bare for the xfail to match it


@settings(max_examples=25, deadline=None)
@given(
    workers=st.integers(1, 4),
    extra=st.integers(0, 5),
    taken=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_a_lazy_input_of_a_million_is_held_to_the_window_and_abandoning_it_cancels_every_worker(
    workers: int, extra: int, taken: int, seed: int
) -> None:
    window = workers + extra
    pulled = received = 0
    consumer: trio.lowlevel.Task | None = None
    left = False
    probe = Probe(SimulatedAgent(seed, fail={"s3"}))

    def held_in_bounds() -> None:
        finished = sum(1 for call in probe.calls if call.outcome in {"ok", "error"})
        assert pulled - received <= window, "more slots pulled and not handed over than the window"
        assert finished - received <= window, "more results waiting than the window"
        assert probe.live <= workers
        # the stream's own tasks: work, deliver, the puller and the dispatcher, and its workers
        assert consumer is not None
        assert tasks_below(consumer) <= workers + 4

    def lazy() -> Iterator[str]:
        nonlocal pulled
        for slot in range(10**6):
            assert not left, "the input was pulled after the caller left"
            pulled += 1
            held_in_bounds()
            yield f"s{slot}"

    async def worker(subtask: str) -> str:
        held_in_bounds()
        try:
            return await probe(subtask)
        finally:
            held_in_bounds()

    async def main() -> None:
        nonlocal received, consumer, left
        consumer = trio.lowlevel.current_task()
        async with STEP10.stream(lazy(), worker, max_workers=workers, window=window) as results:
            if taken:
                async for result in results:
                    assert result.subtask == f"s{received}"
                    received += 1
                    held_in_bounds()
                    if received == taken:
                        break
            running = [call for call in probe.calls if call.end is None]
            left = True
        assert probe.live == 0, "a worker outlived the stream"
        assert tasks_below(consumer) == 0, "a task outlived the stream"
        assert all(call.end is not None for call in probe.calls)
        assert all(call.outcome == "cancelled" for call in running)
        assert pulled <= taken + window
        calls = len(probe.calls)
        await trio.sleep(HOUR)
        assert len(probe.calls) == calls, "a worker started after the stream was left"

    run_virtual(main)


async def test_head_of_line_blocking_holds_the_window_while_an_early_slot_runs_long(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(agent_with([8, 96, 8, 8, 8, 8, 8, 8]))  # slot 1 takes 3 s, the rest 0.25 s
    start = trio.current_time()
    got = await arrivals(STEP10, task_of(8), probe, max_workers=2, window=4)
    # slot 0 at 0.25 s; slots 1-4 wait for slot 1 and come out together at 3 s, then the rest
    assert [time - start for time, _ in got] == [0.25, 3, 3, 3, 3, 3.25, 3.25, 3.5]
    # while slot 1 runs, the window (slots 1-4) is full: nothing more is pulled, workers idle
    assert [call.subtask for call in probe.calls if call.start - start < 3] == [
        "s0",
        "s1",
        "s2",
        "s3",
        "s4",
    ]


async def test_after_a_deadline_the_rest_of_a_finite_input_still_comes_out_marked(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(agent_with([8] * 10))
    aggregate = await STEP10.supervise(task_of(10), probe, max_workers=1, window=2, deadline=0.6)
    assert [result.subtask for result in aggregate.results] == [f"s{slot}" for slot in range(10)]
    assert [result.status for result in aggregate.results] == [Status.OK] * 2 + [
        Status.CANCELLED
    ] * 8
    assert [result.attempts for result in aggregate.results] == [1, 1, 1] + [0] * 7
    assert len(probe.calls) == 3


async def test_an_async_iterable_input_is_pulled_lazily_too(autojump_clock: trio.abc.Clock) -> None:
    async def planner() -> AsyncGenerator[str]:
        for slot in range(5):
            await trio.sleep(0.125)  # a planner that streams its plan
            yield f"s{slot}"

    got = []
    async with (
        aclosing(planner()) as plan,
        STEP10.stream(plan, SimulatedAgent(), max_workers=2) as results,
    ):
        async for result in results:
            got.append(result.subtask)
    assert got == [f"s{slot}" for slot in range(5)]


async def test_an_error_in_the_input_comes_out_of_the_stream(
    autojump_clock: trio.abc.Clock,
) -> None:
    def broken() -> Iterator[str]:
        yield "s0"
        raise LookupError("the plan broke")

    with pytest.RaisesGroup(
        pytest.RaisesExc(LookupError, match="^the plan broke$"), flatten_subgroups=True
    ):
        async with STEP10.stream(broken(), SimulatedAgent(), max_workers=2) as results:
            async for _ in results:
                pass


async def test_a_window_smaller_than_max_workers_is_refused_before_any_work() -> None:
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=r"^window must be >= max_workers \(4\), got 3$"):
        async with STEP10.stream("a; b", agent, max_workers=4, window=3):
            pass
    assert not agent.calls
