"""Budgets that reserve before they spend: calls, tokens and cost, never overshot.

A limit that each attempt checks before it starts and is charged after it ends overshoots as
soon as attempts run in parallel: every one of them checks the same remaining budget, and all
of them spend it. A [`Budget`][trio_supervisor.Budget] makes each attempt **reserve** its worst
case before it starts (one call, its token bound, their price) and **settle** after it ends
with what it really used, giving back the rest; an attempt whose worst case does not fit waits
for a running one to settle, or, when nothing running could give back enough, does not start:
its slot ends ``Status.OVER_BUDGET``. So the spent total never exceeds the limit, at any width.

What an attempt really used comes from its worker, through
[`report_usage`][trio_supervisor.report_usage] (``ChatAgent`` reports each reply's ``usage``);
an attempt that called its worker and reported nothing (a plain worker, a request cut off
before its reply) is charged its whole reservation, the one figure that is sure not to be too
low; an attempt that never called it (a hedge not sent after all) is charged nothing.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import trio

from . import _validate


@dataclass(frozen=True, slots=True)
class Usage:
    """What one attempt uses, or may use at worst: calls, tokens in and out, and their cost.

    ```pycon
    >>> worst = Usage(input_tokens=120, output_tokens=256, cost=0.002)
    >>> worst.calls, worst.tokens
    (1, 376)

    ```

    Args:
      calls: requests made (one per attempt, by default).
      input_tokens: prompt tokens.
      output_tokens: completion tokens.
      cost: their price, in whatever unit the budget counts.

    Raises:
      TypeError: if a count is not an int or ``cost`` not a number.
      ValueError: if a count or ``cost`` is negative, or ``cost`` is not finite: a worst case
        below zero would let a budget overshoot.
    """

    calls: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def __post_init__(self) -> None:
        _validate.budget("calls", self.calls)
        _validate.budget("input_tokens", self.input_tokens)
        _validate.budget("output_tokens", self.output_tokens)
        cost = _validate.number("cost", self.cost, strictly=False)
        if cost == math.inf:
            raise ValueError(f"cost must be a number >= 0 and finite, got {self.cost!r}")
        object.__setattr__(self, "cost", cost)  # frozen: set once, as a float

    @property
    def tokens(self) -> int:
        """Tokens in and out."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cost + other.cost,
        )


NOTHING_USED = Usage(calls=0)
"""What an attempt that never started uses."""


class Tally:
    """What the worker of one attempt reported, through ``report_usage``."""

    __slots__ = ("usage",)

    def __init__(self) -> None:
        self.usage: Usage | None = None  # None: nothing reported


TALLY: ContextVar[Tally | None] = ContextVar("trio_supervisor_usage", default=None)
"""The running attempt's tally: set by the engine around the worker's call, when a budget or a
trace wants it (a task the worker starts copies it, and reports into the same tally)."""


def report_usage(
    *, input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0, calls: int = 1
) -> None:
    """Tell the running attempt's budgets (and its trace) what one request of the worker used.

    ```pycon
    >>> async def worker(prompt):
    ...     report_usage(input_tokens=len(prompt.split()), output_tokens=2)
    ...     return "two words"
    >>> async def main():
    ...     budget = Budget(tokens=100, reserve=lambda prompt: Usage(output_tokens=10))
    ...     await Supervisor(worker, max_workers=2, meters=[budget]).run(["a b c", "d"])
    ...     return budget.spent.tokens
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    8

    ```

    Call it once per request the worker makes (each call adds up); outside an attempt that
    a budget or a trace watches, it does nothing. An attempt that reports nothing is charged
    its whole reservation.

    Args:
      input_tokens: the request's prompt tokens.
      output_tokens: its completion tokens.
      cost: its price.
      calls: how many requests this report covers.

    Raises:
      TypeError, ValueError: if a count is not an int >= 0 or ``cost`` not a finite number
        >= 0 (as [`Usage`][trio_supervisor.Usage]).
    """
    used = Usage(calls, input_tokens, output_tokens, cost)  # checks each figure
    tally = TALLY.get()
    if tally is not None:
        tally.usage = used if tally.usage is None else tally.usage + used


