"""Step 7: retries with full-jitter backoff, a restart intensity, and OTP's restart strategies.

All on virtual time, with seeded jitter. Waits drawn from ``random.Random`` are not on a binary
grid, so the one law about them compares with a relative tolerance; every other time is exact.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from types import ModuleType

import pytest
import trio
from helpers678 import HOUR, STEP06, STEP07, STEP08, Probe, refused, supervise
from hypothesis import given, settings
from hypothesis import strategies as st
from support import run_virtual

from lessons.step07_retries import Strategy
from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

SINCE_7 = [STEP07, STEP08]
STRATEGIES: list[Strategy] = ["one_for_one", "one_for_all", "rest_for_one"]
FLAW = "step 6's flaw: every failure is final"


@pytest.mark.parametrize(
    "step",
    [
        pytest.param(
            STEP06, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=FLAW)
        ),
        *SINCE_7,
    ],
)
def test_a_transient_failure_is_retried_until_it_succeeds(step: ModuleType) -> None:
    agent = SimulatedAgent(flaky={"b": 2})

    async def main() -> None:
        aggregate = await supervise(step, "a; b; c", agent, max_workers=3, attempts=3)
        assert [result.status for result in aggregate.results] == [Status.OK] * 3
        assert agent.calls == Counter({"a": 1, "b": 3, "c": 1})

    run_virtual(main)  # not the fixture: a failure must come out bare for the xfail to match it


@pytest.mark.parametrize("step", SINCE_7)
@settings(max_examples=40, deadline=None)
@given(
    failures=st.integers(0, 4),
    attempts=st.integers(1, 5),
    strategy=st.sampled_from(STRATEGIES),
    seed=st.integers(0, 2**16),
)
def test_a_slot_failing_its_first_k_calls_succeeds_exactly_when_attempts_exceed_k(
    step: ModuleType, failures: int, attempts: int, strategy: Strategy, seed: int
) -> None:
    agent = SimulatedAgent(seed, flaky={"b": failures})

    async def main() -> None:
        aggregate = await step.supervise(
            "a; b; c", agent, max_workers=2, attempts=attempts, strategy=strategy, seed=seed
        )
        result = aggregate.results[1]
        assert result.ok == (attempts > failures)
        assert result.attempts == agent.calls["b"] == min(failures + 1, attempts)
        if not result.ok:
            calls = agent.calls["b"]
            assert result.error == f"SubAgentError: sub-agent failed on 'b' (attempt {calls})"
        assert [result.subtask for result in aggregate.results] == ["a", "b", "c"]

    run_virtual(main)


def bound(failures: int, first: float, most: float) -> float:
    """Full jitter's bound after a slot's ``failures``-th failure."""
    return min(most, first * 2.0 ** (failures - 1))


@pytest.mark.parametrize("step", SINCE_7)
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    first=st.integers(1, 64).map(lambda n: n / 32),
    doublings=st.integers(0, 4),
)
def test_each_wait_before_a_restart_is_a_seeded_draw_within_the_backoff_bound(
    step: ModuleType, seed: int, first: float, doublings: int
) -> None:
    most = first * 2**doublings
    attempts = 6

    async def main() -> None:
        probe = Probe(SimulatedAgent(seed, fail={"b"}))
        await step.supervise(
            "a; b; c",
            probe,
            max_workers=3,
            attempts=attempts,
            backoff=(first, most),
            seed=seed,
        )
        calls = probe.of("b")
        assert len(calls) == attempts
        waits = []
        for before, after in itertools.pairwise(calls):
            assert before.end is not None
            waits.append(after.start - before.end)
        draws = random.Random(seed)
        for failures, wait in enumerate(waits, start=1):
            limit = bound(failures, first, most)
            assert 0 <= wait <= limit + 1e-12
            assert wait == pytest.approx(draws.uniform(0, limit), rel=1e-9, abs=1e-12)

    run_virtual(main)


@pytest.mark.parametrize("step", SINCE_7)
def test_the_same_seed_replays_the_same_run(step: ModuleType) -> None:
    def starts(seed: int) -> list[float]:
        probe = Probe(SimulatedAgent(fail={"b", "d"}))

        async def main() -> None:
            await step.supervise("a; b; c; d", probe, max_workers=2, attempts=4, seed=seed)

        run_virtual(main)
        return [call.start for call in probe.calls]

    assert starts(7) == starts(7)
    assert starts(7) != starts(8)


@pytest.mark.parametrize("step", SINCE_7)
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


@pytest.mark.parametrize("step", SINCE_7)
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


def affected(strategy: Strategy, failed: int, size: int) -> set[int]:
    """The slots a failure of slot ``failed`` restarts, after OTP."""
    return {
        "one_for_one": {failed},
        "one_for_all": set(range(size)),
        "rest_for_one": set(range(failed, size)),
    }[strategy]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(2, 6),
    data=st.data(),
    workers=st.integers(1, 6),
    strategy=st.sampled_from(STRATEGIES),
    seed=st.integers(0, 2**16),
)
def test_a_strategy_reruns_exactly_the_slots_it_names_and_keeps_plan_order(
    size: int, data: st.DataObject, workers: int, strategy: Strategy, seed: int
) -> None:
    plan = [f"s{slot}" for slot in range(size)]
    failed = data.draw(st.integers(0, size - 1), label="failed")

    async def main() -> None:
        probe = Probe(SimulatedAgent(seed, flaky={plan[failed]: 1}))
        aggregate = await STEP07.supervise(
            "; ".join(plan), probe, max_workers=workers, attempts=2, strategy=strategy, seed=seed
        )
        failure = probe.of(plan[failed])[0]
        assert failure.outcome == "error"
        assert failure.end is not None
        restarted = affected(strategy, failed, size)
        for slot, subtask in enumerate(plan):
            calls = probe.of(subtask)
            before = [call for call in calls if call.start < failure.end]
            after = [call for call in calls if call.start >= failure.end]
            if slot in restarted:  # runs from scratch after the failure, to its end once
                # (a call started at the very instant of the failure may be cancelled by it)
                kept = [call for call in after if call.outcome != "cancelled"]
                assert len(kept) == 1
                assert kept[0] is calls[-1]
                assert all(call.end is not None and call.end <= failure.end for call in before)
            else:  # untouched: one call, never cancelled
                assert [call.outcome for call in calls] == ["ok"]
        assert [result.subtask for result in aggregate.results] == plan
        assert [result.status for result in aggregate.results] == [Status.OK] * size
        assert [result.attempts for result in aggregate.results] == [
            len(probe.of(subtask)) for subtask in plan
        ]
        assert probe.most <= workers

    run_virtual(main)


async def test_one_for_all_results_all_come_from_after_the_last_failure(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(SimulatedAgent(flaky={"c": 2}))
    aggregate = await STEP07.supervise(
        "a; b; c; d", probe, max_workers=4, attempts=3, strategy="one_for_all", seed=1
    )
    last_failure = max(call.end or 0.0 for call in probe.calls if call.outcome == "error")
    finals = {call.subtask: call for call in probe.calls if call.outcome == "ok"}
    assert all(call.start >= last_failure for call in finals.values())
    assert [result.attempts for result in aggregate.results] == [3, 3, 3, 3]


@pytest.mark.parametrize("step", SINCE_7)
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attempts": 0}, "attempts must be >= 1, got 0"),
        (
            {"strategy": "one_for_some"},
            "strategy must be one of one_for_one, one_for_all, rest_for_one, got 'one_for_some'",
        ),
        (
            {"intensity": (-1, 5.0)},
            r"intensity must be \(R >= 0 restarts, T > 0 seconds\), got \(-1, 5.0\)",
        ),
        (
            {"intensity": (3, 0.0)},
            r"intensity must be \(R >= 0 restarts, T > 0 seconds\), got \(3, 0.0\)",
        ),
        (
            {"backoff": (2.0, 1.0)},
            r"backoff must be \(first, most\) with 0 <= first <= most, got \(2.0, 1.0\)",
        ),
    ],
)
async def test_bad_retry_options_are_refused_before_any_work(
    step: ModuleType, options: dict[str, object], message: str
) -> None:
    await refused(step, options, message)
