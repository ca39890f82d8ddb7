"""Hedging: one attempt of a slot as a race of the slot's attempts, the first success winning.

[`Engine.attempt`][trio_supervisor._engine.attempt.Engine.attempt] hands the attempt to
[`Hedging.race`][trio_supervisor._engine.hedging.Hedging.race] when the supervisor was given a
[`Hedge`][trio_supervisor.Hedge]; so runs, streams, re-planning rounds and the restarting path
hedge alike, and a supervisor without one pays a truth test per attempt.

A race runs its first attempt at once and, while no attempt of the slot has succeeded, a hedge
every ``after`` seconds since that attempt started (at most ``max_extra`` for the slot, each
one the throttle allows), each attempt in a task of its own:

- Each waits on the meters like any attempt (acquire, release, ``observe`` of its outcome,
  from its own task); a hedge first takes a place of its own under the capacity bound (a
  borrower of its own, given back when it ends), so never more than ``max_workers`` attempts
  run at once, hedges included.
- The first to succeed wins: it cancels the others at once (their worker sees ``Cancelled`` at
  its next checkpoint, at the same instant), and their spans end ``CANCELLED``, ``lost``. A
  failure ends only its own attempt; when the last attempt still running fails, the race has
  failed with that failure (a hedge still waiting for a place or a meter is not sent then: it
  might wait for the very place its slot's lane holds), and the retry policy goes on as after
  any failed attempt (the race counts as one failure).
- The run's timer times the race as a whole from its first attempt's start: it cancels
  ``running.scope``, which holds every attempt of the race.
- Each attempt has its own number in ``attempt_key()`` (``running.attempts`` counts every call
  of the worker, hedges included; ``running.hedges`` the hedges).

What the race decides is recorded as the plain attempt does it: the winner's (or the last
failure's) span is ended after the timeout is judged, so an attempt that ended at the very
instant its timeout fell still timed out.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable
from typing import Any

import trio

from .._budget import NOTHING_USED, Hold, OverBudget
from .._contract import Status, SubResult
from .._hedge import Hedge
from .._identity import bind_attempt
from .._trace import Span, Trace
from .attempt import Call, Engine, Running, Timer, acquire, failure_status


class Called:
    """One attempt of a race as ``attempt_key()`` reads it: its slot and its own number."""

    __slots__ = ("attempts", "slot")

    def __init__(self, slot: int | None, attempts: int) -> None:
        self.slot = slot
        self.attempts = attempts


class Race:
    """One race of a slot's attempts: who is in it, who won, how the others ended."""

    __slots__ = (
        "begun",
        "calling",
        "engine",
        "failure",
        "final",
        "first",
        "hedger",
        "late",
        "live",
        "now",
        "output",
        "over",
        "running",
        "scopes",
        "timer",
        "trace",
        "won",
    )

    def __init__(
        self,
        engine: Engine[Any, Any],
        running: Running,
        trace: Trace | None,
        timer: Timer | None,
        now: Callable[[], float],
    ) -> None:
        # the attempt it is, as Engine.attempt was given it
        self.engine = engine
        self.running = running
        self.trace = trace
        self.timer = timer
        self.now = now
        self.won: int | None = None  # the attempt that succeeded first (0: the first attempt)
        self.output: Any = None
        self.failure: Exception | None = None  # the latest failure
        self.final: Span | None = None  # the span the race's outcome ends (after the timeout)
        self.first = 0.0  # when the first attempt started
        self.begun = trio.Event()  # set when it did
        self.hedger = trio.CancelScope()  # what starts the hedges; cancelled when it is over
        self.late = False  # the outcome came at or after the timeout: the race timed out
        self.live = 0  # attempts started (or waiting to start) and not yet ended
        self.calling = 0  # attempts whose worker runs now
        self.over = False  # decided: no attempt calls the worker any more
        self.scopes: dict[int, trio.CancelScope] = {}  # each attempt's: cancelled if it lost


