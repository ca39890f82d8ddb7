"""Step 8: retries with full-jitter backoff.

All on virtual time, with seeded jitter. Waits drawn from ``random.Random`` are not on a binary
grid, so the one law about them compares with a relative tolerance; every other time is exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import Probe, refused, since
from tests.course.step_laws import cases, run_virtual
from trio_supervisor.testing import SimulatedAgent

SINCE_8 = since(8)
FLAW = "step 7's flaw: every failure is final"


@pytest.mark.parametrize("step", cases(laws.TRANSIENT_FAILURE_RETRIED))
def test_a_transient_failure_is_retried_until_it_succeeds(step: ModuleType) -> None:
    laws.TRANSIENT_FAILURE_RETRIED.verify(step)


@pytest.mark.parametrize("step", cases(laws.SUCCEEDS_WHEN_ATTEMPTS_EXCEED_FAILURES))
def test_a_slot_failing_its_first_k_calls_succeeds_exactly_when_attempts_exceed_k(
    step: ModuleType,
) -> None:
    laws.SUCCEEDS_WHEN_ATTEMPTS_EXCEED_FAILURES.verify(step)


@pytest.mark.parametrize("step", cases(laws.A_WAITING_RETRY_HOLDS_NO_TOKEN))
def test_a_retry_waiting_its_backoff_holds_no_token(step: ModuleType) -> None:
    laws.A_WAITING_RETRY_HOLDS_NO_TOKEN.verify(step)


def bound(failures: int, first: float, most: float) -> float:
    """Full jitter's bound after a slot's ``failures``-th failure."""
    return min(most, first * 2.0 ** (failures - 1))


@pytest.mark.parametrize("step", cases(laws.WAITS_ARE_SEEDED_DRAWS))
def test_each_wait_before_a_restart_is_a_seeded_draw_within_the_backoff_bound(
    step: ModuleType,
) -> None:
    laws.WAITS_ARE_SEEDED_DRAWS.verify(step)


@pytest.mark.parametrize("step", SINCE_8)
def test_the_same_seed_replays_the_same_run(step: ModuleType) -> None:
    def starts(seed: int) -> list[float]:
        probe = Probe(SimulatedAgent(fail={"b", "d"}))

        async def main() -> None:
            await step.supervise("a; b; c; d", probe, max_workers=2, attempts=4, seed=seed)

        run_virtual(main)
        return [call.start for call in probe.calls]

    assert starts(7) == starts(7)
    assert starts(7) != starts(8)


@pytest.mark.parametrize("step", SINCE_8)
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


@pytest.mark.parametrize("step", SINCE_8)
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
