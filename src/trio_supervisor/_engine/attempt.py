"""The attempt: one call of a slot's worker, and everything that goes with it, written once.

[`Engine.attempt`][trio_supervisor._engine.attempt.Engine.attempt] waits on the meters, calls
the worker, isolates its failure, decides what a timeout made of it, tells the meters that
observe, and records the span in the trace;
[`Engine.next_wait`][trio_supervisor._engine.attempt.Engine.next_wait] decides the wait before
the next one (full jitter, the server's Retry-After never undercut, the deadline in force). The
lanes (``lanes.py``) and the restarting path (``restarting.py``) both call them, so a promise
about one attempt holds on both by construction. A slot's progress lives in a
[`Running`][trio_supervisor._engine.attempt.Running], which both paths hand to the attempt.

Attempts are timed by one task per run, a [`Timer`][trio_supervisor._engine.attempt.Timer],
not by a deadline per attempt: each attempt appends its expiry to a queue, and the timer cancels
the scope of an attempt still running at its expiry (see ``benchmarks/README.md`` for what this
saves). An attempt that ends at the very instant its timeout falls timed out, whichever of the
worker and the timer trio wakes first: the timeout wins, as it would with trio's own deadline.
"""

from __future__ import annotations

import random
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from types import CoroutineType
from typing import Any, Generic, Protocol, TypeVar

import trio
from trio.lowlevel import ParkingLot

from .._approval import AwaitingApproval, Rejected
from .._budget import NOTHING_USED, TALLY, Hold, OverBudget, Tally, is_budget
from .._contract import Status, SubResult, describe, failed_result, ok_result
from .._retry import Backoff
from .._trace import Trace
from .._validate import not_awaitable
from .places import Places

S = TypeVar("S")
T = TypeVar("T")

NOTHING: Any = object()
"""No value: what a worker's call returned, once awaited."""
CUT_SHORT = "Cancelled: the run was cut short before this slot finished"
"""How a slot cut short while it ran begins its error; a run may name the cause instead."""


