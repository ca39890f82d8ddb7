"""Streaming: results in plan order, as soon as they can be, from inputs of any length."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar

import trio

from ._contract import SubResult
from ._trace import Trace

T = TypeVar("T")

Settle = Callable[[int, Any, Trace | None, None], Awaitable[SubResult[T]]]
"""Runs one slot to its result: ``settle(slot, subtask, trace, None)`` never raises Exception."""


class Stream(Generic[T]):
    """What [`Supervisor.stream`][trio_supervisor.Supervisor.stream] returns: an async context
    manager whose value is an async iterator of [`SubResult`][trio_supervisor.SubResult], in plan
    order.

    Entering it starts ``max_workers`` worker tasks in a nursery; iterating it yields each slot's
    result once that slot and every earlier one are done; leaving it cancels whatever still runs
    and closes the input's iterator. A stream can be entered once, and iterated by one task.

    Each step of the iteration is a cancellation point; it yields to the scheduler only when the
    next result is not ready yet, so a consumer takes a burst of ready results (at most the
    window) in one go.

    Raises:
      RuntimeError: if it is entered a second time, or iterated outside its ``async with``.
    """

    def __init__(
        self,
        subtasks: Iterable[Any] | AsyncIterable[Any],
        settle: Settle[T],
        max_workers: int,
        window: int,
        trace: Trace | None,
    ) -> None:
        # iter() now: it pulls nothing, and a non-iterable fails before any work starts
        self._input: Iterator[Any] | AsyncIterator[Any]
        self._async = isinstance(subtasks, AsyncIterable)
        if isinstance(subtasks, AsyncIterable):
            self._input = aiter(subtasks)
            # pulled by one worker at a time: an async generator allows no more
            self._pulling: trio.StrictFIFOLock | None = trio.StrictFIFOLock()
        else:
            self._input = iter(subtasks)
            self._pulling = None
        self._settle = settle
        self._trace = trace
        self._workers = max_workers
        self._window = window
        # invariants: slots [0, _head) are yielded, [_head, _tail) pulled and not yet yielded,
        # and _tail - _head <= _window; _done holds the finished slots of [_head, _tail), so
        # len(_done) <= _window; each of the _workers tasks runs at most one slot at a time.
        self._head = 0
        self._tail = 0
        self._done: dict[int, SubResult[T]] = {}
        self._exhausted = False  # the input has no more subtasks, or raised
        self._input_error: Exception | None = None  # what the input raised, until it is re-raised
        self._room = trio.lowlevel.ParkingLot()  # workers waiting for _tail - _head < _window
        self._wakeup: trio.Event | None = None  # set when the head slot is done, or input ends
        self._entered = False
        self._open = False
        self._nursery: trio.Nursery | None = None
        self._manager: Any = None

    async def __aenter__(self) -> AsyncIterator[SubResult[T]]:
        if self._entered:
            raise RuntimeError(
                "this stream was already entered: call supervisor.stream(...) for another run"
            )
        self._entered = True
        self._manager = trio.open_nursery()
        self._nursery = await self._manager.__aenter__()
        self._open = True
        for _ in range(self._workers):
            self._nursery.start_soon(self._take_slots)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # The body's own exception is not handed to the nursery, so it leaves the block as it
        # was raised, not wrapped in an exception group; a worker's or the input's unexpected
        # BaseException (KeyboardInterrupt, say) still comes out of the nursery.
        self._open = False
        assert self._nursery is not None
        self._nursery.cancel_scope.cancel()
        try:
            await self._manager.__aexit__(None, None, None)
        finally:
            try:
                await self._close_input()
            finally:
                if self._trace is not None:
                    self._trace.close()

    def __aiter__(self) -> AsyncIterator[SubResult[T]]:
        return self

    async def __anext__(self) -> SubResult[T]:
        if not self._open:
            raise RuntimeError("iterate a stream inside its `async with` block")
        # A cancellation point always; a schedule point only when the next result is not ready,
        # so a consumer takes a burst of ready results (at most the window) in one go.
        await trio.lowlevel.checkpoint_if_cancelled()
        while self._head not in self._done:
            if self._exhausted and self._head == self._tail:
                if self._input_error is not None:
                    error, self._input_error = self._input_error, None
                    raise error
                raise StopAsyncIteration
            self._wakeup = trio.Event()
            await self._wakeup.wait()
        result = self._done.pop(self._head)
        self._head += 1
        self._room.unpark()
        return result

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

    async def _pull(self) -> Any:
        """The input's next subtask; StopAsyncIteration when it has no more."""
        if self._async:
            return await anext(self._input)  # type: ignore[arg-type]
        try:
            return next(self._input)  # type: ignore[arg-type]
        except StopIteration:
            raise StopAsyncIteration from None

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def _take_slots(self) -> None:
        """One worker: admit the next subtask whenever the window has room, and run it."""
        while True:
            if self._pulling is None:
                admitted = await self._admit()
            else:
                async with self._pulling:
                    admitted = await self._admit()
            if admitted is None:
                return
            slot, subtask = admitted
            self._done[slot] = await self._settle(slot, subtask, self._trace, None)
            if slot == self._head:
                self._wake()

    async def _admit(self) -> tuple[int, Any] | None:
        """Wait for room in the window, then pull the next subtask into the next slot; None once
        the input has no more."""
        while self._tail - self._head >= self._window and not self._exhausted:
            await self._room.park()
        if self._exhausted:
            return None
        try:
            subtask = await self._pull()
        except StopAsyncIteration:
            self._end()
            return None
        except Exception as exc:
            self._input_error = exc
            self._end()
            return None
        slot = self._tail
        self._tail += 1
        if self._trace is not None:
            self._trace.admitted(slot, subtask)
        return slot, subtask

    def _end(self) -> None:
        self._exhausted = True
        self._room.unpark_all()
        self._wake()
