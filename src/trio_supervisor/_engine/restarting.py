"""The restarting path: a run whose restarts are counted or grouped (a
[`Restarts`][trio_supervisor.Restarts] with a bound, or a strategy other than ``one_for_one``).

Each attempt runs in a task and a cancel scope of its own, so that a sibling's failure can stop
exactly the attempts it makes stale; the attempt itself is the engine's one attempt
(``attempt.py``). What is this path's own: generations (an attempt of a slot taken back since
it began is stale, and its outcome is dropped), strategies (which slots a restart takes) and
the intensity (how many restarts within how long before the run gives up). A run without them
takes the lanes and pays nothing for this.

Attempts that end at one instant are decided together, lowest slot first, whatever order trio
runs their tasks in: an attempt that ends reports its ending, and the run's decider waits until
a turn of the scheduler brings no other ending before it decides them (a result, a retry, a
restart, giving up). Until then no slot is admitted and no place given back, so a seeded run
repeats exactly, ties included. The attempts are timed by their own scope's deadline rather
than by the run's [`Timer`][trio_supervisor._engine.attempt.Timer] task, so that an attempt that
times out ends in the same turn as a worker that ends at that instant. The slots admitted at one
instant (the first admission, or the slots a restart takes, back after its wait) start one after
the other: each attempt's task runs into its worker's call (or its wait on a meter) before the
next slot is admitted, so they start in plan order whatever order trio would run their tasks in.
What trio's order still decides: an ending that follows only after a turn with none (a worker
that waits on a sibling's ending) is decided after the others.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import trio

from .._contract import Status, SubResult, ok_result
from .._identity import RunName, bind_key
from .._restarts import Restarts
from .._trace import Trace
from .attempt import Engine, Running, Timer


class SlotState:
    """What a restarting run knows of one slot while it goes on."""

    __slots__ = ("generation", "result", "running", "stop", "until")

    def __init__(self) -> None:
        self.generation = 0  # moves on each restart: an attempt of an older one is stale
        self.result: SubResult[Any, Any] | None = None
        self.running: Running | None = None  # its latest attempt's, with the slot's counts
        self.stop: trio.CancelScope | None = None  # its running attempt's, None when idle
        self.until = -float("inf")  # the latest end of the waits of the restarts that took it


class Deadlines(Timer):
    """Times each attempt by its own scope's deadline (``running.scope``, which each attempt of
    this path has to itself): an attempt that runs past its timeout is cancelled as the clock
    reaches it, in the same turn of the scheduler as the workers that end then."""

    __slots__ = ()

    def start(self, running: Running, started: float) -> None:
        assert running.scope is not None
        running.scope.deadline = started + self.timeout


Ending = tuple[int, int, Running, object, float]
"""An attempt that ended and waits for its slot's next step: its slot, the slot's generation it
began in, its ``Running``, the place it holds (its borrower), when it ended."""


class RestartingRun:
    """One run on the restarting path: its slots, their endings and restarts, as fields, and
    the steps that move them on as methods (see the module). Made and run once, by
    ``restarting_run``.

    Args:
      engine: the supervisor's engine.
      plan: the run's subtasks.
      results: where each slot's result goes; one there already (taken from a journal) is
        final.
      cuts: where a slot cut short while it ran gets how far it got.
      trace: records the slots, or None.
      restarts: the restart policy (its bound and strategy).
      run: the run's name, for ``attempt_key`` and ``approval``, or None.
    """

    __slots__ = (
        "cuts",
        "endings",
        "engine",
        "given_up",
        "kept",
        "key",
        "left",
        "limit",
        "name",
        "now",
        "nursery",
        "pending",
        "period",
        "places",
        "plan",
        "recent",
        "reported",
        "restarts",
        "results",
        "slots",
        "timer",
        "trace",
        "woken",
    )

    nursery: trio.Nursery  # where its attempts, its decider and its restarts' waits run

    def __init__(
        self,
        engine: Engine[Any, Any],
        plan: list[Any],
        results: list[SubResult[Any, Any] | None],
        cuts: dict[int, SubResult[Any, Any]],
        trace: Trace | None,
        restarts: Restarts,
        run: RunName | None,
    ) -> None:
        self.engine = engine
        self.plan = plan
        self.results = results  # written once, as the run ends (see settle_all)
        self.cuts = cuts
        self.trace = trace
        self.restarts = restarts
        self.name = run
        self.slots = [SlotState() for _ in plan]
        # the slots whose result a journal gave: final, no restart takes them back
        self.kept = {slot for slot, result in enumerate(results) if result is not None}
        for slot in self.kept:
            self.slots[slot].result = results[slot]
        # the slots waiting to be admitted, lowest first: each without a result, an attempt
        # running (stop is None) or a restart's wait to sit out (until is past)
        self.pending: list[int] = [slot for slot in range(len(plan)) if slot not in self.kept]
        # how many slots have no result: the run is over (its nursery cancelled) at 0
        self.left = len(self.pending)
        self.woken = trio.Event()  # set when a slot may be admitted; a new one once waited on
        # the attempts that ended and are not yet decided: no slot is admitted while there are
        self.endings: list[Ending] = []
        self.reported = trio.Event()  # set when the first of them is reported
        # when each restart within the window happened, oldest first: at most `limit` of them
        self.recent: deque[float] = deque()
        self.limit, self.period = restarts.limit
        self.given_up = False  # one restart too many: the run gave up (and was cancelled)
        self.key = engine.run_key()  # the run's retry jitter key
        self.places = engine.places
        self.timer = None if engine.timeout is None else Deadlines(engine.timeout)
        self.now = trio.lowlevel.current_clock().current_time

    async def run(self) -> str | None:
        """Run the plan into ``results`` (and ``cuts``); why the run gave up, or None (see
        ``restarting_run``)."""
        try:
            if self.pending:
                async with trio.open_nursery() as nursery:
                    self.nursery = nursery
                    nursery.start_soon(self.decider)
                    await self.admit()
        finally:
            for ending in sorted(self.endings, key=lambda ending: (ending[0], ending[1])):
                self.decide(ending, final=True)  # ended as the run did: its result stands
            self.endings.clear()
            given_up = self.restarts if self.given_up else None
            settle_all(self.engine, self.plan, self.slots, self.results, self.cuts, given_up)
        return self.restarts.gave_up() if self.given_up else None

    async def admit(self) -> None:
        """Admit slot after slot, each under a place of its own, until the run is cancelled
        (every slot has its result, or it gave up)."""
        places = self.places
        slots = self.slots
        pending = self.pending
        while True:
            while not pending or self.endings:  # nothing to admit, or endings undecided
                await self.woken.wait()
                self.woken = trio.Event()
            borrower = object()
            await places.take(borrower)
            if not pending or self.endings:  # taken back, or endings came, meanwhile
                places.give_back(borrower)
                continue
            slot = pending.pop(0)
            state = slots[slot]
            latest = state.running
            if self.trace is not None and (latest is None or latest.attempts == 0):
                self.trace.admitted(slot, self.plan[slot])
            stop = state.stop = trio.CancelScope()  # running: a restart stops it
            await self.nursery.start(self.attempt, slot, borrower, stop, state.generation)

    def settle(self, slot: int, result: SubResult[Any, Any]) -> None:
        """Slot ``slot``'s final result (until a restart takes it back)."""
        self.slots[slot].result = result
        self.left -= 1
        if self.left == 0:
            self.nursery.cancel_scope.cancel()  # every slot has its result: nothing more to admit

    def reopen(self, slot: int, until: float) -> None:
        """Take slot ``slot`` back for a restart that ends its wait at ``until``: stop its
        attempt, or forget its result."""
        state = self.slots[slot]
        state.generation += 1
        state.until = max(state.until, until)
        if state.stop is not None:
            state.stop.cancel()
            state.stop = None
        if state.result is not None:
            state.result = None
            self.left += 1
        if slot in self.pending:
            self.pending.remove(slot)

    def readmit(self, taken: list[int], until: float) -> None:
        """The slots ``taken`` by a restart whose wait ended at ``until`` are back in line,
        unless a later restart holds them longer."""
        pending = self.pending
        for other in taken:
            again = self.slots[other]
            if (
                again.result is None
                and again.stop is None
                and again.until <= until
                and other not in pending
            ):
                pending.append(other)
        pending.sort()
        self.woken.set()

    async def restart_after(self, taken: list[int], until: float) -> None:
        """Readmit the slots ``taken`` by a restart once its wait ends, at ``until``."""
        await trio.sleep_until(until)
        self.readmit(taken, until)

    def taken(self, slot: int) -> list[int]:
        """The slots a restart of slot ``slot`` takes back, as the strategy says (not those a
        journal gave)."""
        strategy = self.restarts.strategy
        if strategy == "one_for_one":
            taken = [slot]
        elif strategy == "one_for_all":
            taken = list(range(len(self.plan)))
        else:
            taken = list(range(slot, len(self.plan)))
        if self.kept:
            taken = [other for other in taken if other not in self.kept]
        return taken

    def decide(self, ending: Ending, final: bool = False) -> None:
        """What follows ``ending``: its slot's result, or a restart, or the run giving up; only
        results when ``final`` (the run is over)."""
        slot, generation, running, borrower, now = ending
        engine = self.engine
        self.places.give_back(borrower)
        state = self.slots[slot]
        if state.generation != generation:  # a sibling's restart took this slot back
            if self.trace is not None:
                self.trace.end_open_slot(slot, Status.CANCELLED)
            return
        state.stop = None
        if running.failure is None:
            started: float = running.started  # type: ignore[assignment]  # set by the attempt
            output, attempts, hedges = running.output, running.attempts, running.hedges
            self.settle(slot, ok_result(running.subtask, output, attempts, started, now, hedges))
            return
        wait = engine.next_wait(running, self.key)
        if wait is None:  # final: no attempts left, not retryable, or past the deadline
            self.settle(slot, engine.failed(running, now))
            return
        if final:
            return  # it would be retried: cut short instead
        recent = self.recent
        while recent and recent[0] <= now - self.period:  # forget what is older than the window
            recent.popleft()
        if len(recent) >= self.limit:  # one restart too many: the run gives up
            self.settle(slot, engine.failed(running, now))
            self.given_up = True
            self.nursery.cancel_scope.cancel()
            return
        recent.append(now)
        taken = self.taken(slot)
        until = now + wait
        for other in taken:
            self.reopen(other, until)
        if wait > 0:
            self.nursery.start_soon(self.restart_after, taken, until)
        else:
            self.readmit(taken, until)

    async def decider(self) -> None:
        """Decide the endings reported at one instant together, lowest slot first."""
        endings = self.endings
        while True:
            await self.reported.wait()
            seen = 0
            while len(endings) != seen:  # a turn of the scheduler that brings no other ending
                seen = len(endings)
                await trio.lowlevel.checkpoint()
            self.reported = trio.Event()
            batch = sorted(endings, key=lambda ending: (ending[0], ending[1]))
            endings.clear()
            for ending in batch:
                self.decide(ending)
            self.woken.set()

    async def attempt(
        self,
        slot: int,
        borrower: object,
        stop: trio.CancelScope,
        generation: int,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """One attempt of slot ``slot``, begun in ``generation``, in a task of its own, under
        the place ``borrower`` holds and inside ``stop`` (which a restart cancels); its ending
        is reported to the decider."""
        # the admission waits for this: the task runs on, without a checkpoint, into the
        # worker's call, so the slots admitted at one instant call their workers in plan order
        task_status.started()
        places = self.places
        state = self.slots[slot]
        if state.generation != generation:  # taken back before it began
            places.give_back(borrower)
            return
        running = Running()
        running.begin(slot, self.plan[slot])
        running.carry(state.running)
        state.running = running
        scope = running.open_scope()  # what the timeout cancels
        if self.name is not None:
            bind_key(self.name, running)  # what attempt_key() and approval() read
        try:
            with stop:
                # a run ending (a sibling's misuse, the caller's cancellation) calls no worker
                # more, even for the attempts started in the same batch as the one that ended it
                await trio.lowlevel.checkpoint_if_cancelled()
                with scope:
                    await self.engine.attempt(running, self.trace, self.timer, self.now)
                if scope.cancelled_caught:
                    self.engine.timed_out(running, self.trace)
        except BaseException:
            places.give_back(borrower)
            raise
        if stop.cancelled_caught:  # a sibling's restart took this slot back while it ran
            places.give_back(borrower)
            if self.trace is not None:
                self.trace.end_open_slot(slot, Status.CANCELLED)
            return
        self.endings.append((slot, generation, running, borrower, trio.current_time()))
        self.reported.set()


async def restarting_run(
    engine: Engine[Any, Any],
    plan: list[Any],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    trace: Trace | None,
    restarts: Restarts,
    run: RunName | None = None,
) -> str | None:
    """Run ``plan`` with restarts counted and grouped, into ``results``; when the caller's
    cancellation or deadline cuts the run short, a slot without a result is left None, and one
    that ran gets in ``cuts`` how far it got (its attempts, as a cancelled result). Returns why
    the run gave up, or None.

    A slot whose result is in ``results`` already (taken from a journal) is final: it is not
    run, and no restart takes it back. ``run`` is the run's name, for ``attempt_key``.
    """
    restarting = RestartingRun(engine, plan, results, cuts, trace, restarts, run)
    return await restarting.run()


def settle_all(
    engine: Engine[Any, Any],
    plan: list[Any],
    slots: list[SlotState],
    results: list[SubResult[Any, Any] | None],
    cuts: dict[int, SubResult[Any, Any]],
    given_up: Restarts | None,
) -> None:
    """Each slot's result into ``results``: a slot left unfinished fails with ``gave up`` when
    the run gave up (``given_up`` is its restarts), or is cut short (into ``cuts``)."""
    now = trio.current_time()
    for slot, state in enumerate(slots):
        result = state.result
        running = state.running
        calls = 0 if running is None else running.attempts
        if result is None and given_up is not None:
            result = SubResult(
                plan[slot],
                error=given_up.gave_up(),
                status=Status.FAILED,
                attempts=calls,
                started=None if running is None else running.started,
                finished=now if calls else None,
                hedges=0 if running is None else running.hedges,
            )
        results[slot] = result
        if result is None and running is not None and calls:
            cuts[slot] = engine.cut(running)
