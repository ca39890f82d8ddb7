"""Restarts as Erlang/OTP's supervisors count and group them: a value, checked when made."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]
"""Which slots a restart takes: the failed one, all of them, or the failed one and those after."""
STRATEGIES: tuple[Strategy, ...] = ("one_for_one", "one_for_all", "rest_for_one")

_RULE = "Restarts needs max_restarts (an int >= 0) and within (seconds > 0) given together"


@dataclass(frozen=True)
class Restarts:
    """How a run restarts its slots: at most ``max_restarts`` restarts within any ``within``
    seconds, and which slots each restart takes.

    ```pycon
    >>> Restarts(max_restarts=2, within=10)
    Restarts(max_restarts=2, within=10.0, strategy='one_for_one')
    >>> Restarts(strategy="one_for_all").bounded
    False

    ```

    A *restart* is a failed attempt (a timeout included) of a slot that will be tried again (it
    is retryable and has attempts left). Past ``max_restarts`` within any ``within`` seconds the
    run gives up: the slot whose failure was one too many keeps its own error, whatever still
    runs or waits is cancelled, and every other unfinished slot fails with ``gave up: more than
    R restarts within Ts``. Without a bound, restarts are never counted.

    ``strategy`` says which slots a restart takes: ``"one_for_one"`` the failed slot alone;
    ``"one_for_all"`` every slot (running ones are cancelled, finished ones lose their result);
    ``"rest_for_one"`` the failed slot and every slot after it in plan order (which may depend
    on it). The slots taken wait out the failed slot's wait together, holding no place (a slot
    taken by several restarts waits for the latest of them), then start again in plan order; a
    slot restarted for a sibling is not charged an attempt.

    Args:
      max_restarts: at most this many restarts within ``within`` seconds; None for no bound.
      within: the window, in seconds; None for no bound (with ``max_restarts`` None).
      strategy: which slots a restart takes.

    Raises:
      TypeError: if ``max_restarts`` is not an int or ``within`` not a number.
      ValueError: if only one of the two is given, ``max_restarts < 0``, ``within`` is not
        positive, or ``strategy`` is not one of the three.
    """

    max_restarts: int | None = None
    within: float | None = None
    strategy: Strategy = "one_for_one"

    def __post_init__(self) -> None:
        count, within = self.max_restarts, self.within
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise TypeError(f"{_RULE}, got max_restarts={count!r}")
        if within is not None:
            if isinstance(within, bool) or not isinstance(within, int | float):
                raise TypeError(f"{_RULE}, got within={within!r}")
            object.__setattr__(self, "within", float(within))
        if (count is None) != (within is None) or (count is not None and count < 0):
            raise ValueError(f"{_RULE}, got max_restarts={count!r}, within={within!r}")
        if within is not None and not within > 0:  # also refuses NaN
            raise ValueError(f"{_RULE}, got within={within!r}")
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"Restarts strategy must be one of {', '.join(STRATEGIES)}, got {self.strategy!r}"
            )

    @property
    def bounded(self) -> bool:
        """Whether restarts are counted: ``max_restarts`` and ``within`` are given."""
        return self.max_restarts is not None

    @property
    def plain(self) -> bool:
        """Whether these restarts are every supervisor's: no bound, each slot alone."""
        return not self.bounded and self.strategy == "one_for_one"

    @property
    def limit(self) -> tuple[float, float]:
        """``(max_restarts, within)``, infinite where there is no bound."""
        if self.max_restarts is None or self.within is None:
            return math.inf, math.inf
        return self.max_restarts, self.within

    def gave_up(self) -> str:
        """The error of a slot left unfinished when a run gave up."""
        return f"gave up: more than {self.max_restarts} restarts within {self.within:g}s"
