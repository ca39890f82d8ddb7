"""Step 9: a restart intensity: at most R restarts within any T seconds, past which the run gives
up, and every slot that did not finish fails with "gave up".

All on virtual time, with seeded jitter.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import (
    HOUR,
    refused,
    since,
)
from tests.course.step_laws import cases
from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

SINCE_9 = since(9)
FLAW = "step 8's flaw: nothing limits the retries of the run as a whole"


@pytest.mark.parametrize("step", cases(laws.AT_MOST_R_RESTARTS_IN_T))
def test_never_more_than_r_restarts_in_any_t_second_window(step: ModuleType) -> None:
    laws.AT_MOST_R_RESTARTS_IN_T.verify(step)


@pytest.mark.parametrize("step", cases(laws.GIVES_UP_PAST_THE_INTENSITY))
def test_past_the_restart_intensity_the_supervisor_gives_up_and_fails_the_rest(
    step: ModuleType,
) -> None:
    laws.GIVES_UP_PAST_THE_INTENSITY.verify(step)


@pytest.mark.parametrize("step", SINCE_9)
async def test_a_slot_waiting_for_its_retry_when_the_run_gives_up_fails_with_gave_up(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    # a fails at 0.25 s and backs off (up to 4 s); b's failure at 0.5 s is one restart too many
    agent = SimulatedAgent(latencies={"a": 0.25, "b": 0.5}, fail={"a", "b"})
    aggregate = await step.supervise(
        "a; b", agent, max_workers=2, attempts=3, intensity=(1, HOUR), backoff=(4.0, 4.0), seed=1
    )
    assert trio.current_time() == 0.5
    assert [(result.status, result.error, result.attempts) for result in aggregate.results] == [
        (Status.FAILED, f"gave up: more than 1 restarts within {HOUR:g}s", 1),
        (Status.FAILED, "SubAgentError: sub-agent failed on 'b'", 1),
    ]


@pytest.mark.parametrize("step", SINCE_9)
async def test_restarts_spread_wider_than_the_period_never_trip_the_intensity(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    # every restart follows a failed call, and every call takes at least min_latency (0.25 s)
    agent = SimulatedAgent(fail={"b"})
    aggregate = await step.supervise(
        "a; b; c", agent, max_workers=3, attempts=6, intensity=(1, 0.125), seed=3
    )
    assert agent.calls["b"] == 6
    assert aggregate.results[1].attempts == 6
    assert aggregate.results[1].error == "SubAgentError: sub-agent failed on 'b'"


@pytest.mark.parametrize("step", SINCE_9)
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"intensity": (-1, 5.0)},
            r"intensity must be \(R >= 0 restarts, T > 0 seconds\), got \(-1, 5.0\)",
        ),
        (
            {"intensity": (3, 0.0)},
            r"intensity must be \(R >= 0 restarts, T > 0 seconds\), got \(3, 0.0\)",
        ),
    ],
)
async def test_a_bad_intensity_is_refused_before_any_work(
    step: ModuleType, options: dict[str, object], message: str
) -> None:
    await refused(step, options, message)
