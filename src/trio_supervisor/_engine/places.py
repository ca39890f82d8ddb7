"""Places: the capacity bound of a supervisor (its ``max_workers``), shared by all its runs and
streams.

A worker task (a *lane*) holds a place while it runs slots, from its first admission until the
run or stream has no slot for it. So at no instant do more than ``max_workers`` of a
supervisor's workers run, however many of its runs and streams go on at once. (A budget shared
with other supervisors is a [`Capacity`][trio_supervisor.Capacity] among the ``meters``: each
attempt holds one of its places, not each lane.)

A lane keeps its place from one slot to the next while nobody waits for one (a run that has
the supervisor to itself pays a check per slot, not a wait); when another lane waits, it gives
it back before its next admission and queues behind it, so concurrent runs take turns, first
come first served, instead of the first run keeping every place until it ends. A stream's lane
that waits for the input keeps its place too, as *idle*: a lane that finds no place free takes
back the places of the idle lanes first (the idle lane takes a new one when it has a slot
again), so an idle stream holds no place anyone needs, and a busy one does not pay for giving
its place back each time the input runs dry for an instant.

Places are a count and a ``trio.lowlevel.ParkingLot``: a lane holds at most one place, and a place
given back goes to the lane that asked first (``trio.CapacityLimiter`` does the same, for
about a microsecond more per lane, which a run of few slots per lane pays in full).
"""

from __future__ import annotations

from typing import Protocol

from trio.lowlevel import ParkingLot


class Lane(Protocol):
    """What holds places from one slot to the next (a lane's ``Running``), as its ``Places``
    know it: whether it holds them now, and the mark that says so, which only ``Places`` sets
    (``seat``, ``unseat``, and taking back an idle lane's places)."""

    @property
    def placed(self) -> bool:
        """Whether it holds its places now."""

    def mark_placed(self, placed: bool) -> None:
        """It holds its places now (``placed``), or not."""


class Places:
    """The places a supervisor's lanes hold one of while they run slots.

    Args:
      max_workers: the supervisor's bound, across all its runs and streams.
    """

    __slots__ = ("_free", "_idle", "_lot", "_total", "waiting")

    def __init__(self, max_workers: int) -> None:
        self._total = max_workers
        # invariants: _free places are held by nobody, and 0 <= _free <= _total; while a lane is
        # parked in _lot, _free is 0 (a place given back goes to the first parked lane instead)
        self._free = max_workers
        self._lot = ParkingLot()  # the lanes that wait for a place, first come first served
        # how many of its lanes wait in take() now (read, never written, by the lanes): while
        # none does, nobody waits for a place, and an admission asks nothing, not even `wanted`
        self.waiting = 0
        # the idle lanes (those that hold a place while they wait for the input)
        self._idle: dict[Lane, None] = {}

    async def take(self, borrower: object) -> None:
        """Wait for a place on behalf of ``borrower`` (a lane, holding none); a cancellation
        point only when it has to wait."""
        if self._take_free():
            return
        self.waiting += 1
        try:
            await self._wait_for()
        finally:
            self.waiting -= 1

    def give_back(self, borrower: object) -> None:
        """Give back ``borrower``'s place: to the first lane that waits for one, if any."""
        if self._lot:
            self._lot.unpark()  # the place is that lane's now
        else:
            self._free += 1

    def seat_now(self, lane: Lane) -> bool:
        """``seat`` ``lane`` if that needs no wait (a place is free and no lane asked before):
        whether it did. The path of a lane that finds a place, without a coroutine."""
        if self._take_free():
            lane.mark_placed(True)
            return True
        return False

    async def seat(self, lane: Lane) -> None:
        """``take`` places for ``lane``, which holds none, and mark it ``placed``."""
        await self.take(lane)
        lane.mark_placed(True)

    def unseat(self, lane: Lane) -> None:
        """Give back ``lane``'s places, if it holds them."""
        if lane.placed:
            lane.mark_placed(False)
            self.give_back(lane)

    def idle(self, lane: Lane) -> None:
        """``lane`` (whose ``placed`` is True) keeps its place while it waits for the input,
        until a lane that needs one takes it back (then its ``placed`` becomes False)."""
        self._idle[lane] = None

    def busy(self, lane: Lane) -> None:
        """``lane`` waits no more: its place, if it still has it, is its own again."""
        self._idle.pop(lane, None)

    def wanted(self) -> bool:
        """Whether a lane should give its place back before its next slot: another lane waits
        for one (the lanes that hold one take turns)."""
        return bool(self.waiting) and bool(self._lot)

    @property
    def in_use(self) -> int:
        """How many of the supervisor's places are held now."""
        return self._total - self._free

    async def _wait_for(self) -> None:
        """Get a place, none being free or others waiting first: one an idle lane held, or one
        given back."""
        if self._reclaim() and self._take_free():
            return  # what was taken back, unless it went to a lane that waited before
        await self._lot.park()  # woken by give_back, which hands this lane its place

    def _take_free(self) -> bool:
        """Take a place that is free, unless a lane asked for one before: whether it did."""
        if self._free and not self._lot:
            self._free -= 1
            return True
        return False

    def _reclaim(self) -> bool:
        """Take back the places of the idle lanes, so that a lane that needs one gets it;
        whether there was any."""
        if not self._idle:
            return False
        for lane in list(self._idle):
            self.busy(lane)
            self.unseat(lane)
        return True
