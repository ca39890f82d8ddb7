"""The supervisor: its settings, and the admission loop of a run."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar, overload

from . import _validate
from ._budget import check_budgets
from ._contract import Aggregate
from ._engine.attempt import Engine
from ._engine.hedging import Hedging
from ._engine.places import Places
from ._hedge import Hedge, check_hedge
from ._identity import RunName
from ._journal import Durable, check_durable, check_shared
from ._legacy import refusing
from ._meters import Meter, check_meters
from ._replan import Answer, Planner, ReplanLimits, replan
from ._restarts import Restarts
from ._retry import Retry, retryable
from ._run import check_need, run_plan
from ._spans import Spans, check_spans
from ._stream import Stream, open_stream
from ._trace import Trace, check_trace

S = TypeVar("S")
T = TypeVar("T")


class Supervisor(Generic[S, T]):
    """Fans subtasks out to a worker, at most ``max_workers`` at a time, and fans their results
    back in plan order, one [`SubResult`][trio_supervisor.SubResult] per subtask, whatever
    happened to it.

    ```pycon
    >>> async def double(n):
    ...     await trio.sleep(n)
    ...     return 2 * n
    >>> async def main():
    ...     supervisor = Supervisor(double, max_workers=2, timeout=5)
    ...     aggregate = await supervisor.run([3, 1, 2])
    ...     return [result.output for result in aggregate], trio.current_time()
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    ([6, 2, 4], 3.0)

    ```

    ``max_workers`` is the supervisor's, not each call's: all its runs and streams together run
    at most ``max_workers`` workers at once (concurrent runs take turns for the places, first
    come first served). Give several supervisors one [`Capacity`][trio_supervisor.Capacity] as
    one of their ``meters`` to bound all their attempts together, as one API's limit across a
    tree of supervisors. What sharing costs: an attempt holds its place while it runs, so a
    supervisor whose worker waits on another supervisor (a parent waiting on its children) must
    not draw from the budget those children need: ``K`` parents holding every place while their
    children wait for one never finish. Give the parents a budget of their own (their
    ``max_workers`` alone) and share the capacity among the supervisors whose workers do the
    work; the same holds for a worker that calls its own supervisor's ``run``.

    A run starts ``min(max_workers, len(plan))`` worker tasks; each takes the next slot of the
    plan whenever it is free, so at most ``max_workers`` workers run, subtasks start in plan
    order, and a slot waits only for the first worker to free up: the schedule (and so the wall
    time) a capacity limiter taken before each ``start_soon`` would give, without a task per
    subtask. Each result goes to its own slot, so the results are in plan order by construction.

    A worker's `Exception` (an exception group from its own nursery included, recorded whole)
    fails only its own slot; with ``timeout`` a hung attempt is cancelled and its slot freed;
    with a [`Retry`][trio_supervisor.Retry] of more than one attempt a failed slot is tried
    again after a full-jitter backoff, keeping its place under ``max_workers`` while it waits.
    ``trio.Cancelled``, `KeyboardInterrupt` and `SystemExit` are never caught: cancelling a run
    cancels its workers, and a `KeyboardInterrupt` or `SystemExit` a worker raises comes out of
    the run bare (not in an exception group) when it is the only thing the run raises.

    Every option costs only when it is used: without ``timeout`` no cancel scope is opened,
    with ``Retry(attempts=1)`` (the default) there is no retry loop, without meters or a trace
    nothing is awaited or recorded for them. The settings are fixed at construction and
    read-only: one supervisor can serve many runs and streams at once.

    One worker task runs many subtasks in turn, so a ``contextvars`` variable a worker sets
    without resetting is seen by the next subtask that task runs: reset what you set.

    Args:
      worker: a callable taking one subtask and returning an awaitable of its output: an
        ``async def`` function, an object with an ``async def __call__``, a lambda or a
        ``functools.partial`` around one.
      max_workers: how many workers may run at once (the capacity bound).
      timeout: seconds each attempt may run before it is cancelled and counted as
        ``Status.TIMED_OUT`` (a timed-out attempt counts as `trio.TooSlowError` for
        ``Retry(on=...)``); None for no timeout.
      retry: a [`Retry`][trio_supervisor.Retry]: how many attempts a slot gets, which
        failures are retried, the [`Backoff`][trio_supervisor.Backoff] between them and the
        jitter's seed. The default, ``Retry()``, never retries.
      meters: what each attempt waits on before it starts, besides a free worker (see
        [`Meter`][trio_supervisor.Meter]); a [`Capacity`][trio_supervisor.Capacity] among them
        shared with other supervisors bounds all their attempts together (each attempt holds
        one of its places); a [`Budget`][trio_supervisor.Budget] among them reserves each
        attempt's worst case, after the others, and settles what it used.
      restarts: a [`Restarts`][trio_supervisor.Restarts]: at most how many restarts within
        how long before the run gives up, and which slots each restart takes (for subtasks
        that depend on each other). None (or ``Restarts()``): no bound, each slot alone. With a
        bound or a strategy other than ``"one_for_one"``, a slot waiting to restart holds no
        place, and ``stream`` is refused.
      spans: a [`Spans`][trio_supervisor.otel.Spans] to emit OpenTelemetry spans of every run,
        stream and re-planning run (a span per run, per slot, per attempt); None emits none and
        costs nothing.
      hedge: a [`Hedge`][trio_supervisor.Hedge]: an attempt still running after a delay (fixed,
        or a percentile of this supervisor's recent attempt durations) gets a second attempt of
        the same slot, the first to succeed wins and the other is cancelled; seconds (or a
        ``"pNN"`` percentile) mean ``Hedge(after=...)``; None never hedges.

    Raises:
      TypeError: if ``worker`` is not callable or cannot be called with one subtask, an
        option has the wrong type, or an option is spelled the old way (``attempts=``,
        ``retry_on=``, ``backoff=``, ``seed=``: now ``retry=Retry(...)``; ``capacity=``: now
        one of ``meters``), the message saying what to write.
      ValueError: if ``max_workers`` is < 1, ``timeout`` is not positive, a
        ``Budget`` of tokens cannot know an attempt's worst case (no ``reserve=``, and a worker
        without ``worst_case``), or ``hedge`` breaks a rule of [`Hedge`][trio_supervisor.Hedge].
    """

    __slots__ = (
        "_engine",
        "_hedge",
        "_max_workers",
        "_meters",
        "_restarts",
        "_retry",
        "_spans",
    )

    @refusing(
        "Supervisor(worker, max_workers=..., {})",
        "attempts",
        "retry_on",
        "backoff",
        "seed",
        "capacity",
    )
    def __init__(
        self,
        worker: Callable[[S], Awaitable[T]],
        *,
        max_workers: int,
        timeout: float | None = None,
        retry: Retry = Retry(),  # noqa: B008  # immutable
        meters: Sequence[Meter] = (),
        restarts: Restarts | None = None,
        spans: Spans | None = None,
        hedge: Hedge | float | str | None = None,
    ) -> None:
        _validate.worker(worker)
        self._max_workers = _validate.count("max_workers", max_workers)
        checked_timeout = _validate.seconds("timeout", timeout)
        if not isinstance(retry, Retry):
            raise TypeError(
                "retry must be a Retry (Retry(attempts=..., on=..., backoff=..., seed=...)), "
                f"got {type(retry).__name__} {retry!r}"
            )
        self._retry = retry
        self._meters = check_meters(meters)
        check_budgets(self._meters, worker)
        if restarts is not None and not isinstance(restarts, Restarts):
            raise TypeError(
                "restarts must be a Restarts (Restarts(max_restarts=R, within=T, strategy=...)) "
                f"or None, got {type(restarts).__name__} {restarts!r}"
            )
        self._restarts = restarts
        self._spans = check_spans(spans)
        self._hedge = check_hedge(hedge)
        # invariant: every run and stream of this supervisor runs its slots through _engine
        self._engine: Engine[S, T] = Engine(
            worker,
            checked_timeout,
            retry.attempts,
            retryable(retry.on),
            retry.backoff,
            _validate.seed(retry.seed),
            self._meters,
            Places(self._max_workers),
            None if self._hedge is None else Hedging(self._hedge),
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
        return self._engine.worker

    @property
    def max_workers(self) -> int:
        """How many workers may run at once."""
        return self._max_workers

    @property
    def timeout(self) -> float | None:
        """Seconds each attempt may run, or None."""
        return self._engine.timeout

    @property
    def retry(self) -> Retry:
        """How a failed slot is tried again: its attempts, the failures retried, the backoff
        and the jitter's seed, as given."""
        return self._retry

    @property
    def meters(self) -> tuple[Meter, ...]:
        """What each attempt waits on before it starts."""
        return self._meters

    @property
    def restarts(self) -> Restarts | None:
        """How a run restarts its slots, or None."""
        return self._restarts

    @property
    def spans(self) -> Spans | None:
        """What records each run's spans, or None."""
        return self._spans

    @property
    def hedge(self) -> Hedge | None:
        """When an attempt gets a hedge, or None."""
        return self._hedge

    def _restarting_by(self) -> Restarts | None:
        """The restarts that need the restarting path, or None for the lanes."""
        restarts = self._restarts
        return None if restarts is None or restarts.plain else restarts

    def __repr__(self) -> str:
        worker = self.worker
        name = getattr(worker, "__qualname__", None) or repr(worker)
        hedge = "" if self._hedge is None else f", hedge={self._hedge!r}"
        return (
            f"Supervisor({name}, max_workers={self._max_workers}, timeout={self.timeout!r}, "
            f"retry={self._retry!r}, meters={self._meters!r}, "
            f"restarts={self._restarts!r}{hedge}"
            + ("" if self._spans is None else f", spans={self._spans!r}")
            + ")"
        )

    @overload
    async def run(
        self: Supervisor[str, T],
        task: str | Iterable[str],
        *,
        deadline: float | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
        need: int | None = None,
    ) -> Aggregate[str, T]: ...

    @overload
    async def run(
        self,
        task: Iterable[S],
        *,
        deadline: float | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
        need: int | None = None,
    ) -> Aggregate[S, T]: ...

    @refusing("supervisor.run(plan, {})", "journal", "run_id", "round")
    async def run(
        self,
        task: str | Iterable[Any],
        *,
        deadline: float | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
        need: int | None = None,
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
            first worker starts. A plan with no subtask (``[]``, or a str that holds none, as
            ``""``) returns an empty aggregate at once.
          deadline: seconds the whole run may take; None for no limit.
          trace: a fresh [`Trace`][trio_supervisor.Trace] to record admissions, attempts and
            ends into: ``Trace()``, or ``Trace(plan)`` made for this very plan. It is closed
            when the run returns or raises.
          durable: a [`Durable`][trio_supervisor.Durable]: the run's name, the first part of
            each attempt's [`attempt_key`][trio_supervisor.attempt_key], and, if it has one, the
            [`Journal`][trio_supervisor.Journal] to keep each final result in and to resume
            from: a slot the journal has a final OK result of, under that name, is not run
            again (its result comes back with its original attempts and times, marked
            ``journaled`` in the trace). The run returns once its results are committed.
          need: return as soon as this many slots succeeded (the first ``k`` of ``n``: a
            quorum, "ask three models, take the first two answers"), cancelling the rest: their
            slots end ``CANCELLED`` with the attempts they made, their error saying they were
            not needed. As soon as fewer than ``need`` can still succeed, the rest are cancelled
            too, and the aggregate is degraded, its ``gave_up`` saying so. The results are in
            plan order. None: every slot runs to its end.

        Returns:
          An [`Aggregate`][trio_supervisor.Aggregate] with one
          [`SubResult`][trio_supervisor.SubResult] per subtask, in plan order.

        Raises:
          TypeError: if ``task`` is not a str or a sync iterable (use
            [`stream`][trio_supervisor.Supervisor.stream] for an async one), or is one that
            iterates but not as a plan (bytes, whose items are numbers; a mapping, its keys
            alone; a set, in no order; the message says what to pass), ``need`` is not an
            int, ``trace`` is not a [`Trace`][trio_supervisor.Trace], ``durable`` is not a
            [`Durable`][trio_supervisor.Durable], a worker's call returns something that cannot
            be awaited (the message names the fix), ``round=`` is given (a re-planning run's
            rounds are [`replan`][trio_supervisor.Supervisor.replan]'s), or ``journal=`` or
            ``run_id=`` is (now ``durable=Durable(run_id, journal)``).
          ValueError: if ``need`` is not between 1 and the plan's length (or is given with
            counted or grouped ``restarts``), ``deadline`` is not positive,
            ``trace`` was made for another plan or already recorded a run, or the run's name
            was journaled with another plan (naming the first slot that differs) or by a re-planning
            run, before any work.
          KeyboardInterrupt: if a worker raised it (likewise `SystemExit`), bare.
        """
        plan = _validate.plan(task)
        if need is not None:
            check_need(need, len(plan), self._restarting_by() is not None)
        limit = _validate.seconds("deadline", deadline)
        check_trace(trace, plan)
        run = check_durable(durable)
        check_shared(self._meters, run)
        return await self._run(plan, limit, trace, run, need)

    async def _run_round(
        self,
        batch: list[Any],
        /,
        *,
        deadline: float | None,
        trace: Trace | None,
        run: RunName | None,
    ) -> Aggregate[Any, T]:
        """A re-planning run's batch, run as ``run`` does it, under ``run``: the round's name
        (its journal too, when the re-planning run has one), which only ``replan`` sets."""
        plan = _validate.plan(batch)
        limit = _validate.seconds("deadline", deadline)
        check_trace(trace, plan)
        return await self._run(plan, limit, trace, run, None)

    async def _run(
        self,
        plan: list[Any],
        limit: float | None,
        trace: Trace | None,
        run: RunName | None,
        need: int | None,
    ) -> Aggregate[Any, T]:
        """Run ``plan``, checked, on this supervisor's engine (its spans, if any, recorded)."""
        if self._spans is not None:  # the run records into a trace that emits its spans
            trace = self._spans.run(trace, plan, self)
        return await run_plan(
            self._engine, self._max_workers, self._restarting_by(), plan, limit, trace, run, need
        )

    @refusing(
        "supervisor.replan(task, planner, {})",
        "max_rounds",
        "max_subtasks",
        "max_stalls",
        "max_resets",
        "journal",
        "run_id",
    )
    async def replan(
        self,
        task: str,
        planner: Planner[S, T],
        *,
        limits: ReplanLimits = ReplanLimits(),  # noqa: B008  # immutable
        deadline: float | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
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

        The budgets besides the deadline are one [`ReplanLimits`][trio_supervisor.ReplanLimits].
        A budget that runs out stops the run: no further batch is dispatched, what still runs
        at the deadline is cancelled (and kept in the ledger as ``CANCELLED``), and the answer
        is synthesized from the ledger, degraded, naming the budget. The answer is also
        degraded when some subtask failed and no replacement of it succeeded. The planner is
        asked once more after the last round a budget allows, to learn whether it is done; a
        planner that never returns is ended only by ``deadline``.

        Args:
          task: what the planner plans for.
          planner: a [`Planner`][trio_supervisor.Planner].
          limits: a [`ReplanLimits`][trio_supervisor.ReplanLimits]: rounds at most, subtasks
            at most in all rounds, and how many stalled rounds and fresh plans the run may take.
          deadline: seconds the whole run may take, planning included; None for no limit.
          trace: a fresh, empty [`Trace`][trio_supervisor.Trace] to record every round into:
            each round's batch is recorded as its next slots, so its slots are the ledger's
            entries, in order. It is closed when the run returns or raises.
          durable: a [`Durable`][trio_supervisor.Durable]: the run's name, and, if it has one,
            the [`Journal`][trio_supervisor.Journal] in which each decision of the planner and
            each round's results are journaled; resumed under the same name, the run takes both
            from it and goes on after the last finished round, asking the planner only for what
            it had not decided yet.

        Returns:
          An [`Answer`][trio_supervisor.Answer]: the text, whether it is degraded, the budget
          that ended the run (None when the planner was done), and the ledger.

        Raises:
          TypeError: if ``task`` is not a str, ``planner`` has no ``first`` and ``next``,
            ``limits`` is not a ``ReplanLimits``, ``trace`` is not a
            [`Trace`][trio_supervisor.Trace], ``durable`` is not a
            [`Durable`][trio_supervisor.Durable], a budget or the journal is given the old way
            (``max_rounds=`` and the like: now ``limits=ReplanLimits(...)``; ``journal=``,
            ``run_id=``: now ``durable=``), or, journaled, a batch holds a subtask whose repr
            does not read back (str, numbers, tuples, lists, dicts, True, False and None do),
            naming it.
          ValueError: if ``deadline`` is not positive, ``trace`` is not empty or already
            recorded a run, or the run's name was journaled for another task or by a run (or a
            stream) of its own plan, before any work.
        """
        check_trace(trace, [])
        run = check_durable(durable)
        check_shared(self._meters, run)
        if self._spans is not None:
            trace = self._spans.replan(trace, task, self)
        try:
            return await replan(
                self._run_round,
                task,
                planner,
                limits=limits,
                deadline=deadline,
                trace=trace,
                run=run,
            )
        finally:
            if trace is not None:
                trace.close()

    @overload
    def stream(
        self: Supervisor[str, T],
        subtasks: str | Iterable[str] | AsyncIterable[str],
        *,
        window: int | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
    ) -> Stream[str, T]: ...

    @overload
    def stream(
        self,
        subtasks: Iterable[S] | AsyncIterable[S],
        *,
        window: int | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
    ) -> Stream[S, T]: ...

    @refusing("supervisor.stream(subtasks, {})", "journal", "run_id")
    def stream(
        self,
        subtasks: str | Iterable[Any] | AsyncIterable[Any],
        *,
        window: int | None = None,
        trace: Trace | None = None,
        durable: Durable | None = None,
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
        finishes finds its next subtask waiting instead of waiting for the puller.

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
          durable: a [`Durable`][trio_supervisor.Durable], as for
            [`run`][trio_supervisor.Supervisor.run]: with a journal, each result is journaled
            as it is done; resumed under the same name, the stream yields, still in plan order,
            each journaled result as its slot is pulled, without running it again. A list or
            tuple is checked before any work, as ``run``'s plan is; a lazy input as it is
            pulled: one that differs from the input journaled (or ends sooner) ends the
            iteration with a `ValueError` naming the slot, after the results before it.

        Returns:
          A [`Stream`][trio_supervisor.Stream]: enter it with ``async with``, then iterate it.

        Raises:
          TypeError: if ``subtasks`` is not a str or an iterable, or is bytes, a mapping or a
            set (as for ``run``), ``window`` is not an int, ``durable`` is not a
            [`Durable`][trio_supervisor.Durable], or ``journal=`` or ``run_id=`` is given (now
            ``durable=``).
          ValueError: if ``window < max_workers``, a str holds no subtask, or ``trace`` was
            made for another plan or already recorded a run.
        """
        if self._restarting_by() is not None:
            raise ValueError(
                "a stream hands each result over as it is done, so it cannot give up on or "
                "restart a finished slot: use run() with restarts=, or a Supervisor without "
                "them for stream()"
            )
        size = _validate.window(window, self._max_workers)
        source = _validate.stream_input(subtasks)
        planned = source if isinstance(source, list | tuple) else None
        check_trace(trace, planned)
        run = check_durable(durable)
        check_shared(self._meters, run)
        if self._spans is not None:
            trace = self._spans.stream(trace, planned, self)
        return open_stream(source, self._engine, self._max_workers, size, trace, run)