class Running:
    """A slot being run, and how far it got: what its next attempt, its result, or its cut-short
    report is made from.

    A lane has one and reuses it from slot to slot (``slot`` is None between slots); the
    restarting path makes one per attempt, carrying the counts over from the slot's previous one.

    Its methods are the only code that writes its fields (``tests/library/test_slot_state_owner.py``
    checks it): the lanes, the restarting path, hedging, the timer and the places read them and
    say what happened, one call per event.
    """

    __slots__ = (
        "attempts",
        "failure",
        "failures",
        "finished",
        "hedges",
        "mixed",
        "output",
        "placed",
        "scope",
        "serial",
        "slot",
        "spent",
        "started",
        "subtask",
        "timed_out",
    )

    def __init__(self) -> None:
        # -- the slot: set as it is begun (or resumed); slot is None while there is none
        self.slot: int | None = None
        self.subtask: Any = None
        # -- its counts, 0 as it begins; they only grow until the next slot:
        # every call of the worker for this slot, hedges included
        self.attempts = 0
        # its own failed attempts, timeouts included: what `attempts=` bounds
        self.failures = 0
        # how many of its attempts were hedges: hedges <= attempts (0 when attempts is 0)
        self.hedges = 0
        # when its first attempt called the worker: None exactly while attempts is 0
        self.started: float | None = None
        # -- how its last attempt ended (meaningful once one ended):
        self.output: Any = None  # its output, read only while failure is None
        self.failure: Exception | None = None  # its failure, None after a success
        self.timed_out = False  # it ran past its timeout (failure is then a TooSlowError)
        # the Exception part of a group the worker raised together with Cancelled (None as the
        # slot begins: it is kept from one attempt to the next)
        self.mixed: BaseException | None = None
        # -- the lane's own, kept from slot to slot (park and resume leave them alone):
        # when the last slot that ended on it, succeeded or failed for good, ended (what its
        # lane may start the next at)
        self.finished = 0.0
        # the scope the timer cancels, and a count that moves on as each attempt starts and
        # again as it ends (start, then end or stop): the timer cancels the scope only while
        # serial is still what it was as the attempt it times started
        self.scope: trio.CancelScope | None = None
        self.serial = 0
        # the timer cancelled the scope during the last attempt (read once: trio's
        # cancel_called reads the clock), so the scope is spent and the lane opens a new one
        self.spent = False
        # the lane holds its places (set and cleared through its Places only, see places.py)
        self.placed = False

    # -- the slot ------------------------------------------------------------------------------

    def begin(self, slot: int, subtask: Any, started: float | None = None) -> None:
        """Start on slot ``slot``: nothing attempted yet; or, with ``started``, its first
        attempt calls the worker then (``begin`` and ``start`` in one call, the path of every
        slot a lane takes when nothing is waited on before its call)."""
        self.slot = slot
        self.subtask = subtask
        self.failures = 0
        self.hedges = 0
        self.started = started
        self.failure = None
        self.timed_out = False
        self.mixed = None
        if started is None:
            self.attempts = 0
        else:  # as start() does
            self.attempts = 1
            self.serial += 1

    def carry(self, previous: Running | None) -> None:
        """Go on from ``previous``, the slot's last attempt (this one just begun): its calls,
        its own failures and its first start are this one's too (a slot restarted for a
        sibling keeps them)."""
        if previous is not None:
            self.attempts = previous.attempts
            self.failures = previous.failures
            self.started = previous.started
            self.hedges = previous.hedges

    def leave(self, finished: float | None = None) -> None:
        """The slot is off this lane (its result given, or parked): none until the next. With
        ``finished``, its final result was given at that instant (as ``succeeded`` notes for a
        success): what the lane's next slot may start at."""
        self.slot = None
        if finished is not None:
            self.finished = finished

    def succeeded(self, output: Any, finished: float) -> SubResult[Any, Any]:
        """The attempt (or the race) ended in time with ``output``, at ``finished``: the slot's
        result; the timer lets it be, and the slot is off this lane (as after ``leave``). What
        ``end`` does for a success, and the result with it: one call on the path every
        successful slot takes."""
        self.serial += 1
        self.timed_out = False
        self.failure = None
        self.output = output
        self.finished = finished
        self.slot = None
        started: float = self.started  # type: ignore[assignment]  # set by its first attempt
        return ok_result(self.subtask, output, self.attempts, started, finished, self.hedges)

    def park(self) -> tuple[Any, ...]:
        """What this slot got to, to go on with later on another lane (see ``resume``)."""
        return (
            self.slot,
            self.subtask,
            self.attempts,
            self.failures,
            self.started,
            self.output,
            self.failure,
            self.timed_out,
            self.mixed,
            self.hedges,
        )

    def resume(self, parked: tuple[Any, ...]) -> None:
        """Go on with a slot ``park`` put aside: this lane's own fields (its scope, its places)
        stay as they are."""
        (
            self.slot,
            self.subtask,
            self.attempts,
            self.failures,
            self.started,
            self.output,
            self.failure,
            self.timed_out,
            self.mixed,
            self.hedges,
        ) = parked

    # -- an attempt ----------------------------------------------------------------------------

    def start(self, started: float) -> None:
        """An attempt (a race's first) calls the worker, at ``started``: a new ``serial``."""
        self.attempts += 1
        self.serial += 1
        if self.started is None:
            self.started = started

    def start_hedge(self) -> None:
        """A hedge of the running race calls the worker (its first attempt started already)."""
        self.attempts += 1
        self.hedges += 1

    def stop(self, mixed: BaseException | None) -> None:
        """The attempt (or a race) is over, cut short or timed out: the timer lets it be.
        ``mixed``: what its worker raised together with ``Cancelled``, if anything."""
        self.serial += 1
        if mixed is not None:
            self.mixed = mixed

    def raised(self, mixed: BaseException) -> None:
        """The worker raised ``mixed`` together with ``Cancelled`` (one attempt of a race)."""
        self.mixed = mixed

    def end(self, failure: Exception) -> None:
        """The attempt (or the race) ended in time with ``failure``, one more of the slot's
        own; the timer lets it be. (A success ends through ``succeeded``.)"""
        self.serial += 1
        self.timed_out = False
        self.failure = failure
        self.failures += 1

    def time_out(self, failure: trio.TooSlowError) -> None:
        """The attempt ran past its timeout; ``failure`` says so (one more of the slot's own)."""
        self.timed_out = True
        self.failures += 1
        self.failure = failure

    def give_up(self, failure: Exception) -> None:
        """The slot's failure is final as ``failure`` instead (its retry would come too late)."""
        self.failure = failure

    # -- the lane's scope and places -------------------------------------------------------------

    def open_scope(self) -> trio.CancelScope:
        """A new scope for the timer to cancel (the last one, if any, is spent)."""
        scope = self.scope = trio.CancelScope()
        self.spent = False
        return scope

    def late(self, timeout: float, failed: bool, started: float, ended: float) -> bool:
        """Whether the attempt that started at ``started`` and ended at ``ended`` (with a
        failure, if ``failed``) timed out: the one judgement of a timeout, a race's included.

        The timer fired and the worker let no ``Cancelled`` through but failed (or raised with
        it); or it ended at the very instant its timeout fell, whichever of the two trio woke
        first: the timeout wins, as it would with trio's own deadline. It notes in ``spent``
        whether the timer fired (the scope is then spent).
        """
        scope = self.scope
        assert scope is not None
        if scope.cancel_called:
            self.spent = True
            return failed or self.mixed is not None
        self.spent = False
        return ended >= started + timeout

    def note_spent(self) -> None:
        """Note in ``spent`` whether the timer fired during the attempt (a race's, as it ends)."""
        scope = self.scope
        assert scope is not None
        self.spent = scope.cancel_called

    def mark_placed(self, placed: bool) -> None:
        """The lane holds its places now (``placed``), or not: what its ``Places`` says."""
        self.placed = placed


