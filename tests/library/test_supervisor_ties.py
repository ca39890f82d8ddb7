"""Exact ties are deterministic: an attempt whose worker ends at the very instant its timeout, or
the run's deadline, falls gets the same outcome whatever order trio wakes the tasks of that
instant in. The timeout wins, as trio's own cancel scopes give.

Trio runs the tasks woken at one instant in an order it draws from ``trio._core._run._r``: it
reverses each batch with probability 1/2, or, when Hypothesis is loaded, shuffles it. Seeding
``_r`` in both modes runs the same ties in many orders.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from trio._core import _run as trio_run

from tests.library.scripted_worker import PATHS, Script, ok
from tests.library.virtual_time import run_virtual
from trio_supervisor import Status, Supervisor


@pytest.fixture(autouse=True)
def scheduling_restored() -> Iterator[None]:
    """Trio's scheduling is as it was again after each test."""
    state = trio_run._r.getstate()
    allowed = trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    yield
    setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", allowed)  # noqa: B010  # a Final
    trio_run._r.setstate(state)


def order_ties(shuffled: bool, seed: int) -> None:
    setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", shuffled)  # noqa: B010  # a Final
    trio_run._r.seed(seed)


@settings(max_examples=60, deadline=None)
@given(
    shuffled=st.booleans(),
    seed=st.integers(0, 2**32),
    path=st.sampled_from(list(PATHS)),
    slots=st.integers(1, 4),
    workers=st.integers(1, 3),
)
def test_an_attempt_ending_as_its_timeout_falls_times_out_in_every_order(
    shuffled: bool, seed: int, path: str, slots: int, workers: int
) -> None:
    """Identical slots that each take exactly their timeout (1/32 s): every one times out."""
    order_ties(shuffled, seed)

    async def main() -> list[Status]:
        supervisor = Supervisor(
            Script([ok(1)] * slots), max_workers=workers, timeout=1 / 32, **PATHS[path]
        )
        return [result.status for result in await supervisor.run(range(slots))]

    assert run_virtual(main) == [Status.TIMED_OUT] * slots


@settings(max_examples=60, deadline=None)
@given(
    shuffled=st.booleans(),
    seed=st.integers(0, 2**32),
    path=st.sampled_from(list(PATHS)),
    slots=st.integers(1, 4),
)
def test_an_attempt_ending_as_the_deadline_falls_is_cancelled_in_every_order(
    shuffled: bool, seed: int, path: str, slots: int
) -> None:
    """Slots that each take exactly the run's deadline (1/32 s): every one is cut short."""
    order_ties(shuffled, seed)

    async def main() -> list[Status]:
        supervisor = Supervisor(Script([ok(1)] * slots), max_workers=slots, **PATHS[path])
        aggregate = await supervisor.run(range(slots), deadline=1 / 32)
        assert trio.current_time() == 1 / 32
        return [result.status for result in aggregate]

    assert run_virtual(main) == [Status.CANCELLED] * slots


def test_two_identical_slots_one_worker_both_time_out_under_every_seed() -> None:
    """The issue's case: latency 1/32 s, timeout 1/32 s, max_workers=1."""
    for shuffled in (True, False):
        for seed in range(16):
            order_ties(shuffled, seed)

            async def main() -> list[Status]:
                supervisor = Supervisor(Script([ok(1)] * 2), max_workers=1, timeout=1 / 32)
                return [result.status for result in await supervisor.run(range(2))]

            assert run_virtual(main) == [Status.TIMED_OUT] * 2, (shuffled, seed)
