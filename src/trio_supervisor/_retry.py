"""Retries: which failures are retried, and how long a slot waits between its attempts.

The retry loop is tenacity's, not a hand loop. Not stamina's either, though stamina supports
trio: its backoff is ``min(wait_max, wait_initial * base ** (n - 1) + uniform(0, wait_jitter))``,
exponential plus *additive* jitter, so full jitter would mean computing every wait here and
handing it back through a backoff hook; and its process-wide switches (``stamina.set_active``,
``stamina.set_testing``) would silently change how often a supervisor calls its worker.
tenacity, the engine stamina is built on, has the full-jitter wait itself
(``wait_random_exponential``) and sleeps with whatever it is given: ``trio.sleep`` here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import tenacity
import trio
from tenacity.asyncio import AsyncRetrying

RetryOn = type[Exception] | tuple[type[Exception], ...]
"""The exceptions a supervisor retries: an `Exception` subclass or a tuple of them."""


def _number(name: str, value: object, *, above: float = 0, strictly: bool = True) -> float:
    """``value`` as a float, or an error stating the rule: a number > ``above`` (>= unless
    ``strictly``)."""
    rule = "a positive number" if (above, strictly) == (0, True) else f"a number >= {above:g}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be {rule}, got {type(value).__name__} {value!r}")
    if not (value > above if strictly else value >= above):  # also rejects NaN
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: how long a slot waits before its next attempt.

    After its ``n``-th failed attempt a slot waits a time drawn uniformly from
    ``[0, bound(n)]``, where ``bound(n) = min(maximum, initial * base ** (n - 1))``: the window
    grows geometrically, and the draw spreads retries of many slots across it so that they do not
    hammer a recovering service in lockstep (the "full jitter" of the AWS architecture blog). The
    waits are ``trio.sleep`` calls, so under ``trio.testing.MockClock`` they take no real time.

    Args:
      initial: the bound after the first failure, in seconds (0: retry at once).
      maximum: the largest bound, in seconds.
      base: how much the bound grows per failure.

    Raises:
      TypeError: if a value is not a number.
      ValueError: unless ``0 <= initial <= maximum`` and ``base >= 1``.
    """

    initial: float = 0.1
    maximum: float = 5.0
    base: float = 2.0

    def __post_init__(self) -> None:
        _number("Backoff initial", self.initial, strictly=False)
        _number("Backoff maximum", self.maximum, strictly=False)
        _number("Backoff base", self.base, above=1, strictly=False)
        if not self.initial <= self.maximum:
            raise ValueError(
                "Backoff needs initial <= maximum, "
                f"got initial={self.initial!r}, maximum={self.maximum!r}"
            )

    def bound(self, failures: int) -> float:
        """The longest wait after the ``failures``-th failed attempt (1 for the first).

        Raises:
          ValueError: if ``failures`` is < 1.
        """
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures}")
        try:
            return min(self.maximum, self.initial * float(self.base) ** (failures - 1))
        except OverflowError:
            return self.maximum

    def _wait(self) -> tenacity.wait.wait_base:
        # tenacity's wait_random_exponential is full jitter: uniform(0, min(max, m * b**(n-1)))
        return tenacity.wait_random_exponential(
            multiplier=self.initial, max=self.maximum, exp_base=self.base
        )


def check_retry_on(retry_on: object) -> tuple[type[Exception], ...]:
    """``retry_on`` as a tuple of `Exception` subclasses, or a clear error."""
    classes = retry_on if isinstance(retry_on, tuple) else (retry_on,)
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            raise TypeError(
                "retry_on must be an Exception subclass or a tuple of them "
                f"(cancellation and KeyboardInterrupt are never retried), got {cls!r}"
            )
    return classes


def retryable(retry_on: tuple[type[Exception], ...]) -> Callable[[BaseException], bool]:
    """The predicate deciding a retry: the exception is one ``retry_on`` allows; an exception
    group is retried only when every exception in it is (so a group holding a
    ``trio.Cancelled`` never is)."""

    def decide(exc: BaseException) -> bool:
        if isinstance(exc, retry_on):
            return True
        if isinstance(exc, BaseExceptionGroup):
            _, rest = exc.split(retry_on)
            return rest is None
        return False

    return decide


def retrying(
    attempts: int, decide: Callable[[BaseException], bool], backoff: Backoff
) -> Callable[..., Awaitable[Any]]:
    """A fresh tenacity retrier for one slot (tenacity keeps per-call state on the object).

    The last failure is re-raised as it was (``reraise=True``); an exception ``decide`` refuses,
    ``trio.Cancelled`` included, is re-raised at once.
    """
    return AsyncRetrying(
        sleep=trio.sleep,
        stop=tenacity.stop_after_attempt(attempts),
        wait=backoff._wait(),
        retry=tenacity.retry_if_exception(decide),
        reraise=True,
    )


def check_positive(name: str, value: object) -> float | None:
    """``value`` as seconds, None allowed; anything but a positive number is an error."""
    if value is None:
        return None
    return _number(name, value)