def forget_frames(exc: BaseException) -> BaseException:
    """Let ``exc`` keep where it was raised but not the local variables of the frames it passed:
    a failed slot costs what a successful one does, and keeps no worker's data alive."""
    if (
        exc.__context__ is None
        and exc.__cause__ is None
        and not isinstance(exc, BaseExceptionGroup)
    ):
        traceback.clear_frames(exc.__traceback__)  # the common case: one exception, no chain
        return exc
    seen = 0
    pending = [exc]
    while pending and seen < 64:  # a chain of causes, or a group's members; bounded
        current = pending.pop()
        seen += 1
        traceback.clear_frames(current.__traceback__)
        if current.__cause__ is not None:
            pending.append(current.__cause__)
        if current.__context__ is not None and current.__context__ is not current.__cause__:
            pending.append(current.__context__)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return exc


def while_cancelled(error: str, mixed: BaseException | None) -> str:
    """A slot's ``error``, with what its worker raised while being cancelled, when it did: the
    `Exception` part of a group the worker raised together with ``trio.Cancelled``."""
    if mixed is None:
        return error
    return f"{error}; while cancelled, the worker raised {describe(mixed)}"


def too_slow(timeout: float | None, mixed: BaseException | None) -> trio.TooSlowError:
    """The failure of an attempt that ran past its ``timeout``; its context is what the worker
    raised while being cancelled, if anything."""
    error = trio.TooSlowError(f"the attempt ran past its timeout of {timeout:g}s")
    error.__context__ = mixed
    return error


def past_deadline(failure: Exception, wait: float, left: float) -> Exception:
    """The failure of a slot whose server asked for a wait that outlasts the deadline."""
    error = trio.TooSlowError(
        f"{describe(failure)}; the server asked to wait {wait:g}s before a retry, but the "
        f"run's deadline is {max(left, 0):g}s away: the slot ends now instead of sleeping past it"
    )
    error.__cause__ = failure
    return error


def failure_status(failure: Exception) -> Status:
    """How a slot whose worker raised ``failure`` ends: ``FAILED``, or the approval gate's
    ``AWAITING_APPROVAL`` (a question without an answer) or ``REJECTED``."""
    if isinstance(failure, AwaitingApproval):
        return Status.AWAITING_APPROVAL
    if isinstance(failure, Rejected):
        return Status.REJECTED
    if isinstance(failure, OverBudget):
        return Status.OVER_BUDGET
    return Status.FAILED


async def acquire(meters: tuple[Any, ...]) -> None:
    """Wait on every meter, in order; on cancellation give back what was acquired."""
    acquired = 0
    try:
        for meter in meters:
            await meter.acquire()
            acquired += 1
    finally:
        if acquired < len(meters):  # cancelled while waiting: give back what was taken
            for meter in reversed(meters[:acquired]):
                meter.release()


