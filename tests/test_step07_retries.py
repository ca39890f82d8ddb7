"""Step 7: retries with full-jitter backoff.

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
from course_support import STEP06, STEP07, STEP08, STEP09, STEP10, Probe, refused, supervise
from hypothesis import given, settings
from hypothesis import strategies as st
from support import flawed, run_virtual

from trio_supervisor import Status
from trio_supervisor.testing import SimulatedAgent

SINCE_7 = [STEP07, STEP08, STEP09, STEP10]
FLAW = "step 6's flaw: every failure is final"


@pytest.mark.parametrize("step", [flawed(STEP06, FLAW), *SINCE_7])
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
    seed=st.integers(0, 2**16),
)
def test_a_slot_failing_its_first_k_calls_succeeds_exactly_when_attempts_exceed_k(
    step: ModuleType, failures: int, attempts: int, seed: int
) -> None:
    agent = SimulatedAgent(seed, flaky={"b": failures})

    async def main() -> None:
        aggregate = await step.supervise(
            "a; b; c", agent, max_workers=2, attempts=attempts, seed=seed
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
async def test_a_slot_waiting_to_retry_holds_no_capacity_token(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    probe = Probe(SimulatedAgent(flaky={"a": 1}))
    aggregate = await step.supervise("a; b", probe, max_workers=1, attempts=2, seed=0)
    failure, retry = probe.of("a")
    (other,) = probe.of("b")
    assert failure.outcome == "error"
    assert failure.end is not None
    assert other.start == failure.end, "b took the token a gave back as it failed"
    assert other.end is not None
    assert retry.start >= other.end, "a's retry waited for the only token"
    assert [result.attempts for result in aggregate.results] == [2, 1]


@pytest.mark.parametrize("step", SINCE_7)
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attempts": 0}, "attempts must be >= 1, got 0"),
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
