"""Meters: what an attempt waits on before it starts, besides a free worker.

A supervisor runs at most ``max_workers`` slots at once: that bound is its pool of worker tasks,
fixed for its lifetime and free of cost. Everything else that decides *when* an attempt may start
is a meter: a capacity whose limit changes while runs go on (an adaptive concurrency limit sets
it), a rate limit, one budget shared by several supervisors. Before each attempt (a retry
included) the supervisor awaits ``acquire()`` of every meter, in order, and after the attempt it
calls ``release()`` of each, in reverse order, whatever the attempt's outcome.

The shape is aiometer's (a meter that a run waits on before starting each task), as a protocol
of two methods so that trio's own primitives fit it: ``trio.Semaphore`` is a meter as it is.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import trio

from . import _validate


@runtime_checkable
class Meter(Protocol):
    """What an attempt waits on before it starts.

    ``acquire`` returns when one more attempt may start (it may wait, and must be a cancellation
    point); ``release`` is called once for each ``acquire`` that returned, from the same task,
    when that attempt has ended.
    """

    async def acquire(self) -> None:
        """Wait until one more attempt may start, and count it as started."""

    def release(self) -> None:
        """The attempt that ``acquire`` admitted has ended."""


class Capacity:
    """At most ``limit`` attempts at once, across every run that uses this meter; the limit can
    change while they go on.

    Raising the limit lets waiting attempts start at once; lowering it lets the attempts already
    running finish, and starts no new one until fewer than the new limit run. Give one
    ``Capacity`` to several supervisors (``meters=[capacity]``) to share one budget among them,
    or set ``capacity.limit`` from a controller to adapt concurrency to what an endpoint allows.
    A supervisor's ``max_workers`` still bounds its own runs: the bound in force is the smaller.

    Built on ``trio.CapacityLimiter``, whose ``total_tokens`` wakes waiters when it grows. Each
    acquisition borrows on behalf of the task that runs the attempt, so a task holds at most one
    token of a given capacity at a time.

    Args:
      limit: how many attempts may run at once.

    Raises:
      TypeError: if ``limit`` is not an int.
      ValueError: if ``limit`` is < 1.
    """

    def __init__(self, limit: int) -> None:
        self._limiter = trio.CapacityLimiter(_validate.count("limit", limit))

    @property
    def limit(self) -> int:
        """How many attempts may run at once; set it to change the bound while runs go on.

        Raises:
          TypeError: on set, if the value is not an int.
          ValueError: on set, if the value is < 1.
        """
        return int(self._limiter.total_tokens)

    @limit.setter
    def limit(self, value: int) -> None:
        self._limiter.total_tokens = _validate.count("limit", value)

    @property
    def in_use(self) -> int:
        """How many attempts hold a place now."""
        return self._limiter.borrowed_tokens

    @property
    def waiting(self) -> int:
        """How many attempts wait for a place now."""
        return self._limiter.statistics().tasks_waiting

    async def acquire(self) -> None:
        """Wait for a place under the limit (a cancellation point)."""
        limiter = self._limiter
        while True:
            await limiter.acquire()
            # trio yields once after granting a place; if the limit was lowered meanwhile, the
            # place is over the new limit: give it back and wait for one under it
            if limiter.borrowed_tokens <= limiter.total_tokens:
                return
            limiter.release()

    def release(self) -> None:
        """Give back the place the current task holds.

        Raises:
          RuntimeError: if the current task holds no place.
        """
        self._limiter.release()

    def __repr__(self) -> str:
        return f"Capacity(limit={self.limit}, in_use={self.in_use}, waiting={self.waiting})"
