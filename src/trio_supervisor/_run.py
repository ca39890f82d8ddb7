"""A run: its plan's slots fanned out to lanes (or to the restarting path) and a result for
every slot, in plan order, whatever happens to it: the machinery behind
[`Supervisor.run`][trio_supervisor.Supervisor.run], beside the stream's in ``_stream.py``."""

from __future__ import annotations

import contextlib
import functools
import operator
import time
from collections.abc import Callable, Iterator
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

import trio

from ._contract import Aggregate, Status, SubResult, revised
from ._ending import ending
from ._engine.attempt import CUT_SHORT, Engine, Timer
from ._engine.lanes import Feeding, Waiting, lane
from ._engine.leases import FIRST, Keeper
from ._engine.restarting import restarting_run
from ._identity import RunName
from ._journal import DurableRun, sharing
from ._replan import deadline_words
from ._restarts import Restarts
from ._trace import Trace

T = TypeVar("T")

_NO_DEADLINE = contextlib.nullcontext()  # the "scope" of a run without a deadline: none


async def run_plan(
    engine: Engine[Any, T],
    max_workers: int,
    restarts: Restarts | None,
    plan: list[Any],
    limit: float | None,
    trace: Trace | None,
    run: RunName | None,
    need: int | None,
) -> Aggregate[Any, T]:
    """Run ``plan`` (checked) on ``engine``'s lanes, at most ``max_workers``, or on the
    restarting path with ``restarts``, within ``limit`` seconds, and give every slot its
    result; under ``run``'s name, journaled (and resumed) when it is a ``DurableRun``; with
    ``need``, cut short at that many successes."""
    # invariant: results[i] is None until slot i has its final result; cuts[i] is where a
    # slot cut short while it ran got to
    results: list[SubResult[Any, T] | None] = [None] * len(plan)
    cuts: dict[int, SubResult[Any, T]] = {}
    durable = run if isinstance(run, DurableRun) else None
    first: First | None = None  # the first claim of a run that leases its slots
    if durable is not None and durable.lease is not None and restarts is None:
        # the first slots claimed as the run begins, on one trip to the writer, not two
        since = time.time()
        count = ahead(max_workers, plan)
        journaled, wanted, kinds = await durable.begin_leased(plan, since, count)
        first = First(since, wanted, kinds)
    elif durable is not None:
        journaled = await durable.begin(plan)
    if durable is not None:
        for slot, restored in journaled.items():
            results[slot] = restored
    if trace is not None:
        trace.begin(plan)
        for slot, done in enumerate(results):
            if done is not None:
                trace.journaled(slot)
    expired = False
    gave_up: str | None = None
    quorum = None if need is None else Quorum(need, len(plan), results)
    with ending(trace, durable), sharing(durable), released(durable, first):
        # a run without a deadline opens no scope for one (its cancel scope is paid per run)
        with trio.move_on_after(limit) if limit is not None else _NO_DEADLINE as scope:
            if quorum is not None and quorum.decided:
                pass  # the journal holds enough successes (or too many failures)
            elif restarts is None:
                await fan_out(engine, max_workers, plan, results, cuts, trace, run, quorum, first)
            else:
                kept = [result is not None for result in results]
                try:
                    gave_up = await restarting_run(
                        engine, plan, results, cuts, trace, restarts, run
                    )
                finally:  # final now (the deadline's too): no restart takes them back
                    if durable is not None:
                        for slot, final in enumerate(results):
                            if final is not None and not kept[slot]:
                                durable.record(slot, final)
        expired = scope is not None and scope.cancelled_caught
    if quorum is not None and quorum.decided:
        _fill(plan, results, cuts, None, quorum.words())
        gave_up = quorum.gave_up()
    else:
        _fill(plan, results, cuts, limit if expired else None)
        if quorum is not None:
            gave_up = quorum.gave_up()
    if durable is not None:
        await durable.done()
    return Aggregate(results, gave_up, need)  # type: ignore[arg-type]  # _fill left no None


