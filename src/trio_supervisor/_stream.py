"""Streaming: results in plan order, as soon as they can be, from inputs of any length."""

from __future__ import annotations

import functools
import itertools
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from operator import length_hint
from types import TracebackType
from typing import Any, Generic, NoReturn, TypeVar

import trio
from trio.lowlevel import (
    Abort,
    ParkingLot,
    Task,
    cancel_shielded_checkpoint,
    checkpoint_if_cancelled,
    current_task,
    reschedule,
    wait_task_rescheduled,
)

from ._contract import SubResult
from ._digest import InputCheck
from ._ending import ending
from ._engine.attempt import Engine, Timer
from ._engine.lanes import Feeding, lane
from ._identity import RunName
from ._journal import DurableRun, sharing, with_subtask
from ._trace import Trace

# what an indexed input's chunks yield while the window has no room: one None, which the lane
# that asked takes for "nothing now" (the next ask looks again)
_NO_ROOM = (None,)

S = TypeVar("S")
T = TypeVar("T")


def _only_cancelled(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a ``trio.Cancelled``, or a group holding nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return isinstance(exc, trio.Cancelled)


class _Alarm:
    """Where one task waits until another wakes it: the stream's consumer (for the head slot),
    or its puller (for room in the window). What a ``ParkingLot`` does for one task, without
    its queue: paid at each wake of a stream's consumer (when a pass of the scheduler did not
    bring the slot it waits for) and of its puller. A cancellation point; cancelled, the task
    is no longer waiting."""

    __slots__ = ("_aborted", "_task")

    def __init__(self) -> None:
        self._task: Task | None = None  # the task waiting, or None
        self._aborted = self._abort  # bound once, not at each wait

    def wait(self) -> Awaitable[object]:
        """Wait until ``wake`` (one task at a time): ``await alarm.wait()``. A plain function
        returning what to await, so that a waiting task resumes through one frame fewer."""
        self._task = current_task()
        return wait_task_rescheduled(self._aborted)  # noqa: ASYNC105  # awaited by the caller

    def _abort(self, _: object) -> Abort:
        self._task = None
        return Abort.SUCCEEDED

    def wake(self) -> None:
        """Wake the task waiting, if one is."""
        task = self._task
        if task is not None:
            self._task = None
            reschedule(task)


class _NoPublicConstructor(type):
    """A class made only by its library (``_create``), as trio's channels are."""

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} has no public constructor: "
            "get one from Supervisor.stream(...)"
        )

    def _create(cls, *args: Any, **kwargs: Any) -> Any:
        return super().__call__(*args, **kwargs)


