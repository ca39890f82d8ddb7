"""Step 10: each result handed over in plan order, as soon as every earlier one is done, to the
caller's ``on_result``; ``supervise`` still returns the whole aggregate.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import STEP10, agent_with, task_of
from tests.course.step_laws import cases
from trio_supervisor import SubResult


@pytest.mark.parametrize("step", cases(laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0))
def test_the_first_result_arrives_when_slot_0_completes(step: ModuleType) -> None:
    laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0.verify(step)


@pytest.mark.parametrize("step", cases(laws.HANDED_OVER_AS_SOON_AS_POSSIBLE))
def test_each_result_is_handed_over_in_plan_order_as_soon_as_every_earlier_slot_is_done(
    step: ModuleType,
) -> None:
    laws.HANDED_OVER_AS_SOON_AS_POSSIBLE.verify(step)


async def test_on_result_gets_each_result_once_in_plan_order_and_supervise_returns_them_all(
    autojump_clock: trio.abc.Clock,
) -> None:
    handed: list[tuple[float, str]] = []

    async def on_result(result: SubResult[str, str]) -> None:
        handed.append((trio.current_time(), result.subtask))

    aggregate = await STEP10.supervise(
        task_of(3), agent_with([32, 8, 64]), max_workers=3, on_result=on_result
    )
    assert handed == [(1.0, "s0"), (1.0, "s1"), (2.0, "s2")]  # s1 done at 0.25 s, held for s0
    assert [result.subtask for result in aggregate.results] == ["s0", "s1", "s2"]


async def test_a_caller_that_raises_to_stop_gets_its_exception_in_a_group(
    autojump_clock: trio.abc.Clock,
) -> None:
    async def on_result(result: SubResult[str, str]) -> None:
        raise LookupError(f"enough after {result.subtask}")

    with pytest.RaisesGroup(pytest.RaisesExc(LookupError, match="^enough after s0$")):
        await STEP10.supervise(
            task_of(3), agent_with([8, 8, 8]), max_workers=3, on_result=on_result
        )
