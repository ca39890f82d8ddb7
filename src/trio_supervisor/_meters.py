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

import itertools
import math
import weakref
from collections import deque
from collections.abc import Iterable
from contextvars import ContextVar, Token
from typing import Any, Protocol, runtime_checkable

import trio

from . import _validate
from ._journal import Journal, new_owner, shared_journal

POLL = 0.01  # seconds a shared capacity's waiter first waits before it looks again (then doubled)
POLL_MOST = 0.5  # seconds it waits at most between two looks
RENEWALS = 3  # a shared place's lease is renewed this many times per its length


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

    Sharing has a cost: an attempt that waits on another supervisor drawing from the same
    capacity (a parent on its children) holds a place its children need, and ``limit`` such
    parents never finish. Share it among the supervisors whose workers do the work.

    Built on ``trio.CapacityLimiter``, whose ``total_tokens`` wakes waiters when it grows. Each
    acquisition borrows on behalf of the task that runs the attempt, so a task holds at most one
    token of a given capacity at a time.

    **Shared across processes.** ``Capacity(8, shared="endpoint-a")`` bounds the attempts of
    every supervisor, in every process, whose run's journal (``durable=Durable(run_id,
    journal)``) is on the same database and whose capacity has the same name: at most 8 of
    them at once, all told. Each place is a row of the journal's ``places`` table, held with a
    lease (the journal's ``lease``, 30 s without one) that this process renews every third of
    it: a holder killed, or hung, loses its places once their lease runs out (at once, for a
    process on this host that is gone). A waiter looks again after a short sleep that doubles,
    up to ``POLL_MOST`` (at once when a place of this process is given back); ``in_use`` and
    ``waiting`` count this process's attempts. Give every process the same limit. A run
    without a journal is refused before any work.

    Args:
      limit: how many attempts may run at once.
      shared: a name: the capacity is shared through the run's journal with every other
        capacity of that name on its database; None: within this process.

    Raises:
      TypeError: if ``limit`` is not an int, or ``shared`` not a str.
      ValueError: if ``limit`` is < 1, or ``shared`` is empty.
    """

    def __init__(self, limit: int, *, shared: str | None = None) -> None:
        self._limiter = trio.CapacityLimiter(_validate.count("limit", limit))
        self.shared = _shared_name(shared)
        """The name the capacity is shared under, or None."""
        self._places = None if self.shared is None else _Places(self.shared)

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
                break
            limiter.release()
        if self._places is not None:  # and a place among every process's
            try:
                await self._places.take(self)
            except BaseException:
                limiter.release()
                raise

    def release(self) -> None:
        """Give back the place the current task holds.

        Raises:
          RuntimeError: if the current task holds no place.
        """
        if self._places is not None:
            self._places.give_back()
        self._limiter.release()

    def __repr__(self) -> str:
        shared = "" if self.shared is None else f", shared={self.shared!r}"
        return f"Capacity(limit={self.limit}{shared}, in_use={self.in_use}, waiting={self.waiting})"


def _shared_name(shared: object) -> str | None:
    """``shared`` checked: a non-empty str, or None."""
    if shared is None:
        return None
    if not isinstance(shared, str) or not shared:
        raise (TypeError if not isinstance(shared, str) else ValueError)(
            f"shared must be a non-empty str (the name every process shares the meter by) or "
            f"None, got {shared!r}"
        )
    return shared


class _Places:
    """The places of a shared [`Capacity`][trio_supervisor.Capacity] this process holds, in
    the journals of the runs that took them, and the task that renews them.

    Invariant: ``held`` has an entry for each attempt's task from the place taken to its
    release; ``renewing`` holds each journal whose renewing task runs, while it holds a place
    of ``held``.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.owner = new_owner()
        self.numbers = itertools.count()
        self.held: dict[trio.lowlevel.Task, tuple[Journal, str]] = {}
        self.renewing: set[Journal] = set()
        self.freed = trio.Event()  # a place of this process was given back
        self.failures: dict[Journal, Exception] = {}  # a renewal's, said by the next take

    async def take(self, meter: Capacity) -> None:
        """Wait for a place under ``meter``'s limit among every process on the run's
        journal's database (a cancellation point)."""
        journal = shared_journal(meter)
        failure = self.failures.pop(journal, None)
        if failure is not None:
            raise failure
        holder = f"{self.owner}:{next(self.numbers)}"
        await trio.lowlevel.checkpoint_if_cancelled()
        pause = POLL
        # taken or not, the answer comes back whole: a place taken is in held before the next
        # cancellation point, so its release gives it back
        while not await journal.take_place(self.name, holder, self.owner, meter.limit):
            with trio.move_on_after(pause):
                await self.freed.wait()
            pause = min(2 * pause, POLL_MOST)
        self.held[trio.lowlevel.current_task()] = (journal, holder)
        if journal not in self.renewing:
            self.renewing.add(journal)
            trio.lowlevel.spawn_system_task(self.renew, journal, name=f"renew {self.name}")

    def give_back(self) -> None:
        """The current task's attempt has ended: its place is free (written without waiting;
        if that is lost, its lease runs out)."""
        found = self.held.pop(trio.lowlevel.current_task(), None)
        if found is None:
            return
        journal, holder = found
        journal.drop_place(self.name, holder)
        self.freed.set()
        self.freed = trio.Event()

    async def renew(self, journal: Journal) -> None:
        """Renew this process's places in ``journal`` every third of their lease, while it
        holds one (a system task: it ends with the trio run). A failure ends it, and is said
        by the next ``take`` in that journal; the places then run out with their lease."""
        try:
            while any(held is journal for held, _ in self.held.values()):
                await trio.sleep(journal.place_lease / RENEWALS)
                await journal.renew_places(self.name, self.owner)
        except Exception as exc:
            self.failures[journal] = exc
        finally:
            self.renewing.discard(journal)


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

    **Shared across processes.** ``RateLimit(20, burst=20, shared="endpoint-a")`` bounds the
    attempts that start in every process whose run's journal is on the same database, with a
    rate limit of the same name: its theoretical arrival time is one row of the journal's
    ``buckets`` table, read and moved in one transaction; a waiter sleeps until its token is
    due (on the journal's clock) and asks again. Give every process the same rate and burst. A
    run without a journal is refused before any work.

    Args:
      rate: how many attempts a second may start, in the long run.
      burst: how many may start at once after a quiet spell (the bucket's size).
      shared: a name: the limit is shared through the run's journal with every other rate
        limit of that name on its database; None: within this trio run.

    Raises:
      TypeError: if ``rate`` is not a number, ``burst`` not an int, ``shared`` not a str.
      ValueError: if ``rate`` is not positive, ``burst`` is < 1, or ``shared`` is empty.
    """

    __slots__ = ("_interval", "_lock", "_tat", "_tolerance", "burst", "rate", "shared")

    def __init__(self, rate: float, burst: int = 1, *, shared: str | None = None) -> None:
        self.rate = _validate.number("rate", rate)
        self.burst = _validate.count("burst", burst)
        self.shared = _shared_name(shared)
        self._interval = 1.0 / self.rate
        self._tolerance = (self.burst - 1) * self._interval
        self._tat = -_INF  # when the bucket will be full again: long ago
        self._lock: trio.Lock | None = None  # made inside the run that first uses it

    async def acquire(self) -> None:
        """Wait for a token, in turn (a cancellation point)."""
        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:
            if self.shared is not None:
                await self._take_shared(self.shared)
                return
            while True:
                now = trio.current_time()
                # `tat` is when the bucket would be full again; a token is free while that is
                # at most `tolerance` (burst - 1 tokens' worth of time) away
                wait = self._tat - self._tolerance - now
                if wait <= 1e-9:  # within float rounding of due: due
                    self._tat = max(self._tat, now) + self._interval
                    return
                await trio.sleep(wait)

    async def _take_shared(self, name: str) -> None:
        """Wait for a token of the bucket ``name`` every process on the run's journal shares."""
        journal = shared_journal(self)
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            wait = await journal.take_token(name, self._interval, self._tolerance)
            if wait <= 0:
                return
            await trio.sleep(wait)

    def release(self) -> None:
        """Nothing to give back: a token is spent when its attempt starts."""

    def __repr__(self) -> str:
        shared = "" if self.shared is None else f", shared={self.shared!r}"
        return f"RateLimit(rate={self.rate:g}, burst={self.burst}{shared})"


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


_INF = float("inf")
_ROOT2 = math.sqrt(2)


_REPORTED: ContextVar[list[float] | None] = ContextVar("trio_supervisor_latency", default=None)
"""The latencies the running attempt's worker reported (``report_latency``), for the
``Adaptive`` meters it holds a place of: set by the first of them in ``acquire``."""


def report_latency(seconds: float) -> None:
    """Tell the running attempt's [`Adaptive`][trio_supervisor.Adaptive] meters the latency that
    measures the endpoint's load, in place of the attempt's whole time.

    ```pycon
    >>> async def worker(prompt):
    ...     await trio.sleep(2)  # a long reply: 2 s, of which the first token took 0.5
    ...     report_latency(0.5)
    ...     return prompt
    >>> adaptive = Adaptive(64)
    >>> _ = trio.run(Supervisor(worker, max_workers=4, meters=[adaptive]).run, ["a"],
    ...              clock=trio.testing.MockClock(autojump_threshold=0))
    >>> adaptive.no_load
    0.5

    ```

    A worker that knows better than the attempt's time how long the server took to get to its
    request gives it here: the time to the first token of a streamed reply, or the server's
    own account (the time the request queued plus the time it took alone). It is read for
    the attempt that succeeds; call it once, or again to correct it (the last one counts).
    Outside an attempt that an ``Adaptive`` meters, it does nothing.

    Args:
      seconds: the latency, a number > 0.

    Raises:
      TypeError, ValueError: if ``seconds`` is not a positive number.
    """
    value = _validate.number("seconds", seconds)
    reported = _REPORTED.get()
    if reported is not None:
        reported.append(value)


class Adaptive:
    """A concurrency limit that finds what an endpoint sustains: from the latency of its
    answers, and from its refusals.

    ```pycon
    >>> adaptive = Adaptive(128)  # at most 128, starting at 10
    >>> adaptive
    Adaptive(limit=10, floor=1, ceiling=128, decrease=0.5)
    >>> async def ask(prompt):  # an endpoint that takes 1 s whatever the load
    ...     await trio.sleep(1)
    ...     return prompt.upper()
    >>> run = trio.run(Supervisor(ask, max_workers=128, meters=[adaptive]).run, ["a"] * 400,
    ...                clock=trio.testing.MockClock(autojump_threshold=0))
    >>> adaptive.limit  # more in flight bought more answers a second each time: the ceiling
    128

    ```

    It is a [`Capacity`][trio_supervisor.Capacity] whose limit it moves itself, from how each
    attempt went (``observe``): the principle of Netflix's ``concurrency-limits`` (Gradient2,
    Vegas) and Envoy's adaptive concurrency (a no-load latency, a limit that grows while
    latency shows no queue and falls when it does), judged on throughput rather than on
    latency alone, since a batching GPU server answers each request slower the more it is
    given and still answers more a second. Answers are counted in rounds: a round ends when
    ``limit`` answers (at least ``ROUND``) of attempts let in since it began are in. A latency
    is an attempt's time from its place to its end, or what its worker reported with
    [`report_latency`][trio_supervisor.report_latency] (a time to first token, a queue time);
    the no-load estimate is the least of the last ``WINDOW`` (a window, so it is measured
    again as the endpoint changes).

    - **Start: grow while more in flight buys more throughput, judged by one round of
      replies.** A rise is judged by its own attempts, as soon as they are answered: the
      round begins with the rise, and its throughput is, by Little's law, the limit over the
      latency of its slowest answers but a tenth (``SLOWEST``). Sent together, ``n``
      requests that a server runs at once come back together, after a batch's time; behind
      a queue, the last ones wait for the first ones, and their latency shows it the round
      they are sent, where answers counted over a window show it only once a round of them
      has gone (a server of 32 given 60 answers the first 32 as fast as one of 256 would).
      After the first round, if its mean latency is within ``1 + TOLERANCE`` of the no-load
      estimate (nothing queued: replies up to 3:1 in length average at most twice the least,
      where 10 sent at once to a server that answers one at a time wait 5.5 times the first
      on average, and over 3.5 times even when the first is the longest), the limit is
      multiplied by ``GROWTH``; after each later one, again if the throughput grew at least
      as ``(limit / previous) ** CLEAR`` (a server that runs them all at once gains as the
      limit; one that batches, as the limit to a power under 1), and only doubled if it grew
      less than that but at least as ``(limit / previous) ** GAIN``: with replies of varied
      length a round's gain is read within about a tenth of that power either way, so a
      server of 32 may read as one of 256, and a doubling then queues one round less than a
      jump to the ceiling would (the next round reads no gain and finds the knee). The first round's
      throughput is its limit over its *mean* latency (it queued nothing, so by Little's law
      that is what it answers a second): its slowest answers are only its longest replies,
      and a next level whose queue averages the long and the short ones would pass for a
      gain over them. From 10, that is 60 after one round of replies and 256 after two,
      however long a reply takes: against a server that batches 256, the limit is there
      within the time one reply takes with 256 at once (a round at 10 and one at 60, each
      faster than one at 256, and a quarter of a no-load latency between them). Where it
      falls short: with replies varying by half either way, the slowest tenth of the round at
      60 are its longest replies, its gain may not show, and the limit may stay near 60
      (seven runs of twelve, seeds 95-106, against a server batching 256; of the five that
      reach the ceiling, two double first; at a quarter either way, those that stopped there
      under a ``GAIN`` of 0.5, one in five, reach the ceiling).
    - **Open a rise in turn.** The places a rise adds open one after another, not at once:
      at the start over ``RISE`` times the no-load latency (time is what the start costs),
      later over one no-load latency, the round then measuring the new limit once they are
      all open. A refusal comes back at once: against a rate limit it stops a rise after a
      few places, where a burst of them would all be refused.
    - **Stop, and shrink, when latency inflates without it.** A first round that queued (its
      latency inflated, its throughput that of fewer in flight) sets the limit to what the
      endpoint works on at once by Little's law: throughput times no-load latency (1 against
      a server that answers one at a time). A later round that gained too little puts it
      where the throughput, growing as it did below (``GAIN``'s pace when unknown), meets
      that round's: the knee, looked at from above.
    - **Re-probe now and then.** After a round at the knee, and then every ``PROBE`` rounds,
      the level beside it (``sqrt(2)`` times it, down and up in turn) is tried for a round
      (its throughput: every answer that came in it, a second, once the rise is open): a
      level down is kept when it keeps ``KNEE`` of the throughput (the same answers with less
      queued), a level up when it gains as above; a kept level is followed by the next one
      the same way. A round after a fall is not measured (the queue the higher limit left
      goes out in it). So an endpoint that got faster or slower is met at its new bound.
    - **Drop at once on a refusal.** A refused attempt says the endpoint holds no more than
      what it still works on: the limit goes to the attempts sent and not yet answered, one
      lower at least and at most ``decrease`` times lower; the same burst's next refusals
      take it down to what is still in flight, at once (``fit=False``: to ``decrease`` times
      itself). Next to a count in flight that was refused, a probe up is one more, and waits
      ``PATIENCE`` times as long.

    Why not start slow, as TCP does, or at the ceiling? A slow start doubles the limit each
    round of answers, so against a GPU server whose answers take seconds it spends five rounds
    going from 10 to 256, with no refusal to stop it early either way. Starting at the
    ceiling costs a whole ceiling's queue against a server that works on one request at a
    time. Multiplying by 6 a round reaches 256 in two rounds, a first round at 60 against a
    server of 32 queues at most one batch more, and the first round (10 at once) already tells
    a server that queues them from one that works on them together. No rule that reads
    answers can go faster without a cost elsewhere: below 33 in flight a server that batches
    32 answers exactly as one that batches 256, and only a round of replies with more in
    flight tells them apart; a larger step queues more than a batch behind the first, and a
    smaller start leaves too few answers to judge a round by. Nor can any rule meet the
    targets of ``benchmarks/endpoints.py`` against batches of 256 while it keeps those against
    one at a time and batches of 32: a default sends at most 27 of 512 before its first answer
    (the sequential p95) and holds at most 89 until more than 32 answer together (the
    batching32 p95), and within those bounds the best schedule reaches about 77% of fixed
    K=256's throughput and 1.58x its makespan for 256 requests (targets: 90%, 1.2x), as
    ``benchmarks/reach.py`` computes from the server's curve.

    A refusal is a failure that says the endpoint is over its limit: by default one whose
    ``retry_after`` is a number (the server asked for a wait: a 429, a 503 or 529 with
    ``Retry-After``) or whose ``status`` is 429, as a
    [`RateLimited`][trio_supervisor.agents.RateLimited]'s; other failures leave the limit as it
    is and are no sample. Only the refusal of an attempt started after the last decrease
    decreases it again, so one burst of refusals decreases it once (and fits it to what is in
    flight). A refused slot sleeps its Retry-After with no place held. The limit never leaves
    ``[floor, ceiling]``.

    With ``latency=False``, the refusals alone move it (the rule before latencies were read):

    - **Slow start.** Until the first decrease, each success raises the limit by one, so it
      doubles with every round of attempts.
    - **Increase.** After a decrease, the limit grows by one after every ``limit`` successes
      (one round), up to ``ceiling``; next to a count in flight that the endpoint refused, after
      ``PATIENCE`` rounds, so that a hard bound is probed rarely.
    - **Decrease.** A refused attempt was sent while ``n`` attempts held a place: the limit
      goes to ``n - 1``, never lower than ``decrease`` times itself (``fit``), or to
      ``decrease`` times itself (plain AIMD, ``fit=False``); against a rate, which no count in
      flight measures, each refusal of an attempt sent after the last decrease takes it down
      again, by one at least.

    ```python
    adaptive = Adaptive(256)  # share one among the supervisors of one endpoint
    supervisor = Supervisor(agent, max_workers=256, meters=[adaptive])
    ```

    The latency is measured from the moment this meter gives the attempt its place: give it
    before any meter that waits (a [`RateLimit`][trio_supervisor.RateLimit]) in ``meters``'s
    order, or put it last, so that no other wait counts as the endpoint's.

    Args:
      ceiling: the largest limit (give the supervisor's ``max_workers``).
      floor: the smallest limit.
      start: the limit to begin with: 10 by default, or ``floor`` or ``ceiling`` if 10 is not
        between them.
      decrease: the factor that bounds a refusal's first drop (``fit``) or makes it (plain
        AIMD), in ``(0, 1)``.
      shrink_on: the failures that count as refusals: an `Exception` subclass or a tuple of
        them; None for the default above.
      fit: True (the default) to fit the limit to the endpoint's bound from each refusal;
        False for plain AIMD.
      latency: True (the default) to read each answer's latency as above; False for the
        refusals alone.

    Raises:
      TypeError: if a bound is not an int, ``shrink_on`` not exception classes, or ``fit``
        or ``latency`` not a bool.
      ValueError: unless ``1 <= floor <= start <= ceiling`` and ``0 < decrease < 1``.
    """

    PATIENCE = 4
    """How many times as long the limit waits, next to a count in flight that was refused,
    before trying one more (rounds, ``latency=False``; probes, the latency rule)."""
    GAIN = 0.44
    """The least growth of throughput worth more in flight: ``n ** GAIN`` for ``n`` times as
    many, 36% a doubling: below the gain a round at 60 reads against a server that batches
    256 when replies vary by half either way (about ``6 ** 0.47`` in ``endpoints.py``: its
    slowest tenth are its longest replies, where the server gains ``6 ** 0.63``), above the
    one a server of 32 given 60 reads (about ``6 ** 0.40``)."""
    CLEAR = 0.55
    """A gain read at the start as ``n ** CLEAR`` or more for ``n`` times as many in flight is
    clear: the limit grows by ``GROWTH``; one between ``n ** GAIN`` and this only doubles it.
    Given 60, a server batching 32 reads up to ``6 ** 0.5`` when replies vary by half either
    way, and one batching 256 from ``6 ** 0.46`` when they vary by a quarter: no one threshold
    tells them apart, and a doubling costs less than a jump to the ceiling. Equal replies read
    ``6 ** 0.63`` against 256."""
    GROWTH = 6
    """What the limit is multiplied by after a round that clearly gained, until the knee is
    known."""
    KNEE = 0.95
    """A limit a level lower is taken when it keeps this share of the throughput."""
    TOLERANCE = 1.5
    """How far above the no-load estimate (the least latency) the first round's mean latency
    still shows no queue: replies up to 3:1 in length average at most twice the least."""
    PROBE = 8
    """Rounds at the knee between two probes of the levels beside it."""
    ROUND = 8
    """The fewest answers a round counts, whatever the limit."""
    WINDOW = 64
    """How many of the last successes the no-load estimate is the least latency of."""
    SLOWEST = 0.9
    """At the start, a round's throughput is its limit over this quantile of its latencies:
    the slowest but a tenth, where a queue shows (and not one straggler alone)."""
    RISE = 0.25
    """At the start, the share of the no-load latency a rise opens its new places over."""

    def __init__(
        self,
        ceiling: int,
        *,
        floor: int = 1,
        start: int | None = None,
        decrease: float = 0.5,
        shrink_on: type[Exception] | tuple[type[Exception], ...] | None = None,
        fit: bool = True,
        latency: bool = True,
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
        for name, flag in (("fit", fit), ("latency", latency)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {type(flag).__name__} {flag!r}")
        self.fit = fit
        self.latency = latency
        if shrink_on is None:
            self._shrinks = self._refused_by_default
        else:
            classes = _validate.retry_on(shrink_on)
            self._shrinks = lambda failure: isinstance(failure, classes)
        self._capacity = Capacity(begin)
        self._successes = 0
        self._epoch = 0  # how many decreases so far
        self._refused = 0  # the count in flight a 429 last refused, until a round passes it
        # each running attempt's epoch when it started, how many were in flight then, when
        # its place was given, and the latencies its worker reported
        self._began: weakref.WeakKeyDictionary[
            trio.lowlevel.Task, tuple[int, int, float, list[float]]
        ] = weakref.WeakKeyDictionary()
        self._tokens: weakref.WeakKeyDictionary[trio.lowlevel.Task, Token[list[float] | None]] = (
            weakref.WeakKeyDictionary()
        )
        self._latencies: deque[float] = deque(maxlen=self.WINDOW)
        # the round under way: since when it counts attempts let in, since when it measures
        # answers, the last change of the count sent, that count (attempts sent and not
        # ended), the counted answers and their latencies so far
        self._round_began = self._mark = self._measured = 0.0
        self._holding = 0
        self._answers = 0
        self._all = 0  # every answer in the round, let in before it or not
        self._took = 0.0
        self._slow: list[float] = []  # the counted answers' latencies, in the round's order
        self._first: tuple[int, float] | None = None  # the start's last round that gained
        self._home: tuple[int, float] | None = None  # the knee: its limit and throughput
        self._probing = 0  # the direction of the probe under way: +1 up, -1 down, 0 none
        self._rounds = 0  # rounds at the knee since the last probe
        self._next_probe = 1  # the direction of the next probe
        self._slope: float | None = None  # how throughput grew with the limit at the start
        self._draining = False  # whether the round under way drains a higher limit's queue
        # the last rise: from, to, since when, over how long
        self._ramp: tuple[int, int, float, float] | None = None
        self._rising = 0  # places held that wait for their turn in the rise
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

    @property
    def no_load(self) -> float | None:
        """The no-load latency estimate: the least latency of the last ``WINDOW`` successes, in
        seconds; None before the first."""
        return min(self._latencies) if self._latencies else None

    async def acquire(self) -> None:
        """Wait for a place under the current limit (a cancellation point)."""
        capacity = self._capacity
        while True:
            await capacity.acquire()
            due = self._opens(self._holding + self._rising + 1)
            if due > trio.current_time():  # a place above the limit before it grew: its turn
                self._rising += 1
                try:
                    await trio.sleep_until(due)
                except BaseException:
                    capacity.release()
                    raise
                finally:
                    self._rising -= 1
            if capacity.in_use <= capacity.limit:
                break
            capacity.release()  # the limit fell meanwhile (a refusal): wait for a place again
        task = trio.lowlevel.current_task()
        reported = _REPORTED.get()
        if reported is None:  # the first Adaptive of this attempt: where its worker reports
            reported = []
            self._tokens[task] = _REPORTED.set(reported)
        now = self._held(+1)
        self._began[task] = (self._epoch, capacity.in_use, now, reported)

    def _opens(self, place: int) -> float:
        """When the ``place``-th place held opens: one above the limit before it grew, in
        turn over one no-load latency, after the places waiting for their turn already."""
        ramp = self._ramp
        if ramp is None or place <= ramp[0]:
            return -_INF
        base, top, since, spread = ramp
        return since + spread * min(1.0, (place - base) / (top - base))

    def _set(self, limit: int) -> None:
        """Move the limit to ``limit``: a rise opens its new places in turn over one no-load
        latency (a refusal, which comes back at once, stops it early), a fall at once."""
        now = self._capacity.limit
        if self.latency and limit > now and self.no_load:
            since = trio.current_time()
            # at the start, quickly (time is what the start costs); later, over a whole
            # no-load latency, so that a refusal stops a probe after a few places
            spread = self.no_load * (self.RISE if self._home is None else 1.0)
            self._ramp = (now, limit, since, spread)
            # the round measures the new limit once its places are all open
            self._measured = max(self._measured, since + spread)
            # at the start, the round counts the rise's own attempts: a queue shows in their
            # latencies (see _end_round); later, those let in once it is all open
            self._round_began = since if self._home is None else self._measured
        elif limit < now:
            self._ramp = None
        self._capacity.limit = limit

    def release(self) -> None:
        """Give back the place the current task holds."""
        self._capacity.release()
        self._held(-1)
        token = self._tokens.pop(trio.lowlevel.current_task(), None)
        if token is not None:
            _REPORTED.reset(token)

    def _held(self, step: int) -> float:
        """Count an attempt sent (``+1``) or ended (``-1``); the time now."""
        now = trio.current_time()
        self._mark = now
        self._holding += step
        return now

    def observe(self, failure: Exception | None) -> None:
        """Learn from the outcome of the attempt the current task just ran.

        Args:
          failure: the attempt's failure, or None when it succeeded.
        """
        began, in_flight, started, reported = self._began.pop(
            trio.lowlevel.current_task(), (self._epoch, 0, None, [])
        )
        limit = self._capacity.limit
        if failure is not None:
            if not self._shrinks(failure):
                return
            if began == self._epoch:
                self._decrease(limit, in_flight)
                self._new_round()
            elif self.latency and self.fit and self._holding < limit:
                # one more refusal of the burst that was refused: the endpoint holds at most
                # what is still in flight
                self._settle(max(self.floor, self._holding), 0.0)
                self._refused = min(self._refused, self._capacity.limit + 1)
            return
        if not self.latency:
            self._refusals_only(limit)
        elif started is not None:  # an attempt this meter let in
            took = reported[-1] if reported else trio.current_time() - started
            self._latencies.append(took)
            if trio.current_time() >= self._measured:
                self._all += 1
            if started >= self._round_began:  # let in under this round's limit: counted
                self._answers += 1
                self._took += took
                self._slow.append(took)
                if self._answers >= max(limit, self.ROUND):
                    self._end_round(limit)

    def _refusals_only(self, limit: int) -> None:
        """A success, under the rule of refusals alone (``latency=False``)."""
        if self._epoch == 0:  # slow start: one more per answer
            if limit < self.ceiling:
                self._capacity.limit = limit + 1
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
                self._capacity.limit = limit + 1

    def _new_round(self) -> None:
        """Start counting a round from now."""
        self._held(0)
        self._round_began = self._measured = self._mark
        self._answers = 0
        self._all = 0
        self._took = 0.0
        self._slow = []

    def _end_round(self, limit: int) -> None:
        """A round of answers is in: its throughput decides the next limit."""
        self._held(0)
        spent = self._mark - self._measured
        if spent <= 0:
            return  # a round of no time: nothing measured; let it go on
        # answers a second over the round: every answer that came in it, whenever its
        # attempt was let in (one let in earlier still shows what the endpoint does now)
        rate = self._all / spent
        took = self._took / self._answers
        # the round's own answers: ``limit`` in flight that the endpoint answered within the
        # time of the slowest but a tenth of them, by Little's law (a queue shows in it at
        # once, a window of answers only once its first round is gone)
        slow = sorted(self._slow)
        drained = limit / slow[int(self.SLOWEST * (len(slow) - 1))]
        self._new_round()
        if self._draining:  # what a higher limit left queued went out in it: measure again
            self._draining = False
            return
        home = self._home
        if home is None:  # the start: grow while it gains, or find the knee
            self._start(limit, drained, took)
            return
        at, best = home
        if self._probing > 0:  # a level up: taken if it gained enough for its concurrency
            if rate >= best * (limit / at) ** self.GAIN:
                if limit > self._refused:
                    self._refused = 0  # more than the count that was refused went well
                if self._near(limit):  # next to a count that was refused: one at a time
                    self._settle(limit, rate)
                else:
                    self._home = (limit, rate)
                    self._go(limit, up=True)
            else:
                self._settle(at, best)
        elif self._probing < 0:  # a level down: taken if it kept nearly all the throughput
            if rate >= best * self.KNEE:
                # fewer in flight answer no faster: more is what a queue left drained
                self._home = (limit, min(rate, best))
                self._go(limit, up=False)
            else:
                self._settle(at, best)
        else:  # a round at the knee: its throughput now, and a probe every PROBE rounds
            self._home = (at, rate)
            self._rounds += 1
            # next to a count the endpoint refused, the bound is that count, not a queue:
            # probes go up only, one at a time and PATIENCE times as rarely
            near = self._near(at)
            if near:
                self._next_probe = 1
            patience = self.PATIENCE if near else 1
            if self._rounds >= self.PROBE * patience:
                self._rounds = 0
                self._go(at, up=self._next_probe > 0)
                self._next_probe = -self._next_probe

    def _start(self, limit: int, rate: float, took: float) -> None:
        """The end of a round before the knee is known."""
        first = self._first
        growth = self.GROWTH
        if first is None:  # nothing to compare with: gained if it queued nothing
            no_load = self.no_load
            gained = no_load is not None and took <= no_load * (1 + self.TOLERANCE)
        else:
            at, best = first
            gained = limit > at and rate >= best * (limit / at) ** self.GAIN
            if rate < best * (limit / at) ** self.CLEAR:
                growth = 2  # a gain within the reads' spread: a smaller step
        if gained and limit < self.ceiling:
            steady = rate
            if first is None:
                # the first round, all sent at once, queued nothing: it answers ``limit`` a
                # mean latency, by Little's law, the rate the next level must beat (judged by
                # its slowest answers, where a queue shows). Read by its own slowest answers,
                # its longest replies, a next level whose queue averages the long and the
                # short ones would pass for a gain over it
                steady = max(rate, limit / took)
            if first is not None and steady > first[1]:  # how throughput grew with the limit
                self._slope = math.log(steady / first[1]) / math.log(limit / first[0])
            self._first = (limit, steady)
            self._set(min(self.ceiling, limit * growth))
            return
        if gained:  # the ceiling, reached
            at = limit
        elif first is None:  # the first round queued: what the endpoint works on at once,
            at = round(rate * (self.no_load or took))  # by Little's law
        else:
            # the knee is between the last level that gained and this one: where the
            # throughput, growing as it did below (as the limit, when unknown), meets this
            # round's
            below, gave = first
            slope = self._slope or self.GAIN
            at = below
            if rate > gave:
                at = round(below * (rate / gave) ** (1 / slope))
        at = max(self.floor, min(limit, self.ceiling, at))
        self._first = None
        # the knee is at most here: measure a round there, then look one level down first
        self._settle(at, rate)
        self._rounds = self.PROBE - 1
        self._next_probe = -1

    def _go(self, limit: int, *, up: bool) -> None:
        """Probe the level beside ``limit`` (``sqrt(2)`` up or down, or one up next to a count
        the endpoint refused), or settle at ``limit`` when there is none within ``[floor,
        ceiling]``."""
        if up:
            step = limit + 1 if self._near(limit) else math.ceil(limit * _ROOT2)
        else:
            step = math.floor(limit / _ROOT2)
        step = max(self.floor, min(self.ceiling, step))
        if step == limit:
            self._probing = 0
            self._set(limit)
            return
        self._probing = 1 if up else -1
        self._draining = not up
        self._set(step)

    def _near(self, limit: int) -> bool:
        """Whether a level up from ``limit`` (``sqrt(2)`` times it) reaches a count in flight
        that the endpoint refused."""
        return bool(self._refused) and math.ceil(limit * _ROOT2) >= self._refused

    def _settle(self, at: int, rate: float) -> None:
        """The probe did not pay: back to the knee, ``at``."""
        self._draining = at < self._capacity.limit
        self._home = (at, rate)
        self._probing = 0
        self._rounds = 0
        self._set(at)

    def _decrease(self, limit: int, in_flight: int) -> None:
        """A refusal of an attempt sent with ``in_flight`` in flight, under ``limit``."""
        least = int(limit * self.decrease)  # plain AIMD's decrease: the most it goes down
        if not self.fit:
            shrunk = least
        elif not self.latency:
            shrunk = max(least, in_flight - 1)
        else:  # to what the endpoint holds now (the attempts sent and not answered), at
            # most by ``decrease``: the burst's next refusals take it lower (see observe)
            shrunk = min(limit - 1, max(least, self._holding))
        self._epoch += 1
        self.decreases += 1
        self._successes = 0
        self._refused = in_flight
        self._set(max(self.floor, shrunk))
        if self.latency:  # the bound is known: the knee is at most here
            self._first = None
            self._settle(self._capacity.limit, 0.0)
            self._next_probe = 1

    def __repr__(self) -> str:
        fit = "" if self.fit else ", fit=False"
        latency = "" if self.latency else ", latency=False"
        return (
            f"Adaptive(limit={self.limit}, floor={self.floor}, ceiling={self.ceiling}, "
            f"decrease={self.decrease:g}{fit}{latency})"
        )
