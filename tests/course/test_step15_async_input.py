"""Step 15: an async input, awaited one subtask at a time as the window has room.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import STEP15
from tests.course.step_laws import cases
from trio_supervisor.testing import SimulatedAgent


@pytest.mark.parametrize("step", cases(laws.AN_ASYNC_INPUT_IS_AWAITED))
def test_an_async_input_is_awaited_one_subtask_at_a_time_as_the_window_has_room(
    step: ModuleType,
) -> None:
    laws.AN_ASYNC_INPUT_IS_AWAITED.verify(step)


async def test_an_async_iterable_input_is_pulled_lazily_too(autojump_clock: trio.abc.Clock) -> None:
    async def planner() -> AsyncGenerator[str]:
        for slot in range(5):
            await trio.sleep(0.125)  # a planner that streams its plan
            yield f"s{slot}"

    got = []
    async with (
        aclosing(planner()) as plan,
        STEP15.stream(plan, SimulatedAgent(), max_workers=2) as results,
    ):
        async for result in results:
            got.append(result.subtask)
    assert got == [f"s{slot}" for slot in range(5)]
