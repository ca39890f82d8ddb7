"""Places: the capacity bound of a supervisor, shared by all its runs and streams, and a budget
shared with other supervisors.

A worker task (a *lane*) holds a place while it runs slots, from its first admission until the
run or stream has no slot for it. It takes one place of every budget in force: the supervisor's
own ``max_workers``, and a [`Capacity`][trio_supervisor.Capacity] given as ``capacity=``. So at
no instant do more than ``max_workers`` of a supervisor's workers run, however many of its runs
and streams go on at once, and no more than ``capacity.limit`` of all the supervisors that share
that capacity (a lowered limit included: a lane over it gives its place back at its next
admission and waits for one under it).

A lane keeps its places from one slot to the next while nobody waits for one (a run that has
the supervisor to itself pays a check per slot, not a wait); when another lane waits, it gives
them back before its next admission and queues behind it, so concurrent runs take turns, first
come first served, instead of the first run keeping every place until it ends. A stream's lane
that waits for the input keeps its places too, as *idle*: a lane that finds no place free takes
back the places of the idle lanes of that budget first (the idle lane takes new ones when it
has a slot again), so an idle stream holds no place anyone needs, and a busy one does not pay
for giving its places back each time the input runs dry for an instant.

Places are built on ``trio.CapacityLimiter``: a borrower holds at most one token of each,
tokens go to waiters in the order they asked, and a raised limit wakes waiters at once.
"""

from __future__ import annotations

import weakref
from typing import Protocol

import trio


class Lane(Protocol):
    """What holds places from one slot to the next (a lane's ``Running``), as its ``Places``
    know it: whether it holds them now, and the mark that says so, which only ``Places`` sets
    (``seat``, ``unseat``, and taking back an idle lane's places)."""

    @property
    def placed(self) -> bool:
        """Whether it holds its places now."""

    def mark_placed(self, placed: bool) -> None:
        """It holds its places now (``placed``), or not."""


# limiter -> its idle lanes (those that hold a place while they wait for the input) -> the Places
# they hold it through: one registry per limiter, so that a budget shared by several supervisors
# takes back the places of any of their idle lanes
_IDLE: weakref.WeakKeyDictionary[trio.CapacityLimiter, dict[Lane, Places]] = (
    weakref.WeakKeyDictionary()
)


class Places:
    """The budgets a supervisor's lanes hold a place of while they run slots.

    Args:
      max_workers: the supervisor's own bound, across all its runs and streams.
      shared: the ``trio.CapacityLimiter`` of a [`Capacity`][trio_supervisor.Capacity] shared
        with other supervisors, or None.
    """

    __slots__ = ("_idle", "_limiters", "_shared", "_waiting")

    def __init__(self, max_workers: int, shared: trio.CapacityLimiter | None) -> None:
        own = trio.CapacityLimiter(max_workers)
        self._shared = shared  # the one budget whose limit may change while lanes hold it
        self._limiters: tuple[trio.CapacityLimiter, ...] = (
            (own,) if shared is None else (own, shared)
        )
        # how many of its lanes wait in take() now: while none does, nobody waits for the
        # supervisor's own places, and an admission asks its limiter nothing
        self._waiting = 0
        self._idle = tuple(_IDLE.setdefault(limiter, {}) for limiter in self._limiters)

    async def take(self, borrower: object) -> None:
        """Wait for a place of every budget, in order, on behalf of ``borrower`` (a lane); a
        cancellation point only when it has to wait. Cancelled, it gives back what it took."""
        taken = 0
        try:
            for limiter in self._limiters:
                while True:
                    try:
                        limiter.acquire_on_behalf_of_nowait(borrower)
                    except trio.WouldBlock:
                        self._waiting += 1
                        try:
                            await _wait_for(limiter, borrower)
                        finally:
                            self._waiting -= 1
                    # a Capacity whose limit was lowered meanwhile: wait for a place under it
                    if limiter.borrowed_tokens <= limiter.total_tokens:
                        break
                    limiter.release_on_behalf_of(borrower)
                taken += 1
        finally:
            if taken < len(self._limiters):
                for limiter in reversed(self._limiters[:taken]):
                    limiter.release_on_behalf_of(borrower)

    def give_back(self, borrower: object) -> None:
        """Give back ``borrower``'s places."""
        for limiter in reversed(self._limiters):
            limiter.release_on_behalf_of(borrower)

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
        """``lane`` (whose ``placed`` is True) keeps its places while it waits for the input,
        until a lane that needs one takes them back (then its ``placed`` becomes False)."""
        for idle in self._idle:
            idle[lane] = self

    def busy(self, lane: Lane) -> None:
        """``lane`` waits no more: its places, if it still has them, are its own again."""
        for idle in self._idle:
            idle.pop(lane, None)

    def wanted(self) -> bool:
        """Whether a lane should give its places back before its next slot: another lane waits
        for one (the lanes that hold one take turns), or a shared budget's limit was lowered
        under what its lanes hold."""
        if self._waiting and _waited_for(self._limiters[0]):
            return True
        shared = self._shared
        if shared is None:
            return False
        free = shared.total_tokens - shared.borrowed_tokens
        # others than this supervisor's lanes may wait for a shared place (other supervisors,
        # attempts given the Capacity as a meter), so its limiter is asked; only when no place
        # is free, since a limiter hands a place given back to its first waiter at once
        return free < 0 or (free == 0 and _waited_for(shared))

    @property
    def in_use(self) -> int:
        """How many of the supervisor's own places are held now."""
        return self._limiters[0].borrowed_tokens


def _waited_for(limiter: trio.CapacityLimiter) -> bool:
    """Whether some task waits for a place of ``limiter``."""
    return limiter.statistics().tasks_waiting > 0


async def _wait_for(limiter: trio.CapacityLimiter, borrower: object) -> None:
    """Get a place of ``limiter``, none being free: one an idle lane held, or one given back."""
    if _reclaim(limiter):
        try:
            limiter.acquire_on_behalf_of_nowait(borrower)
        except trio.WouldBlock:  # what was taken back went to a lane that waited before
            pass
        else:
            return
    await limiter.acquire_on_behalf_of(borrower)


def _reclaim(limiter: trio.CapacityLimiter) -> bool:
    """Take back the places of ``limiter``'s idle lanes (each of its budgets), so that a lane
    that needs one gets it; whether there was any."""
    idle = _IDLE.get(limiter)
    if not idle:
        return False
    for lane, places in list(idle.items()):
        places.busy(lane)
        places.unseat(lane)
    return True
