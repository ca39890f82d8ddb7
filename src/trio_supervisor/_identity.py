"""Attempt identity: which attempt of which slot of which run a worker's call is, in a context
variable the engine binds once per lane and [`attempt_key`][trio_supervisor.attempt_key] reads.
It needs no journal: a run given ``durable=Durable(run_id)`` alone has keys too.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

Put = Callable[[int, Any], None]
"""Where a slot's final result goes: ``put(slot, result)``."""

PLANNER = -1
"""The slot a planner's question is journaled under (its round: the number of the decision)."""


class AttemptKey(NamedTuple):
    """Which attempt of which slot of which run a worker's call is: the same on every process
    that runs it, so that a server can tell a retried side effect from a new one.

    ```pycon
    >>> str(AttemptKey("order-7", 0, 3, 2))
    'order-7/0/3/2'

    ```
    """

    run: str
    round: int
    slot: int
    attempt: int

    def __str__(self) -> str:
        return f"{self.run}/{self.round}/{self.slot}/{self.attempt}"


NOT_JOURNALED = (
    "approval() keeps its question in the run's journal: call it from a worker (or the planner) "
    "of a run given durable=Durable(run_id, journal)"
)


def covers(ranges: Sequence[tuple[int, int]]) -> Callable[[int], bool]:
    """Whether a slot lies in one of ``ranges`` (first and last slot each, disjoint), as a
    test of it: how the leases a journal holds of a run, a row per range, are read."""
    ordered = sorted(ranges)
    firsts = [first for first, _ in ordered]

    def covered(slot: int) -> bool:
        at = bisect.bisect_right(firsts, slot) - 1
        return at >= 0 and ordered[at][1] >= slot

    return covered


@dataclass(frozen=True, slots=True)
class RunName:
    """A run's name: its ``run_id`` and its ``round`` (0, or the number of a re-planning run's
    round), the first parts of each of its attempts' keys. A run given a journal is a
    ``DurableRun`` (in ``_journal.py``), which keeps its workers' questions too."""

    run_id: str
    round: int

    def recording(self, store: Put, leased: bool = False) -> Put:
        """``store``, as a run puts its final results with: as it is (a ``DurableRun``
        journals each first)."""
        return store

    @property
    def lease(self) -> float | None:
        """Seconds a slot's lease lasts: None, a run without a journal shares no slots (a
        ``DurableRun`` whose journal leases claims each slot before it runs it)."""
        return None

    async def claim(self, slots: Sequence[int], since: float) -> list[tuple[int, str, Any]]:
        """Claim ``slots``: each is this run's at once, without a journal."""
        return [(slot, "claimed", None) for slot in slots]

    async def renew(self) -> list[tuple[int, int]]:
        """Renew this run's leases: the ranges of slots it still holds (first and last; see
        ``covers``): none."""
        return []

    def release(self) -> None:
        """Give up this run's leases: it holds none."""

    @property
    def each_commit(self) -> Callable[[], Awaitable[None]] | None:
        """What a lane awaits after each result it puts: nothing, without a journal."""
        return None

    async def ask(self, slot: int, question: str) -> tuple[str, str | None, str | None]:
        """Slot ``slot``'s ``question`` and its answer so far: status, by whom, the note.

        Raises:
          RuntimeError: always: a run without a journal keeps no question.
        """
        raise RuntimeError(NOT_JOURNALED)


_current: contextvars.ContextVar[tuple[RunName, Any] | None] = contextvars.ContextVar(
    "trio_supervisor_attempt", default=None
)


def bound() -> tuple[RunName, Any] | None:
    """What the calling task was bound to: its run and the attempt it runs (its ``slot`` and
    ``attempts``); None outside a run given a ``run_id``."""
    return _current.get()


def bind_key(run: RunName, running: Any) -> None:
    """The calling task runs ``running``'s attempts of ``run``: what
    [`attempt_key`][trio_supervisor.attempt_key] and [`approval`][trio_supervisor.approval]
    read (set once per lane, by the engine)."""
    _current.set((run, running))


class _Asking:
    """What a planner's question is asked from: the slot ``PLANNER``, no attempt."""

    __slots__ = ("attempts", "slot")

    def __init__(self) -> None:
        self.slot = PLANNER
        self.attempts = 0


@contextlib.contextmanager
def planner_asks(run: RunName) -> Iterator[None]:
    """Within, [`approval`][trio_supervisor.approval] asks for a re-planning run's planner
    decision: slot ``PLANNER`` of ``run``, whose round is the decision's number."""
    token = _current.set((run, _Asking()))
    try:
        yield
    finally:
        _current.reset(token)


def bind_attempt(attempt: Any) -> None:
    """The calling task runs one of several attempts of a slot at once (a hedge): its
    ``attempt_key()`` reads ``attempt`` (its ``slot`` and its own ``attempts`` number) in the
    run the task's lane bound, if any."""
    found = _current.get()
    if found is not None:
        _current.set((found[0], attempt))


def attempt_key() -> AttemptKey | None:
    """The key of the attempt the calling worker runs in, or None outside one, or in a run
    given no ``run_id``.

    ```pycon
    >>> async def worker(subtask):
    ...     return str(attempt_key())
    >>> async def main():
    ...     aggregate = await Supervisor(worker, max_workers=1).run(["a"], durable=Durable("r1"))
    ...     return aggregate[0].output
    >>> trio.run(main)
    'r1/0/0/1'

    ```

    A worker that makes a side effect (a payment, a message, a paid call) sends it along, as
    [`ChatAgent`][trio_supervisor.agents.ChatAgent] does in an ``Idempotency-Key`` header, so
    that the server that did it can tell the same attempt resumed after a crash from a new one.
    A slot that a resume runs again counts its attempts from 1 again, so its first attempt
    sends the key the killed run's first attempt sent: a server that kept that attempt's answer
    gives it back (a failure too, if it keeps failures: a slot whose failure was final in the
    journal is better given a new ``run_id`` when its side effect must be tried afresh).
    """
    found = _current.get()
    if found is None:
        return None
    run, running = found
    if running.slot is None:
        return None
    return AttemptKey(run.run_id, run.round, running.slot, running.attempts)
