"""Step 6: a hung worker loses its slot at its timeout, and the next subtask gets its token.

All on virtual time. Latencies are whole 1/32 s (SimulatedAgent's grid); timeouts are odd 64ths
and deadlines odd 128ths, so no event of a run falls on the instant of another and every time adds
up exactly.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

import math
from collections import Counter
from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import (
    HOUR,
    STEP05,
    Probe,
    refused,
    since,
)
from tests.course.step_laws import cases
from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

SINCE_6 = since(6)
FLAW = "step 5's flaw: one hung worker holds its slot forever, and the run never returns"


async def test_step5_never_finishes_with_a_hung_worker(autojump_clock: trio.abc.Clock) -> None:
    agent = SimulatedAgent(hang={"stuck"})
    with trio.move_on_after(HOUR) as outer:
        await STEP05.supervise("stuck; b; c", agent, max_workers=1)
    assert outer.cancelled_caught, "the test's own deadline had to stop step 5"
    assert agent.calls == Counter({"stuck": 1}), "no later subtask ever started"


async def test_step5_never_returns_with_one_hung_worker_though_every_other_slot_is_done(
    autojump_clock: trio.abc.Clock,
) -> None:
    agent = SimulatedAgent(hang={"stuck"})
    with trio.move_on_after(HOUR) as outer:
        await STEP05.supervise("stuck; b; c", agent, max_workers=3)
    assert outer.cancelled_caught, "the test's own deadline had to stop step 5"
    assert agent.calls == Counter({"stuck": 1, "b": 1, "c": 1}), "the others ran, and finished"


@pytest.mark.parametrize("step", cases(laws.HUNG_WORKER_FREES_ITS_SLOT))
def test_a_hung_worker_frees_its_slot_for_the_next_subtask(step: ModuleType) -> None:
    laws.HUNG_WORKER_FREES_ITS_SLOT.verify(step)


@pytest.mark.parametrize("step", SINCE_6)
async def test_a_run_with_a_hung_worker_ends_at_its_timeout_exactly(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    start = trio.current_time()
    aggregate = await step.supervise(
        "stuck; b; c", SimulatedAgent(hang={"stuck"}), max_workers=3, worker_timeout=1.5
    )
    assert trio.current_time() - start == 1.5
    assert [result.status for result in aggregate.results] == [
        Status.TIMED_OUT,
        Status.OK,
        Status.OK,
    ]
    assert aggregate.results[0].error == "timed out: no result within 1.5s"
    assert aggregate.degraded


@pytest.mark.parametrize("step", cases(laws.MAKESPAN_WITH_TIMEOUTS))
def test_wall_time_is_the_makespan_with_each_hung_worker_counted_as_its_timeout(
    step: ModuleType,
) -> None:
    laws.MAKESPAN_WITH_TIMEOUTS.verify(step)


async def test_a_timeout_around_start_soon_times_nothing(autojump_clock: trio.abc.Clock) -> None:
    """Why step 6's timeout is inside the worker's task: a scope covers only its own task."""
    ended: list[float] = []

    async def slow() -> None:
        await trio.sleep(10)
        ended.append(trio.current_time())

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        # the mistake step 6 explains (ruff's ASYNC100 flags it too): the scope exits as soon
        # as the task is scheduled, so it never raises TooSlowError and the task runs its 10 s
        with trio.fail_after(1):  # noqa: ASYNC100
            nursery.start_soon(slow)
    assert ended == [start + 10]


@pytest.mark.parametrize("step", cases(laws.EACH_CALL_IS_TIMED_ON_ITS_OWN))
def test_worker_timeout_cuts_each_call_at_its_own_start_and_no_other(step: ModuleType) -> None:
    laws.EACH_CALL_IS_TIMED_ON_ITS_OWN.verify(step)


@pytest.mark.parametrize("step", SINCE_6)
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"worker_timeout": 0}, "worker_timeout must be > 0 seconds, got 0"),
        ({"worker_timeout": -1.0}, "worker_timeout must be > 0 seconds, got -1.0"),
        ({"worker_timeout": math.nan}, "worker_timeout must be > 0 seconds, got nan"),
    ],
)
async def test_a_bad_timeout_or_deadline_is_refused_before_any_work(
    step: ModuleType, options: dict[str, float], message: str
) -> None:
    await refused(step, options, message)


@pytest.mark.parametrize("step", SINCE_6)
async def test_cancelling_the_caller_cancels_the_run_it_does_not_return(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    probe = Probe(SimulatedAgent(hang={"stuck"}))
    returned = False
    with trio.move_on_after(0.5) as outer:
        await step.supervise("a; stuck; c", probe, max_workers=3, worker_timeout=5.0)
        returned = True
    assert outer.cancelled_caught
    assert not returned
    assert probe.live == 0
    assert {call.outcome for call in probe.calls} == {"cancelled"}
