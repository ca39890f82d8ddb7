"""The supervisor: every step of the course in one tool, with timeouts, a deadline and retries."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import trio

from ._contract import Aggregate, Status, SubResult
from ._decompose import decompose
from ._retry import Backoff, RetryOn, check_positive, check_retry_on, retryable, retrying
from ._stream import Stream
from ._trace import Trace

S = TypeVar("S")
T = TypeVar("T")


@dataclass
class _Progress:
    """How far one slot got: what a slot cut short by the run's deadline reports."""

    attempts: int = 0
    started: float | None = None
    timed_out: bool = False  # the last attempt ran past the timeout


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= 1, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _is_async_callable(worker: Callable[..., object]) -> bool:
    """An ``async def`` function (maybe wrapped, or partial), or an object whose ``__call__`` is
    one: what can be told without calling it."""
    if inspect.iscoroutinefunction(worker) or inspect.iscoroutinefunction(inspect.unwrap(worker)):
        return True
    plain = inspect.isroutine(worker) or isinstance(worker, functools.partial)
    return not plain and inspect.iscoroutinefunction(type(worker).__call__)


def _check_worker(worker: object) -> None:
    if not callable(worker):
        raise TypeError(
            f"worker must be an async callable taking one subtask, got {type(worker).__name__} "
            f"{worker!r}"
        )
    if not _is_async_callable(worker):
        name = getattr(worker, "__qualname__", None) or type(worker).__name__
        raise TypeError(
            f"worker must be an async function (async def), got the sync callable {name!r}: "
            "define it with `async def`, and run blocking code inside it with "
            "`await trio.to_thread.run_sync(...)`"
        )


def _plan(task: object) -> list[Any]:
    if isinstance(task, str):
        return decompose(task)
    if isinstance(task, AsyncIterable):
        raise TypeError(
            f"run() needs a str or a sync iterable of subtasks, got the async iterable "
            f"{type(task).__name__}: use supervisor.stream(...) for async or lazy inputs"
        )
    if not isinstance(task, Iterable):
        raise TypeError(f"task must be a str or an iterable of subtasks, got {type(task).__name__}")
    return list(task)


def _check_trace(trace: object) -> None:
    if trace is not None and not isinstance(trace, Trace):
        raise TypeError(f"trace must be a Trace or None, got {type(trace).__name__}")


