"""Retry jitter comes from the supervisor's own generator: a seeded run is reproducible, on
every path, whatever order trio runs the tasks that wake at one instant in.

Trio runs the tasks woken at one instant in an order it draws from ``trio._core._run._r``: it
reverses each batch with probability 1/2, or, when Hypothesis is loaded, shuffles it. Seeding
``_r`` in both modes runs the same ties in many orders.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trio._core import _run as trio_run

from tests.library.scripted_worker import PATHS, Behaviour, Script
from tests.library.virtual_time import run_virtual
from trio_supervisor import Backoff, Restarts, Retry, Supervisor, Trace

FLAKY = [Behaviour(1 + slot % 3, ("fail", "fail", "ok")) for slot in range(12)]
"""Twelve slots failing twice each; latencies 1 to 3 /32 s, so slots tie from the first instant
on, and under one_for_all and rest_for_one the slots a restart takes start again together."""
NO_WAIT = Backoff(0, 0)
"""Every retry and restart at once: the failures of slots with one latency tie again and again."""


@pytest.fixture(autouse=True)
def scheduling_restored() -> Iterator[None]:
    """Trio's scheduling is as it was again after each test."""
    state = trio_run._r.getstate()
    allowed = trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    yield
    setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", allowed)  # noqa: B010  # a Final
    trio_run._r.setstate(state)


def order_ties(shuffled: bool, seed: int) -> None:
    """Trio orders each batch of tasks woken together by ``seed``: shuffled, or reversed or not."""
    setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", shuffled)  # noqa: B010  # a Final
    trio_run._r.seed(seed)


def whole_run(
    behaviours: Sequence[Behaviour],
    seed: int,
    path: str,
    backoff: Backoff,
    workers: int,
) -> tuple[list[Any], list[Any], list[Any]]:
    """Everything a run shows, in virtual seconds from its start: every call of the worker,
    every span of the trace (its status and error included), every slot's result."""
    script = Script(behaviours)
    plan = range(len(behaviours))
    supervisor = Supervisor(
        script,
        max_workers=workers,
        retry=Retry(attempts=3, backoff=backoff, seed=seed),
        **PATHS[path],
    )

    async def main() -> tuple[list[Any], list[Any]]:
        trace = Trace(plan)
        aggregate = await supervisor.run(plan, trace=trace)
        origin = trace.origin
        spans = [
            [(s.start - origin, (s.end or 0) - origin, s.status, s.error) for s in slot.spans]
            for slot in trace.slots
        ]
        ended = [
            (r.status, r.attempts, r.output, r.error, (r.finished or 0) - origin) for r in aggregate
        ]
        return spans, ended

    spans, ended = run_virtual(main)
    return [script.spans.get(slot) for slot in plan], spans, ended


def flaky_run(seed: int | random.Random | None, path: str = "lanes") -> tuple[list[Any], list[Any]]:
    """Twelve slots failing twice each under full jitter: every call's span, and every slot's
    trace, in virtual seconds from the start."""
    script = Script(FLAKY)
    supervisor = Supervisor(
        script,
        max_workers=4,
        retry=Retry(attempts=3, backoff=Backoff(0.25, 4.0), seed=seed),
        **PATHS[path],
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


orders = st.tuples(st.booleans(), st.integers(min_value=0, max_value=2**32))
"""A scheduler order: shuffled or reversed, and the seed of trio's draws."""


@settings(max_examples=24, deadline=None)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    path=st.sampled_from(list(PATHS)),
    backoff=st.sampled_from([Backoff(0.25, 4.0), NO_WAIT]),
    first=orders,
    second=orders,
)
def test_the_same_seed_gives_the_same_run_in_every_scheduler_order(
    seed: int, path: str, backoff: Backoff, first: tuple[bool, int], second: tuple[bool, int]
) -> None:
    """Slots that fail at one instant are handled lowest slot first, whichever of their tasks
    trio runs first: which restart takes which slots, which wait they keep, which failure is
    one too many."""
    order_ties(*first)
    once = whole_run(FLAKY, seed, path, backoff, 4)
    order_ties(*second)
    assert whole_run(FLAKY, seed, path, backoff, 4) == once


@settings(max_examples=40, deadline=None)
@given(
    behaviours=st.lists(
        st.builds(
            Behaviour,
            st.integers(min_value=1, max_value=2),  # two latencies: ties everywhere
            st.lists(st.sampled_from(["ok", "fail"]), min_size=1, max_size=3).map(tuple),
        ),
        min_size=2,
        max_size=6,
    ),
    workers=st.integers(min_value=1, max_value=4),
    path=st.sampled_from(list(PATHS)),
    restarts=st.integers(min_value=0, max_value=4),
    first=orders,
    second=orders,
)
def test_runs_full_of_ties_repeat_in_every_scheduler_order(
    behaviours: list[Behaviour],
    workers: int,
    path: str,
    restarts: int,
    first: tuple[bool, int],
    second: tuple[bool, int],
) -> None:
    """Slots of two latencies failing and succeeding with no wait between attempts, under a
    bound of a few restarts that the run may exceed at an instant where several slots fail."""
    options = dict(PATHS[path])
    if path != "lanes":
        strategy = options["restarts"].strategy
        options["restarts"] = Restarts(max_restarts=restarts, within=1.0, strategy=strategy)
    order_ties(*first)
    once = bounded_run(behaviours, workers, options)
    order_ties(*second)
    assert bounded_run(behaviours, workers, options) == once


def bounded_run(
    behaviours: Sequence[Behaviour], workers: int, options: dict[str, Any]
) -> tuple[list[Any], list[Any]]:
    """Every call of the worker, and every slot's result, of a run without waits."""
    script = Script(behaviours)
    supervisor = Supervisor(
        script, max_workers=workers, retry=Retry(attempts=3, backoff=NO_WAIT, seed=0), **options
    )

    async def main() -> list[Any]:
        aggregate = await supervisor.run(range(len(behaviours)))
        return [(r.status, r.attempts, r.error, r.started, r.finished) for r in aggregate]

    ended = run_virtual(main)
    return [script.spans.get(slot) for slot in range(len(behaviours))], ended


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
    with pytest.raises(
        TypeError, match=r"^Retry seed must be an int, a random.Random or None, got "
    ):
        Retry(seed=seed)  # type: ignore[arg-type]


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