class Stream(Generic[S, T], metaclass=_NoPublicConstructor):
    """What [`Supervisor.stream`][trio_supervisor.Supervisor.stream] returns: an async context
    manager whose value is an async iterator of [`SubResult`][trio_supervisor.SubResult], in
    plan order. It has no public constructor.

    ```pycon
    >>> async def wait(n):
    ...     await trio.sleep(n)
    ...     return n
    >>> async def main():
    ...     async with Supervisor(wait, max_workers=2).stream([2, 1, 3]) as results:
    ...         return [(result.output, trio.current_time()) async for result in results]
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    [(2, 2.0), (1, 2.0), (3, 4.0)]

    ```

    Entering it starts one task that pulls the input (and closes it at the end); worker tasks are
    started as subtasks are pulled, at most ``max_workers``, and a free one takes the next pulled
    subtask. Iterating it
    yields each slot's result once that slot and every earlier one are done; leaving it cancels
    whatever still runs and closes the input's iterator. A stream can be entered once, and
    iterated by one task at a time.

    Each step of the iteration is a cancellation point; it yields to the scheduler only when the
    next result is not ready yet, so a consumer takes a burst of ready results (at most the
    window) in one go.

    Raises:
      RuntimeError: if it is entered a second time, or iterated outside its ``async with``.
      trio.BusyResourceError: if a second task iterates it while another one is.
    """

    def __init__(
        self,
        subtasks: Iterable[Any] | AsyncIterable[Any],
        engine: Engine[Any, T],
        max_workers: int,
        window: int,
        trace: Trace | None,
        run: RunName | None = None,
    ) -> None:
        # iter() now: it pulls nothing, and a non-iterable fails before any work starts
        self._input: Iterator[Any] | AsyncIterator[Any]
        self._async = isinstance(subtasks, AsyncIterable)
        self._planned: list[Any] | tuple[Any, ...] | None = (
            subtasks if isinstance(subtasks, list | tuple) else None
        )
        self._input = aiter(subtasks) if isinstance(subtasks, AsyncIterable) else iter(subtasks)
        # a list, tuple or range, with nothing journaled: its lanes take each slot by index,
        # within the window, with no task pulling for them (nothing to await, to raise or to
        # close); None otherwise
        self._indexed: list[Any] | tuple[Any, ...] | range | None = None
        if isinstance(subtasks, list | tuple | range) and not isinstance(run, DurableRun):
            # exactly these: a subclass's iterator may do what its indexing does not
            self._indexed = subtasks if type(subtasks) in (list, tuple, range) else None
        self._length = -1 if self._indexed is None else len(self._indexed)  # its length, once
        self._engine = engine
        self._timer = engine.timer()  # times the attempts, with a timeout
        # what this stream hands its lanes: pulled slots, and a wait for more when idle
        self._feed = StreamFeed(self, trace, self._timer, engine.run_key(), run)
        self._durable = run if isinstance(run, DurableRun) else None
        self._kept: dict[int, SubResult[Any, T]] = {}  # journaled results not yet pulled
        self._check: InputCheck | None = None  # what a lazy input is checked against, journaled
        self._trace = trace
        self._max_workers = max_workers
        self._window = window
        # invariants: slots [0, _head) are yielded, [_head, _tail) pulled and not yet yielded,
        # and _tail - _head <= _window; _done holds the finished slots of [_head, _tail);
        # _queue holds the pulled slots no lane has taken yet, in slot order; _lanes <=
        # min(_max_workers, _tail) worker tasks were started; one task pulls, and closes, the
        # input. An indexed input has no such task: it is pulled a chunk at a time (see
        # _chunks), _left counts the chunk's slots no lane has taken yet, _queue stays empty,
        # and min(_max_workers, len) lanes start with the stream.
        self._head = 0
        self._tail = 0
        self._lanes = 0
        self._done: dict[int, SubResult[Any, T]] = {}
        self._queue: deque[tuple[int, Any]] = deque()
        self._left: Iterator[int] = iter(())  # the slots of an indexed input's chunk not taken
        self._exhausted = False  # the input has no more subtasks, or raised
        self._input_error: Exception | None = None  # what the input raised, until re-raised
        # the puller, parked when the window is full, is woken by the first result the consumer
        # takes; it runs after the consumer's burst of ready results, so it wakes once per
        # burst and pulls a batch, not one subtask per result (a larger threshold only left the
        # lanes without a pulled subtask while the window had room)
        self._room = _Alarm()  # the puller waits here for room in the window
        self._idle = ParkingLot()  # lanes wait here for a pulled subtask
        self._ready = _Alarm()  # the consumer waits here for the head slot, or the end
        # who is parked where (kept here: a parking lot's len() is a Python-level call)
        self._pulling_parked = False
        self._idle_lanes = 0
        self._wanted = -1  # the slot the consumer waits for (-1: it does not wait)
        self._entered = False
        self._open = False  # inside the `async with`
        self._iterable = False  # open, and no task waits inside __anext__
        self._nursery: trio.Nursery | None = None
        self._manager: Any = None

    async def __aenter__(self) -> AsyncIterator[SubResult[S, T]]:
        if self._entered:
            raise RuntimeError(
                "this stream was already entered: call supervisor.stream(...) for another run"
            )
        self._entered = True
        durable = self._durable
        if durable is not None:
            if self._planned is not None:
                self._kept = await durable.begin(self._planned)
            else:
                self._kept, self._check = await durable.begin_input()
        if self._trace is not None:
            self._trace.begin(self._planned or ())
        self._manager = trio.open_nursery()
        self._nursery = await self._manager.__aenter__()
        self._open = self._iterable = True
        if self._timer is not None:
            self._nursery.start_soon(self._timer.watch)
        indexed = self._indexed
        if indexed is not None:
            self._exhausted = not indexed
            for _ in range(min(self._max_workers, len(indexed))):
                self._nursery.start_soon(lane, self._engine, self._feed)
            return self
        with sharing(self._durable):  # its lanes, started by this task, find the run's journal
            self._nursery.start_soon(self._pull_all)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        # The body's own exception is not handed to the nursery, so it leaves the block as it
        # was raised, not wrapped in an exception group; a worker's or the input's unexpected
        # BaseException (KeyboardInterrupt, say) still comes out of the nursery, bare. The one
        # exception: a Cancelled the body got because the nursery's own scope was cancelled
        # (a lane raised) belongs to that scope, which absorbs it, as trio's nursery would.
        self._open = self._iterable = False
        assert self._nursery is not None
        scope = self._nursery.cancel_scope
        owned = scope.cancel_called and _only_cancelled(exc)
        scope.cancel()
        absorbed = False  # the body's exception: it goes on, unless the nursery's scope owns it
        with ending(self._trace, self._durable):
            if owned:
                absorbed = bool(await self._manager.__aexit__(exc_type, exc, tb))
            else:
                await self._manager.__aexit__(None, None, None)
        if self._durable is not None:
            await self._durable.done(clean=exc is None)
        return absorbed

    def __aiter__(self) -> AsyncIterator[SubResult[S, T]]:
        return self

    async def __anext__(self) -> SubResult[S, T]:
        if not self._iterable:
            self._refuse()
        # A cancellation point always; a schedule point only when the next result is not
        # ready, so a consumer takes a burst of ready results (at most the window) at once.
        await checkpoint_if_cancelled()  # it yields only to raise: no other consumer meanwhile
        head = self._head  # only this task moves it
        done = self._done
        result = done.pop(head, None)  # a result is never None: None is "not done yet"
        if result is None:  # the head is not done: wait for it (in this frame: one fewer for
            # each wake to resume through), refusing a second consumer meanwhile
            self._iterable = False
            try:
                passed = False  # whether it has yielded its one pass yet
                while result is None:
                    if self._exhausted and head == self._tail:
                        self._end()
                    if passed:
                        self._wanted = head  # set back to -1 by whoever wakes it
                        await self._ready.wait()
                    else:
                        # One pass of the scheduler first (a yield, as a trio channel's receive
                        # makes): lanes that deliver at every pass then hand their results to a
                        # consumer nobody has to wake, which costs more than this yield. Only
                        # if the head is still not done does it wait to be woken.
                        passed = True
                        await cancel_shielded_checkpoint()
                    result = done.pop(head, None)
            finally:
                self._iterable = self._open
        if self._trace is not None:
            self._trace.delivered(head)
        self._head = head + 1
        if self._pulling_parked:  # the window, full, has room for one now
            self._pulling_parked = False
            self._room.wake()
        elif self._idle_lanes and self._indexed is not None:  # a lane takes the room
            self._idle_lanes -= 1
            self._idle.unpark()
        return result

    def _refuse(self) -> NoReturn:
        """Why ``__anext__`` may not go on: outside the ``async with``, or a second consumer."""
        if not self._open:
            raise RuntimeError("iterate a stream inside its `async with` block")
        raise trio.BusyResourceError(
            "another task is already iterating this stream: a stream has one consumer"
        )

    def _end(self) -> NoReturn:
        """The consumer is past the input's last slot: the input's error, else the end.

        Raises:
          StopAsyncIteration: if the input ended.
          Exception: what the input raised, once.
        """
        if self._input_error is not None:
            error, self._input_error = self._input_error, None
            raise error
        raise StopAsyncIteration

    async def _pull_all(self) -> None:
        """The one task that pulls the input, and closes it: a subtask whenever the window has
        room, queued for the lanes in slot order; a lane is started for it while fewer than
        ``max_workers`` run and none is idle. It pulls ahead of the workers only within the
        window, so that a worker that finishes finds its next subtask waiting."""
        # whether nothing has run since the last cancellation check: a sync input's next()
        # cannot await, so a run of pulls between two parks needs one check, not one each
        checked = False
        # what stays as it is while the stream runs, read once
        window, pulls_async, source, check, trace = (
            self._window,
            self._async,
            self._input,
            self._check,
            self._trace,
        )
        queue = self._queue
        try:
            while True:
                while self._tail - self._head >= window:
                    self._pulling_parked = True  # cleared by the consumer as it unparks it
                    await self._room.wait()
                    checked = False
                if not checked:
                    await checkpoint_if_cancelled()  # leaving the block: pull nothing more
                    checked = not pulls_async
                try:
                    if pulls_async:
                        subtask = await anext(source)  # type: ignore[arg-type]
                    else:
                        subtask = next(source)  # type: ignore[arg-type]
                except (StopIteration, StopAsyncIteration):
                    if check is not None:
                        await self._input_ended(check)
                    return
                except Exception as exc:
                    self._input_error = exc
                    return
                slot = self._tail
                if check is not None:  # a lazy input resumed: it is the one journaled
                    refused = check.pulled(slot, subtask)
                    if refused is not None:  # the input ends before this slot, with the error
                        self._input_error = ValueError(refused)
                        return
                self._tail = slot + 1
                if trace is not None:
                    trace.pulled(slot, subtask)
                if self._kept:
                    kept = self._kept.pop(slot, None)
                    if kept is not None:  # journaled: delivered as it was, not run again
                        if trace is not None:
                            trace.journaled(slot)
                        self._deliver(slot, with_subtask(kept, subtask))
                        continue
                queue.append((slot, subtask))
                if self._idle_lanes:
                    self._idle_lanes -= 1
                    self._idle.unpark()
                elif self._lanes < self._max_workers:
                    self._lanes += 1
                    assert self._nursery is not None
                    self._nursery.start_soon(lane, self._engine, self._feed)
                # else every lane is busy: the first to finish takes it from the queue
        finally:
            self._ended()
            # in this task, which pulled it: a generator that holds a cancel scope across its
            # `yield` must be resumed, and closed, by one task, with no scope of ours opened
            # around it in between (so the close is not shielded: a generator whose cleanup
            # awaits sees the cancellation that ended the stream, as it would anywhere in trio)
            await self._close_input()

    async def _input_ended(self, check: InputCheck) -> None:
        """A lazy input journaled ended: refused if shorter than the one journaled, else its
        plan journaled (unless one was)."""
        refused = check.ended(self._tail)
        if refused is not None:
            self._input_error = ValueError(refused)
            return
        digest = check.digest()
        if digest is not None:
            assert self._durable is not None
            await self._durable.ended(digest)

    def _take(self) -> tuple[int, Any] | None:
        return self._queue.popleft() if self._queue else None

    def _has_pulled(self) -> bool:
        return bool(self._queue)

    def _chunks(self, pull: Callable[[int, Any], tuple[int, Any]] | None) -> Iterator[Any]:
        """An indexed input's slots, a chunk at a time, for its lanes to take through
        ``itertools.chain``: each chunk is every slot the window has room for when the last one
        is all taken, pulled at once (so the window holds), its slots then taken one by one in
        C, with no Python code run for each (``pull``, when not None, is called on each slot as
        it is taken: a trace's). A lane that asks while the window has no room gets one None,
        and the next ask looks again. The input is ended as its last chunk is pulled."""
        indexed: Any = self._indexed
        window = self._window
        length = self._length
        tail = 0
        while tail < length:
            end = min(self._head + window, length)
            if end == tail:
                yield _NO_ROOM
                continue
            slots = self._left = iter(range(tail, end))
            chunk = indexed[tail:end]
            self._tail = tail = end
            if end == length:
                self._ended()
            yield zip(slots, chunk, strict=True) if pull is None else map(pull, slots, chunk)

    def _pulled(self, slot: int, subtask: Any) -> tuple[int, Any]:
        """Slot ``slot`` of an indexed input, taken by a lane: recorded in the trace."""
        assert self._trace is not None
        self._trace.pulled(slot, subtask)
        return slot, subtask

    def _ended(self) -> None:
        """The input has no more subtasks (or raised): the idle lanes are let go, and the
        consumer, if it waits, looks again (the slot it waits for may never come)."""
        self._exhausted = True
        self._idle_lanes = 0
        self._idle.unpark_all()
        self._wanted = -1
        self._ready.wake()

    def _room_indexed(self) -> bool:
        """Whether an indexed input has a slot to take now: one of its chunk, or room in the
        window for another chunk."""
        return length_hint(self._left) > 0 or (
            not self._exhausted and self._tail - self._head < self._window
        )

    async def _more(self) -> bool:
        """Wait for a pulled subtask; False once the input has no more."""
        if self._exhausted and not self._queue:
            return False
        self._idle_lanes += 1  # the puller takes it off as it unparks this lane
        woken = False
        try:
            await self._idle.park()
            woken = True
        finally:
            if not woken:  # cancelled while idle
                self._idle_lanes -= 1
        return True

    def _deliver(self, slot: int, result: SubResult[Any, T]) -> None:
        self._done[slot] = result
        if slot == self._wanted:
            self._wanted = -1
            self._ready.wake()

    async def _close_input(self) -> None:
        """Close the iterator the subtasks were pulled from, as ``aclosing`` would: a generator
        left half-way runs its ``finally`` blocks now, not whenever it is garbage collected."""
        if self._async:
            aclose = getattr(self._input, "aclose", None)
            if aclose is not None:
                await aclose()
        else:
            close = getattr(self._input, "close", None)
            if close is not None:
                close()


