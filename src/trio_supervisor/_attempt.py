"""Attempts: how one worker task runs slot after slot, each attempt and its retries settled into
a [`SubResult`][trio_supervisor.SubResult].

This is the one place a per-attempt concern goes: the timeout, the meters (a capacity, a rate
limit), the trace's events, the isolation of a worker's failure. Every attempt, the first and
each retry, runs through the same few lines of ``Attempts._slots``.

What costs what, on the path every slot takes:

- A run's attempts are timed by one task, a [`Timer`][trio_supervisor._attempt.Timer], not by a
  deadline per attempt: each attempt appends its expiry to a queue, and the timer cancels the
  cancel scope of a worker task (a *lane*) whose attempt is still running at its expiry. A lane
  opens a new scope only after one fired. (Moving a trio deadline costs most of a checkpoint:
  trio keeps deadlines in a heap, and a move goes through a context manager; a queue append
  costs next to nothing.)
- The retry policy is a loop around the same attempt, entered only after a failure; the first
  attempt pays nothing for it. It is written here rather than with tenacity, which the library
  used before: tenacity's state machine cost about 200 µs per retried call, forty times a whole
  slot; its full-jitter wait draws from the process-wide ``random`` module, where a run must be
  reproducible from the supervisor's own generator; and the outcome it keeps per call formed a
  reference cycle with each failure's traceback.
- Admission is a cancellation check per slot; it yields to the scheduler only when the lane has
  not yielded since its previous admission (a worker that never awaits), so a cancelled run
  starts nothing more and no worker can hold the scheduler for a whole run.
"""

from __future__ import annotations

import random
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from types import CoroutineType
from typing import Any, Generic, TypeVar

import trio
from trio.lowlevel import ParkingLot, checkpoint, current_task

from ._contract import Status, SubResult, _failed, _ok, describe
from ._places import Places
from ._retry import Backoff
from ._trace import Trace
from ._validate import not_awaitable

S = TypeVar("S")
T = TypeVar("T")

Take = Callable[[], "tuple[int, Any] | None"]
"""The next slot for a lane, or None when there is none right now."""
Put = Callable[[int, "SubResult[Any, Any]"], None]
"""Where a lane puts a slot's final result."""
More = Callable[[], Awaitable[bool]]
"""Wait until there may be another slot; False once there never will be."""

_NOTHING: Any = object()  # no value: what a worker's call returned, once awaited
CUT_SHORT = "Cancelled: the run was cut short before this slot finished"
"""How a slot cut short while it ran begins its error; a run may name the cause instead."""


class Running:
    """The slot a lane is running, and how far it got: what a slot cut short reports.

    One per lane, reused from slot to slot. ``slot`` is None between slots.
    """

    __slots__ = (
        "attempts",
        "failure",
        "mixed",
        "placed",
        "scope",
        "serial",
        "slot",
        "started",
        "subtask",
        "timed_out",
    )

    def __init__(self) -> None:
        self.slot: int | None = None
        self.subtask: Any = None
        self.attempts = 0
        self.started: float | None = None
        self.failure: Exception | None = None  # the last attempt's failure, None after success
        self.timed_out = False  # the last attempt ran past its timeout
        # the Exception part of a group the worker raised together with Cancelled
        self.mixed: BaseException | None = None
        # the lane's timeout scope, and a count that changes as each attempt starts and ends
        self.scope: trio.CancelScope | None = None
        self.serial = 0
        self.placed = False  # the lane holds its places (see _places)

    def begin(self, slot: int, subtask: Any) -> None:
        self.slot = slot
        self.subtask = subtask
        self.attempts = 0
        self.started = None
        self.failure = None
        self.timed_out = False
        self.mixed = None


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


def cancelled(task: trio.lowlevel.Task) -> bool:
    """Whether ``task`` would be cancelled at its next checkpoint: ``await checkpoint()`` when
    this is true makes a cancellation point of a path that otherwise does not yield, at the cost
    of an attribute read (``trio.lowlevel.checkpoint_if_cancelled`` is a coroutine per call).
    It reads the task's cancel status, which trio keeps for itself; where a trio version lacks
    it, the answer is True, and the caller checkpoints every time: always right, only slower."""
    status = getattr(task, "_cancel_status", None)
    return status is None or bool(status.effectively_cancelled)


def _counts_points(task: trio.lowlevel.Task) -> bool:
    """Whether ``task`` keeps the counters a lane's admission reads (see ``Attempts._slots``)."""
    return hasattr(task, "_schedule_points") and hasattr(task, "_cancel_status")


