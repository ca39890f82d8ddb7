"""Retry jitter comes from the supervisor's own generator: a seeded run is reproducible."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import PATHS, Behaviour, Script
from tests.library.virtual_time import run_virtual
from trio_supervisor import Backoff, Supervisor, Trace

FLAKY = [Behaviour(1 + slot % 3, ("fail", "fail", "ok")) for slot in range(12)]


def flaky_run(seed: int | random.Random | None, path: str = "lanes") -> tuple[list[Any], list[Any]]:
    """Twelve slots failing twice each under full jitter: every call's span, and every slot's
    trace, in virtual seconds from the start."""
    script = Script(FLAKY)
    supervisor = Supervisor(
        script, max_workers=4, attempts=3, backoff=Backoff(0.25, 4.0), seed=seed, **PATHS[path]
    )

    async def main() -> list[Any]:
        trace = Trace(range(len(FLAKY)))
        await supervisor.run(range(len(FLAKY)), trace=trace)
        return [
            [(span.start - trace.origin, (span.end or 0) - trace.origin) for span in slot.spans]
            for slot in trace.slots
        ]

    traced = run_virtual(main)
    return [script.spans[slot] for slot in range(len(FLAKY))], traced


ONE_BY_ONE = ["lanes", "intensity"]
"""The paths where each slot restarts alone: under one_for_all and rest_for_one, slots that fail
at one instant take each other back in the order trio runs them, so by design a run there is
reproducible from its seed only where failures do not tie."""


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32), path=st.sampled_from(ONE_BY_ONE))
def test_the_same_seed_gives_the_same_run(seed: int, path: str) -> None:
    assert flaky_run(seed, path) == flaky_run(seed, path)


@pytest.mark.parametrize("path", PATHS)
def test_another_seed_gives_other_waits(path: str) -> None:
    assert flaky_run(1, path) != flaky_run(2, path)


def test_a_given_generator_is_the_one_drawn_from() -> None:
    class Counting(random.Random):
        draws = 0

        def random(self) -> float:
            Counting.draws += 1
            return super().random()

    flaky_run(Counting(5))
    assert Counting.draws >= 1  # the run's jitter is keyed by a draw from it
    assert flaky_run(Counting(5)) == flaky_run(random.Random(5))


def test_a_given_generator_gives_the_run_its_seed_gives() -> None:
    """``seed=`` takes the generator itself: the same run as another generator seeded alike,
    and another seed gives other waits."""
    assert flaky_run(random.Random(5)) == flaky_run(random.Random(5))
    assert flaky_run(random.Random(5)) != flaky_run(random.Random(6))


@pytest.mark.parametrize("seed", [1.5, "1", True])
def test_a_seed_of_another_kind_is_refused(seed: object) -> None:
    with pytest.raises(TypeError, match=r"^seed must be an int, a random.Random or None, got "):
        Supervisor(Script(FLAKY), max_workers=1, seed=seed)  # type: ignore[arg-type]


def test_the_process_wide_random_state_changes_nothing() -> None:
    random.seed(1)
    first = flaky_run(7)
    random.seed(2)
    second = flaky_run(7)
    assert first == second


@pytest.mark.parametrize("seed", [None, 7])
def test_the_process_wide_random_module_is_never_used(
    monkeypatch: pytest.MonkeyPatch, seed: int | None
) -> None:
    def refuse(*args: object) -> float:
        raise AssertionError("the process-wide random module was used")

    for name in ("random", "uniform", "expovariate", "randint", "randrange", "choice"):
        monkeypatch.setattr(random, name, refuse)
    spans, _ = flaky_run(seed)
    assert all(len(calls) == 3 for calls in spans)  # every slot was retried, to its success