class Hedging:
    """A supervisor's hedging: its [`Hedge`][trio_supervisor.Hedge], the durations of its
    recent successful attempts (for a percentile ``after``) and which of its recent attempts
    were hedges (for the throttle). Shared by every run and stream of the supervisor.

    Args:
      hedge: the policy.
    """

    __slots__ = ("_durations", "_hedged", "_sorted", "_starts", "hedge")

    def __init__(self, hedge: Hedge) -> None:
        self.hedge = hedge
        # invariant: _sorted holds the values of _durations, in order; both at most `window`
        self._durations: deque[float] = deque()
        self._sorted: list[float] = []
        # invariant: _starts holds the last `window` attempts, True for a hedge; _hedged counts
        # the True ones
        self._starts: deque[bool] = deque()
        self._hedged = 0

    def delay(self) -> float | None:
        """How long after an attempt starts its first hedge does: ``after`` seconds, or the
        percentile of the recent durations (nearest rank); None while too few are known."""
        hedge = self.hedge
        quantile = hedge.quantile
        if quantile is None:
            return hedge.after  # type: ignore[return-value]  # seconds, without a percentile
        known = self._sorted
        if len(known) < hedge.known_after:
            return None
        rank = math.ceil(quantile / 100 * len(known) - 1e-9)
        return known[max(rank, 1) - 1]

    def durations(self) -> list[float]:
        """The recent durations a percentile ``after`` is taken of, oldest first."""
        return list(self._durations)

    def record(self, seconds: float) -> None:
        """A successful attempt took ``seconds``."""
        if len(self._durations) == self.hedge.window:
            oldest = self._durations.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]
        self._durations.append(seconds)
        bisect.insort(self._sorted, seconds)

    def allowed(self) -> bool:
        """Whether the throttle lets a hedge start now: counting it, at most ``throttle * n`` of
        the last ``n`` attempts are hedges (``n`` the window, or every attempt while fewer)."""
        starts = self._starts
        count = len(starts)
        hedged = self._hedged
        if count == self.hedge.window:  # the new one pushes the oldest out
            hedged -= starts[0]
            count -= 1
        return hedged + 1 <= self.hedge.throttle * (count + 1) + 1e-9

    def started(self, hedge: bool) -> None:
        """An attempt started calling the worker; ``hedge``: it is a hedge."""
        starts = self._starts
        if len(starts) == self.hedge.window and starts.popleft():
            self._hedged -= 1
        starts.append(hedge)
        if hedge:
            self._hedged += 1

    async def race(
        self,
        engine: Engine[Any, Any],
        running: Running,
        trace: Trace | None,
        timer: Timer | None,
        now: Callable[[], float],
    ) -> SubResult[Any, Any] | None:
        """One attempt of ``running``'s slot, as a race of its attempts (see the module); it
        returns, and ``running`` says, how it went, as
        [`Engine.attempt`][trio_supervisor._engine.attempt.Engine.attempt] does."""
        race = Race(engine, running, trace, timer, now)
        delay = self.delay()
        left = self.hedge.max_extra - running.hedges
        try:
            async with trio.open_nursery() as nursery:
                self._enter(nursery, race, 0)
                if delay is not None and left > 0:
                    with race.hedger:
                        await race.begun.wait()
                        for number in range(1, left + 1):
                            await trio.sleep_until(race.first + number * delay)
                            if self.allowed():  # checked again as it starts
                                self._enter(nursery, race, number)
        finally:
            running.stop(None)  # the race ended: the timer lets it be
        slot: int = running.slot  # type: ignore[assignment]  # a slot is being attempted
        if timer is not None:
            running.note_spent()
            if race.late:
                engine.timed_out(running, trace)
                return None
        final = race.final
        if race.won is not None:
            result = running.succeeded(race.output, now())
            if trace is not None and final is not None:
                trace.ended(slot, Status.OK, span=final)
            return result
        failure = race.failure
        assert failure is not None  # no attempt succeeded, and the first one ran
        running.end(failure)
        if trace is not None and final is not None:
            trace.ended(slot, failure_status(failure), failure, span=final)
        return None

    def _enter(self, nursery: trio.Nursery, race: Race, number: int) -> None:
        """Start attempt ``number`` of the race (0: the first, then its hedges)."""
        race.live += 1
        scope = race.scopes[number] = trio.CancelScope()
        nursery.start_soon(self._contend, race, number, scope)

    async def _contend(self, race: Race, number: int, scope: trio.CancelScope) -> None:
        """Attempt ``number`` of the race, in its own task, inside ``scope`` (which the winner
        cancels): a place of its own (a hedge), the meters, the worker's call, its outcome."""
        engine, running, trace, timer, now = (
            race.engine,
            race.running,
            race.trace,
            race.timer,
            race.now,
        )
        places = engine.places
        meters = engine.meters
        slot = running.slot
        hedge = number > 0
        place: object | None = None
        span: Span | None = None
        holds: list[Hold] | None = None
        called = False
        try:
            with scope:
                if hedge:
                    borrower = object()
                    await places.take(borrower)
                    place = borrower
                if engine.budgets:
                    try:
                        holds = await engine.hold(running.subtask)
                    except OverBudget as over:
                        if not hedge:  # the race's first attempt: the slot is over budget
                            race.over = True
                            race.failure = over
                            race.hedger.cancel()
                            if trace is not None:
                                trace.over_budget(slot, running.subtask, over)  # type: ignore[arg-type]
                        return  # a hedge the budget cannot afford is not sent
                elif meters:
                    await acquire(meters)
                try:
                    if race.over:  # decided while this one waited: no call
                        return
                    if hedge and not self.allowed():
                        return  # the throttle filled up while this hedge waited: not sent
                    self.started(hedge)
                    started = now()
                    if hedge:
                        running.start_hedge()
                    else:
                        running.start(started)
                    bind_attempt(Called(slot, running.attempts))  # its own attempt_key()
                    if not hedge:
                        race.first = started
                        if timer is not None:
                            timer.start(running, started)
                        race.begun.set()
                    if trace is not None:
                        span = trace.started(slot, running.subtask, hedge=hedge)  # type: ignore[arg-type]
                    call = Call()
                    race.calling += 1
                    called = True  # the call gives the meters back from here on
                    try:
                        await engine.attempt(running, trace, timer, now, call, holds)
                    finally:
                        if call.mixed is not None and race.won is None:  # not a loser's
                            running.raised(call.mixed)
                    race.calling -= 1
                    if span is not None and call.usage is not None:
                        span.usage = call.usage  # this attempt's own span, among the race's
                finally:
                    if not called:  # never sent (refused, or its race decided): spends nothing
                        engine.give_back(holds, NOTHING_USED)
                outcome = (span, started, call.failure, call.output)
                self._decide(race, number, *outcome)
            lost = scope.cancelled_caught and span is not None and span.end is None
            if lost and trace is not None:  # cancelled in its worker, as it lost
                trace.lost(slot, span)  # type: ignore[arg-type]  # a slot is being attempted
        finally:
            if place is not None:
                places.give_back(place)
            race.live -= 1
            if not race.live:  # nothing runs or waits to: no more hedges
                race.hedger.cancel()

    def _decide(
        self,
        race: Race,
        number: int,
        span: Span | None,
        started: float,
        failure: Exception | None,
        output: Any,
    ) -> None:
        """What attempt ``number``'s outcome makes of the race, in its own task (where the
        meters are told of it)."""
        engine, running, trace, timer, now = (
            race.engine,
            race.running,
            race.trace,
            race.timer,
            race.now,
        )
        slot: int = running.slot  # type: ignore[assignment]  # a slot is being attempted
        if race.won is not None:  # another attempt succeeded first: this one lost
            if trace is not None and span is not None:
                trace.lost(slot, span)
            return
        # what it says is the race's outcome: a success, or a failure while no other attempt's
        # worker runs (a hedge still waiting for a place or a meter is not sent then: it might
        # wait for the very place this attempt's lane holds)
        last = failure is None or not race.calling
        if last:
            race.over = True
            race.hedger.cancel()
            for other, scope in race.scopes.items():
                if other != number:
                    scope.cancel()
        if failure is None:
            race.won = number
            race.output = output
        else:
            race.failure = failure
        if not last:  # a failure while another attempt goes on: it ends alone
            if trace is not None and span is not None:
                trace.ended(slot, failure_status(failure), failure, span=span)  # type: ignore[arg-type]
            for observer in engine.observers:
                observer.observe(failure)
            return
        race.final = span
        if timer is not None:
            race.late = running.late(timer.timeout, failure is not None, race.first, now())
            if race.late:
                return
        if failure is None:
            self.record(now() - started)
        for observer in engine.observers:
            observer.observe(failure)
