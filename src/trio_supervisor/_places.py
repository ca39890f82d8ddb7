"""Places: the capacity bound of a supervisor, shared by all its runs and streams, and a budget
shared with other supervisors.

A worker task (a *lane*) holds a place while it runs slots, from its first admission until the
run or stream has no slot for it. It takes one place of every budget in force: the supervisor's
own ``max_workers``, and a [`Capacity`][trio_supervisor.Capacity] given as ``capacity=``. So at
no instant do more than ``max_workers`` of a supervisor's workers run, however many of its runs
and streams go on at once, and no more than ``capacity.limit`` of all the supervisors that share
that capacity.

A lane keeps its places from one slot to the next while nobody waits for one (a run that has
the supervisor to itself pays a check per slot, not a wait); when another lane waits, it gives
them back before its next admission and queues behind it, so concurrent runs take turns, first
come first served, instead of the first run keeping every place until it ends. A stream's idle
lane gives its places back while it waits for the input.

Places are built on ``trio.CapacityLimiter``: a borrower holds at most one token of each,
tokens go to waiters in the order they asked, and a raised limit wakes waiters at once.
"""

from __future__ import annotations

from typing import Any

import trio


class Places:
    """The budgets a supervisor's lanes hold a place of while they run slots.

    Args:
      max_workers: the supervisor's own bound, across all its runs and streams.
      shared: the ``trio.CapacityLimiter`` of a [`Capacity`][trio_supervisor.Capacity] shared
        with other supervisors, or None.
    """

    __slots__ = ("_limiters", "_lots")

    def __init__(self, max_workers: int, shared: trio.CapacityLimiter | None) -> None:
        own = trio.CapacityLimiter(max_workers)
        self._limiters: tuple[trio.CapacityLimiter, ...] = (
            (own,) if shared is None else (own, shared)
        )
        # the limiters' queues of waiters, read to tell whether a lane should give its places
        # back (trio keeps them as `_lot`; where a version lacks it, statistics() is asked)
        self._lots: tuple[Any, ...] | None = tuple(
            getattr(limiter, "_lot", None) for limiter in self._limiters
        )
        if any(lot is None for lot in self._lots):
            self._lots = None

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
                        await limiter.acquire_on_behalf_of(borrower)
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

    def wanted(self) -> bool:
        """Whether a lane waits for a place: then the lanes that hold one take turns."""
        if self._lots is not None:
            return any(self._lots)
        return any(limiter.statistics().tasks_waiting for limiter in self._limiters)

    @property
    def in_use(self) -> int:
        """How many of the supervisor's own places are held now."""
        return self._limiters[0].borrowed_tokens
