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

import weakref
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

import trio

from . import _validate


@runtime_checkable
class Meter(Protocol):
    """What an attempt waits on before it starts.

    ```pycon
    >>> isinstance(trio.Semaphore(3), Meter)  # trio's own primitives fit
    True

    ```

    ``acquire`` returns when one more attempt may start (it may wait, and must be a cancellation
    point); ``release`` is called once for each ``acquire`` that returned, from the same task,
    when that attempt has ended.

    A meter that also has an ``observe(failure)`` method (as
    [`Adaptive`][trio_supervisor.Adaptive] does) is told, after the release and from the same
    task, how each attempt that ran to its end went: its `Exception`, or None for a success
    (not an attempt cut by its timeout or by cancellation).
    """

    async def acquire(self) -> None:
        """Wait until one more attempt may start, and count it as started."""

    def release(self) -> None:
        """The attempt that ``acquire`` admitted has ended."""


class Capacity:
    """At most ``limit`` attempts at once, across every run that uses this meter; the limit can
    change while they go on.

    ```pycon
    >>> capacity = Capacity(4)
    >>> capacity.limit = 2  # from a controller, while runs go on
    >>> capacity
    Capacity(limit=2, in_use=0, waiting=0)

    ```

    Raising the limit lets waiting attempts start at once; lowering it lets the attempts already
    running finish, and starts no new one until fewer than the new limit run. Give one
    ``Capacity`` to several supervisors (``meters=[capacity]``) to share one budget among them,
    or set ``capacity.limit`` from a controller to adapt concurrency to what an endpoint allows.
    A supervisor's ``max_workers`` still bounds its own runs: the bound in force is the smaller.

    Given as ``Supervisor(..., capacity=capacity)`` instead, it bounds the supervisors' workers
    (a place held while a worker runs slots, retries' waits included), not each attempt. Either
    way, sharing has a cost: a worker that waits on another supervisor drawing from the same
    capacity (a parent on its children) holds a place its children need, and ``limit`` such
    parents never finish. Share it among the supervisors whose workers do the work.

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
    def limiter(self) -> trio.CapacityLimiter:
        """The ``trio.CapacityLimiter`` underneath, whose tokens are the places: what the
        workers of the supervisors given this ``Capacity`` as ``capacity=`` hold a place of."""
        return self._limiter

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


class RateLimit:
    """At most ``burst + rate * T`` attempts start in any window of ``T`` seconds: a token
    bucket that holds ``burst`` tokens and gains ``rate`` tokens a second, one token per attempt
    (the first and every retry).

    ```pycon
    >>> async def main():
    ...     limit = RateLimit(rate=2, burst=1)
    ...     for _ in range(3):
    ...         await limit.acquire()
    ...     return trio.current_time()
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    1.0

    ```

    Give one ``RateLimit`` to several supervisors (``meters=[limit]``) to share one budget among
    them, such as an endpoint's requests per minute (``RateLimit(rate=1200 / 60, burst=20)``).
    Attempts wait their turn in the order they asked; a waiter that is cancelled takes no token.
    Time is trio's clock, so under ``trio.testing.MockClock`` the waits take no real time; one
    ``RateLimit`` belongs to one ``trio.run``.

    It is kept as the generic cell rate algorithm: one theoretical arrival time, no timer.

    Args:
      rate: how many attempts a second may start, in the long run.
      burst: how many may start at once after a quiet spell (the bucket's size).

    Raises:
      TypeError: if ``rate`` is not a number or ``burst`` not an int.
      ValueError: if ``rate`` is not positive or ``burst`` is < 1.
    """

    __slots__ = ("_interval", "_lock", "_tat", "_tolerance", "burst", "rate")

    def __init__(self, rate: float, burst: int = 1) -> None:
        self.rate = _validate.number("rate", rate)
        self.burst = _validate.count("burst", burst)
        self._interval = 1.0 / self.rate
        self._tolerance = (self.burst - 1) * self._interval
        self._tat = -_INF  # when the bucket will be full again: long ago
        self._lock: trio.Lock | None = None  # made inside the run that first uses it

    async def acquire(self) -> None:
        """Wait for a token, in turn (a cancellation point)."""
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            while True:
                now = trio.current_time()
                # `tat` is when the bucket would be full again; a token is free while that is
                # at most `tolerance` (burst - 1 tokens' worth of time) away
                wait = self._tat - self._tolerance - now
                if wait <= 1e-9:  # within float rounding of due: due
                    self._tat = max(self._tat, now) + self._interval
                    return
                await trio.sleep(wait)

    def release(self) -> None:
        """Nothing to give back: a token is spent when its attempt starts."""

    def __repr__(self) -> str:
        return f"RateLimit(rate={self.rate:g}, burst={self.burst})"


def check_meters(value: object) -> tuple[Any, ...]:
    """``value`` as a tuple of meters: objects with ``async acquire()`` and ``release()``."""
    if not isinstance(value, Iterable) or isinstance(value, str | bytes):
        raise TypeError(f"meters must be a sequence of meters, got {type(value).__name__}")
    found = tuple(value)
    for meter in found:
        acquire, release = getattr(meter, "acquire", None), getattr(meter, "release", None)
        if not (callable(acquire) and callable(release)):
            raise TypeError(
                "a meter has an async acquire() and a release() (see trio_supervisor.Meter), "
                f"got {type(meter).__name__} {meter!r}"
            )
    return found


def check_capacity(value: object, meters: tuple[Any, ...]) -> Capacity | None:
    """A budget shared with other supervisors: a [`Capacity`][trio_supervisor.Capacity] or None,
    not also one of the supervisor's meters (a worker would take two places of it)."""
    if value is None:
        return None
    if not isinstance(value, Capacity):
        raise TypeError(f"capacity must be a Capacity or None, got {type(value).__name__}")
    if any(meter is value for meter in meters):
        raise ValueError(
            "this Capacity is both the capacity and one of the meters, so each worker would take "
            "two of its places: give it once, as capacity= (held while a worker runs slots) or "
            "in meters= (held during each attempt)"
        )
    return value


_INF = float("inf")


class Adaptive:
    """A concurrency limit that finds what an endpoint allows, from the 429s it answers.

    ```pycon
    >>> adaptive = Adaptive(128)  # at most 128, starting at 10: TCP's initial window
    >>> adaptive
    Adaptive(limit=10, floor=1, ceiling=128, decrease=0.5)
    >>> async def ask(prompt):
    ...     return prompt.upper()
    >>> run = trio.run(Supervisor(ask, max_workers=4, meters=[adaptive]).run, ["a", "b"])
    >>> adaptive.limit  # slow start: each success raised it by one
    12

    ```

    It is a [`Capacity`][trio_supervisor.Capacity] whose limit it moves itself, from how each
    attempt went (``observe``):

    - **Slow start.** Until the first decrease, each success raises the limit by one, so it
      doubles with every round of attempts. It begins at ``start``: 10 by default, TCP's
      initial window.
    - **Increase.** After a decrease, the limit grows by one after every ``limit`` successes
      (one round), up to ``ceiling``; next to a count in flight that the endpoint refused, after
      ``PATIENCE`` rounds, so that a hard bound is probed rarely.
    - **Decrease, fitted to the bound.** A refused attempt was sent while ``n`` attempts held
      a place, itself included: the endpoint holds fewer than ``n``, so the limit goes to
      ``n - 1``, never lower than ``decrease`` times itself. Against a hard bound the limit
      settles at the bound instead of sawing below it; against a rate, which no count in
      flight measures, each refusal of an attempt sent after the last decrease takes it down
      again, by one at least.
    - With ``fit=False``, plain AIMD (TCP's congestion control, Netflix's
      ``concurrency-limits``): a refusal multiplies the limit by ``decrease``.

    A refusal is a failure that says the endpoint is over its limit: by default one whose
    ``retry_after`` is a number (the server asked for a wait) or whose ``status`` is 429, as a
    [`RateLimited`][trio_supervisor.agents.RateLimited]'s; other failures leave the limit as it
    is. Only the refusal of an attempt started after the last decrease decreases it again, so
    one burst of 429s decreases it once. A refused slot sleeps its Retry-After with no place
    held. The limit never leaves ``[floor, ceiling]``.

    ```python
    adaptive = Adaptive(128)  # share one among the supervisors that call one endpoint
    supervisor = Supervisor(agent, max_workers=128, meters=[adaptive])
    ```

    Args:
      ceiling: the largest limit (give the supervisor's ``max_workers``).
      floor: the smallest limit.
      start: the limit to begin with: 10 by default, or ``floor`` or ``ceiling`` if 10 is not
        between them.
      decrease: the factor that bounds a decrease (``fit``) or makes it (plain AIMD), in
        ``(0, 1)``.
      shrink_on: the failures that count as refusals: an `Exception` subclass or a tuple of
        them; None for the default above.
      fit: True (the default) to fit the limit to the endpoint's bound from each refusal;
        False for plain AIMD.

    Raises:
      TypeError: if a bound is not an int, ``shrink_on`` not exception classes, or ``fit``
        not a bool.
      ValueError: unless ``1 <= floor <= start <= ceiling`` and ``0 < decrease < 1``.
    """

    PATIENCE = 4
    """Rounds the limit waits, next to a count in flight that was refused, before trying it."""

    def __init__(
        self,
        ceiling: int,
        *,
        floor: int = 1,
        start: int | None = None,
        decrease: float = 0.5,
        shrink_on: type[Exception] | tuple[type[Exception], ...] | None = None,
        fit: bool = True,
    ) -> None:
        self.ceiling = _validate.count("ceiling", ceiling)
        self.floor = _validate.count("floor", floor)
        if start is None:
            begin = max(self.floor, min(self.ceiling, 10))
        else:
            begin = _validate.count("start", start)
        if not self.floor <= begin <= self.ceiling:
            raise ValueError(
                f"Adaptive needs floor <= start <= ceiling, got floor={self.floor}, "
                f"start={begin}, ceiling={self.ceiling}"
            )
        self.decrease = _validate.number("decrease", decrease)
        if not self.decrease < 1:
            raise ValueError(f"decrease must be < 1 (a factor that shrinks), got {decrease!r}")
        if not isinstance(fit, bool):
            raise TypeError(f"fit must be True or False, got {type(fit).__name__} {fit!r}")
        self.fit = fit
        if shrink_on is None:
            self._shrinks = self._refused_by_default
        else:
            classes = _validate.retry_on(shrink_on)
            self._shrinks = lambda failure: isinstance(failure, classes)
        self._capacity = Capacity(begin)
        self._successes = 0
        self._epoch = 0  # how many decreases so far
        self._refused = 0  # the count in flight a 429 last refused, until a round passes it
        # each running attempt's epoch when it started, and how many were in flight then
        self._began: weakref.WeakKeyDictionary[trio.lowlevel.Task, tuple[int, int]] = (
            weakref.WeakKeyDictionary()
        )
        self.decreases = 0
        """How many times the limit was decreased."""

    @staticmethod
    def _refused_by_default(failure: Exception) -> bool:
        """Whether ``failure`` says the endpoint is over its limit: a wait asked, or a 429."""
        wait = getattr(failure, "retry_after", None)
        asked = isinstance(wait, int | float) and not isinstance(wait, bool)
        return asked or getattr(failure, "status", None) == 429

    @property
    def limit(self) -> int:
        """How many attempts may run at once, now."""
        return self._capacity.limit

    @property
    def in_use(self) -> int:
        """How many attempts hold a place now."""
        return self._capacity.in_use

    async def acquire(self) -> None:
        """Wait for a place under the current limit (a cancellation point)."""
        capacity = self._capacity
        await capacity.acquire()
        self._began[trio.lowlevel.current_task()] = (self._epoch, capacity.in_use)

    def release(self) -> None:
        """Give back the place the current task holds."""
        self._capacity.release()

    def observe(self, failure: Exception | None) -> None:
        """Learn from the outcome of the attempt the current task just ran.

        Args:
          failure: the attempt's failure, or None when it succeeded.
        """
        began, in_flight = self._began.pop(trio.lowlevel.current_task(), (self._epoch, 0))
        capacity = self._capacity
        limit = capacity.limit
        if failure is None:
            if self._epoch == 0:  # slow start: one more per answer
                if limit < self.ceiling:
                    capacity.limit = limit + 1
                return
            self._successes += 1
            rounds = 1
            if self.fit and self._refused and limit + 1 >= self._refused:
                rounds = self.PATIENCE
            if self._successes >= limit * rounds:
                self._successes = 0
                if limit >= self._refused:
                    self._refused = 0  # the count that was refused went well this time
                if limit < self.ceiling:
                    capacity.limit = limit + 1
        elif began == self._epoch and self._shrinks(failure):
            self._decrease(limit, in_flight)

    def _decrease(self, limit: int, in_flight: int) -> None:
        """A 429 refused an attempt sent with ``in_flight`` in flight, under ``limit``."""
        least = int(limit * self.decrease)  # plain AIMD's decrease: the most it goes down
        shrunk = max(least, in_flight - 1) if self.fit else least
        self._epoch += 1
        self.decreases += 1
        self._successes = 0
        self._refused = in_flight
        self._capacity.limit = max(self.floor, shrunk)

    def __repr__(self) -> str:
        fit = "" if self.fit else ", fit=False"
        return (
            f"Adaptive(limit={self.limit}, floor={self.floor}, ceiling={self.ceiling}, "
            f"decrease={self.decrease:g}{fit})"
        )