class OverBudget(Exception):
    """An attempt's worst case no longer fits its budget, even if every running attempt gave
    back all it holds: the slot ends ``Status.OVER_BUDGET``, its worker not called.

    ```pycon
    >>> async def work(subtask):
    ...     return subtask
    >>> budget = Budget(calls=1, name="calls")
    >>> aggregate = trio.run(Supervisor(work, max_workers=1, meters=[budget]).run, ["a", "b"])
    >>> late = aggregate[1]
    >>> late.status, isinstance(late.exception, OverBudget), late.exception.budget is budget
    (<Status.OVER_BUDGET: 'over budget'>, True, True)

    ```

    ``budget`` is the budget, by its ``name`` in the message.
    """

    def __init__(self, message: str, budget: Budget) -> None:
        super().__init__(message)
        self.budget = budget


class _Waiter:
    """An attempt waiting in line for its reservation."""

    __slots__ = ("outcome", "served", "wanted")

    def __init__(self, wanted: Usage) -> None:
        self.wanted = wanted
        self.served = trio.Event()
        self.outcome: Hold | OverBudget | None = None  # None: still waiting


class Hold:
    """One attempt's reservation, settled exactly once."""

    __slots__ = ("reserved", "settled")

    def __init__(self, reserved: Usage) -> None:
        self.reserved = reserved
        self.settled = False


_EPSILON = 1e-9  # a cost's float rounding, relative to its limit


