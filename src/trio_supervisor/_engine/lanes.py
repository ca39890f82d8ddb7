"""Lanes: how one worker task runs slot after slot, each through the one attempt of
``attempt.py``, until the run or stream that feeds it has none left.

A lane takes its slots from a [`Feed`][trio_supervisor._engine.lanes.Feed]: what a run or a
stream hands its workers (its slots, where their results go, its trace, its timer, its retry
key, and whether more may come). A run and a stream are the two implementations.

What costs what, on the path every slot takes (``benchmarks/README.md`` has the figures):

- The timeout: a lane runs its attempts inside one cancel scope, which the run's
  [`Timer`][trio_supervisor._engine.attempt.Timer] cancels when an attempt runs past its
  expiry; the lane opens a new scope only after one fired.
- Retries: the retry decision is entered only after a failure; the first attempt pays nothing
  for it.
- Admission is a cancellation check per slot; it yields to the scheduler only when the lane has
  not yielded since its previous admission (a worker that never awaits), so a cancelled run
  starts nothing more and no worker can hold the scheduler for a whole run.
"""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio
from trio.lowlevel import checkpoint, checkpoint_if_cancelled, current_task

from .._contract import Status, SubResult
from .._identity import RunName, bind_key
from .._trace import Trace
from .attempt import Engine, Running, Timer


class Waiting:
    """A run's retries that wait out their backoffs holding no place, each with the instant it
    may start again.

    A lane whose slot must wait puts the slot here and goes on to the next one; a lane free at
    or after that instant takes it up. The earliest, then the lowest slot, is taken first, so a
    run takes up the same retries at the same instants whatever order trio wakes its lanes in.
    """

    __slots__ = ("_heap",)

    def __init__(self) -> None:
        # invariant: a heap of (due, slot, Running.park()), one entry per waiting slot
        self._heap: list[tuple[float, int, tuple[Any, ...]]] = []

    def __bool__(self) -> bool:
        return bool(self._heap)

    def put(self, due: float, running: Running) -> None:
        """Set ``running``'s slot aside until ``due``."""
        slot: int = running.slot  # type: ignore[assignment]  # a slot is on the lane
        heapq.heappush(self._heap, (due, slot, running.park()))

    def due(self) -> float:
        """The instant the next retry may start (some slot waits)."""
        return self._heap[0][0]

    def ready(self, now: Callable[[], float]) -> bool:
        """Whether some slot's wait is over by the clock ``now`` (read only if some waits)."""
        heap = self._heap
        return bool(heap) and heap[0][0] <= now()

    def take(self, running: Running) -> None:
        """Go on with the next retry on ``running``'s lane (one is ready)."""
        running.resume(heapq.heappop(self._heap)[2])

    def left(self) -> list[Running]:
        """The slots still waiting, taken out: a run cut short reports how far each got."""
        parked = []
        while self._heap:
            running = Running()
            running.resume(heapq.heappop(self._heap)[2])
            parked.append(running)
        return parked


class Leasing(Protocol):
    """A supervisor's leases of its run's slots, as its lanes see them (``leases.py``)."""

    def holding(self, slot: int, running: Running) -> bool:
        """Whether ``slot``'s lease is held still: then its attempt on ``running``'s lane is
        cancelled (``running.scope``, the lane's) if the lease is lost while it runs."""

    def let_go(self, slot: int) -> None:
        """The attempt of ``slot`` is over."""

    def lost(self, slot: int) -> bool:
        """Whether ``slot``'s lease was lost (another supervisor took it over)."""


class Feed(Protocol):
    """What a run or a stream hands its lanes.

    ``trace`` records the slots (or None), ``timer`` times the attempts (None without a
    timeout), ``key`` is the retry jitter key of the run (see ``Engine.run_key``); ``run`` is
    the run's name when it has an id (what ``attempt_key`` and ``approval`` read), and
    ``commit``, when not None, is awaited after each ``put`` (a journal with ``flush="each"``).
    """

    trace: Trace | None
    timer: Timer | None
    key: int
    run: RunName | None
    commit: Callable[[], Awaitable[None]] | None
    waiting: Waiting | None  # None: a slot waits out its backoff on its lane, holding its place
    leases: Leasing | None  # None: the slots are this supervisor's alone (no lease to hold)
    # True when no slot ever comes after ``take`` gave None and no retry waits (a run's plan,
    # all taken: its lane ends at once, without asking ``more``); False when ``more`` may wait
    final: bool

    def take(self) -> tuple[int, Any] | None:
        """The next slot and its subtask, or None when there is none right now."""

    def ready(self) -> bool:
        """Whether ``take`` would give a slot now."""

    def more(self) -> Awaitable[bool]:
        """Wait until there may be another slot; False once there never will be."""

    def put(self, slot: int, result: SubResult[Any, Any]) -> None:
        """Slot ``slot``'s final result."""

    def cut(self, slot: int, result: SubResult[Any, Any]) -> None:
        """How far slot ``slot`` got when it was cut short (the run decides the final words)."""


