"""Retries: which failures are retried, and how long a slot waits between its attempts.

The retry loop itself is in ``_attempt.py``, around the one attempt path every attempt takes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import _validate

RetryOn = type[Exception] | tuple[type[Exception], ...]
"""The exceptions a supervisor retries: an `Exception` subclass or a tuple of them."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: how long a slot waits before its next attempt.

    ```pycon
    >>> backoff = Backoff(initial=0.5, maximum=4.0)
    >>> [backoff.bound(failures) for failures in range(1, 6)]
    [0.5, 1.0, 2.0, 4.0, 4.0]

    ```

    After its ``n``-th failed attempt a slot waits a time drawn uniformly from
    ``[0, bound(n)]``, where ``bound(n) = min(maximum, initial * base ** (n - 1))``: the window
    grows geometrically, and the draw spreads retries of many slots across it so that they do not
    hammer a recovering service in lockstep (the "full jitter" of the AWS architecture blog). The
    draws come from the supervisor's own generator (its ``seed``), and the waits are
    ``trio.sleep`` calls, so under ``trio.testing.MockClock`` they take no real time.

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
        _validate.number("Backoff initial", self.initial, strictly=False)
        _validate.number("Backoff maximum", self.maximum, strictly=False)
        _validate.number("Backoff base", self.base, above=1, strictly=False)
        if not self.initial <= self.maximum:
            raise ValueError(
                "Backoff needs initial <= maximum, "
                f"got initial={self.initial!r}, maximum={self.maximum!r}"
            )

    def bound(self, failures: int) -> float:
        """The longest wait after the ``failures``-th failed attempt (1 for the first).

        Args:
          failures: how many attempts of the slot have failed so far.

        Returns:
          The upper end of the range the wait is drawn from, in seconds.

        Raises:
          ValueError: if ``failures`` is < 1.
        """
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures}")
        try:
            return min(self.maximum, self.initial * float(self.base) ** (failures - 1))
        except OverflowError:
            return self.maximum


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