async def _acquire(meters: tuple[Any, ...]) -> None:
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


_UNIT = 2**53
_MASK = 2**64 - 1


def _unit(key: int, slot: int, attempt: int) -> float:
    """A number in ``[0, 1)`` fixed by ``(key, slot, attempt)``: splitmix64's finaliser over the
    three mixed together, a counter-based generator that needs no state shared between lanes."""
    z = (key + slot * 0x9E3779B97F4A7C15 + attempt * 0xD1B54A32D192ED03) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 11) / _UNIT


def _past_deadline(failure: Exception, wait: float, left: float) -> Exception:
    """The failure of a slot whose server asked for a wait that outlasts the run's deadline."""
    error = trio.TooSlowError(
        f"{describe(failure)}; the server asked to wait {wait:g}s before a retry, but the "
        f"run's deadline is {max(left, 0):g}s away: the slot ends now instead of sleeping past it"
    )
    error.__cause__ = failure
    return error


def _drop_own_frame(exc: BaseException) -> None:
    """The traceback of a worker's failure starts at the worker, not at the attempt that called
    it (whose frame would hold the lane's state, and so the failure itself, in a cycle)."""
    tb = exc.__traceback__
    if tb is not None:
        exc.__traceback__ = tb.tb_next


class Timer:
    """Times the attempts of one run, or stream, with one task.

    An attempt that starts calls [`start`][trio_supervisor._attempt.Timer.start]; the timer's
    task, [`watch`][trio_supervisor._attempt.Timer.watch], sleeps until the earliest expiry and
    cancels the lane's scope if that very attempt is still running then. Every attempt has the
    same timeout and starts no earlier than the one before, so the queue of expiries is in
    order and only its head is ever looked at. The timer wakes once per expiry it must act on or
    drop, at most; attempts that end in time cost a queue entry each.

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
        running.serial += 1
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


class Attempts(Generic[S, T]):
    """How every slot of a supervisor is run: the worker, the timeout of each attempt, the retry
    policy and the meters. Immutable; shared by every run and stream of one supervisor.

    Args:
      worker: a callable whose call returns an awaitable.
      timeout: seconds per attempt, or None.
      attempts: how many times a slot's worker may be called.
      retryable: whether a failure may be retried.
      backoff: the full-jitter bound of the wait between attempts.
      rng: draws each run's retry jitter key (see ``run_key``).
      meters: waited on before each attempt, released after it; those with an ``observe``
        method are told each attempt's outcome (its failure, or None), after the release.
      places: the capacity bound every lane of every run and stream holds a place of.
    """

    __slots__ = (
        "_any_failure",
        "_no_wait",
        "attempts",
        "backoff",
        "meters",
        "observers",
        "places",
        "retryable",
        "rng",
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
        rng: random.Random,
        meters: tuple[Any, ...],
        places: Places,
    ) -> None:
        self.worker = worker
        self.places = places
        self.timeout = timeout
        self.attempts = attempts
        self.retryable = retryable
        self.backoff = backoff
        self.rng = rng
        self.meters = meters
        self._no_wait = backoff.maximum <= 0  # every retry starts at once
        self._any_failure = retryable(Exception("any"))  # every failure may be retried
        self.observers = tuple(m for m in meters if callable(getattr(m, "observe", None)))

    def run_key(self) -> int:
        """A key for one run's retry jitter, drawn from the supervisor's generator."""
        return int(self.rng.random() * _UNIT)

    def timer(self) -> Timer | None:
        """A timer for one run's attempts, None without a timeout."""
        return None if self.timeout is None else Timer(self.timeout)

    async def lane(
        self,
        take: Take,
        put: Put,
        cut: Put,
        trace: Trace | None,
        key: int,
        timer: Timer | None,
        more: More | None = None,
    ) -> None:
        """One worker task: take slot after slot and run each to its result, until ``take`` has
        none (and ``more``, when given, says none will come).

        A slot cut short (the run cancelled around it, or an exception that is not the worker's
        failure) is reported to ``cut``, with the attempts it made, before the lane unwinds.
        ``key`` is the run's retry jitter key, from ``run_key()``; ``timer`` times the attempts
        (None without a timeout).
        """
        running = Running()
        try:
            if timer is None:
                await self._slots(None, running, take, put, trace, key, more)
                return
            while True:
                scope = running.scope = trio.CancelScope()
                done = False
                with scope:
                    done = await self._slots(timer, running, take, put, trace, key, more)
                if done:
                    return
                if scope.cancelled_caught:
                    self._timed_out(running, trace)  # the timer fired inside the attempt
        finally:
            if running.placed:
                running.placed = False
                self.places.give_back(running)
            if running.slot is not None:
                if trace is not None:
                    trace._end_open_slot(running.slot, Status.CANCELLED)
                cut(running.slot, self._cut_result(running))

    async def _slots(
        self,
        timer: Timer | None,
        running: Running,
        take: Take,
        put: Put,
        trace: Trace | None,
        key: int,
        more: More | None,
    ) -> bool:
        """Run slots until there are none (True), or until the lane's timeout scope was cancelled
        by ``timer`` and the worker swallowed the cancellation (False: the scope is spent).

        Each slot is admitted, then attempted until it succeeds or may not be retried. The
        attempt, written once below, is the one place a per-attempt concern goes: it waits on
        every meter first and releases them after (and tells the meters that observe what came
        of it); it has ``timer`` time it; it records the attempt in ``trace``. A worker's
        `Exception` is its failure; an exception group holding both
        `Exception`s and ``trio.Cancelled`` has its `Exception` part kept in ``running.mixed``
        while the rest propagates to the scope that owns the cancellation; anything else
        propagates as it is.
        """
        worker = self.worker
        meters = self.meters
        places = self.places
        scope = running.scope
        observers = self.observers
        now = trio.lowlevel.current_clock().current_time
        task = current_task()
        counted = _counts_points(task)
        last = -1  # the lane's schedule points after its previous admission
        while True:
            if running.slot is None:  # admit the next slot
                # The admission checkpoint: a cancelled run admits nothing more, and a lane
                # whose worker never awaits still lets other tasks run. It yields only when it
                # must: the run is cancelled, or the lane has not yielded since its previous
                # admission. Telling these apart cheaply reads two counters trio keeps for
                # trio.testing.assert_checkpoints; without them every admission is a full
                # checkpoint, always right, only slower.
                if not counted:
                    await checkpoint()
                elif task._cancel_status.effectively_cancelled or task._schedule_points == last:
                    await checkpoint()
                    last = task._schedule_points
                else:
                    last = task._schedule_points
                # a place under the capacity bound: kept from slot to slot, unless another lane
                # waits for one (then it queues behind that lane: concurrent runs take turns)
                if not running.placed:
                    await places.take(running)
                    running.placed = True
                elif places.wanted():
                    running.placed = False
                    places.give_back(running)
                    await places.take(running)
                    running.placed = True
                item = take()
                if item is None:
                    if more is None:
                        running.placed = False
                        places.give_back(running)  # no slot for this lane: its place is free
                        return True
                    places.idle(running)  # kept while it waits, unless a lane needs it
                    try:
                        if not await more():
                            return True
                    finally:
                        places.busy(running)
                    continue
                slot, subtask = item
                running.slot = slot
                running.subtask = subtask
                running.attempts = 0
                running.started = None
                running.mixed = None
                if trace is not None:
                    trace.admitted(slot, subtask)
            else:  # a slot whose attempt ran past its timeout, under the scope before this one
                slot, subtask = running.slot, running.subtask
            while True:
                # -- after a failed or timed-out attempt: retried after its backoff, or final ----
                if running.attempts:
                    wait = self._wait(running, key) if self._retries(running) else None
                    if wait is None:
                        put(slot, self._failed(running, now()))
                        running.slot = None
                        break
                    if wait > 0:
                        await trio.sleep(wait)
                    elif not counted or task._cancel_status.effectively_cancelled:
                        await checkpoint()  # a cancelled run calls no worker again
                # -- one attempt ----------------------------------------------------------------
                if meters:
                    await _acquire(meters)
                try:
                    running.attempts += 1
                    started = now()
                    if running.started is None:
                        running.started = started
                    if trace is not None:
                        trace.started(slot, subtask)
                    if timer is not None:
                        timer.start(running, started)
                    failure: Exception | None = None
                    output: Any = None
                    returned: Any = _NOTHING
                    try:
                        try:
                            returned = worker(subtask)
                            if type(returned) is CoroutineType or isawaitable(returned):
                                awaitable, returned = returned, _NOTHING
                                output = await awaitable
                        except Exception as exc:
                            _drop_own_frame(exc)  # its frames are forgotten if it is kept
                            failure = exc
                    except* Exception as group:
                        _drop_own_frame(group)
                        running.mixed = forget_frames(group)
                    if returned is not _NOTHING:
                        raise not_awaitable(worker, returned)
                    if trace is not None:
                        if failure is None:
                            trace.ended(slot, Status.OK)
                        else:
                            trace.ended(slot, Status.FAILED, failure)
                finally:
                    running.serial += 1  # the attempt ended: the timer lets it be
                    if meters:
                        for meter in reversed(meters):
                            meter.release()
                # -- its outcome ------------------------------------------------------------------
                running.failure = failure
                running.timed_out = False
                if observers:
                    for observer in observers:
                        observer.observe(failure)
                if scope is not None and scope.cancel_called:
                    # the timer fired but the worker did not let Cancelled through: if it failed,
                    # the attempt still ran past its timeout; either way the scope is spent
                    if failure is None and running.mixed is None:
                        put(slot, _ok(subtask, output, running.attempts, running.started, now()))
                        running.slot = None
                    else:
                        self._timed_out(running, trace)
                    return False
                if failure is None:
                    put(slot, _ok(subtask, output, running.attempts, running.started, now()))
                    running.slot = None
                    break
                # a failure: the top of this loop decides its retry

    def _retries(self, running: Running) -> bool:
        """Whether the running slot, whose last attempt failed, gets another attempt."""
        failure = running.failure
        return (
            running.attempts < self.attempts
            and failure is not None
            and (self._any_failure or self.retryable(failure))
        )

    def _wait(self, running: Running, key: int) -> float | None:
        """How long the running slot waits before its next attempt; None if it must not wait
        at all but end now (its ``running.failure`` then says why).

        The wait is full jitter: uniform in ``[0, backoff.bound(n)]`` after the n-th failed
        attempt. The draw is a function of the run's ``key`` (drawn from the supervisor's own
        generator), the slot and n, not of the order in which slots happen to fail, so that a
        run is reproducible from its seed even where trio runs simultaneous tasks in a random
        order.

        A failure may say how long to wait at least: a ``retry_after`` attribute, in seconds
        (a rate-limited endpoint's ``Retry-After``). The wait is then the longer of the two,
        so a retry never starts sooner than the server asked; and if that wait would end past
        the deadline in force (``trio.current_effective_deadline()``: the run's, or a cancel
        scope's around a stream), the slot fails at once with a `trio.TooSlowError` saying so,
        its cause the failure, rather than sleeping until it is cut short.
        """
        wait = 0.0
        if not self._no_wait:
            bound = self.backoff.bound(running.attempts)
            if bound > 0:
                wait = bound * _unit(key, running.slot, running.attempts)  # type: ignore[arg-type]
        failure = running.failure
        asked = getattr(failure, "retry_after", None)
        if isinstance(asked, float | int) and asked > wait:  # the server's wait, never undercut
            wait = float(asked)
            left = trio.current_effective_deadline() - trio.current_time()
            # a retry that could not start before the deadline ends the slot now; a deadline
            # already past is left to cancellation (the sleep raises trio.Cancelled)
            if 0 < left < wait:
                assert failure is not None
                running.failure = _past_deadline(failure, wait, left)
                return None
        return wait

    def _timed_out(self, running: Running, trace: Trace | None) -> None:
        """The running attempt ran past its timeout: record it as a `trio.TooSlowError`."""
        running.timed_out = True
        running.failure = too_slow(self.timeout, running.mixed)
        if trace is not None:
            trace._end_open_slot(running.slot, Status.TIMED_OUT)  # type: ignore[arg-type]

    def _failed(self, running: Running, finished: float) -> SubResult[Any, Any]:
        """The final result of the running slot, whose last attempt failed or timed out."""
        failure = running.failure
        assert failure is not None
        status = Status.TIMED_OUT if running.timed_out else Status.FAILED
        error = None  # the exception's own description, made when it is read
        if running.mixed is not None and running.timed_out:
            error = while_cancelled(describe(failure), running.mixed)
        return _failed(
            running.subtask,
            error,
            status,
            running.attempts,
            running.started,
            finished,
            forget_frames(failure),
        )

    def _cut_result(self, running: Running) -> SubResult[Any, Any]:
        """The result of a slot cut short while it ran (the run decides the final words)."""
        return SubResult(
            running.subtask,
            error=while_cancelled(CUT_SHORT, running.mixed),
            status=Status.CANCELLED,
            attempts=running.attempts,
            started=running.started,
            finished=trio.current_time() if running.attempts else None,
            exception=running.mixed,
        )