class Budget:
    """A limit on calls, tokens and/or cost that parallel attempts never overshoot.

    ```python
    budget = Budget(tokens=110, name="tokens")
    server = httpx2.ASGITransport(app=devserver.app(latency=(0, 0)))  # the loopback server
    async with ChatAgent(
        "m", base_url="http://x/v1", api_key="k", transport=server, max_tokens=100
    ) as agent:  # its worst case: the prompt's estimate (5) + 100 tokens
        aggregate = await Supervisor(agent, max_workers=8, meters=[budget]).run(["a", "b", "c"])
    assert [r.status.value for r in aggregate] == ["ok", "ok", "over budget"]
    assert budget.spent.tokens == 8  # 4 a reply; what is left no longer fits a worst case
    ```

    Give it as a meter (``meters=[budget]``). Before each attempt (a retry included) starts,
    it reserves the attempt's worst case: ``reserve(subtask)`` when given, else the worker's
    own ``worst_case(subtask)`` when it has one (a ``ChatAgent`` with ``max_tokens``: the
    prompt's estimate plus ``max_tokens``, at its ``price``), else one call. The attempt
    waits until the reservation fits beside what is spent and what running attempts hold. After
    it ends (succeeded, failed, timed out or cancelled) the reservation is settled once, with
    what the worker reported through [`report_usage`][trio_supervisor.report_usage], or with
    the whole reservation when it reported nothing (a hedge that was not sent after all, its
    worker never called, is charged nothing); what it did not use is given back, and the
    waiting attempts look again. A worst case that does not fit even if every running attempt
    gave everything back ends its slot ``Status.OVER_BUDGET`` at once, its worker not called,
    the error naming the budget.

    One budget can be shared by several supervisors (a tree, every round of a ``replan``):
    share it among the supervisors whose workers make the calls, as a ``Capacity``; a parent
    that held a reservation while its children waited on the same budget would wait on itself.

    A usage above its reservation is charged as reported: the total stays under the limit as
    long as each worst case is one.

    Args:
      calls: how many requests at most, or None.
      tokens: how many tokens (in and out) at most, or None.
      cost: how much at most, or None.
      name: what messages call it.
      reserve: the worst case of one attempt of a subtask, as a
        [`Usage`][trio_supervisor.Usage]; None for the worker's ``worst_case``, or one call.

    Raises:
      TypeError: if a limit has the wrong type, ``name`` is not a str or ``reserve`` not
        callable.
      ValueError: if no limit is given or one is negative.
    """

    def __init__(
        self,
        *,
        calls: int | None = None,
        tokens: int | None = None,
        cost: float | None = None,
        name: str = "budget",
        reserve: Callable[[Any], Usage] | None = None,
    ) -> None:
        if calls is None and tokens is None and cost is None:
            raise ValueError("a Budget bounds calls, tokens or cost: give at least one of them")
        self.calls = None if calls is None else _validate.budget("calls", calls)
        self.tokens = None if tokens is None else _validate.budget("tokens", tokens)
        self.cost = None if cost is None else _validate.number("cost", cost, strictly=False)
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__} {name!r}")
        if reserve is not None and not callable(reserve):
            raise TypeError(f"reserve must be callable or None, got {type(reserve).__name__}")
        self.name = name
        self._reserve = reserve
        self._spent = NOTHING_USED  # what the settled attempts used
        self._held = [0, 0, 0.0]  # calls, tokens, cost reserved by attempts not yet settled
        self._holds = 0
        self.reservations = 0
        """How many reservations were made."""
        self.settlements = 0
        """How many were settled (each exactly once)."""
        # the attempts waiting for their reservation to fit, in the order they asked
        self._queue: deque[_Waiter] = deque()
        self._by_task: dict[trio.lowlevel.Task, Hold] = {}  # acquire()'s holds

    @property
    def spent(self) -> Usage:
        """What the settled attempts used."""
        return self._spent

    @property
    def held(self) -> Usage:
        """What the attempts not yet settled have reserved."""
        calls, tokens, cost = self._held
        return Usage(int(calls), int(tokens), 0, max(0.0, float(cost)))  # no rounding below 0

    @property
    def outstanding(self) -> int:
        """How many reservations are not settled yet."""
        return self._holds

    def worst_case(self, subtask: Any, worker: Any = None) -> Usage:
        """What one attempt of ``subtask`` reserves (see the class).

        Raises:
          ValueError: if this budget bounds tokens and nothing says how many an attempt may
            use (no ``reserve``, and a worker without a ``worst_case``).
        """
        worst: object
        if self._reserve is not None:
            worst = self._reserve(subtask)
        else:
            ask = getattr(worker, "worst_case", None)
            worst = ask(subtask) if callable(ask) else None
            if worst is None:
                if self.tokens is not None:
                    raise ValueError(
                        f"budget {self.name!r} bounds tokens, so each attempt reserves its "
                        "worst case: give Budget(reserve=...) or a worker that knows it "
                        "(ChatAgent(max_tokens=...))"
                    )
                worst = Usage()
        if not isinstance(worst, Usage):
            raise TypeError(
                f"budget {self.name!r}: a worst case is a Usage, got {type(worst).__name__}"
            )
        return worst

    def _lacks(self, wanted: Usage, held: bool) -> str | None:
        """What ``wanted`` does not fit beside the spent total (and what is held, if
        ``held``), as words; None when it fits."""
        spent = self._spent
        for index, (limit, amount, used, unit) in enumerate(
            (
                (self.calls, wanted.calls, spent.calls, "calls"),
                (self.tokens, wanted.tokens, spent.tokens, "tokens"),
                (self.cost, wanted.cost, spent.cost, "cost"),
            )
        ):
            if limit is None:
                continue
            if held:
                used += self._held[index]
            if used + amount > limit + (_EPSILON * max(1.0, limit) if index == 2 else 0):
                return (
                    f"an attempt reserves {amount:g} {unit}, {max(0, limit - used):g} of "
                    f"{limit:g} are left"
                )
        return None

    async def reserve(self, subtask: Any, worker: Any = None) -> Hold:
        """Reserve the worst case of one attempt of ``subtask`` (a cancellation point): at
        once when it fits and nobody waits, else in turn, once running attempts settled enough;
        never when it cannot fit.

        Attempts that wait are served in the order they asked: a large worst case at the head
        holds back the smaller ones behind it, so none waits for ever.

        Raises:
          OverBudget: if it does not fit even if every running attempt gave back all it holds.
        """
        wanted = self.worst_case(subtask, worker)
        await trio.lowlevel.checkpoint_if_cancelled()
        if not self._queue:
            lacking = self._lacks(wanted, held=False)
            if lacking is not None:
                raise OverBudget(f"budget {self.name!r} is spent: {lacking}", self)
            if self._lacks(wanted, held=True) is None:
                return self._take(wanted)
        waiter = _Waiter(wanted)
        self._queue.append(waiter)
        try:
            await waiter.served.wait()
        except BaseException:  # cancelled while it waited: out of the line, nothing held
            if waiter.outcome is None:
                self._queue.remove(waiter)
            elif isinstance(waiter.outcome, Hold):
                self._give_back(waiter.outcome.reserved)
                self.reservations -= 1
            self._serve()
            raise
        outcome = waiter.outcome
        if isinstance(outcome, OverBudget):
            raise outcome
        assert outcome is not None
        return outcome

    def _take(self, wanted: Usage) -> Hold:
        self._held[0] += wanted.calls
        self._held[1] += wanted.tokens
        self._held[2] += wanted.cost
        self._holds += 1
        self.reservations += 1
        return Hold(wanted)

    def _give_back(self, reserved: Usage) -> None:
        self._holds -= 1
        if self._holds == 0:
            self._held = [0, 0, 0.0]  # exact again, whatever float rounding gathered
        else:
            self._held[0] -= reserved.calls
            self._held[1] -= reserved.tokens
            self._held[2] -= reserved.cost

    def _serve(self) -> None:
        """Serve the waiting attempts, in turn, as far as their reservations fit now."""
        queue = self._queue
        while queue:
            head = queue[0]
            lacking = self._lacks(head.wanted, held=False)
            if lacking is not None:
                head.outcome = OverBudget(f"budget {self.name!r} is spent: {lacking}", self)
            elif self._lacks(head.wanted, held=True) is None:
                head.outcome = self._take(head.wanted)
            else:
                return
            queue.popleft()
            head.served.set()

    def settle(self, hold: Hold, used: Usage | None) -> None:
        """Settle ``hold``, the reservation of an attempt that ended: charge ``used`` (None:
        the whole reservation), give back the rest, and let waiting attempts look again.

        Raises:
          RuntimeError: if ``hold`` was settled already.
        """
        if hold.settled:
            raise RuntimeError(f"budget {self.name!r}: a reservation is settled once")
        hold.settled = True
        self._give_back(hold.reserved)
        self._spent = self._spent + (hold.reserved if used is None else used)
        self.settlements += 1
        if self._queue:
            self._serve()

    async def acquire(self) -> None:
        """As a plain [`Meter`][trio_supervisor.Meter] outside a supervisor: reserve one call
        (``reserve(None)`` when given) for the current task."""
        self._by_task[trio.lowlevel.current_task()] = await self.reserve(None)

    def release(self) -> None:
        """Settle the current task's ``acquire``, with what it reported through
        ``report_usage`` inside it, if anything."""
        tally = TALLY.get()
        self.settle(
            self._by_task.pop(trio.lowlevel.current_task()),
            None if tally is None else tally.usage,
        )

    def __repr__(self) -> str:
        limits = [
            f"{unit}={limit:g}"
            for unit, limit in (("calls", self.calls), ("tokens", self.tokens), ("cost", self.cost))
            if limit is not None
        ]
        spent = self.spent
        return (
            f"Budget({', '.join(limits)}, name={self.name!r}, spent=(calls={spent.calls}, "
            f"tokens={spent.tokens}, cost={spent.cost:g}), held={self._holds})"
        )


def check_budgets(meters: tuple[Any, ...], worker: object) -> None:
    """Each budget among ``meters`` that bounds tokens knows an attempt's worst case: its own
    ``reserve``, or the worker's ``worst_case``."""
    for meter in meters:
        if (
            isinstance(meter, Budget)
            and meter.tokens is not None
            and meter._reserve is None
            and not callable(getattr(worker, "worst_case", None))
        ):
            raise ValueError(
                f"budget {meter.name!r} bounds tokens, so each attempt reserves its worst case: "
                "give Budget(reserve=...) or a worker that knows it (ChatAgent(max_tokens=...))"
            )


def is_budget(meter: object) -> bool:
    """Whether ``meter`` reserves per subtask (``reserve`` and ``settle``), as a ``Budget``."""
    return callable(getattr(meter, "reserve", None)) and callable(getattr(meter, "settle", None))
