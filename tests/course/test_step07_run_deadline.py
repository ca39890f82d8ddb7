"""Step 7: a run past its deadline stops and returns what it has: every subtask accounted for once,
the slots it cut marked cancelled, and no task outlives the call.

All on virtual time. Latencies are whole 1/32 s (SimulatedAgent's grid); timeouts are odd 64ths
and deadlines odd 128ths, so no event of a run falls on the instant of another and every time adds
up exactly.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import STEP06, refused, since
from tests.course.step_laws import cases
from trio_supervisor.testing import SimulatedAgent

SINCE_7 = since(7)


@pytest.mark.parametrize("step", cases(laws.DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK))
def test_under_a_deadline_every_subtask_is_accounted_for_once_and_no_task_outlives_the_call(
    step: ModuleType,
) -> None:
    laws.DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK.verify(step)


@pytest.mark.parametrize("step", SINCE_7)
async def test_a_deadline_degrades_the_answer_instead_of_raising(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    aggregate = await step.supervise(
        "a; stuck; c", SimulatedAgent(hang={"stuck"}), max_workers=3, deadline=2.0
    )
    answer = step.synthesize(aggregate)
    assert answer.splitlines()[1] == (
        "stuck: (missing: cancelled: the run's deadline of 2s passed first)"
    )
    assert answer.splitlines()[-1] == "(degraded: 1 of 3 subtasks failed)"


async def test_step6_waits_for_every_worker_however_long_the_run_takes(
    autojump_clock: trio.abc.Clock,
) -> None:
    start = trio.current_time()
    aggregate = await STEP06.supervise(
        "a; b; c; d", SimulatedAgent(hang={"a", "b", "c", "d"}), max_workers=1, worker_timeout=1.5
    )
    assert trio.current_time() - start == 4 * 1.5, "one timeout after the other, no budget"
    assert aggregate.failed == 4


@pytest.mark.parametrize("step", SINCE_7)
async def test_a_bad_deadline_is_refused_before_any_work(step: ModuleType) -> None:
    await refused(step, {"deadline": 0.0}, "deadline must be > 0 seconds, got 0.0")