UNIT = 2**53
_MASK = 2**64 - 1


def unit(key: int, slot: int, attempt: int) -> float:
    """A number in ``[0, 1)`` fixed by ``(key, slot, attempt)``: splitmix64's finaliser over the
    three mixed together, a counter-based generator that needs no state shared between tasks."""
    z = (key + slot * 0x9E3779B97F4A7C15 + attempt * 0xD1B54A32D192ED03) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) / UNIT


def drop_own_frame(exc: BaseException) -> None:
    """The traceback of a worker's failure starts at the worker, not at the attempt that called
    it (whose frame would hold the slot's state, and so the failure itself, in a cycle)."""
    tb = exc.__traceback__
    if tb is not None:
        exc.__traceback__ = tb.tb_next


class Timer:
    """Times the attempts of one run, or stream, with one task.

    An attempt that starts calls [`start`][trio_supervisor._engine.attempt.Timer.start]; the
    timer's task, [`watch`][trio_supervisor._engine.attempt.Timer.watch], sleeps until the
    earliest expiry and cancels the attempt's scope (``running.scope``) if that very attempt is
    still running then. Every attempt has the same timeout and starts no earlier than the one
    before, so the queue of expiries is in order and only its head is ever looked at. The timer
    wakes once per expiry it must act on or drop, at most; attempts that end in time cost a
    queue entry each.

    Args:
      timeout: seconds each attempt may run.
    """

    __slots__ = ("_idle", "_queue", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        # invariant: expiries are in order; an entry is live while running.serial == serial
        self._queue: deque[tuple[float, Running, int]] = deque()
        self._idle = ParkingLot()  # the timer's task, waiting for an attempt to time

    def start(self, running: Running, started: float) -> None:
        """``running``'s attempt started at ``started``: time it."""
        self._queue.append((started + self.timeout, running, running.serial))
        if len(self._idle):
            self._idle.unpark()

    async def watch(self) -> None:
        """Cancel each attempt still running at its expiry; runs until cancelled."""
        queue = self._queue
        while True:
            while queue:
                expiry, running, serial = queue[0]
                if running.serial != serial:  # ended in time
                    queue.popleft()
                elif trio.current_time() < expiry:
                    await trio.sleep_until(expiry)
                else:
                    queue.popleft()
                    assert running.scope is not None
                    running.scope.cancel()
            await self._idle.park()


class Call:
    """What one attempt of a hedged race made (``Engine.attempt`` fills it in): its output or
    its failure, the `Exception` part of a group it raised with ``trio.Cancelled``, and what it
    reported using (None: nothing, or not tallied)."""

    __slots__ = ("failure", "mixed", "output", "usage")

    def __init__(self) -> None:
        self.failure: Exception | None = None
        self.mixed: BaseException | None = None
        self.output: Any = None
        self.usage: Any = None


class Racing(Protocol):
    """What runs an attempt as a race of a slot's attempts (``hedging.Hedging``): the engine
    knows it by this alone, so that it imports nothing of the module that races. ``race``
    takes the engine and ``attempt``'s arguments and returns, and has ``running`` say, how
    the race went, as ``Engine.attempt`` does."""

    @property
    def race(self) -> Callable[..., Awaitable[SubResult[Any, Any] | None]]: ...


class Engine(Generic[S, T]):
    """How every slot of a supervisor is attempted: the worker, the timeout of each attempt, the
    retry policy, the meters and the capacity bound. Immutable; shared by every run and stream
    of one supervisor.

    Args:
      worker: a callable whose call returns an awaitable.
      timeout: seconds per attempt, or None.
      attempts: how many times a slot may fail before its failure is final.
      retryable: whether a failure may be retried.
      backoff: the full-jitter bound of the wait between attempts.
      seed: draws each run's retry jitter key (see ``run_key``).
      meters: waited on before each attempt, released after it; those with an ``observe``
        method are told each attempt's outcome (its failure, or None), after the release.
        Those that reserve per subtask (``reserve`` and ``settle``, as a ``Budget``) reserve
        after every other meter was acquired, and settle before any is released.
      places: the capacity bound every worker of every run and stream holds a place of.
      hedging: the supervisor's hedging (``hedging.py``), or None: each attempt is then one call.
    """

    __slots__ = (
        "_any_failure",
        "_bare",
        "_no_wait",
        "attempts",
        "backoff",
        "budgets",
        "gates",
        "hedging",
        "meters",
        "observers",
        "places",
        "retryable",
        "seed",
        "timeout",
        "worker",
    )

    def __init__(
        self,
        worker: Callable[[S], Awaitable[T]],
        timeout: float | None,
        attempts: int,
        retryable: Callable[[BaseException], bool],
        backoff: Backoff,
        seed: random.Random,
        meters: tuple[Any, ...],
        places: Places,
        hedging: Racing | None = None,
    ) -> None:
        self.worker = worker
        self.hedging = hedging
        self.places = places
        self.timeout = timeout
        self.attempts = attempts
        self.retryable = retryable
        self.backoff = backoff
        self.seed = seed
        self.meters = meters
        self._no_wait = backoff.maximum <= 0  # every retry starts at once
        self._any_failure = retryable(Exception("any"))  # every failure may be retried
        self.observers = tuple(m for m in meters if callable(getattr(m, "observe", None)))
        # the meters that reserve per subtask (budgets), and the others (acquire, release)
        self.budgets = tuple(m for m in meters if is_budget(m))
        self.gates = tuple(m for m in meters if not is_budget(m)) if self.budgets else meters
        # an attempt is the worker's call alone: no race to run, no meter to wait on or release
        self._bare = hedging is None and not meters

    def run_key(self) -> int:
        """A key for one run's retry jitter, drawn from the supervisor's generator."""
        return int(self.seed.random() * UNIT)

    def timer(self) -> Timer | None:
        """A timer for one run's attempts, None without a timeout."""
        return None if self.timeout is None else Timer(self.timeout)

    async def attempt(
        self,
        running: Running,
        trace: Trace | None,
        timer: Timer | None,
        now: Callable[[], float],
        race: Call | None = None,
        holds: list[Hold] | None = None,
        fresh: tuple[int, Any] | None = None,
        since: float | None = None,
    ) -> SubResult[Any, Any] | None:
        """Run one attempt of ``running``'s slot, inside ``running.scope`` when ``timer`` times
        it; ``now`` reads the run's clock (its bound ``current_time``, cheaper per call than
        ``trio.current_time()``). This is the one function that calls the worker. ``fresh``
        is the slot and its subtask when the lane just took it: this, its first attempt,
        begins it on ``running`` (see ``Running.begin``); ``since``, when not None, is the
        instant the lane's last slot ended, which the lane went straight on from: an attempt
        that waits on nothing before its call starts then (the clock is not read again).

        It waits on every meter first and releases them after; it calls the worker, whose
        `Exception` is the attempt's failure (an exception group holding `Exception`s and
        ``trio.Cancelled`` has its `Exception` part kept in ``running.mixed`` while the rest
        propagates; a call that returns no awaitable raises the `TypeError` naming the fix);
        it tells the meters that observe how it went, unless it timed out; and it records the
        attempt's span in ``trace``, with what the worker reported using.

        Returns the slot's result when the attempt succeeded in time (the slot is then off the
        lane, see ``Running.succeeded``); otherwise None, with ``running.failure`` the failure
        and ``running.timed_out`` saying whether the attempt ran past its timeout: the timer
        fired and the worker let no ``Cancelled`` through but failed, or the worker ended at
        the very instant the timeout fell. When the timer's ``Cancelled`` does come through,
        it propagates to the caller's scope, which then calls
        [`timed_out`][trio_supervisor._engine.attempt.Engine.timed_out].

        With ``hedging``, the attempt is a race of the same slot's attempts (``hedging.py``),
        which keeps every promise above for the race as a whole. Each attempt of a race comes
        back here with its ``race`` (a `Call`) and ``holds``: its own task took the meters
        and keeps the race's books, so this only calls the worker, gives the meters back
        (``holds`` settled, or the gates released), and fills ``race`` in: the output or the
        failure (its frames forgotten past the worker's own), the `Exception` part of a group
        raised with ``Cancelled``, and what the worker reported using when ``trace`` counts it;
        it returns None.
        """
        if race is None:  # a slot's attempt; the branches below are skipped for a race's
            if self._bare:  # no hedging, no meters (decided once, not per attempt): it starts
                started = now() if since is None else since
                if fresh is None:
                    running.start(started)
                else:
                    running.begin(fresh[0], fresh[1], started)
            else:
                if fresh is not None:
                    running.begin(fresh[0], fresh[1])
                if self.hedging is not None:
                    return await self.hedging.race(self, running, trace, timer, now)
                if self.budgets:
                    holds = await self.reserve(running, trace)
                    if holds is None:  # over budget: the worker is not called
                        return None
                else:
                    await acquire(self.meters)
                started = now()
                running.start(started)
            if trace is not None:
                trace.started(running.slot, running.subtask)  # type: ignore[arg-type]
            if timer is not None:
                timer.start(running, started)
        worker = self.worker
        output: Any = None
        failure: Exception | None = None
        mixed: BaseException | None = None
        tally: Tally | None = None
        returned: Any = NOTHING
        try:
            try:
                if holds is not None or trace is not None:  # set just before the call: made
                    tally = Tally()
                    reported = TALLY.set(tally)
                try:
                    try:
                        returned = worker(running.subtask)
                        if type(returned) is CoroutineType or isawaitable(returned):
                            awaitable, returned = returned, NOTHING
                            output = await awaitable
                    except Exception as exc:
                        drop_own_frame(exc)  # its frames are forgotten if it is kept
                        failure = exc
                except* Exception as group:
                    drop_own_frame(group)
                    mixed = forget_frames(group)
                finally:
                    if tally is not None:
                        TALLY.reset(reported)
                if returned is not NOTHING:
                    raise not_awaitable(worker, returned)
            finally:  # each exactly once, cancelled or timed out too (nothing to give, no call)
                if holds is not None or not self._bare:
                    self.give_back(holds, NOTHING_USED if tally is None else tally.usage)
        except BaseException:  # cut short, or the timer's Cancelled came through
            if race is not None:
                race.mixed = mixed
            else:
                running.stop(mixed)
            raise
        finally:
            if tally is not None and tally.usage is not None and trace is not None:
                if race is not None:
                    race.usage = tally.usage
                else:
                    trace.used(running.slot, tally.usage)  # type: ignore[arg-type]
        if race is not None:  # the race decides what the outcome makes of the slot
            race.failure = failure
            race.output = output
            return None
        # a call that returns has no `mixed`: a group with Cancelled in it propagates
        finished = now()
        if timer is not None and running.late(
            timer.timeout, failure is not None, started, finished
        ):
            running.stop(None)
            self.timed_out(running, trace)
            return None
        if failure is None:  # the meters and the trace are told, then the slot has its result
            if self.observers:
                for observer in self.observers:
                    observer.observe(None)
            if trace is not None:
                trace.ended(running.slot, Status.OK)  # type: ignore[arg-type]
            return running.succeeded(output, finished)
        running.end(failure)
        for observer in self.observers:
            observer.observe(failure)
        if trace is not None:
            trace.ended(running.slot, failure_status(failure), failure)  # type: ignore[arg-type]
        return None

    def give_back(self, holds: list[Hold] | None, used: Any) -> None:
        """Give back what one attempt held: settle ``holds`` with ``used`` (see ``unhold``), or,
        without budgets, release every meter, in the reverse order they were acquired."""
        if holds is not None:
            self.unhold(holds, used)
        elif self.meters:
            for meter in reversed(self.meters):
                meter.release()

    async def hold(self, subtask: Any) -> list[Hold]:
        """Acquire the meters and reserve ``subtask``'s worst case from each budget, for one
        attempt: what ``unhold`` gives back after it.

        Raises:
          OverBudget: when a budget cannot afford it; every meter is then given back and every
            reservation made settled as unused.
        """
        gates = self.gates
        await acquire(gates)
        holds: list[Hold] = []
        try:
            for budget in self.budgets:
                holds.append(await budget.reserve(subtask, self.worker))
        finally:
            if len(holds) < len(self.budgets):  # over budget, or cancelled: no attempt starts
                self.unhold(holds, NOTHING_USED)
        return holds

    def unhold(self, holds: list[Hold], used: Any) -> None:
        """Settle the reservations ``holds`` (of the first budgets) with ``used`` and release
        the other meters, in the reverse order of ``hold``: each exactly once."""
        made = self.budgets[: len(holds)]
        for budget, hold in zip(reversed(made), reversed(holds), strict=True):
            budget.settle(hold, used)
        for meter in reversed(self.gates):
            meter.release()

    async def reserve(self, running: Running, trace: Trace | None) -> list[Hold] | None:
        """``hold`` for ``running``'s next attempt; None when a budget cannot afford it
        (``running.failure`` is its `OverBudget`, final, recorded in ``trace``)."""
        try:
            return await self.hold(running.subtask)
        except OverBudget as over:
            running.end(over)
            if trace is not None:
                trace.over_budget(running.slot, running.subtask, over)  # type: ignore[arg-type]
            return None

    def timed_out(self, running: Running, trace: Trace | None) -> None:
        """``running``'s attempt ran past its timeout: its failure is a `trio.TooSlowError`."""
        running.time_out(too_slow(self.timeout, running.mixed))
        if trace is not None:
            trace.end_open_slot(running.slot, Status.TIMED_OUT)  # type: ignore[arg-type]

    def next_wait(self, running: Running, key: int) -> float | None:
        """How long ``running``'s slot, whose last attempt failed, waits before its next one;
        None if it gets no other attempt: its failure is final (``running.failure`` says why).

        A slot is tried again while it has failed fewer than ``attempts`` times and its failure
        is retryable. The wait is full jitter: uniform in ``[0, backoff.bound(n)]`` after the
        n-th failure, drawn as a function of the run's ``key``, the slot and n (not of the order
        in which slots happen to fail), so a run is reproducible from its seed whatever order
        trio runs simultaneous tasks in.

        A failure may say how long to wait at least: a ``retry_after`` attribute, in seconds
        (a rate-limited endpoint's ``Retry-After``). The wait is then the longer of the two, so
        a retry never starts sooner than the server asked; and if that wait would end past the
        deadline in force (``trio.current_effective_deadline()``), the slot fails at once with a
        `trio.TooSlowError` saying so, its cause the failure, rather than sleeping until it is
        cut short.
        """
        failure = running.failure
        failures = running.failures
        if failure is None or failures >= self.attempts:
            return None
        if isinstance(failure, AwaitingApproval | Rejected | OverBudget):  # final: not retried
            return None
        if not (self._any_failure or self.retryable(failure)):
            return None
        wait = 0.0
        if not self._no_wait:
            bound = self.backoff.bound(failures)
            if bound > 0:
                wait = bound * unit(key, running.slot, failures)  # type: ignore[arg-type]
        asked = getattr(failure, "retry_after", None)
        if isinstance(asked, float | int) and asked > wait:  # the server's wait, never undercut
            wait = float(asked)
            left = trio.current_effective_deadline() - trio.current_time()
            # a retry that could not start before the deadline ends the slot now; a deadline
            # already past is left to cancellation (the sleep raises trio.Cancelled)
            if 0 < left < wait:
                running.give_up(past_deadline(failure, wait, left))
                return None
        return wait

    def failed(self, running: Running, finished: float) -> SubResult[Any, Any]:
        """The final result of ``running``'s slot, whose last attempt failed or timed out."""
        failure = running.failure
        assert failure is not None
        status = Status.TIMED_OUT if running.timed_out else failure_status(failure)
        error = None  # the exception's own description, made when it is read
        if running.mixed is not None and running.timed_out:
            error = while_cancelled(describe(failure), running.mixed)
        return failed_result(
            running.subtask,
            error,
            status,
            running.attempts,
            running.started,
            finished,
            forget_frames(failure),
            running.hedges,
        )

    @staticmethod
    def cut(running: Running) -> SubResult[Any, Any]:
        """The result of ``running``'s slot, cut short while it ran (the run decides the final
        words)."""
        return SubResult(
            running.subtask,
            error=while_cancelled(CUT_SHORT, running.mixed),
            status=Status.CANCELLED,
            attempts=running.attempts,
            started=running.started,
            finished=trio.current_time() if running.attempts else None,
            exception=running.mixed,
            hedges=running.hedges if running.attempts else 0,
        )
