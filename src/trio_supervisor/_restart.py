"""Restarts as Erlang/OTP's supervisors count and group them: a restart intensity, and the
strategies for children that depend on each other.

A run with ``intensity=(R, T)`` or a strategy other than ``one_for_one`` goes through
[`restarting_run`][trio_supervisor._restart.restarting_run], not through the lanes of
``_attempt.py``: each attempt runs in a task and a cancel scope of its own, so that a sibling's
failure can stop exactly the attempts it makes stale. A run without them pays nothing for it.

- A *restart* is a failed attempt (a timeout included) of a slot that will be tried again (it is
  retryable and has attempts left). Past ``R`` restarts within any ``T`` seconds, the run gives
  up: the slot whose failure was one too many keeps its own error, whatever still runs or waits
  is cancelled, and every other unfinished slot fails with ``gave up: more than R restarts
  within Ts``.
- ``one_for_one`` restarts the failed slot alone. ``one_for_all`` restarts every slot: those
  running are cancelled, those finished lose their result, and all run again. ``rest_for_one``
  restarts the failed slot and every slot after it in plan order (which may depend on it), the
  slots before it are left as they are.
- The slots a restart takes wait out the failed slot's backoff together, holding no place, then
  are admitted again in plan order. A slot restarted because of a sibling is not charged an
  attempt: ``attempts`` counts a slot's own failures, ``SubResult.attempts`` every call.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from inspect import isawaitable
from typing import Any, Literal

import trio

from ._attempt import (
    _NOTHING,
    CUT_SHORT,
    Attempts,
    _acquire,
    _drop_own_frame,
    _unit,
    forget_frames,
    too_slow,
    while_cancelled,
)
from ._contract import Status, SubResult, _failed, _ok, describe
from ._trace import Trace
from ._validate import not_awaitable

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]
"""Which slots a restart takes: the failed one, all of them, or the failed one and those after."""
STRATEGIES: tuple[Strategy, ...] = ("one_for_one", "one_for_all", "rest_for_one")


def gave_up(intensity: tuple[int, float]) -> str:
    """The error of a slot left unfinished when a run gave up."""
    return f"gave up: more than {intensity[0]} restarts within {intensity[1]:g}s"


class _Slot:
    """What a run knows of one slot while it goes on."""

    __slots__ = ("calls", "failures", "generation", "mixed", "result", "scope", "started")

    def __init__(self) -> None:
        self.calls = 0  # every call of the worker for it
        self.failures = 0  # its own failed attempts: what `attempts` counts
        self.generation = 0  # moves on each restart: an attempt of an older one is stale
        self.result: SubResult[Any, Any] | None = None
        self.scope: trio.CancelScope | None = None  # its running attempt's, None when idle
        self.started: float | None = None
        # the Exception part of a group its last attempt raised together with Cancelled
        self.mixed: BaseException | None = None


async def restarting_run(
    attempts: Attempts[Any, Any],
    plan: list[Any],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    trace: Trace | None,
    intensity: tuple[int, float] | None,
    strategy: Strategy,
) -> str | None:
    """Run ``plan`` with restarts counted and grouped, into ``results``; when the caller's
    cancellation or deadline cuts the run short, a slot without a result is left None, and one
    that ran gets in ``cuts`` how far it got (its attempts, as a cancelled result). Returns why
    the run gave up, or None."""
    slots = [_Slot() for _ in plan]
    pending: list[int] = list(range(len(plan)))  # admitted next, lowest slot first
    woken = trio.Event()
    restarts: deque[float] = deque()
    limit, period = intensity if intensity is not None else (math.inf, math.inf)
    key = attempts.run_key()
    places = attempts.places
    worker: Callable[[Any], Any] = attempts.worker
    left = [len(plan)]  # slots without a final result
    given_up: list[bool] = []

    def settle(slot: int, result: SubResult[Any, Any]) -> None:
        slots[slot].result = result
        left[0] -= 1
        if left[0] == 0:
            nursery.cancel_scope.cancel()  # every slot has its result: nothing more to admit

    def reopen(slot: int) -> None:
        """Take slot ``slot`` back for a restart: stop its attempt, or forget its result."""
        state = slots[slot]
        state.generation += 1
        if state.scope is not None:
            state.scope.cancel()
            state.scope = None
        if state.result is not None:
            state.result = None
            left[0] += 1
        if slot in pending:
            pending.remove(slot)

    async def attempt(slot: int, borrower: object, stop: trio.CancelScope, generation: int) -> None:
        state = slots[slot]
        if state.generation != generation:  # taken back before it began
            places.give_back(borrower)
            return
        subtask = plan[slot]
        failure: Exception | None = None
        output: Any = None
        timed_out = False
        try:
            with stop:
                # a run ending (a sibling's misuse, the caller's cancellation) calls no worker
                # more, even for the attempts started in the same batch as the one that ended it
                await trio.lowlevel.checkpoint_if_cancelled()
                if attempts.meters:
                    await _acquire(attempts.meters)
                try:
                    state.calls += 1
                    if state.started is None:
                        state.started = trio.current_time()
                    if trace is not None:
                        trace.started(slot, subtask)
                    timeout = math.inf if attempts.timeout is None else attempts.timeout
                    state.mixed = None
                    returned: Any = _NOTHING
                    with trio.move_on_after(timeout) as clock:
                        # isolated as a lane's attempt is (see Attempts._slots): the worker's
                        # Exception is its failure; of a group it raises together with
                        # Cancelled, the Exception part is kept and the rest propagates
                        try:
                            try:
                                returned = worker(subtask)
                                if isawaitable(returned):
                                    awaitable, returned = returned, _NOTHING
                                    output = await awaitable
                            except Exception as exc:
                                _drop_own_frame(exc)
                                failure = exc
                        except* Exception as group:
                            _drop_own_frame(group)
                            if state.generation == generation:  # not a stale attempt's
                                state.mixed = forget_frames(group)
                    if returned is not _NOTHING:
                        raise not_awaitable(worker, returned)
                    if clock.cancelled_caught:
                        timed_out = True
                        failure = too_slow(attempts.timeout, state.mixed)
                finally:
                    for meter in reversed(attempts.meters):
                        meter.release()
        finally:
            places.give_back(borrower)
        if state.generation != generation:  # a sibling's restart took this slot back
            if trace is not None:
                trace._end_open_slot(slot, Status.CANCELLED)
            return
        state.scope = None
        if trace is not None:
            ended = Status.OK if failure is None else Status.FAILED
            trace.ended(slot, Status.TIMED_OUT if timed_out else ended)
        now = trio.current_time()
        if failure is None:
            settle(slot, _ok(subtask, output, state.calls, state.started or now, now))
            return
        state.failures += 1
        error = None  # the exception's own description, made when it is read
        if timed_out and state.mixed is not None:
            error = while_cancelled(describe(failure), state.mixed)
        final = _failed(
            subtask,
            error,
            Status.TIMED_OUT if timed_out else Status.FAILED,
            state.calls,
            state.started,
            now,
            forget_frames(failure),
        )
        if state.failures >= attempts.attempts or not attempts.retryable(failure):
            settle(slot, final)
            return
        while restarts and restarts[0] <= now - period:  # forget what is older than T
            restarts.popleft()
        if len(restarts) >= limit:  # one restart too many: the run gives up
            settle(slot, final)
            given_up.append(True)
            nursery.cancel_scope.cancel()
            return
        restarts.append(now)
        if strategy == "one_for_one":
            taken = [slot]
        elif strategy == "one_for_all":
            taken = list(range(len(plan)))
        else:
            taken = list(range(slot, len(plan)))
        for other in taken:
            reopen(other)
        bound = attempts.backoff.bound(state.failures)
        wait = bound * _unit(key, slot, state.failures) if bound > 0 else 0.0
        asked = getattr(failure, "retry_after", None)
        if isinstance(asked, float | int) and asked > wait:  # the server's wait, never undercut
            wait = float(asked)
        await trio.sleep(wait)
        for other in taken:  # back in line, unless a later restart holds it still
            again = slots[other]
            if again.result is None and again.scope is None and other not in pending:
                pending.append(other)
        pending.sort()
        woken.set()

    try:
        if plan:
            async with trio.open_nursery() as nursery:
                while True:
                    while not pending:
                        await woken.wait()
                        woken = trio.Event()
                    borrower = object()
                    await places.take(borrower)
                    if not pending:  # taken back by a restart while this waited for a place
                        places.give_back(borrower)
                        continue
                    slot = pending.pop(0)
                    if trace is not None and slots[slot].calls == 0:
                        trace.admitted(slot, plan[slot])
                    stop = slots[slot].scope = trio.CancelScope()  # running: a restart stops it
                    nursery.start_soon(attempt, slot, borrower, stop, slots[slot].generation)
    finally:
        _settle_all(plan, slots, results, cuts, intensity if given_up else None)
    return gave_up(intensity) if given_up and intensity is not None else None


def _settle_all(
    plan: list[Any],
    slots: list[_Slot],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    given_up: tuple[int, float] | None,
) -> None:
    """Each slot's result into ``results``: a slot left unfinished fails with ``gave up`` when
    the run gave up (``given_up`` is its intensity), or is cut short (into ``cuts``)."""
    now = trio.current_time()
    for slot, state in enumerate(slots):
        result = state.result
        if result is None and given_up is not None:
            result = SubResult(
                plan[slot],
                error=gave_up(given_up),
                status=Status.FAILED,
                attempts=state.calls,
                started=state.started,
                finished=now if state.calls else None,
            )
        results[slot] = result
        if result is None and state.calls:
            cuts[slot] = SubResult(
                plan[slot],
                error=while_cancelled(CUT_SHORT, state.mixed),
                status=Status.CANCELLED,
                attempts=state.calls,
                started=state.started,
                finished=now,
                exception=state.mixed,
            )
