"""Step 13: a window over a list: at most ``window`` slots run ahead of the caller; head-of-line
blocking.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import Probe, agent_with, since, task_of
from tests.course.step_laws import cases
from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

SINCE_13 = since(13)


@pytest.mark.parametrize("step", cases(laws.HELD_TO_THE_WINDOW))
def test_at_most_window_slots_are_started_and_not_yet_handed_over(step: ModuleType) -> None:
    laws.HELD_TO_THE_WINDOW.verify(step)


@pytest.mark.parametrize("step", cases(laws.HEAD_OF_LINE_IS_HELD_TO_THE_WINDOW))
def test_head_of_line_blocking_holds_the_window_while_an_early_slot_runs_long(
    step: ModuleType,
) -> None:
    laws.HEAD_OF_LINE_IS_HELD_TO_THE_WINDOW.verify(step)


@pytest.mark.parametrize("step", SINCE_13)
async def test_after_a_deadline_the_rest_of_a_finite_input_still_comes_out_marked(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    probe = Probe(agent_with([8] * 10))
    aggregate = await step.supervise(task_of(10), probe, max_workers=1, window=2, deadline=0.6)
    assert [result.subtask for result in aggregate.results] == [f"s{slot}" for slot in range(10)]
    assert [result.status for result in aggregate.results] == [Status.OK] * 2 + [
        Status.CANCELLED
    ] * 8
    assert [result.attempts for result in aggregate.results] == [1, 1, 1] + [0] * 7
    assert len(probe.calls) == 3


@pytest.mark.parametrize("step", SINCE_13)
async def test_a_list_of_subtasks_is_a_plan_as_a_task_is(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    aggregate = await step.supervise(["s0", "s1", "s2"], SimulatedAgent(), max_workers=2)
    assert [result.subtask for result in aggregate.results] == ["s0", "s1", "s2"]
    assert all(result.ok for result in aggregate.results)


@pytest.mark.parametrize("step", SINCE_13)
async def test_a_window_smaller_than_max_workers_is_refused_before_any_work(
    step: ModuleType,
) -> None:
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=r"^window must be >= max_workers \(4\), got 3$"):
        async with step.stream("a; b", agent, max_workers=4, window=3):
            pass
    assert not agent.calls
