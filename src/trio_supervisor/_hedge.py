"""Hedged requests: a second attempt of a slot whose first one is slow, the first to succeed wins.

A supervisor's wall time is its slowest slot, and an LLM endpoint has a long tail: one straggler
in a hundred holds the whole answer. "The Tail at Scale" (Dean and Barroso, CACM 2013) cut
BigTable's 99.9th percentile from 1,800 ms to 74 ms by sending a second request after 10 ms, for
2% more requests; gRPC ships hedging with a throttle. [`Hedge`][trio_supervisor.Hedge] is that
policy; the engine runs it inside its one attempt, so runs, streams, re-planning rounds and
restarting runs all hedge alike.
"""

from __future__ import annotations

import math
import re
from dataclasses import KW_ONLY, dataclass, field

_PERCENTILE = re.compile(r"p(\d{1,2}(?:\.\d+)?)")


@dataclass(frozen=True, slots=True)
class Hedge:
    """When a slot's attempt is slow enough that a second one of the same slot should start, and
    how many such extra attempts a supervisor may make.

    ```pycon
    >>> slow = {3}  # the first call of slot 3 is a straggler
    >>> async def agent(n):
    ...     delay = 10 if n in slow else 1
    ...     slow.discard(n)
    ...     await trio.sleep(delay)
    ...     return n
    >>> async def main():
    ...     supervisor = Supervisor(agent, max_workers=20, hedge=Hedge(after=2.0))
    ...     aggregate = await supervisor.run(range(10))
    ...     return aggregate[3].output, aggregate[3].hedges, trio.current_time()
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    (3, 1, 3.0)

    ```

    An attempt still running ``after`` seconds after it started gets a hedge: another attempt of
    the same slot, with a place of its own under ``max_workers`` (it waits for one like any
    attempt), waiting on the meters like any attempt. The first of them to succeed gives the
    slot its result and the others are cancelled at once; a failure of one does not end the
    others; when all of them fail, the slot's failure is the one that failed last, and the
    retry policy goes on from there (``Retry(attempts=...)`` counts such a round as one
    failure: a hedge spends none of it). The attempt timeout bounds the round as a whole, from
    its first attempt's start.

    Args:
      after: seconds, or a percentile of this supervisor's recent attempt durations, as
        ``"p95"`` (``"p50"``, ``"p99.9"``: ``p`` and a number above 0 and below 100): the
        durations of its last ``window`` successful attempts (hedges included; an attempt
        cancelled because another won is not counted, it did not finish). A percentile ``q``
        is known once ``100 / (100 - q)`` of them are (20 for p95, 100 for p99); until then
        no attempt is hedged.
      max_extra: at most how many hedges a slot gets (over all its attempts, retries
        included); the k-th hedge of an attempt starts ``k * after`` after it, if no attempt
        of the slot succeeded by then.
      throttle: hedges are at most this fraction of the supervisor's attempts (every call of
        the worker, hedges included), as gRPC's hedging throttle keeps a slow endpoint from
        being doubled: a hedge starts only if, counting it, at most ``throttle * n`` of the
        last ``n`` attempts are hedges, ``n`` being ``window`` (or every attempt so far, while
        there are fewer). A hedge the throttle refuses is not sent (and a ``Budget`` charges
        it nothing, its reservation given back). So of any ``window``
        consecutive attempts, and of all of them, at most that fraction are hedges.
      window: how many recent attempts the percentile and the throttle look at.

    Raises:
      TypeError: if ``after`` is neither a number nor a str, or a count is not an int.
      ValueError: if ``after`` is a negative number or not a percentile ``"pNN"``,
        ``max_extra`` or ``window`` is < 1, ``throttle`` is not in ``(0, 1]``, or ``window``
        is too small to know the percentile.
    """

    after: float | str = "p95"
    _: KW_ONLY
    max_extra: int = 1
    throttle: float = 0.1
    window: int = 100
    quantile: float | None = field(init=False, repr=False, compare=False)
    """The percentile of ``after`` as a number (95.0 for ``"p95"``), None for seconds."""

    def __post_init__(self) -> None:
        after, quantile = self.after, None
        if isinstance(after, str):
            match = _PERCENTILE.fullmatch(after)
            quantile = float(match.group(1)) if match else None
            if quantile is None or not 0 < quantile < 100:
                raise ValueError(
                    "after must be seconds or a percentile of recent attempt durations as "
                    f"'pNN', above p0 and below p100 (as 'p95' or 'p99.9'), got {after!r}"
                )
        elif isinstance(after, bool) or not isinstance(after, int | float):
            raise TypeError(
                "after must be seconds (a number >= 0) or a percentile as 'p95', got "
                f"{type(after).__name__} {after!r}"
            )
        elif not (0 <= after < math.inf):  # also refuses NaN
            raise ValueError(f"after must be a finite number of seconds >= 0, got {after!r}")
        for name in ("max_extra", "window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int >= 1, got {type(value).__name__} {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        throttle = self.throttle
        if isinstance(throttle, bool) or not isinstance(throttle, int | float):
            raise TypeError(
                "throttle must be a fraction of attempts in (0, 1], got "
                f"{type(throttle).__name__} {throttle!r}"
            )
        if not 0 < throttle <= 1:
            raise ValueError(f"throttle must be a fraction of attempts in (0, 1], got {throttle!r}")
        if quantile is not None and self.window < needed(quantile):
            raise ValueError(
                f"window must be >= {needed(quantile)} to know {after}: the percentile q needs "
                f"100 / (100 - q) durations, got window={self.window}"
            )
        object.__setattr__(self, "after", after if isinstance(after, str) else float(after))
        object.__setattr__(self, "throttle", float(throttle))
        object.__setattr__(self, "quantile", quantile)

    @property
    def known_after(self) -> int:
        """How many successful attempts must be known before a percentile ``after`` hedges
        (0 for seconds)."""
        return 0 if self.quantile is None else needed(self.quantile)


def needed(quantile: float) -> int:
    """How many durations the percentile ``quantile`` needs: ``ceil(100 / (100 - q))``."""
    return math.ceil(100 / (100 - quantile) - 1e-9)


def check_hedge(value: object) -> Hedge | None:
    """A supervisor's ``hedge=``: a [`Hedge`][trio_supervisor.Hedge], seconds or a percentile
    (``Hedge(after=value)``), or None; anything else is refused with the rule."""
    if value is None or isinstance(value, Hedge):
        return value
    if isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool)):
        return Hedge(after=value)
    raise TypeError(
        "hedge must be a Hedge, seconds (Hedge(after=seconds)), a percentile as 'p95', or None, "
        f"got {type(value).__name__} {value!r}"
    )