class Feeding:
    """What every [`Feed`][trio_supervisor._engine.lanes.Feed] holds alike, a run's and a
    stream's: the run's trace, timer, jitter key and name, and where each final result, or how
    far a slot cut short got, goes. A journaled run's results are journaled as they are put,
    and, with ``flush="each"``, each is committed before its lane goes on."""

    __slots__ = ("commit", "cut", "key", "leases", "put", "run", "timer", "trace", "waiting")

    final = False  # ``more`` may wait for another slot (a feed whose slots are all known says)

    def __init__(
        self,
        trace: Trace | None,
        timer: Timer | None,
        key: int,
        run: RunName | None,
        put: Callable[[int, SubResult[Any, Any]], None],
        cut: Callable[[int, SubResult[Any, Any]], None],
        waiting: Waiting | None,
    ) -> None:
        self.trace = trace
        self.timer = timer
        self.key = key
        self.run = run
        self.put = put if run is None else run.recording(put)
        self.cut = cut
        self.commit = None if run is None else run.each_commit
        self.waiting = waiting
        self.leases: Leasing | None = None


# What a lane leaves in its task's ``custom_sleep_data`` at each admission: trio sets that
# attribute to None whenever it reschedules the task (documented with
# ``trio.lowlevel.wait_task_rescheduled``), so finding the mark still there at the next
# admission means the lane has not yielded since the previous one.
_ADMITTED = object()
# What a lane leaves there as a slot ends (succeeds, or fails for good), when the slot's worker
# yielded (the mark is None then): found at the next admission, the lane went straight on from
# that end, and found still at the next slot's call, nothing yielded in between either: that
# slot's first attempt starts at the instant the last one ended, without reading the clock
# again (no other task ran in between, so trio's time has not moved on but for the lane's own
# bookkeeping).
_STRAIGHT = object()


class _Unscoped:
    """The scope of a lane without a timer: nothing to cancel, so nothing is entered (a lane
    opens a ``trio.CancelScope`` only for the run's timer to cancel)."""

    __slots__ = ()

    cancelled_caught = False

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_UNSCOPED = _Unscoped()


