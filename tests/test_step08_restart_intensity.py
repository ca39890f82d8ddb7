"""Step 8: a restart intensity: at most R restarts within any T seconds, past which the run gives
up, and every slot that did not finish fails with "gave up".

All on virtual time, with seeded jitter.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio
from course_support import (
    HOUR,
    STEP07,
    STEP08,
    STEP09,
    STEP10,
    Probe,
    odd_fraction,
    refused,
    supervise,
)
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from support import flawed, run_virtual

from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

SINCE_8 = [STEP08, STEP09, STEP10]
FLAW = "step 7's flaw: nothing limits the retries of the run as a whole"


@pytest.mark.parametrize("step", [flawed(STEP07, FLAW), *SINCE_8])
@settings(max_examples=40, deadline=None, phases=(Phase.explicit, Phase.generate))
@given(
    kinds=st.lists(st.sampled_from(["ok", "fail"]), min_size=1, max_size=6),
    workers=st.integers(1, 4),
    restarts=st.integers(0, 4),
    period=odd_fraction(1, 100, 8),
    seed=st.integers(0, 2**16),
)
def test_never_more_than_r_restarts_in_any_t_second_window(
    step: ModuleType,
    kinds: list[str],
    workers: int,
    restarts: int,
    period: float,
    seed: int,
) -> None:
    plan = [f"{kind} {slot}" for slot, kind in enumerate(kinds)]

    async def main() -> None:
        probe = Probe(SimulatedAgent(seed))
        await supervise(
            step,
            "; ".join(plan),
            probe,
            max_workers=workers,
            attempts=5,
            intensity=(restarts, period),
            seed=seed,
        )
        # a slot was restarted at the end of each of its calls that another call followed
        instants = []
        for subtask in plan:
            for call in probe.of(subtask)[:-1]:
                assert call.end is not None
                instants.append(call.end)
        for now in instants:
            within = [then for then in instants if now - period < then <= now]
            assert len(within) <= restarts, f"{len(within)} restarts within {period}s of {now}"

    run_virtual(main)  # not the fixture: a failure must come out bare for the xfail to match it


@pytest.mark.parametrize("step", SINCE_8)
@settings(max_examples=30, deadline=None)
@given(restarts=st.integers(0, 5), workers=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_past_the_restart_intensity_the_supervisor_gives_up_and_fails_the_rest(
    step: ModuleType, restarts: int, workers: int, seed: int
) -> None:
    plan = ["a", "fail b", "c", "d", "e"]

    async def main() -> None:
        probe = Probe(SimulatedAgent(seed))
        start = trio.current_time()
        aggregate = await step.supervise(
            "; ".join(plan),
            probe,
            max_workers=workers,
            attempts=100,
            intensity=(restarts, HOUR),
            seed=seed,
        )
        failing = probe.of("fail b")
        assert len(failing) == restarts + 1, "one restart per failure, up to the intensity"
        assert failing[-1].end is not None
        assert trio.current_time() - start == failing[-1].end - start, "it gave up at once"
        assert probe.live == 0
        results = aggregate.results
        assert [result.subtask for result in results] == plan
        assert results[1].error == "SubAgentError: sub-agent failed on 'fail b'"
        assert results[1].attempts == restarts + 1
        gave_up = f"gave up: more than {restarts} restarts within {HOUR:g}s"
        for result, calls in zip(results, (probe.of(s) for s in plan), strict=True):
            if result.subtask == "fail b":
                continue
            finished = bool(calls) and calls[-1].outcome == "ok"
            if finished:
                assert result.status is Status.OK
            else:
                assert (result.status, result.error) == (Status.FAILED, gave_up)
                assert result.attempts == len(calls)

    run_virtual(main)


@pytest.mark.parametrize("step", SINCE_8)
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


@pytest.mark.parametrize("step", SINCE_8)
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


@pytest.mark.parametrize("step", SINCE_8)
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
