"""Recording a run: when each slot was admitted, started and ended, and how it ended."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from ._budget import Usage
from ._contract import Status, describe


@dataclass
class Span:
    """One attempt of a slot: from its start to its end (None while it runs).

    ```pycon
    >>> span = Span(start=1.0, end=1.25, status=Status.FAILED, error="E: 429", retry_after=2.0)
    >>> span.end - span.start, span.retry_after
    (0.25, 2.0)

    ```

    A failed attempt keeps what its failure said (``error``) and the wait it asked for before
    another attempt (``retry_after``, in seconds: a rate-limited endpoint's ``Retry-After``), so
    that a timeline can show why each retry came when it did. ``usage`` is what its worker
    reported through [`report_usage`][trio_supervisor.report_usage] (a ``ChatAgent``'s prompt
    and completion tokens), None when it reported nothing.

    A supervisor given ``hedge=`` marks an extra attempt it started while another attempt of the
    same slot ran as a ``hedge`` (see [`Hedge`][trio_supervisor.Hedge]); an attempt cancelled
    because another attempt of its slot succeeded first ends ``CANCELLED`` and ``lost``.
    """

    start: float
    end: float | None = None
    status: Status | None = None
    error: str | None = None
    retry_after: float | None = None
    usage: Usage | None = None
    hedge: bool = False
    lost: bool = False


@dataclass
class SlotTrace:
    """Everything recorded for one slot, in trio time.

    ```pycon
    >>> failed, ok = Span(0.0, 1.5, Status.FAILED, "KeyError: 'x'"), Span(2.0, 3.0, Status.OK)
    >>> slot = SlotTrace(0, "pricing", planned=0.0, spans=[failed, ok])
    >>> slot.started, slot.ended, slot.status
    (0.0, 3.0, <Status.OK: 'ok'>)

    ```

    ``planned`` is when the slot became known (the run's start for a planned subtask, its
    admission for one pulled later from a lazy input); ``spans`` has one
    [`Span`][trio_supervisor.Span] per attempt; ``delivered`` is when a streaming supervisor handed
    its result to the caller; ``journaled`` is True when its result came from a
    [`Journal`][trio_supervisor.Journal] (a resumed run did not run it again); ``children`` are
    the traces of the runs its worker made as a supervisor itself (see
    [`nest`][trio_supervisor.Trace.nest]), every one of every attempt, in the order they were
    made (each knows its parent's ``attempt``).
    """

    slot: int
    subtask: Any
    planned: float
    admitted: float | None = None
    spans: list[Span] = field(default_factory=list)
    delivered: float | None = None
    children: list[Trace] = field(default_factory=list)
    journaled: bool = False

    @property
    def child(self) -> Trace | None:
        """The latest child run (of the attempt that gave the slot its result), None if its
        worker never ran one."""
        return self.children[-1] if self.children else None

    @property
    def started(self) -> float | None:
        """When the first attempt started, None if the slot never ran."""
        return self.spans[0].start if self.spans else None

    @property
    def ended(self) -> float | None:
        """When the last attempt ended, None if the slot never ran or is still running."""
        last = self.deciding
        return None if last is None else last.end

    @property
    def status(self) -> Status | None:
        """How the last attempt ended, None if the slot never ran or is still running."""
        last = self.deciding
        return None if last is None else last.status

    @property
    def deciding(self) -> Span | None:
        """The span that says how the slot ended: its last attempt's; when that attempt was
        hedged (its spans, from the last one not a ``hedge`` on), a span still open if any,
        else the one that succeeded, else the one that ended last."""
        return deciding(self.spans)


class Listener:
    """What follows a [`Trace`][trio_supervisor.Trace] as it records (see
    [`listen`][trio_supervisor.Trace.listen]): the trace calls each method once it has recorded
    the event, so a listener reads the trace's own record (its slots and spans) and keeps no copy
    of it. Every method does nothing here: a listener overrides those it needs.

    ``trio_supervisor.otel``'s span recorder is one: it turns a run's events into spans.
    """

    __slots__ = ()

    def on_begin(self) -> None:
        """A run began recording (its plan's slots are in the trace)."""

    def on_admitted(self, slot: int) -> None:
        """Slot ``slot`` got its place under the capacity bound."""

    def on_started(self, slot: int, span: Span) -> None:
        """An attempt of slot ``slot`` started: ``span``, the slot's latest."""

    def on_ended(self, slot: int, span: Span, failure: BaseException | None) -> None:
        """``span``, an attempt of slot ``slot``, ended (``failure`` is what it raised, if
        anything: the trace keeps its text, a listener may want the exception)."""

    def on_lost(self, slot: int, span: Span) -> None:
        """``span`` lost its slot's race: it ended ``CANCELLED``, marked ``lost``."""

    def on_used(self, slot: int, span: Span) -> None:
        """``span`` got its ``usage``."""

    def on_over_budget(self, slot: int, span: Span, failure: BaseException) -> None:
        """Slot ``slot`` could not reserve an attempt: ``span``, of no length, its worker not
        called."""

    def on_cut(self, slot: int, status: Status) -> None:
        """Slot ``slot``, no attempt of it running, was cut short with ``status`` (it waited
        to be retried)."""

    def on_journaled(self, slot: int) -> None:
        """Slot ``slot``'s result came from the journal."""

    def on_delivered(self, slot: int) -> None:
        """Slot ``slot``'s result was handed over."""

    def on_part(self, part: Trace) -> None:
        """``part``, a run's part of the trace (see [`part`][trio_supervisor.Trace.part]),
        was made."""

    def on_close(self) -> None:
        """The run returned or raised."""


class Trace:
    """A recorder of one run, fed by the supervisor (or by [`watch`][trio_supervisor.Trace.watch])
    as slots move along.

    ```pycon
    >>> async def wait(n):
    ...     await trio.sleep(n)
    ...     return n
    >>> async def main():
    ...     trace = Trace()
    ...     await Supervisor(wait, max_workers=1).run([2, 1], trace=trace)
    ...     return [(slot.subtask, slot.started, slot.ended) for slot in trace.slots]
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    [(2, 0.0, 2.0), (1, 2.0, 3.0)]

    ```

    Times are ``trio.current_time()``, so under ``trio.testing.MockClock`` the same code records
    exact virtual times. Create it inside ``trio.run``: its origin is the time of creation.

    Args:
      plan: the subtasks known at the start, one slot each, in plan order.

    Raises:
      RuntimeError: if it is made outside ``trio.run`` (where there is no clock to read),
        naming the fix.
    """

    def __init__(self, plan: Iterable[Any] = ()) -> None:
        try:
            self.origin = trio.current_time()
        except RuntimeError:
            raise RuntimeError(
                "Trace() reads trio's clock, and there is none outside trio.run: make the "
                "trace inside the async function that trio.run runs, as the run it records"
            ) from None
        self.attempt: int | None = None
        """The attempt of its parent's slot that made this run (1 for the first), for a child
        run (see [`nest`][trio_supervisor.Trace.nest]); None for a run of its own."""
        self._opened = self.origin  # when its run's plan became known: the origin, or a nest()
        self.closed: float | None = None
        self.slots: list[SlotTrace] = []
        # invariant: _by_subtask[s] lists, in slot order, every slot whose (hashable) subtask is
        # s; slots with an unhashable subtask are in _unhashable, also in slot order
        self._by_subtask: dict[Any, list[int]] = {}
        self._unhashable: list[int] = []
        self._completions: list[int] = []
        self._in_use = False
        self._listeners: tuple[Listener, ...] = ()  # told of each event, in order
        for subtask in plan:
            self._add(subtask, self.origin)

    @property
    def in_use(self) -> bool:
        """True once a supervisor has begun recording a run into this trace."""
        return self._in_use

    @property
    def listeners(self) -> tuple[Listener, ...]:
        """The listeners told of this trace's events, in the order they were added."""
        return self._listeners

    def listen(self, listener: Listener) -> None:
        """Tell ``listener`` of every event this trace records from now on, each once it is
        recorded (by calling its ``on_started``, ``on_ended``, ...: see
        ``trio_supervisor._trace.Listener``): the trace stays the one record of the run, and
        the listener reads it. A supervisor's ``spans=`` records its spans so."""
        self._listeners = (*self._listeners, listener)

    def begin(self, plan: Iterable[Any] = ()) -> None:
        """A supervisor starts recording a run (called by the engine): the slots of ``plan``
        that the trace does not know yet are added (a run's trace draws every slot, the ones
        never started included)."""
        self._in_use = True
        for index, subtask in enumerate(plan):
            if index >= len(self.slots):
                self._add(subtask, self._opened)
        for listener in self._listeners:
            listener.on_begin()

    def _add(self, subtask: Any, planned: float) -> SlotTrace:
        slot = SlotTrace(len(self.slots), subtask, planned)
        self._keep(slot, slot.slot)
        return slot

    def _keep(self, slot: SlotTrace, number: int) -> None:
        """Keep ``slot`` as this trace's slot ``number`` (its place in ``slots``), found by its
        subtask."""
        self.slots.append(slot)
        try:
            self._by_subtask.setdefault(slot.subtask, []).append(number)
        except TypeError:  # unhashable: a dict, a list
            self._unhashable.append(number)

    def _slot(self, slot: int, subtask: Any) -> SlotTrace:
        while slot >= len(self.slots):
            now = trio.current_time()
            self._add(subtask if slot == len(self.slots) else None, now)
        return self.slots[slot]

    def end_open_slot(self, slot: int, status: Status) -> None:
        """End slot ``slot``'s attempt with ``status`` if it is still open (called by the
        engine, for an attempt a timeout or a cancellation cut); a hedged attempt's spans
        still open all end so."""
        if slot < len(self.slots) and not self._end_still_open(slot, status):
            for listener in self._listeners:
                listener.on_cut(slot, status)

    def _end_still_open(self, slot: int, status: Status) -> bool:
        """End slot ``slot``'s spans still open (see ``still_open``) with ``status``; whether
        there was one."""
        spans = still_open(self.slots[slot].spans)
        for span in spans:
            self.ended(slot, status, span=span)
        return bool(spans)

    def end_open(self, status: Status = Status.CANCELLED) -> None:
        """End every span still open with ``status`` (called by the engine as a run ends: the
        run was cut short around them)."""
        for index, slot in enumerate(self.slots):  # by place: a part's slots are numbered on
            if slot.spans and (slot.spans[-1].end is None or slot.spans[-1].hedge):
                self._end_still_open(index, status)

    def pulled(self, slot: int, subtask: Any = None) -> None:
        """Slot ``slot`` was pulled from a lazy input: it is planned from now on."""
        self._slot(slot, subtask)

    def delivered(self, slot: int) -> None:
        """The caller received slot ``slot``'s result (from a streaming supervisor)."""
        self.slots[slot].delivered = trio.current_time()
        for listener in self._listeners:
            listener.on_delivered(slot)

    def journaled(self, slot: int, subtask: Any = None) -> None:
        """Slot ``slot``'s result came from the journal: a resumed run did not run it again."""
        self._slot(slot, subtask).journaled = True
        for listener in self._listeners:
            listener.on_journaled(slot)

    def admitted(self, slot: int, subtask: Any = None) -> None:
        """Slot ``slot`` got its place under the capacity bound."""
        self._slot(slot, subtask).admitted = trio.current_time()
        for listener in self._listeners:
            listener.on_admitted(slot)

    def started(self, slot: int, subtask: Any = None, *, hedge: bool = False) -> Span:
        """An attempt of slot ``slot`` started running its worker; ``hedge``: an extra attempt
        started while another attempt of the slot runs (see [`Hedge`][trio_supervisor.Hedge]).
        Returns its span, for [`ended`][trio_supervisor.Trace.ended] or
        [`lost`][trio_supervisor.Trace.lost] when several attempts of the slot run at once."""
        span = Span(trio.current_time(), hedge=hedge)
        self._slot(slot, subtask).spans.append(span)
        for listener in self._listeners:
            listener.on_started(slot, span)
        return span

    def lost(self, slot: int, span: Span) -> None:
        """``span``, an attempt of slot ``slot``, was cancelled because another attempt of the
        slot succeeded first: it ends ``CANCELLED``, marked ``lost``."""
        span.end = trio.current_time()
        span.status = Status.CANCELLED
        span.lost = True
        for listener in self._listeners:
            listener.on_lost(slot, span)

    def ended(
        self,
        slot: int,
        status: Status,
        failure: BaseException | None = None,
        *,
        span: Span | None = None,
    ) -> None:
        """The running attempt of slot ``slot`` ended with ``status``; ``failure``, if it failed,
        is kept as its span's ``error`` text and ``retry_after`` (the failure's own attribute,
        when it has a number there). ``span`` is the attempt's span when several of the slot
        run at once (a hedge, see [`started`][trio_supervisor.Trace.started]); by default the
        latest."""
        if span is None:
            span = self.slots[slot].spans[-1]
        self._end(slot, span, status, failure)
        for listener in self._listeners:
            listener.on_ended(slot, span, failure)

    def _end(self, slot: int, span: Span, status: Status, failure: BaseException | None) -> None:
        span.end = trio.current_time()
        span.status = status
        if failure is not None:
            span.error = describe(failure)
            asked = getattr(failure, "retry_after", None)
            if isinstance(asked, int | float) and not isinstance(asked, bool) and asked >= 0:
                span.retry_after = float(asked)
        self._completed(slot)

    def _completed(self, slot: int) -> None:
        self._completions.append(slot)

    def over_budget(self, slot: int, subtask: Any, failure: BaseException) -> None:
        """Slot ``slot`` could not reserve its next attempt from a budget: a span of no length,
        ``Status.OVER_BUDGET``, its worker not called."""
        span = Span(trio.current_time())
        self._slot(slot, subtask).spans.append(span)
        self._end(slot, span, Status.OVER_BUDGET, failure)
        for listener in self._listeners:
            listener.on_over_budget(slot, span, failure)

    def used(self, slot: int, usage: Usage) -> None:
        """The latest attempt of slot ``slot`` reported ``usage`` (see
        [`report_usage`][trio_supervisor.report_usage])."""
        span = self.slots[slot].spans[-1]
        span.usage = usage
        for listener in self._listeners:
            listener.on_used(slot, span)

    def nest(self, subtask: Any) -> Trace:
        """A fresh trace for a run that the worker of ``subtask``'s slot makes as a supervisor
        itself (a supervision tree): record the child run into it, and it is drawn under its
        parent's slot, indented.

        It shares this trace's origin, so the child's times line up with its parent's, and its
        slots are planned from now. Every child run is kept, in the order they were made: a
        retried slot's first attempt's child run as well as its last (a picture draws them all,
        each marked with its parent's ``attempt``), and the slot's ``child`` is the latest.

        Args:
          subtask: the parent slot's subtask, as the worker was called with it (see
            [`slot_of`][trio_supervisor.Trace.slot_of]).

        Raises:
          ValueError: if no slot of this trace has that subtask.
        """
        running = [
            found.slot
            for found in self.slots
            if found.spans and found.spans[-1].end is None and same_subtask(found.subtask, subtask)
        ]  # the worker nests while its attempt runs: the latest such slot is its own
        slot = running[-1] if running else self.slot_of(subtask)
        if slot is None:
            raise ValueError(
                f"no slot of this trace has the subtask {subtask!r}: nest a child run under the "
                "subtask its parent's worker was called with"
            )
        child = Trace()
        child.origin = self.origin
        child._opened = trio.current_time()
        parent = self.slots[slot]
        child.attempt = max(1, len(parent.spans))  # the open attempt's number (its last span)
        parent.children.append(child)
        return child

    def part(self) -> Trace:
        """A fresh trace for one run whose slots are this trace's next slots, numbered on.

        [`Supervisor.replan`][trio_supervisor.Supervisor.replan] records each round's batch
        so: one timeline of every subtask dispatched, in ledger order. A loop of runs of your
        own can do the same.
        """
        self._in_use = True
        part = _Part(self)
        for listener in self._listeners:
            listener.on_part(part)
        return part

    def close(self) -> None:
        """The run returned (or raised): fixes the right edge of the timeline."""
        self.closed = trio.current_time()
        for listener in self._listeners:
            listener.on_close()

    @property
    def wall(self) -> float:
        """Seconds from the origin to [`close`][trio_supervisor.Trace.close] (or to now, while the
        run goes on)."""
        end = self.closed if self.closed is not None else trio.current_time()
        return end - self.origin

    def completion_rank(self) -> dict[int, int]:
        """Slot -> 1-based rank of its final end among all slots' final ends.

        Slots whose final ends fall at the same instant share a rank (1, 2, 2, 4): trio runs tasks
        woken at the same time in no fixed order, so their order is no part of the run (and the
        pictures of a run on virtual time come out the same every time).
        """
        final: dict[int, int] = {}
        for slot in self._completions:
            final.pop(slot, None)
            final[slot] = 0
        ranks: dict[int, int] = {}
        previous: tuple[float, int] | None = None  # (end, rank) of the slot ranked before
        for rank, slot in enumerate(final, start=1):
            end = max(span.end for span in self.slots[slot].spans if span.end is not None)
            if previous is not None and previous[0] == end:
                rank = previous[1]
            ranks[slot] = rank
            previous = (end, rank)
        return ranks

    def slot_of(self, subtask: Any) -> int | None:
        """The slot a call with ``subtask`` belongs to: the first that has not yet run, else the
        first whose last attempt failed (a retry), else the last one planned with that subtask."""
        try:
            candidates = self._by_subtask.get(subtask, [])
        except TypeError:  # unhashable: compared one by one
            candidates = [slot for slot in self._unhashable if self.slots[slot].subtask == subtask]
        for slot in candidates:
            if not self.slots[slot].spans:
                return slot
        for slot in candidates:
            last = self.slots[slot].spans[-1]
            if last.end is not None and last.status is not Status.OK:
                return slot
        return candidates[-1] if candidates else None

    def watch(self, worker: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        """Wrap ``worker`` so that every call records a span on its subtask's slot.

        For supervisors that do not report to a trace themselves (hand-written loops): a slot is
        found by its subtask (see [`slot_of`][trio_supervisor.Trace.slot_of]); a subtask not in
        the plan gets a new slot. A slot is admitted at its first call only.
        """

        @functools.wraps(worker)
        async def watched(subtask: Any) -> Any:
            slot = self.slot_of(subtask)
            if slot is None:
                slot = len(self.slots)
            if slot >= len(self.slots) or self.slots[slot].admitted is None:
                self.admitted(slot, subtask)  # once, at its first call: a retry keeps its place
            self.started(slot, subtask)
            try:
                output = await worker(subtask)
            except Exception as exc:
                self.ended(slot, Status.FAILED, exc)
                raise
            except BaseException:
                self.ended(slot, Status.CANCELLED)
                raise
            self.ended(slot, Status.OK)
            return output

        return watched

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain data (times in seconds since the origin), for JSON."""

        def rel(time: float | None) -> float | None:
            return None if time is None else time - self.origin

        ranks = self.completion_rank()
        return {
            "wall": self.wall,
            "slots": [
                {
                    "slot": slot.slot,
                    "subtask": slot.subtask,
                    "planned": rel(slot.planned),
                    "admitted": rel(slot.admitted),
                    "spans": [
                        {
                            "start": rel(span.start),
                            "end": rel(span.end),
                            "status": None if span.status is None else span.status.value,
                            "error": span.error,
                            "retry_after": span.retry_after,
                            **(
                                {}
                                if span.usage is None
                                else {
                                    "usage": {
                                        "calls": span.usage.calls,
                                        "input_tokens": span.usage.input_tokens,
                                        "output_tokens": span.usage.output_tokens,
                                        "cost": span.usage.cost,
                                    }
                                }
                            ),
                            **({"hedge": True} if span.hedge else {}),
                            **({"lost": True} if span.lost else {}),
                        }
                        for span in slot.spans
                    ],
                    "completion_rank": ranks.get(slot.slot),
                    "delivered": rel(slot.delivered),
                    **({"journaled": True} if slot.journaled else {}),
                    **self._children_dict(slot),
                }
                for slot in self.slots
            ],
        }

    @staticmethod
    def _children_dict(slot: SlotTrace) -> dict[str, Any]:
        """A slot's child runs as plain data: ``child`` the latest (as before), and
        ``children`` every one with its parent's ``attempt``, when the slot has any."""
        if not slot.children:
            return {}
        children = [{**child.to_dict(), "attempt": child.attempt} for child in slot.children]
        return {"child": children[-1], "children": children}


class _Part(Trace):
    """One run's part of a larger trace (see ``Trace._part``): each slot it adds is the whole
    trace's next slot, the same record, so the whole trace sees the run as it goes."""

    def __init__(self, whole: Trace) -> None:
        super().__init__()
        self.origin = whole.origin
        self._opened = trio.current_time()
        self._whole = whole

    def _add(self, subtask: Any, planned: float) -> SlotTrace:
        slot = super()._add(subtask, planned)
        slot.slot = len(self._whole.slots)  # numbered in the whole trace; this part counts by place
        self._whole._keep(slot, slot.slot)
        return slot

    def _completed(self, slot: int) -> None:
        super()._completed(slot)
        self._whole._completions.append(self.slots[slot].slot)


def last_attempt(spans: Sequence[Span]) -> Sequence[Span]:
    """The spans of a slot's last attempt: its last span, or, when that attempt was hedged, its
    race (from its last span not a ``hedge`` on)."""
    index = len(spans) - 1
    while index > 0 and spans[index].hedge:
        index -= 1
    return spans[index:]


def deciding(spans: Sequence[Span]) -> Span | None:
    """Of a slot's ``spans``, the one that says how it ended (see ``SlotTrace.deciding``)."""
    if not spans:
        return None
    if not spans[-1].hedge:
        return spans[-1]
    race = last_attempt(spans)
    for span in race:
        if span.end is None:
            return span
    for span in race:
        if span.status is Status.OK and not span.lost:
            return span
    return max(reversed(race), key=lambda span: span.end or 0.0)


def still_open(spans: Sequence[Span]) -> list[Span]:
    """The spans of a slot's last attempt still open, the latest first: what a timeout or a
    cancellation of the slot ends (every one: a hedged race's attempts end together, and a
    span recorder, told of each, ends each attempt's span)."""
    return [span for span in reversed(last_attempt(spans)) if span.end is None]


def same_subtask(a: object, b: object) -> bool:
    """Whether a trace's subtask is the run's: the same object (so a NaN is itself), or equal
    (an object whose comparison fails or is not a plain truth value, as a NumPy array's, is
    not equal unless it is the same object)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def check_trace(value: object, planned: Sequence[Any] | None) -> None:
    """A trace given to a run: None, or a fresh [`Trace`][trio_supervisor.Trace] made for this
    plan; anything else is refused with the rule.

    ``planned`` is the run's plan, or None for a lazy input (then the trace must be empty, or it
    is checked slot by slot as subtasks are pulled).
    """
    if value is None:
        return
    if not isinstance(value, Trace):
        raise TypeError(f"trace must be a Trace or None, got {type(value).__name__}")
    if value.closed is not None or value.in_use:
        raise ValueError("this trace already recorded a run: make a new Trace(plan) for each run")
    if not value.slots:
        return
    known = [slot.subtask for slot in value.slots]
    if planned is None:
        raise ValueError(
            f"this trace was made for another plan ({len(known)} subtasks, starting "
            f"{known[:3]!r}): a stream over a lazy input records into an empty Trace()"
        )
    if len(known) != len(planned) or not all(map(same_subtask, known, planned)):
        raise ValueError(
            f"this trace was made for another plan ({len(known)} subtasks, starting "
            f"{known[:3]!r}) than the run's ({len(planned)} subtasks, starting "
            f"{list(planned[:3])!r}): make it with Trace(plan) for the run's own plan, or Trace()"
        )
