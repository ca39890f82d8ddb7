"""Retries: how many attempts a slot gets, which failures are retried, and how long a slot waits
between its attempts, as one policy ([`Retry`][trio_supervisor.Retry]) a supervisor is given.

The retry loop itself is in ``_engine/attempt.py``, around the one attempt path every attempt
takes.
"""

from __future__ import annotations

import random
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
    draws come from the supervisor's own generator (its [`Retry`][trio_supervisor.Retry]'s
    ``seed``), and the waits are
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


@dataclass(frozen=True)
class Retry:
    """A supervisor's retry policy: how many times a slot's worker may be called, which failures
    are tried again, how long a slot waits between its attempts, and where the waits' jitter
    comes from. Checked when made, so one value can serve many supervisors.

    ```pycon
    >>> retry = Retry(attempts=3, on=TimeoutError, backoff=Backoff(initial=0.5), seed=7)
    >>> retry.on, [retry.backoff.bound(failures) for failures in (1, 2)]
    ((<class 'TimeoutError'>,), [0.5, 1.0])

    ```

    A failed slot is tried again after a full-jitter [`Backoff`][trio_supervisor.Backoff] wait,
    keeping its place under ``max_workers`` while it waits, until it succeeds, fails with an
    exception ``on`` does not allow, or has made ``attempts`` attempts. ``Retry()`` (the
    default) never retries: ``attempts=1`` runs no retry loop at all.

    Args:
      attempts: how many times a slot's worker may be called: 1 never retries.
      on: which failures are retried: an `Exception` subclass or a tuple of them (by default
        every `Exception`, timeouts included: a timed-out attempt counts as
        `trio.TooSlowError`). An exception group is retried when every exception in it is
        allowed. Kept as a tuple.
      backoff: how long a slot waits between attempts.
      seed: the jitter's generator: an int seeds each supervisor's own ``random.Random``, a
        ``random.Random`` is used as given (injected), None draws each run's jitter from the
        operating system. The process-wide ``random`` module is never used, so a run is
        reproducible from its seed.

    Raises:
      TypeError: if ``attempts`` is not an int, ``on`` holds anything but `Exception`
        subclasses, ``backoff`` is not a ``Backoff``, or ``seed`` is not an int, a
        ``random.Random`` or None.
      ValueError: if ``attempts`` is < 1 or ``on`` is an empty tuple.
    """

    attempts: int = 1
    on: RetryOn = Exception
    backoff: Backoff = Backoff()  # immutable
    seed: int | random.Random | None = None

    def __post_init__(self) -> None:
        _validate.count("Retry attempts", self.attempts)
        object.__setattr__(self, "on", _validate.retry_on(self.on, "Retry on"))
        if not isinstance(self.backoff, Backoff):
            raise TypeError(
                f"Retry backoff must be a Backoff, got {type(self.backoff).__name__} "
                f"{self.backoff!r}"
            )
        _validate.seed_kind("Retry seed", self.seed)

    def __repr__(self) -> str:
        names = [cls.__name__ for cls in _validate.retry_on(self.on)]
        on = f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"
        return (
            f"Retry(attempts={self.attempts}, on={on}, backoff={self.backoff!r}, "
            f"seed={self.seed!r})"
        )


def retryable(retry_on: RetryOn) -> Callable[[BaseException], bool]:
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
