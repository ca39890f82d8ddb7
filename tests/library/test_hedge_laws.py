"""The laws of hedged requests, as Hypothesis properties on virtual time.

Each law is a check over one drawn scenario (a plan, each call's latency and whether it fails, a
hedge policy, a capacity bound), run on ``trio.testing.MockClock``. A test next to each one runs
the same check against a deliberately broken engine and expects it to fail, so that no law holds
by accident.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.virtual_time import run_virtual
from trio_supervisor import Backoff, Hedge, Retry, Status, Supervisor, Trace
from trio_supervisor._engine import hedging

EXAMPLES = settings(max_examples=60)


@dataclass
class Scenario:
    """A plan of ``slots`` subtasks; call ``c`` of subtask ``s`` takes ``latency(s, c)`` and
    fails when ``(s, c)`` is in ``fails``."""

    slots: int
    latencies: list[list[float]]  # per subtask, per call (the last one repeats)
    fails: frozenset[tuple[int, int]]
    after: float
    max_extra: int
    throttle: float
    max_workers: int
    attempts: int = 1
    timeout: float | None = None

    def latency(self, subtask: int, call: int) -> float:
        calls = self.latencies[subtask]
        return calls[min(call, len(calls) - 1)]


def scenario_supervisor(scenario: Scenario, **options: Any) -> Supervisor[int, int]:
    """A supervisor of ``scenario``'s worker (call ``c`` of subtask ``s`` sleeps ``latency(s, c)``
    and fails when ``(s, c)`` is in ``fails``), retrying without waiting, under its timeout and
    its hedge; ``options`` are the supervisor's others (spans, restarts)."""
    calls: dict[int, int] = {}

    async def worker(subtask: int) -> int:
        call = calls.get(subtask, 0)
        calls[subtask] = call + 1
        await trio.sleep(scenario.latency(subtask, call))
        if (subtask, call) in scenario.fails:
            raise RuntimeError(f"call {call} of {subtask} failed")
        return subtask

    return Supervisor(
        worker,
        max_workers=scenario.max_workers,
        retry=Retry(attempts=scenario.attempts, backoff=Backoff(initial=0, maximum=0)),
        timeout=scenario.timeout,
        hedge=policy(scenario),
        **options,
    )


@dataclass
class Observed:
    """What the worker saw while a scenario ran."""

    in_flight: int = 0
    most_in_flight: int = 0
    per_slot: dict[int, int] = field(default_factory=dict)
    most_per_slot: dict[int, int] = field(default_factory=dict)
    calls: dict[int, int] = field(default_factory=dict)
    hedge_log: list[bool] = field(default_factory=list)  # per call, in call order: a hedge?
    cancelled_at: dict[int, list[float]] = field(default_factory=dict)


def latencies() -> st.SearchStrategy[float]:
    """Whole 1/32 s (exact in binary), with a straggler now and then."""
    return st.one_of(
        st.integers(1, 32).map(lambda k: k / 32),
        st.integers(64, 320).map(lambda k: k / 32),
    )


@st.composite
def scenarios(draw: st.DrawFn, *, fails: bool = True, timeout: bool = False) -> Scenario:
    slots = draw(st.integers(1, 24))
    per_call = st.lists(latencies(), min_size=1, max_size=4)
    table = draw(st.lists(per_call, min_size=slots, max_size=slots))
    failing: frozenset[tuple[int, int]] = frozenset()
    if fails:
        failing = draw(
            st.frozensets(st.tuples(st.integers(0, slots - 1), st.integers(0, 3)), max_size=slots)
        )
    return Scenario(
        slots=slots,
        latencies=table,
        fails=failing,
        after=draw(st.integers(1, 64).map(lambda k: k / 32)),
        max_extra=draw(st.integers(1, 3)),
        throttle=draw(st.sampled_from([0.05, 0.1, 0.25, 0.5, 1.0])),
        max_workers=draw(st.integers(1, 12)),
        attempts=draw(st.integers(1, 3)),
        timeout=draw(st.one_of(st.none(), st.integers(32, 256).map(lambda k: k / 32)))
        if timeout
        else None,
    )


