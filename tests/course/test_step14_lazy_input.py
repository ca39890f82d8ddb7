"""Step 14: a lazy input, pulled only while the window has room.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import STEP14
from tests.course.step_laws import cases
from trio_supervisor.testing import SimulatedAgent


@pytest.mark.parametrize("step", cases(laws.A_LAZY_MILLION_IS_HELD))
def test_a_lazy_input_of_a_million_is_held_to_the_window_and_abandoning_it_cancels_every_worker(
    step: ModuleType,
) -> None:
    laws.A_LAZY_MILLION_IS_HELD.verify(step)


async def test_an_error_in_the_input_comes_out_of_the_stream(
    autojump_clock: trio.abc.Clock,
) -> None:
    def broken() -> Iterator[str]:
        yield "s0"
        raise LookupError("the plan broke")

    with pytest.RaisesGroup(
        pytest.RaisesExc(LookupError, match="^the plan broke$"), flatten_subgroups=True
    ):
        async with STEP14.stream(broken(), SimulatedAgent(), max_workers=2) as results:
            async for _ in results:
                pass
