"""The supervisor: its settings, and the admission loop of a run."""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar, overload

import trio

from . import _validate
from ._attempt import CUT_SHORT, Attempts
from ._contract import Aggregate, Status, SubResult
from ._meters import Capacity, Meter
from ._places import Places
from ._replan import Answer, Planner, replan
from ._restart import Strategy, restarting_run
from ._retry import Backoff, RetryOn, retryable
from ._stream import Stream, sole
from ._trace import Trace

S = TypeVar("S")
T = TypeVar("T")


class Supervisor(Generic[S, T]):
    """Fans subtasks out to a worker, at most ``max_workers`` at a time, and fans their results
    back in plan order, one [`SubResult`][trio_supervisor.SubResult] per subtask, whatever
    happened to it.

    ``max_workers`` is the supervisor's, not each call's: all its runs and streams together run
    at most ``max_workers`` workers at once (concurrent runs take turns for the places, first
    come first served). Give several supervisors one [`Capacity`][trio_supervisor.Capacity] as
    ``capacity=`` to bound all their workers together, as one API's limit across a tree of
    supervisors. What sharing costs: a worker holds its place while it runs, so a supervisor
    whose worker waits on another supervisor (a parent waiting on its children) must not draw
    from the budget those children need: ``K`` parents holding every place while their children
    wait for one never finish. Give the parents a budget of their own (their ``max_workers``
    alone) and share the capacity among the supervisors whose workers do the work; the same
    holds for a worker that calls its own supervisor's ``run``.

    A run starts ``min(max_workers, len(plan))`` worker tasks; each takes the next slot of the
    plan whenever it is free, so at most ``max_workers`` workers run, subtasks start in plan
    order, and a slot waits only for the first worker to free up: the schedule (and so the wall
    time) a capacity limiter taken before each ``start_soon`` would give, without a task per
    subtask. Each result goes to its own slot, so the results are in plan order by construction.

    A worker's `Exception` (an exception group from its own nursery included, recorded whole)
    fails only its own slot; with ``timeout`` a hung attempt is cancelled and its slot freed;
    with ``attempts`` a failed slot is tried again after a full-jitter backoff, keeping its
    place under ``max_workers`` while it waits. ``trio.Cancelled``, `KeyboardInterrupt` and
    `SystemExit` are never caught: cancelling a run cancels its workers, and a
    `KeyboardInterrupt` or `SystemExit` a worker raises comes out of the run bare (not in an
    exception group) when it is the only thing the run raises.

    Every option costs only when it is used: without ``timeout`` no cancel scope is opened,
    with ``attempts=1`` there is no retry loop, without meters or a trace nothing is awaited or
    recorded for them. The settings are fixed at construction and read-only: one supervisor can
    serve many runs and streams at once.

    One worker task runs many subtasks in turn, so a ``contextvars`` variable a worker sets
    without resetting is seen by the next subtask that task runs: reset what you set.

    Args:
      worker: a callable taking one subtask and returning an awaitable of its output: an
        ``async def`` function, an object with an ``async def __call__``, a lambda or a
        ``functools.partial`` around one.
      max_workers: how many workers may run at once (the capacity bound).
      timeout: seconds each attempt may run before it is cancelled and counted as
        ``Status.TIMED_OUT`` (a timed-out attempt counts as `trio.TooSlowError` for
        ``retry_on``); None for no timeout.
      attempts: how many times a slot's worker may be called: 1 never retries.
      retry_on: which failures are retried: an `Exception` subclass or a tuple of them (by
        default every `Exception`, timeouts included). An exception group is retried when every
        exception in it is allowed.
      backoff: how long a slot waits between attempts (see
        [`Backoff`][trio_supervisor.Backoff]).
      seed: the retry jitter's generator: an int seeds the supervisor's own ``random.Random``,
        a ``random.Random`` is used as given, None seeds one from the operating system. The
        process-wide ``random`` module is never used, so a run is reproducible from its seed.
      rng: a ``random.Random`` to draw the retry jitter from, injected rather than seeded: the
        same as passing it as ``seed``; give one of the two.
      meters: what each attempt waits on before it starts, besides a free worker (see
        [`Meter`][trio_supervisor.Meter] and [`Capacity`][trio_supervisor.Capacity]).
      capacity: a [`Capacity`][trio_supervisor.Capacity] shared with other supervisors: each of
        this supervisor's workers holds one of its places too while it runs slots, so the
        supervisors that share it run at most ``capacity.limit`` workers together.
      intensity: ``(R, T)``: at most ``R`` restarts (failed attempts that will be tried again)
        within any ``T`` seconds of a run; one more and the run gives up: it cancels what still
        runs or waits, the slot whose failure was one too many keeps its error, and every other
        unfinished slot fails with ``gave up: more than R restarts within Ts``. None: no bound.
      strategy: which slots a restart takes, for subtasks that depend on each other:
        ``"one_for_one"`` the failed slot alone; ``"one_for_all"`` every slot (running ones are
        cancelled, finished ones lose their result); ``"rest_for_one"`` the failed slot and
        every slot after it in plan order. The slots taken wait out the failed slot's backoff
        together, holding no place, and start again in plan order; a slot restarted for a
        sibling is not charged an attempt. With ``intensity`` or a strategy other than
        ``"one_for_one"``, a slot waiting to restart holds no place, and ``stream`` is refused.

    Raises:
      TypeError: if ``worker`` is not callable or cannot be called with one subtask, an option
        has the wrong type, or both ``seed`` and ``rng`` are given.
      ValueError: if ``max_workers`` or ``attempts`` is < 1, ``timeout`` is not positive,
        ``capacity`` is also one of the ``meters``, ``intensity`` is not ``(R >= 0, T > 0)`` or
        ``strategy`` is not one of the three.
    """

    __slots__ = (
        "_attempts",
        "_backoff",
        "_capacity",
        "_intensity",
        "_max_workers",
        "_meters",
        "_retry_on",
        "_rng",
        "_seed",
        "_strategy",
    )

    def __init__(
        self,
        worker: Callable[[S], Awaitable[T]],
        *,
        max_workers: int,
        timeout: float | None = None,
        attempts: int = 1,
        retry_on: RetryOn = Exception,
        backoff: Backoff = Backoff(),  # noqa: B008  # immutable
        seed: int | random.Random | None = None,
        rng: random.Random | None = None,
        meters: Sequence[Meter] = (),
        capacity: Capacity | None = None,
        intensity: tuple[int, float] | None = None,
        strategy: Strategy = "one_for_one",
    ) -> None:
        _validate.worker(worker)
        self._max_workers = _validate.count("max_workers", max_workers)
        checked_timeout = _validate.seconds("timeout", timeout)
        checked_attempts = _validate.count("attempts", attempts)
        self._retry_on = _validate.retry_on(retry_on)
        if not isinstance(backoff, Backoff):
            raise TypeError(f"backoff must be a Backoff, got {type(backoff).__name__}")
        self._backoff = backoff
        self._seed = seed
        self._rng = _validate.rng(rng, seed)
        self._meters = _validate.meters(meters)
        self._capacity = _validate.capacity(capacity, self._meters)
        self._intensity = _validate.intensity(intensity)
        self._strategy: Strategy = _validate.strategy(strategy)
        # invariant: every run and stream of this supervisor runs its slots through _attempts
        self._attempts: Attempts[S, T] = Attempts(
            worker,
            checked_timeout,
            checked_attempts,
            retryable(self._retry_on),
            backoff,
            _validate.seed(seed if rng is None else rng),
            self._meters,
            Places(self._max_workers, None if capacity is None else capacity._limiter),
        )

    def __setattr__(self, name: str, value: object) -> None:
        if not name.startswith("_"):
            raise AttributeError(
                f"{name} is fixed when a Supervisor is made (its runs may be going on): make "
                f"another one, Supervisor(..., {name}=...)"
            )
        object.__setattr__(self, name, value)

    @property
    def worker(self) -> Callable[[S], Awaitable[T]]:
        """The callable each attempt calls with its subtask."""
        return self._attempts.worker

    @property
    def max_workers(self) -> int:
        """How many workers may run at once."""
        return self._max_workers

    @property
    def timeout(self) -> float | None:
        """Seconds each attempt may run, or None."""
        return self._attempts.timeout

    @property
    def attempts(self) -> int:
        """How many times a slot's worker may be called."""
        return self._attempts.attempts

    @property
    def retry_on(self) -> tuple[type[Exception], ...]:
        """The exceptions that are retried."""
        return self._retry_on

    @property
    def backoff(self) -> Backoff:
        """The wait between attempts."""
        return self._backoff

    @property
    def seed(self) -> int | random.Random | None:
        """The retry jitter's seed, as given."""
        return self._seed

    @property
    def rng(self) -> random.Random | None:
        """The retry jitter's generator, when one was injected with ``rng``."""
        return self._rng

    @property
    def meters(self) -> tuple[Meter, ...]:
        """What each attempt waits on before it starts."""
        return self._meters

    @property
    def capacity(self) -> Capacity | None:
        """The budget shared with other supervisors, or None."""
        return self._capacity

    @property
    def intensity(self) -> tuple[int, float] | None:
        """At most how many restarts within how many seconds, or None."""
        return self._intensity

    @property
    def strategy(self) -> Strategy:
        """Which slots a restart takes."""
        return self._strategy

    def __repr__(self) -> str:
        worker = self.worker
        name = getattr(worker, "__qualname__", None) or repr(worker)
        names = [cls.__name__ for cls in self._retry_on]
        retry_on = f"{names[0]}," if len(names) == 1 else ", ".join(names)
        return (
            f"Supervisor({name}, max_workers={self._max_workers}, timeout={self.timeout!r}, "
            f"attempts={self.attempts}, retry_on=({retry_on}), backoff={self._backoff!r}, "
            f"seed={self._seed!r}, rng={self._rng!r}, meters={self._meters!r}, "
            f"capacity={self._capacity!r}, intensity={self._intensity!r}, "
            f"strategy={self._strategy!r})"
        )

    @overload
    async def run(
        self: Supervisor[str, T],
        task: str | Iterable[str],
        *,
        deadline: float | None = None,
        trace: Trace | None = None,
    ) -> Aggregate[str, T]: ...

    @overload
    async def run(
        self, task: Iterable[S], *, deadline: float | None = None, trace: Trace | None = None
    ) -> Aggregate[S, T]: ...

    async def run(
        self,
        task: str | Iterable[Any],
        *,
        deadline: float | None = None,
        trace: Trace | None = None,
    ) -> Aggregate[Any, T]:
        """Run every subtask of ``task`` and return their results, in plan order.

        The run never raises for a worker's failure: each slot ends ``Status.OK``, ``FAILED``,
        ``TIMED_OUT`` or, when ``deadline`` expires first, ``CANCELLED`` (stopped while it ran
        or waited to retry, or never started: ``attempts`` 0). From the deadline on no worker is
        called; the run cancels its workers and returns what it has at that instant, and no
        task it started outlives it. If the run is cancelled from outside, the cancellation
        goes on to the scope that owns it, as from any trio call that runs a nursery: inside an
        exception group, which that scope catches (its trace's open spans end ``CANCELLED``).

        Args:
          task: a str, split with [`decompose`][trio_supervisor.decompose] (only for a
            supervisor of str subtasks), or an iterable of subtasks, read in full before the
            first worker starts.
          deadline: seconds the whole run may take; None for no limit.
          trace: a fresh [`Trace`][trio_supervisor.Trace] to record admissions, attempts and
            ends into: ``Trace()``, or ``Trace(plan)`` made for this very plan. It is closed
            when the run returns or raises.

        Returns:
          An [`Aggregate`][trio_supervisor.Aggregate] with one
          [`SubResult`][trio_supervisor.SubResult] per subtask, in plan order.

        Raises:
          TypeError: if ``task`` is not a str or a sync iterable (use
            [`stream`][trio_supervisor.Supervisor.stream] for an async one), ``trace`` is not a
            [`Trace`][trio_supervisor.Trace], or a worker's call returns something that cannot
            be awaited (the message names the fix).
          ValueError: if ``task`` is a str with no subtask, ``deadline`` is not positive, or
            ``trace`` was made for another plan or already recorded a run.
          KeyboardInterrupt: if a worker raised it (likewise `SystemExit`), bare.
        """
        plan = _validate.plan(task)
        limit = _validate.seconds("deadline", deadline)
        _validate.trace(trace, plan)
        # invariant: results[i] is None until slot i has its final result; cuts[i] is where a
        # slot cut short while it ran got to
        results: list[SubResult[Any, T] | None] = [None] * len(plan)
        cuts: dict[int, SubResult[Any, T]] = {}
        if trace is not None:
            trace._begin(plan)
        expired = False
        gave_up: str | None = None
        fan_out = self._fan_out
        if self._intensity is not None or self._strategy != "one_for_one":
            fan_out = self._restarting
        try:
            try:
                if limit is None:
                    gave_up = await fan_out(plan, results, cuts, trace)
                else:
                    with trio.move_on_after(limit) as scope:
                        gave_up = await fan_out(plan, results, cuts, trace)
                    expired = scope.cancelled_caught
            except* (KeyboardInterrupt, SystemExit, Exception) as group:
                raise sole(group) from None
        finally:
            if trace is not None:
                trace._end_open()
                trace.close()
        _fill(plan, results, cuts, limit if expired else None)
        return Aggregate(results, gave_up)  # type: ignore[arg-type]  # _fill left no None

    async def _restarting(
        self,
        plan: list[Any],
        results: list[SubResult[Any, T] | None],
        cuts: dict[int, SubResult[Any, T]],
        trace: Trace | None,
    ) -> str | None:
        """A run whose restarts are counted or grouped (see ``_restart``); returns why it gave
        up, or None."""
        return await restarting_run(
            self._attempts, plan, results, cuts, trace, self._intensity, self._strategy
        )

    async def _fan_out(
        self,
        plan: list[Any],
        results: list[SubResult[Any, T] | None],
        cuts: dict[int, SubResult[Any, T]],
        trace: Trace | None,
    ) -> str | None:
        """The admission loop: ``min(max_workers, len(plan))`` lanes share one iterator over
        the plan, so each free lane admits the next slot, in plan order."""
        cut = cuts.__setitem__
        take = functools.partial(next, enumerate(plan), None)
        put = results.__setitem__
        attempts = self._attempts
        lane = attempts.lane
        key = attempts.run_key()
        timer = attempts.timer()
        async with trio.open_nursery() as timing:
            if timer is not None:
                timing.start_soon(timer.watch)
            async with trio.open_nursery() as nursery:
                for _ in range(min(self._max_workers, len(plan))):
                    nursery.start_soon(lane, take, put, cut, trace, key, timer)
            timing.cancel_scope.cancel()  # every attempt has ended: nothing more to time
        return None  # the lanes never give up: a run with an intensity is a restarting one

    async def replan(
        self,
        task: str,
        planner: Planner[S, T],
        *,
        max_rounds: int = 10,
        max_subtasks: int = 100,
        max_stalls: int = 3,
        max_resets: int = 2,
        deadline: float | None = None,
    ) -> Answer[S, T]:
        """Work on ``task`` in rounds, each a parallel batch the planner chose from what came
        back so far, and always return an answer.

        The planner makes the first [`Batch`][trio_supervisor.Batch]; the batch is one
        [`run`][trio_supervisor.Supervisor.run] (in parallel under ``max_workers``, its results
        in batch order, a failure isolated to its slot); every result goes into the
        [`Ledger`][trio_supervisor.Ledger], once, with its round and its place in the batch;
        then the planner reads the ledger and decides: [`Done`][trio_supervisor.Done], or the
        next batch (follow-ups, failed subtasks rerouted). A planner that raises or returns no
        decision costs a round that dispatches nothing and counts as a stall; its failure is
        kept in the round and named in the answer if the run ends on a budget.

        A budget that runs out stops the run: no further batch is dispatched, what still runs
        at the deadline is cancelled (and kept in the ledger as ``CANCELLED``), and the answer
        is synthesized from the ledger, degraded, naming the budget. The answer is also
        degraded when some subtask failed and no replacement of it succeeded. The planner is
        asked once more after the last round a budget allows, to learn whether it is done; a
        planner that never returns is ended only by ``deadline``.

        Args:
          task: what the planner plans for.
          planner: a [`Planner`][trio_supervisor.Planner].
          max_rounds: rounds at most (a round the planner failed counts).
          max_subtasks: subtasks dispatched at most, in all rounds; a batch that does not fit
            is dispatched as far as it fits, and the run ends after it.
          max_stalls: how far the stall count may go (up one on a stalled round, down one on
            progress) before the planner is asked for a fresh plan.
          max_resets: how many fresh plans it may be asked for; past that, a stall count over
            ``max_stalls`` ends the run.
          deadline: seconds the whole run may take, planning included; None for no limit.

        Returns:
          An [`Answer`][trio_supervisor.Answer]: the text, whether it is degraded, the budget
          that ended the run (None when the planner was done), and the ledger.

        Raises:
          TypeError: if ``task`` is not a str, ``planner`` has no ``first`` and ``next``, or a
            budget is not an int.
          ValueError: if ``max_rounds`` or ``max_subtasks`` is < 1, ``max_stalls`` or
            ``max_resets`` < 0, or ``deadline`` is not positive.
        """
        return await replan(
            self,
            task,
            planner,
            max_rounds=max_rounds,
            max_subtasks=max_subtasks,
            max_stalls=max_stalls,
            max_resets=max_resets,
            deadline=deadline,
        )

    @overload
    def stream(
        self: Supervisor[str, T],
        subtasks: str | Iterable[str] | AsyncIterable[str],
        *,
        window: int | None = None,
        trace: Trace | None = None,
    ) -> Stream[str, T]: ...

    @overload
    def stream(
        self,
        subtasks: Iterable[S] | AsyncIterable[S],
        *,
        window: int | None = None,
        trace: Trace | None = None,
    ) -> Stream[S, T]: ...

    def stream(
        self,
        subtasks: str | Iterable[Any] | AsyncIterable[Any],
        *,
        window: int | None = None,
        trace: Trace | None = None,
    ) -> Stream[Any, T]:
        """Results as they become available in plan order, for inputs of any length.

        Use it as ``async with supervisor.stream(subtasks) as results: async for result in
        results: ...``. A result is yielded as soon as it and every earlier slot are done, so the
        first arrives when slot 0 is done. The input, a sync or async iterable (lazy, of unknown
        length, even endless), is pulled by one task, one subtask at a time, and only while
        there is room for it: fewer than ``window`` slots pulled but not yet yielded. Workers
        take the pulled subtasks in order. So at most ``max_workers`` workers run (and no more
        worker tasks are started than subtasks pulled), at most ``window`` subtasks and results
        wait in memory, and a consumer that stops reading stops the input.

        At the head of the line, a slow slot holds the others back: the slots after it keep
        running and finishing until ``window`` slots are waiting on it, then nothing new starts
        until it is done (or its ``timeout`` fires). The default window, ``4 * max_workers``,
        lets every worker finish three more slots behind a slow head before the line stalls,
        and lets the input be pulled a batch ahead of the workers, so that a worker that
        finishes finds its next subtask waiting instead of waiting for the puller (with
        ``2 * max_workers``, a run whose workers all finish at once paid a task switch for every
        other subtask).

        Leaving the ``async with`` body, early or not, cancels the workers still running, pulls
        nothing more, calls no further worker and closes the input's iterator (``aclose()`` or
        ``close()`` where it has one, as ``contextlib.aclosing`` would, in the task that pulled
        it), so a generator abandoned half-way runs its ``finally`` blocks at once. An exception
        the body raises leaves the block as it was, not wrapped in an exception group. An
        exception the input raises comes out of the iteration after the results pulled before
        it. There is no ``deadline`` here:
        wrap the block in ``trio.move_on_after`` to bound it.

        Args:
          subtasks: a str (split with [`decompose`][trio_supervisor.decompose], only for a
            supervisor of str subtasks), or a sync or async iterable.
          window: how many slots may be pulled but not yet yielded, at least ``max_workers``.
          trace: a fresh, empty [`Trace`][trio_supervisor.Trace] (or one made for the very plan
            of a list or tuple input); slots are added as they are pulled, and each records
            when its result was delivered.

        Returns:
          A [`Stream`][trio_supervisor.Stream]: enter it with ``async with``, then iterate it.

        Raises:
          TypeError: if ``subtasks`` is not a str or an iterable, or ``window`` is not an int.
          ValueError: if ``window < max_workers``, a str holds no subtask, or ``trace`` was
            made for another plan or already recorded a run.
        """
        if self._intensity is not None or self._strategy != "one_for_one":
            raise ValueError(
                "a stream hands each result over as it is done, so it cannot give up on or "
                "restart a finished slot: use run() with intensity= or strategy=, or a "
                "Supervisor without them for stream()"
            )
        size = _validate.window(window, self._max_workers)
        source = _validate.stream_input(subtasks)
        planned = source if isinstance(source, list | tuple) else None
        _validate.trace(trace, planned)
        stream: Stream[Any, T] = Stream._create(
            source, self._attempts, self._max_workers, size, trace
        )
        return stream


def _fill(
    plan: list[Any],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    deadline: float | None,
) -> None:
    """Give every slot a result: a slot never started, or cut short, is ``CANCELLED``."""
    if all(result is not None for result in results):
        return
    if deadline is not None:
        never = f"Cancelled: the run's deadline of {deadline:g}s expired before it started"
        unfinished = f"Cancelled: the run's deadline of {deadline:g}s expired before it finished"
    else:
        never = "Cancelled: the run was cut short before this slot started"
        unfinished = CUT_SHORT
    for slot, result in enumerate(results):
        if result is not None:
            continue
        where = cuts.get(slot)
        if where is None:
            results[slot] = SubResult(plan[slot], error=never, status=Status.CANCELLED, attempts=0)
            continue
        error = where.error or CUT_SHORT
        results[slot] = SubResult(
            where.subtask,
            error=unfinished + error[len(CUT_SHORT) :],
            status=Status.CANCELLED,
            attempts=where.attempts,
            started=where.started,
            finished=where.finished,
            exception=where.exception,
        )
