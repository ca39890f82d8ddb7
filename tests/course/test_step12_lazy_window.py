"""Step 12: a lazy input, pulled only while the window has room; head-of-line blocking.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import (
    STEP12,
    Probe,
    agent_with,
    arrivals,
    task_of,
)
from tests.course.step_laws import cases
from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

FLAW = "step 10's flaw: nothing holds the work back while the caller waits for an early slot"


@pytest.mark.parametrize("step", cases(laws.HELD_TO_THE_WINDOW))
def test_at_most_window_slots_are_started_and_not_yet_handed_over(step: ModuleType) -> None:
    laws.HELD_TO_THE_WINDOW.verify(step)


@pytest.mark.parametrize("step", cases(laws.A_LAZY_MILLION_IS_HELD))
def test_a_lazy_input_of_a_million_is_held_to_the_window_and_abandoning_it_cancels_every_worker(
    step: ModuleType,
) -> None:
    laws.A_LAZY_MILLION_IS_HELD.verify(step)


async def test_head_of_line_blocking_holds_the_window_while_an_early_slot_runs_long(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(agent_with([8, 96, 8, 8, 8, 8, 8, 8]))  # slot 1 takes 3 s, the rest 0.25 s
    start = trio.current_time()
    got = await arrivals(STEP12, task_of(8), probe, max_workers=2, window=4)
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
    aggregate = await STEP12.supervise(task_of(10), probe, max_workers=1, window=2, deadline=0.6)
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
        STEP12.stream(plan, SimulatedAgent(), max_workers=2) as results,
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
        async with STEP12.stream(broken(), SimulatedAgent(), max_workers=2) as results:
            async for _ in results:
                pass


async def test_a_window_smaller_than_max_workers_is_refused_before_any_work() -> None:
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=r"^window must be >= max_workers \(4\), got 3$"):
        async with STEP12.stream("a; b", agent, max_workers=4, window=3):
            pass
    assert not agent.calls