async def lane(engine: Engine[Any, Any], feed: Feed) -> None:
    """One worker task: take slot after slot from ``feed`` and run each to its result, until
    the feed has none and says none will come.

    Each slot is admitted, then attempted until it succeeds or its failure is final. With a
    timer, the slots run inside a scope the timer cancels; when it was cancelled and the worker
    swallowed the cancellation, or the timer's ``Cancelled`` came through, the scope is spent,
    and the slot's next step is decided under a new one. The loop is one function, not a lane
    calling a loop: every frame between the task and the worker costs each of the worker's
    checkpoints a resumption.

    A slot cut short (the run cancelled around it, or an exception that is not the worker's
    failure) is reported to ``feed.cut``, with the attempts it made, before the lane unwinds.
    """
    running = Running()
    attempt = engine.attempt
    next_wait = engine.next_wait
    places = engine.places
    take = feed.take
    put = feed.put
    trace = feed.trace
    timer = feed.timer
    key = feed.key
    commit = feed.commit
    waiting = feed.waiting
    leases = feed.leases
    final = feed.final
    # whether a retry set aside (a run's) may start now; None when none ever is (a stream's
    # retries wait on their lane, and a slot of one attempt is never retried)
    retry_ready = None if waiting is None or engine.attempts < 2 else waiting.ready
    resumed = False  # the slot on this lane is a retry taken up from `waiting`: its wait is over
    # whether a slot may start at the instant the last one ended (see _STRAIGHT): not with a
    # trace, whose spans read the clock themselves, nor with leases
    straight = trace is None and leases is None
    mark: object = None  # what the last admission found in custom_sleep_data
    now = trio.lowlevel.current_clock().current_time
    task = current_task()
    slot: int = 0
    subtask: Any = None
    item: tuple[int, Any] | None = None  # the slot just taken, which its first attempt begins
    if feed.run is not None:
        bind_key(feed.run, running)  # what attempt_key() and approval() read
    try:
        # one turn per scope: the one the timer and the lost leases cancel (a new one after
        # either did), or none when neither can
        while True:
            scope = _UNSCOPED if timer is None and leases is None else running.open_scope()
            with scope:
                while True:  # one turn per attempt, admitting a slot first when none is here
                    if running.slot is None:  # admit the next slot
                        # The admission checkpoint: a cancelled run admits nothing more, and a
                        # lane whose worker never awaits still lets other tasks run. It yields
                        # only when it must: the run is cancelled, or the lane has not yielded
                        # since its previous admission (the mark it left in its task is still
                        # there: see _ADMITTED).
                        mark = task.custom_sleep_data
                        if mark is _ADMITTED:
                            await checkpoint()
                        else:
                            await checkpoint_if_cancelled()
                        task.custom_sleep_data = _ADMITTED
                        # a place under the capacity bound: kept from slot to slot, unless
                        # another lane waits for one or a shared limit was lowered (then it
                        # queues behind: concurrent runs take turns); a lane with nothing to
                        # take waits for no place
                        if not running.placed or (places.waiting and places.wanted()):
                            places.unseat(running)
                            if not feed.ready() and not (
                                retry_ready is not None and retry_ready(now)
                            ):
                                if waiting:  # nothing to take before the next retry may start
                                    await trio.sleep_until(waiting.due())
                                    continue
                                if not await feed.more():
                                    return
                                continue
                            if not places.seat_now(running):
                                await places.seat(running)
                        # a retry first, then the plan
                        due = retry_ready is not None and retry_ready(now)
                        item = None if due else take()
                        if item is not None:  # begun by its first attempt, below
                            slot, subtask = item
                            if trace is not None:
                                trace.admitted(slot, subtask)
                        elif due:
                            waiting.take(running)  # type: ignore[union-attr]  # due: not None
                            slot = running.slot  # type: ignore[assignment]  # a slot is resumed
                            resumed = True
                        else:  # taken by another lane meanwhile, or a stream waits for input
                            if final and not waiting:
                                return  # the plan is all taken, and no retry waits
                            places.idle(running)  # kept while it waits, unless a lane needs it
                            try:
                                if waiting:  # nothing to take before the next retry may start
                                    await trio.sleep_until(waiting.due())
                                elif not await feed.more():
                                    return
                            finally:
                                places.busy(running)
                            continue
                    if item is not None:  # a slot just taken: its first attempt
                        pass
                    elif resumed:  # a retry whose wait is over: it starts now
                        resumed = False
                    elif running.failures:  # after a failed or timed-out attempt: retried, or final
                        wait = next_wait(running, key)
                        if wait is None:  # its final failure, which the next slot may start at
                            finished = now()
                            put(slot, engine.failed(running, finished))
                            running.leave(finished)
                            if straight and task.custom_sleep_data is None:
                                task.custom_sleep_data = _STRAIGHT
                            if commit is not None:
                                await commit()
                            continue
                        if wait > 0 and waiting is not None:  # it waits holding no place
                            waiting.put(now() + wait, running)
                            running.leave()
                            continue
                        if wait > 0:
                            await trio.sleep(wait)
                        else:
                            await checkpoint_if_cancelled()  # a cancelled run calls no worker again
                    fresh, item = item, None
                    if leases is None:
                        # a slot just taken straight on from the last success, with nothing
                        # yielded in between (see _STRAIGHT): it starts when that one ended
                        since = (
                            running.finished
                            if fresh is not None
                            and mark is _STRAIGHT
                            and task.custom_sleep_data is _ADMITTED
                            else None
                        )
                        result = await attempt(running, trace, timer, now, None, None, fresh, since)
                    else:
                        result = None
                        if leases.holding(slot, running):
                            try:
                                result = await attempt(
                                    running, trace, timer, now, None, None, fresh
                                )
                            finally:
                                leases.let_go(slot)
                        if leases.lost(slot):  # another took it over: its result is not this
                            if trace is not None:
                                trace.end_open_slot(slot, Status.CANCELLED)
                            running.leave()
                            if running.scope.cancel_called:  # type: ignore[union-attr]
                                break  # the worker swallowed the lease's cancellation
                            continue
                    if result is not None:  # the slot succeeded, and is off the lane
                        put(slot, result)
                        if straight and task.custom_sleep_data is None:
                            task.custom_sleep_data = _STRAIGHT
                        if running.spent:
                            break  # the worker swallowed the timer's cancellation: scope spent
                        if commit is not None:
                            await commit()
                    elif running.spent:
                        break
                    # a failure: the next turn decides its retry
            if scope.cancelled_caught:
                lost = running.slot
                if leases is not None and lost is not None and leases.lost(lost):
                    if trace is not None:  # its lease was lost: another supervisor runs it
                        trace.end_open_slot(lost, Status.CANCELLED)
                    running.leave()
                else:
                    engine.timed_out(running, trace)  # the timer fired inside the attempt
    finally:
        engine.places.unseat(running)
        if running.slot is not None:
            if trace is not None:
                trace.end_open_slot(running.slot, Status.CANCELLED)
            feed.cut(running.slot, engine.cut(running))