async def fan_out(
    engine: Engine[Any, Any],
    max_workers: int,
    plan: list[Any],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    trace: Trace | None,
    run: RunName | None = None,
    quorum: Quorum | None = None,
    first: First | None = None,
) -> None:
    """The admission loop: ``min(max_workers, len(plan))`` lanes share one feed over the
    plan, so each free lane admits the next slot, in plan order (the slots without a
    result yet: those of a journal are not run again). With a ``quorum``, the lanes are
    cancelled the instant it is decided; with ``first``, the run's slots are leased, and
    ``first`` is the claim made as it began."""
    timer = engine.timer()
    leased = run is not None and run.lease is not None
    feed = (LeasedFeed if leased else RunFeed)(
        plan, results, cuts, trace, timer, engine.run_key(), run
    )
    keeper = None
    if isinstance(feed, LeasedFeed) and feed.left:
        since = None if first is None else first.since
        keeper = feed.leased(plan, results, trace, min(max_workers, feed.left), since)
    if timer is None and keeper is None:  # nothing to run beside the lanes
        await _lanes(engine, max_workers, feed, cuts, trace, quorum)
        return
    async with trio.open_nursery() as timing:
        if timer is not None:
            timing.start_soon(timer.watch)
        if keeper is not None:
            if first is not None:
                keeper.first(first.wanted, first.kinds)  # claimed as the run began
            else:
                await keeper.claim()  # the first slots claimed before any lane starts
            timing.start_soon(keeper.keep)
        try:
            await _lanes(engine, max_workers, feed, cuts, trace, quorum)
        finally:
            if keeper is not None and first is None:
                keeper.release()
        timing.cancel_scope.cancel()  # every attempt has ended: nothing more to time


async def _lanes(
    engine: Engine[Any, Any],
    max_workers: int,
    feed: RunFeed,
    cuts: dict[int, SubResult[Any, Any]],
    trace: Trace | None,
    quorum: Quorum | None,
) -> None:
    """``min(max_workers, feed.left)`` lanes on ``feed``, until each has ended; with a
    ``quorum``, cancelled the instant it is decided; cut short, each slot still waiting to
    retry is in ``cuts``."""
    try:
        async with trio.open_nursery() as nursery:
            if quorum is not None:
                quorum.watch(feed, nursery.cancel_scope)
            for _ in range(min(max_workers, feed.left)):
                nursery.start_soon(lane, engine, feed)
    finally:
        _cut_waiting(engine, feed, cuts, trace)


def _cut_waiting(
    engine: Engine[Any, Any],
    feed: RunFeed,
    cuts: dict[int, SubResult[Any, Any]],
    trace: Trace | None,
) -> None:
    """A run cut short: each slot still waiting to retry got as far as its last attempt."""
    assert feed.waiting is not None
    for parked in feed.waiting.left():
        assert parked.slot is not None
        if trace is not None:
            trace.end_open_slot(parked.slot, Status.CANCELLED)
        cuts[parked.slot] = engine.cut(parked)


class First(NamedTuple):
    """The first claim of a run that leases its slots, made as it began: when it began (unix
    time), the slots it claimed, and what it found of each (``Journal.claim``)."""

    since: float
    wanted: list[int]
    kinds: list[tuple[int, str, Any]]


def ahead(max_workers: int, plan: list[Any]) -> int:
    """How many slots a run's first claim takes: as many as its keeper claims ahead
    (``Keeper``'s first ``chunk``), for the lanes the plan fills."""
    return max(4, FIRST * min(max_workers, len(plan)))


@contextlib.contextmanager
def released(durable: DurableRun | None, first: First | None) -> Iterator[None]:
    """Around a run whose first claim was ``first`` (None: it claimed nothing as it began):
    its leases given up as it ends, however it ends (without waiting: after its results)."""
    try:
        yield
    finally:
        if durable is not None and first is not None:
            durable.release()


class RunFeed(Feeding):
    """What a run hands its lanes (a [`Feed`][trio_supervisor._engine.lanes.Feed]): the slots
    of its plan, in order, and where each result, or how far a slot cut short got, goes. No
    more slots come once the plan is taken."""

    __slots__ = ("_left", "left", "take")

    final = True  # no slot comes after the plan's

    def __init__(
        self,
        plan: list[Any],
        results: list[SubResult[Any, Any] | None],
        cuts: dict[int, SubResult[Any, Any]],
        trace: Trace | None,
        timer: Timer | None,
        key: int,
        run: RunName | None = None,
    ) -> None:
        # a retry waits its backoff in Waiting, holding no place
        super().__init__(trace, timer, key, run, results.__setitem__, cuts.__setitem__, Waiting())
        self._left: Any
        if not isinstance(run, DurableRun) or all(result is None for result in results):
            # the plan's own iterator knows what is left (enumerate does not): no copy of it
            self._left = iter(plan)
            self.take: Callable[[], tuple[int, Any] | None] = functools.partial(
                next, enumerate(self._left), None
            )
            self.left = len(plan)
        else:  # resumed: only the slots the journal has no result of
            todo = [(slot, plan[slot]) for slot, done in enumerate(results) if done is None]
            self._left = iter(todo)
            self.take = functools.partial(next, self._left, None)
            self.left = len(todo)

    def ready(self) -> bool:
        """Whether a slot of the plan is still to be taken."""
        return operator.length_hint(self._left) > 0

    async def more(self) -> bool:
        """No slot comes after the plan's."""
        return False