def run(scenario: Scenario, hedge: Hedge | None, window: int = 100) -> tuple[Any, Trace, Observed]:
    """Run ``scenario`` once, with ``hedge`` (None: without hedging), on virtual time."""
    seen = Observed()

    async def main() -> tuple[Any, Trace]:
        trace = Trace()

        async def worker(subtask: int) -> int:
            call = seen.calls.get(subtask, 0)
            seen.calls[subtask] = call + 1
            # the span of this very call was appended just before it (no await between)
            seen.hedge_log.append(trace.slots[subtask].spans[-1].hedge)
            seen.in_flight += 1
            seen.most_in_flight = max(seen.most_in_flight, seen.in_flight)
            seen.per_slot[subtask] = seen.per_slot.get(subtask, 0) + 1
            seen.most_per_slot[subtask] = max(
                seen.most_per_slot.get(subtask, 0), seen.per_slot[subtask]
            )
            try:
                await trio.sleep(scenario.latency(subtask, call))
                if (subtask, call) in scenario.fails:
                    raise RuntimeError(f"call {call} of {subtask} failed")
                return subtask * 10
            except trio.Cancelled:
                seen.cancelled_at.setdefault(subtask, []).append(trio.current_time())
                raise
            finally:
                seen.in_flight -= 1
                seen.per_slot[subtask] -= 1

        supervisor = Supervisor(
            worker,
            max_workers=scenario.max_workers,
            retry=Retry(attempts=scenario.attempts, backoff=Backoff(initial=0, maximum=0)),
            timeout=scenario.timeout,
            hedge=hedge,
        )
        aggregate = await supervisor.run(range(scenario.slots), trace=trace)
        return aggregate, trace

    aggregate, trace = run_virtual(main)
    return aggregate, trace, seen


def policy(scenario: Scenario, window: int = 100) -> Hedge:
    return Hedge(
        scenario.after, max_extra=scenario.max_extra, throttle=scenario.throttle, window=window
    )


# --- the laws, each a check of one scenario ---------------------------------------------------


def check_same_results(scenario: Scenario) -> None:
    """For a deterministic worker (its output a function of its subtask, every call succeeding),
    the results are those without hedging: outputs and statuses, slot by slot."""
    hedged, _, _ = run(scenario, policy(scenario))
    plain, _, _ = run(scenario, None)
    assert [(r.output, r.status) for r in hedged] == [(r.output, r.status) for r in plain]


def check_per_slot_bound(scenario: Scenario) -> None:
    """At most 1 + max_extra attempts of a slot run at once, and a slot gets at most max_extra
    hedges; ``attempts`` counts every call, hedges included."""
    aggregate, _, seen = run(scenario, policy(scenario))
    for slot, most in seen.most_per_slot.items():
        assert most <= 1 + scenario.max_extra, (slot, most)
    for slot, result in enumerate(aggregate):
        assert result.hedges <= scenario.max_extra
        assert result.attempts == seen.calls.get(slot, 0)


def check_loser_cancelled_at_once(scenario: Scenario) -> None:
    """A loser is cancelled at the winner's instant: its worker sees Cancelled then, and its span
    ends CANCELLED, marked lost, then; one attempt of the race that gave the result won."""
    aggregate, trace, seen = run(scenario, policy(scenario))
    for slot, result in enumerate(aggregate):
        spans = trace.slots[slot].spans
        if not result.ok:
            continue
        first = max(index for index, span in enumerate(spans) if not span.hedge)
        race = spans[first:]  # the attempt that gave the result, and its hedges
        lost = [span for span in race if span.lost]
        assert seen.cancelled_at.get(slot, []).count(result.finished) == len(lost)
        for span in lost:
            assert span.end == result.finished
            assert span.status is Status.CANCELLED
        assert [span.status for span in race].count(Status.OK) == 1
        assert all(span.end is not None and span.end <= result.finished for span in race)


def check_capacity_bound(scenario: Scenario) -> None:
    """Never more than max_workers attempts at once, hedges included."""
    _, _, seen = run(scenario, policy(scenario))
    assert seen.most_in_flight <= scenario.max_workers


def check_throttle(scenario: Scenario, window: int) -> None:
    """Of every call of the run, and of any ``window`` consecutive calls (or the first n), at
    most ``throttle`` of them are hedges."""
    aggregate, _, seen = run(scenario, policy(scenario, window), window)
    log = seen.hedge_log
    assert sum(result.hedges for result in aggregate) == sum(log)
    assert sum(log) <= scenario.throttle * len(log) + 1e-9
    for end in range(1, len(log) + 1):
        recent = log[max(0, end - window) : end]
        assert sum(recent) <= scenario.throttle * len(recent) + 1e-9, (end, recent)