class StreamFeed(Feeding):
    """What a stream hands its lanes (a [`Feed`][trio_supervisor._engine.lanes.Feed]): the
    subtasks pulled and not yet taken, a wait for more while the input goes on, and where each
    result goes (a slot cut short is delivered as it is)."""

    __slots__ = ("more", "ready", "take")

    def __init__(
        self,
        stream: Stream[Any, Any],
        trace: Trace | None,
        timer: Timer | None,
        key: int,
        run: RunName | None = None,
    ) -> None:
        # a stream's lanes are at most max_workers (counted by its puller, or started at once
        # for an indexed input): a slot waits out its backoff on its lane, which keeps its
        # place (no Waiting); a slot cut short is delivered as it is
        super().__init__(trace, timer, key, run, stream._deliver, stream._deliver, None)
        self.take: Callable[[], tuple[int, Any] | None] = stream._take
        self.ready: Callable[[], bool] = stream._has_pulled
        if stream._indexed is not None:  # its lanes take its slots a chunk at a time
            chunks = stream._chunks(None if trace is None else stream._pulled)
            self.take = functools.partial(next, itertools.chain.from_iterable(chunks), None)
            self.ready = stream._room_indexed
        self.more: Callable[[], Awaitable[bool]] = stream._more


def open_stream(
    subtasks: Iterable[Any] | AsyncIterable[Any],
    engine: Engine[Any, T],
    max_workers: int,
    window: int,
    trace: Trace | None,
    run: RunName | None = None,
) -> Stream[Any, T]:
    """A new [`Stream`][trio_supervisor.Stream] (which has no public constructor)."""
    stream: Stream[Any, T] = Stream._create(subtasks, engine, max_workers, window, trace, run)
    return stream