class LeasedFeed(RunFeed):
    """A run's feed when its journal leases slots (several supervisors may share the run):
    its lanes take only the slots its [`Keeper`][trio_supervisor._engine.leases.Keeper]
    claimed, and each result is journaled under its lease."""

    __slots__ = ("keeper",)

    final = False  # a lease another supervisor lets go of may come back to this run

    def leased(
        self,
        plan: list[Any],
        results: list[SubResult[Any, Any] | None],
        trace: Trace | None,
        lanes: int,
        since: float | None = None,
    ) -> Keeper:
        """Take the slots from a [`Keeper`][trio_supervisor._engine.leases.Keeper] of this
        run's leases from now on (each claimed before a lane takes it, each result journaled
        under its lease): the keeper, whose task the run starts."""
        assert self.run is not None
        todo = [slot for slot, done in enumerate(results) if done is None]
        keeper = Keeper(self.run, plan, todo, results.__setitem__, trace, lanes, since)
        self.leases = self.keeper = keeper
        self.take = keeper.take
        put = self.run.recording(results.__setitem__, leased=True)

        def settled(slot: int, result: SubResult[Any, Any]) -> None:
            put(slot, result)
            keeper.settled(slot)

        self.put = settled
        return keeper

    def ready(self) -> bool:
        """Whether a claimed slot is waiting for a lane."""
        return self.keeper.ready()

    async def more(self) -> bool:
        """Wait for a slot claimed (another supervisor's, whose lease ran out, say); False once
        every slot is settled."""
        return await self.keeper.more()


def check_need(need: object, slots: int, restarting: bool) -> None:
    """``run(..., need=)``: a whole number of successes the plan can give, on the lanes."""
    if isinstance(need, bool) or not isinstance(need, int):
        raise TypeError(f"need must be an int or None, got {type(need).__name__} {need!r}")
    if not 1 <= need <= slots:
        raise ValueError(
            f"need must be between 1 and the plan's {slots} subtasks (successes it can have), "
            f"got {need}"
        )
    if restarting:
        raise ValueError(
            "need= ends a run at its k-th success, which a counted or grouped restart could "
            "take back: use a Supervisor without such restarts= for need="
        )


class Quorum:
    """A run that needs ``need`` of its ``slots`` to succeed: it counts the final results as
    they are put, and cuts the run short the instant it has them, or can no longer have them."""

    __slots__ = ("decided", "failed", "need", "slots", "succeeded")

    def __init__(self, need: int, slots: int, results: list[SubResult[Any, Any] | None]) -> None:
        self.need = need
        self.slots = slots
        done = [result for result in results if result is not None]  # from a journal
        self.succeeded = sum(1 for result in done if result.status is Status.OK)
        self.failed = len(done) - self.succeeded
        self.decided = self._reached() or self._out_of_reach()

    def _reached(self) -> bool:
        return self.succeeded >= self.need

    def _out_of_reach(self) -> bool:
        return self.slots - self.failed < self.need

    def watch(self, feed: RunFeed, scope: trio.CancelScope) -> None:
        """Count each result ``feed`` puts, and cancel ``scope`` once the quorum is decided."""
        put = feed.put

        def counted(slot: int, result: SubResult[Any, Any]) -> None:
            put(slot, result)
            if result.status is Status.OK:
                self.succeeded += 1
            else:
                self.failed += 1
            if not self.decided and (self._reached() or self._out_of_reach()):
                self.decided = True
                scope.cancel()

        feed.put = counted

    def words(self) -> tuple[str, str]:
        """Why a slot was cancelled before it started, and before it finished."""
        if self._reached():
            why = f"Cancelled: not needed, the run had the {self.need} successes it needed"
        else:
            why = (
                f"Cancelled: the run needed {self.need} successes and could no longer have them "
                f"({self.failed} of {self.slots} slots failed)"
            )
        return f"{why} before this slot started", f"{why} before this slot finished"

    def gave_up(self) -> str | None:
        """Why the run is short of its quorum, or None."""
        if self._reached():
            return None
        return (
            f"needed {self.need} successes of {self.slots} slots, got {self.succeeded} "
            f"({self.failed} failed)"
        )


def _fill(
    plan: list[Any],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    deadline: float | None,
    words: tuple[str, str] | None = None,
) -> None:
    """Give every slot a result: a slot never started, or cut short, is ``CANCELLED``."""
    if all(map(operator.is_not, results, repeat(None))):  # the usual case, looked at in C
        return
    if words is not None:
        never, unfinished = words
    elif deadline is not None:
        never, unfinished = deadline_words(deadline)
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
        results[slot] = revised(where, error=unfinished + error[len(CUT_SHORT) :])