class Supervisor(Generic[S, T]):
    """Fan subtasks out to a worker, at most ``max_workers`` at a time, and fan the results back
    in plan order, one [`SubResult`][trio_supervisor.SubResult] per subtask, whatever happened to
    it.

    This is the course's supervisor grown up. Admission comes before work: the supervisor starts
    ``min(max_workers, len(plan))`` worker tasks, and a task admits the next slot of the plan
    only when it is free, so at most ``max_workers`` workers run, subtasks start in plan order,
    and a slot waits for the first worker to free up (the schedule, and so the wall time, is the
    one a capacity limiter taken before each ``start_soon`` gives, without paying for a task per
    subtask). Each result is written to its own slot, so the output order is the plan order by
    construction. A worker's `Exception` (an exception group from its own nursery
    included, recorded whole) fails only its own slot; with ``timeout`` a hung attempt is
    cancelled and its slot freed; with ``attempts`` a failed slot is tried again after a jittered
    backoff. ``trio.Cancelled``, `KeyboardInterrupt` and `SystemExit` are never
    caught: cancelling the run cancels every worker.

    Every option costs only when it is asked for: without ``timeout`` no cancel scope is opened
    per slot, with ``attempts=1`` no retrier is built, without a trace nothing is recorded.

    One worker task runs many subtasks in turn, so a ``contextvars`` variable a worker sets
    without resetting is seen by the next subtask that task runs: reset what you set.

    Args:
      worker: an async callable ``S -> Awaitable[T]``: an ``async def`` function or an object
        with an ``async def __call__`` (such as
        [`SimulatedAgent`][trio_supervisor.testing.SimulatedAgent]).
      max_workers: how many workers may run at once (the capacity bound).
      timeout: seconds each attempt may run before it is cancelled and counted as
        [`Status.TIMED_OUT`][trio_supervisor.Status] (a timed-out attempt counts as
        `trio.TooSlowError` for ``retry_on``); None for no timeout.
      attempts: how many times a slot's worker may be called: 1 never retries. A slot keeps its
        place under ``max_workers`` while it waits to retry.
      retry_on: which failures are retried: an `Exception` subclass or a tuple of them
        (by default every `Exception`, timeouts included). An exception group is retried
        when every exception in it is allowed.
      backoff: how long a slot waits between attempts (see [`Backoff`][trio_supervisor.Backoff]).

    Raises:
      TypeError: if ``worker`` is not an async callable (a plain ``def`` function is refused: the
        message names the fix), or an option has the wrong type.
      ValueError: if ``max_workers`` or ``attempts`` is < 1, or ``timeout`` is not positive.
    """

    def __init__(
        self,
        worker: Callable[[S], Awaitable[T]],
        *,
        max_workers: int,
        timeout: float | None = None,
        attempts: int = 1,
        retry_on: RetryOn = Exception,
        backoff: Backoff = Backoff(),  # noqa: B008  # immutable
    ) -> None:
        _check_worker(worker)
        self.worker = worker
        self.max_workers = _count("max_workers", max_workers)
        self.timeout = check_positive("timeout", timeout)
        self.attempts = _count("attempts", attempts)
        self.retry_on = check_retry_on(retry_on)
        if not isinstance(backoff, Backoff):
            raise TypeError(f"backoff must be a Backoff, got {type(backoff).__name__}")
        self.backoff = backoff
        self._retryable = retryable(self.retry_on)
        # invariant: _settle is _once exactly when no slot is ever retried
        self._settle = self._once if self.attempts == 1 else self._retrying

    def __repr__(self) -> str:
        return (
            f"Supervisor({getattr(self.worker, '__qualname__', self.worker)!r}, "
            f"max_workers={self.max_workers}, timeout={self.timeout}, attempts={self.attempts})"
        )

    async def run(
        self,
        task: str | Iterable[S],
        *,
        deadline: float | None = None,
        trace: Trace | None = None,
    ) -> Aggregate[T]:
        """Run every subtask of ``task`` and return their results, in plan order.

        The run never raises for a worker's failure: each slot ends
        [`Status.OK`][trio_supervisor.Status], ``FAILED``, ``TIMED_OUT`` or, when ``deadline``
        expires first, ``CANCELLED`` (stopped while it ran or waited to retry, or never started).
        On the deadline the run cancels its workers and returns what it has at that instant; no
        task it started outlives it.

        Args:
          task: a str, split with [`decompose`][trio_supervisor.decompose], or an iterable of
            subtasks (read in full before the first worker starts).
          deadline: seconds the whole run may take; None for no limit.
          trace: a recorder that receives admitted, started and ended events for every slot and
            is closed when the run returns; create it with the plan (``Trace(plan)``) so that
            slots that never ran are drawn too.

        Returns:
          An [`Aggregate`][trio_supervisor.Aggregate] with one
          [`SubResult`][trio_supervisor.SubResult] per subtask, in plan order.

        Raises:
          TypeError: if ``task`` is not a str or a sync iterable (use
            [`stream`][trio_supervisor.Supervisor.stream] for an async one), or ``trace`` is not a
            [`Trace`][trio_supervisor.Trace].
          ValueError: if ``task`` is a str with no subtask, or ``deadline`` is not positive.
        """
        plan = _plan(task)
        seconds = check_positive("deadline", deadline)
        _check_trace(trace)
        # invariant: results[i] is None until slot i has its final result
        results: list[SubResult[T] | None] = [None] * len(plan)
        progress: dict[int, _Progress] | None = None if seconds is None else {}
        slots = enumerate(plan)  # shared by the workers: each next() admits one slot, in order
        settle = self._settle

        async def take_slots() -> None:
            for slot, subtask in slots:
                if trace is not None:
                    trace.admitted(slot, subtask)
                results[slot] = await settle(slot, subtask, trace, progress)

        async def supervise() -> None:
            async with trio.open_nursery() as nursery:
                for _ in range(min(self.max_workers, len(plan))):
                    nursery.start_soon(take_slots)

        try:
            if seconds is None:
                await supervise()
            else:
                with trio.move_on_after(seconds):
                    await supervise()
                assert progress is not None
                _cut(plan, results, progress, seconds, trace)
        finally:
            if trace is not None:
                trace.close()
        return Aggregate(results)  # type: ignore[arg-type]  # every slot is filled by now

    def stream(
        self,
        subtasks: str | Iterable[S] | AsyncIterable[S],
        *,
        window: int | None = None,
        trace: Trace | None = None,
    ) -> Stream[T]:
        """Results as they become available in plan order, for inputs of any length.

        Use it as ``async with supervisor.stream(subtasks) as results: async for result in
        results: ...``. A result is yielded as soon as it and every earlier slot are done, so the
        first arrives when slot 0 is done. The input, a sync or async iterable (lazy, of unknown
        length, even endless), is pulled one subtask at a time and only when there is room for
        it: a subtask is pulled once a worker is free *and* fewer than ``window`` slots have been
        pulled but not yet yielded. So at most ``max_workers`` workers run, at most ``window``
        results wait in memory, and a consumer that stops reading stops the input.

        At the head of the line, a slow slot holds the others back: the slots after it keep
        running and finishing until ``window`` slots are waiting on it, then nothing new starts
        until it is done (or its ``timeout`` fires). The default window, ``2 * max_workers``,
        lets every worker finish one more slot behind a slow head before the line stalls.

        Leaving the ``async with`` body, early or not, cancels the workers still running, pulls
        nothing more and closes the input's iterator (``aclose()`` or ``close()`` where it has
        one, as ``contextlib.aclosing`` would), so a generator abandoned half-way runs its
        ``finally`` blocks at once. An exception the body raises leaves the block as it was, not
        wrapped in an exception group. An exception the input raises comes out of the iteration
        after the results pulled before it. There is no ``deadline`` here: wrap the block in
        ``trio.move_on_after`` to bound it.

        Args:
          subtasks: a str (split with [`decompose`][trio_supervisor.decompose]), or a sync or async
            iterable.
          window: how many slots may be pulled but not yet yielded, at least ``max_workers``.
          trace: a recorder for admitted, started and ended events (slots are added as pulled).

        Raises:
          TypeError: if ``subtasks`` is not a str or an iterable, or ``window`` is not an int.
          ValueError: if ``window < max_workers``, or a str holds no subtask.
        """
        if window is None:
            window = 2 * self.max_workers
        elif _count("window", window) < self.max_workers:
            raise ValueError(
                f"window must be >= max_workers ({self.max_workers}), got {window}: "
                "a smaller window leaves workers idle"
            )
        _check_trace(trace)
        if isinstance(subtasks, str):
            return Stream(decompose(subtasks), self._settle, self.max_workers, window, trace)
        if not isinstance(subtasks, Iterable | AsyncIterable):
            raise TypeError(
                "subtasks must be a str or a sync or async iterable of subtasks, "
                f"got {type(subtasks).__name__}"
            )
        return Stream(subtasks, self._settle, self.max_workers, window, trace)

    def _timed_out(self) -> trio.TooSlowError:
        return trio.TooSlowError(f"the attempt ran past its timeout of {self.timeout:g}s")

    async def _once(
        self, slot: int, subtask: Any, trace: Trace | None, progress: dict[int, _Progress] | None
    ) -> SubResult[T]:
        """Slot ``slot``'s single attempt, settled into its result (never raises Exception)."""
        started = trio.current_time()
        if progress is not None:
            progress[slot] = _Progress(1, started)
        if trace is not None:
            trace.started(slot, subtask)
        timeout = self.timeout
        try:
            if timeout is None:
                output = await self.worker(subtask)
            else:
                with trio.move_on_after(timeout) as scope:
                    output = await self.worker(subtask)
                if scope.cancelled_caught:
                    if trace is not None:
                        trace.ended(slot, Status.TIMED_OUT)
                    return SubResult.from_exception(
                        subtask,
                        self._timed_out(),
                        Status.TIMED_OUT,
                        attempts=1,
                        started=started,
                        finished=trio.current_time(),
                    )
        except Exception as exc:
            if trace is not None:
                trace.ended(slot, Status.FAILED)
            return SubResult.from_exception(
                subtask, exc, attempts=1, started=started, finished=trio.current_time()
            )
        if trace is not None:
            trace.ended(slot, Status.OK)
        return SubResult(
            subtask, output=output, attempts=1, started=started, finished=trio.current_time()
        )

    async def _retrying(
        self, slot: int, subtask: Any, trace: Trace | None, progress: dict[int, _Progress] | None
    ) -> SubResult[T]:
        """Slot ``slot``'s attempts, retried by tenacity, settled into its result."""
        record = _Progress()
        if progress is not None:
            progress[slot] = record
        retrier = retrying(self.attempts, self._retryable, self.backoff)
        try:
            output: T = await retrier(self._attempt, slot, subtask, trace, record)
        except Exception as exc:
            status = Status.TIMED_OUT if record.timed_out else Status.FAILED
            return SubResult.from_exception(
                subtask,
                exc,
                status,
                attempts=record.attempts,
                started=record.started,
                finished=trio.current_time(),
            )
        return SubResult(
            subtask,
            output=output,
            attempts=record.attempts,
            started=record.started,
            finished=trio.current_time(),
        )

    async def _attempt(self, slot: int, subtask: Any, trace: Trace | None, record: _Progress) -> T:
        """One attempt: the worker's output, or its exception (TooSlowError past the timeout)."""
        record.attempts += 1
        if record.started is None:
            record.started = trio.current_time()
        record.timed_out = False
        if trace is not None:
            trace.started(slot, subtask)
        try:
            if self.timeout is None:
                output = await self.worker(subtask)
            else:
                with trio.move_on_after(self.timeout) as scope:
                    output = await self.worker(subtask)
                record.timed_out = scope.cancelled_caught
        except Exception:
            if trace is not None:
                trace.ended(slot, Status.FAILED)
            raise
        if record.timed_out:
            if trace is not None:
                trace.ended(slot, Status.TIMED_OUT)
            raise self._timed_out()
        if trace is not None:
            trace.ended(slot, Status.OK)
        return output


def _cut(
    plan: list[Any],
    results: list[SubResult[T] | None],
    progress: dict[int, _Progress],
    deadline: float,
    trace: Trace | None,
) -> None:
    """Fill every slot the deadline left without a result with a CANCELLED one."""
    now = trio.current_time()
    for slot, subtask in enumerate(plan):
        if results[slot] is not None:
            continue
        record = progress.get(slot)
        if record is None:
            results[slot] = SubResult(
                subtask,
                error=f"Cancelled: the run's deadline of {deadline:g}s expired before it started",
                status=Status.CANCELLED,
                attempts=0,
            )
            continue
        if trace is not None and slot < len(trace.slots):
            spans = trace.slots[slot].spans
            if spans and spans[-1].end is None:
                trace.ended(slot, Status.CANCELLED)
        results[slot] = SubResult(
            subtask,
            error=f"Cancelled: the run's deadline of {deadline:g}s expired before it finished",
            status=Status.CANCELLED,
            attempts=record.attempts,
            started=record.started,
            finished=now,
        )