def check_fixed_delay(scenario: Scenario) -> None:
    """The k-th hedge of an attempt starts no sooner than ``k * after`` after that attempt
    started, at a whole multiple of ``after`` when a place is free at once (a throttled one is
    not sent); an attempt that ended before ``after`` has no hedge."""
    aggregate, trace, _ = run(scenario, policy(scenario))
    ample = scenario.max_workers >= scenario.slots * (1 + scenario.max_extra)
    for slot in range(len(aggregate)):
        spans = trace.slots[slot].spans
        primary = None
        number = 0
        for index, span in enumerate(spans):
            if not span.hedge:
                primary, number = span, 0
                assert span.end is not None
                if span.end < span.start + scenario.after and index + 1 < len(spans):
                    assert not spans[index + 1].hedge
                continue
            number += 1
            assert primary is not None
            waited = span.start - primary.start
            assert waited >= number * scenario.after
            if ample:
                times = waited / scenario.after
                assert times == round(times), (waited, scenario.after)


# --- the properties -------------------------------------------------------------------------------


@EXAMPLES
@given(scenarios(fails=False))
def test_hedging_gives_a_deterministic_worker_the_same_results(scenario: Scenario) -> None:
    check_same_results(scenario)


@EXAMPLES
@given(scenarios(timeout=True))
def test_at_most_one_plus_n_attempts_of_a_slot_run_at_once(scenario: Scenario) -> None:
    check_per_slot_bound(scenario)


@EXAMPLES
@given(scenarios(timeout=True))
def test_the_loser_is_cancelled_at_the_winners_instant(scenario: Scenario) -> None:
    check_loser_cancelled_at_once(scenario)


@EXAMPLES
@given(scenarios(timeout=True))
def test_the_capacity_bound_holds_with_hedges(scenario: Scenario) -> None:
    check_capacity_bound(scenario)


@EXAMPLES
@given(scenarios(), st.integers(1, 30))
def test_the_throttles_fraction_holds_over_any_run(scenario: Scenario, window: int) -> None:
    check_throttle(scenario, window)


@EXAMPLES
@given(scenarios(), st.booleans())
def test_a_fixed_delay_hedge_starts_at_after(scenario: Scenario, ample: bool) -> None:
    if ample:  # a place free for every hedge: each starts on the dot
        scenario.max_workers = scenario.slots * (1 + scenario.max_extra)
    check_fixed_delay(scenario)


def nearest_rank(durations: list[float], quantile: float) -> float:
    ordered = sorted(durations)
    return ordered[max(1, math.ceil(quantile / 100 * len(ordered) - 1e-9)) - 1]


@settings(max_examples=40)
@given(
    st.lists(latencies(), min_size=1, max_size=40),
    st.sampled_from(["p50", "p75", "p90"]),
    st.integers(10, 20),
)
def test_the_percentile_delay_uses_the_recent_durations(
    durations: list[float], after: str, window: int
) -> None:
    """One slot per run, run after run on one supervisor: a run's hedge starts at the percentile
    of the durations of the last ``window`` successful attempts before it (nearest rank), and
    none starts while fewer are known than the percentile needs."""
    hedge = Hedge(after, throttle=1.0, window=window)
    known: list[float] = []
    calls = iter(durations)

    async def main() -> None:
        async def worker(subtask: int) -> int:
            await trio.sleep(next(calls, 1 / 32))
            return subtask

        supervisor = Supervisor(worker, max_workers=2, hedge=hedge)
        for index in range(len(durations)):
            trace = Trace()
            await supervisor.run([index], trace=trace)
            spans = trace.slots[0].spans
            recent = known[-window:]
            if len(recent) < hedge.known_after:
                assert len(spans) == 1
            else:
                delay = nearest_rank(recent, hedge.quantile or 0)
                if spans[0].end is not None and spans[0].end - spans[0].start > delay:
                    assert len(spans) == 2
                    assert spans[1].start - spans[0].start == delay
                else:
                    assert len(spans) == 1
            winner = next(span for span in spans if span.status is Status.OK)
            assert winner.end is not None
            known.append(winner.end - winner.start)

    run_virtual(main)


# --- each law fails against a broken engine ------------------------------------------------------


@contextmanager
def broken(name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    original = getattr(hedging.Hedging, name)
    setattr(hedging.Hedging, name, replacement)
    try:
        yield
    finally:
        setattr(hedging.Hedging, name, original)


STRAGGLER = Scenario(
    slots=12,
    latencies=[[4.0, 0.5] if slot % 2 else [0.25] for slot in range(12)],
    fails=frozenset(),
    after=1.0,
    max_extra=1,
    throttle=0.1,
    max_workers=8,
)


def test_the_laws_hold_on_a_straggler_run() -> None:
    aggregate, _, _ = run(STRAGGLER, policy(STRAGGLER))
    assert sum(result.hedges for result in aggregate) >= 1  # the example does hedge
    check_per_slot_bound(STRAGGLER)
    check_loser_cancelled_at_once(STRAGGLER)
    check_capacity_bound(STRAGGLER)
    check_throttle(STRAGGLER, 100)
    check_fixed_delay(STRAGGLER)
    check_same_results(STRAGGLER)


def test_the_throttle_law_fails_without_a_throttle() -> None:
    with broken("allowed", lambda self: True), pytest.raises(AssertionError):
        check_throttle(STRAGGLER, 100)


def test_the_cancellation_law_fails_when_the_loser_runs_on() -> None:
    def never_cancel(self: Any, race: Any, *rest: Any) -> None:
        scopes, race.scopes = race.scopes, {}  # the winner cancels nobody
        try:
            original_decide(self, race, *rest)
        finally:
            race.scopes = scopes

    original_decide = hedging.Hedging._decide
    with broken("_decide", never_cancel), pytest.raises(AssertionError):
        check_loser_cancelled_at_once(STRAGGLER)


def test_the_capacity_law_fails_when_a_hedge_takes_no_place() -> None:
    crowded = Scenario(**{**STRAGGLER.__dict__, "max_workers": 6, "slots": 6})
    crowded.latencies = [[4.0, 0.5]] * 6

    class NoPlaces:
        def __init__(self, places: Any) -> None:
            self._places = places

        async def take(self, borrower: object) -> None:
            await trio.lowlevel.checkpoint()

        def give_back(self, borrower: object) -> None:
            pass

    original = hedging.Hedging._contend

    async def free(self: Any, race: Any, *rest: Any) -> None:
        engine = race.engine
        if not isinstance(engine.places, NoPlaces):  # the race's first attempt to start
            fake = copy.copy(engine)  # the race's engine, but for its places
            fake.places = NoPlaces(engine.places)
            race.engine = fake  # the race's attempts take their places from it
        await original(self, race, *rest)

    loose = Scenario(**{**crowded.__dict__, "throttle": 1.0})
    with broken("_contend", free), pytest.raises(AssertionError):
        check_capacity_bound(loose)
    check_capacity_bound(loose)  # and with places, it holds


def test_the_fixed_delay_law_fails_when_hedges_come_early() -> None:
    original = hedging.Hedging.delay

    def early(self: Any) -> float | None:
        delay = original(self)
        return None if delay is None else delay / 2

    with broken("delay", early), pytest.raises(AssertionError):
        check_fixed_delay(STRAGGLER)


def test_the_same_results_law_fails_when_the_race_forgets_the_output() -> None:
    flaky = Scenario(**{**STRAGGLER.__dict__, "throttle": 1.0})
    original = hedging.Hedging._decide

    def last_wins(self: Any, race: Any, *rest: Any) -> None:
        original(self, race, *rest)
        race.output = None  # a broken race that forgets the winner's output

    with broken("_decide", last_wins), pytest.raises(AssertionError):
        check_same_results(flaky)


def test_the_per_slot_law_fails_when_hedges_are_not_counted() -> None:
    original = hedging.Hedging.race

    async def uncounted(self: Any, engine: Any, running: Any, *rest: Any) -> None:
        await original(self, engine, running, *rest)
        running.attempts = max(1, running.attempts - running.hedges)

    loose = Scenario(**{**STRAGGLER.__dict__, "throttle": 1.0})
    with broken("race", uncounted), pytest.raises(AssertionError):
        check_per_slot_bound(loose)
