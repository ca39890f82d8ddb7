"""The contract every supervisor in this project speaks: workers, slot results, aggregates."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")

Worker = Callable[[str], Awaitable[str]]
"""The type of a sub-agent: takes one subtask, returns its output (an LLM call, in production)."""


class Status(enum.Enum):
    """How a slot ended.

    ``OK`` returned an output; ``FAILED`` raised an `Exception`; ``TIMED_OUT`` ran past its
    own timeout; ``CANCELLED`` was stopped, or never started, because the whole run was cut short.
    """

    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed out"
    CANCELLED = "cancelled"


def describe(exc: BaseException) -> str:
    """Name an exception's type and message, the way a slot's ``error`` records it.

    An exception group is described whole, with every exception it holds, so nothing a worker's
    own nursery raised is lost.
    """
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, BaseExceptionGroup):
        inner = "; ".join(describe(sub) for sub in exc.exceptions)
        text = f"{text} [{inner}]"
    return text


@dataclass(frozen=True)
class SubResult(Generic[T]):
    """What one slot of the plan produced.

    A slot holds an output or an error: for a worker that returns ``str``, exactly one of
    ``output`` and ``error`` is not None. ``status`` is derived when not given: ``OK`` without an
    error, ``FAILED`` with one.

    Args:
      subtask: the subtask as planned.
      output: the worker's result, when it returned one.
      error: the exception's type and message (see `describe`), when it did not.
      status: how the slot ended; ``OK`` goes with an output, every other status with an error.
      attempts: how many times the worker was called for this slot (0: never started).
      started: trio time the first attempt started, None where the slot never ran.
      finished: trio time the slot ended, None where it never ran.
      exception: the exception itself, when there was one (not compared, not shown in repr).

    Raises:
      ValueError: if both ``output`` and ``error`` are given, or ``status`` disagrees with them.
    """

    subtask: Any
    output: T | None = None
    error: str | None = None
    status: Status = None  # type: ignore[assignment]  # derived in __post_init__ when omitted
    attempts: int = 1
    started: float | None = None
    finished: float | None = None
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.error is not None and self.output is not None:
            raise ValueError(
                "a SubResult holds an output or an error, not both, "
                f"got output={self.output!r}, error={self.error!r}"
            )
        if self.status is None:
            derived = Status.OK if self.error is None else Status.FAILED
            object.__setattr__(self, "status", derived)
        elif (self.status is Status.OK) != (self.error is None):
            raise ValueError(
                f"status {self.status.name} does not fit "
                f"{'an output' if self.error is None else 'an error'}: OK goes with an output, "
                "every other status with an error"
            )

    @classmethod
    def from_exception(
        cls, subtask: Any, exc: BaseException, status: Status = Status.FAILED, **kwargs: Any
    ) -> SubResult[T]:
        """The result of a slot whose worker raised ``exc``: its error names type and message."""
        return cls(subtask, error=describe(exc), status=status, exception=exc, **kwargs)

    @property
    def ok(self) -> bool:
        """True when the worker returned an output."""
        return self.status is Status.OK


@dataclass(frozen=True)
class Aggregate(Generic[T]):
    """Every slot's result, fanned back in, with the counts derived from them.

    Args:
      results: one [`SubResult`][trio_supervisor.SubResult] per slot, in plan order wherever the
        supervisor keeps it.
    """

    results: list[SubResult[T]]

    @property
    def succeeded(self) -> int:
        """How many slots returned an output."""
        return sum(1 for result in self.results if result.ok)

    @property
    def failed(self) -> int:
        """How many slots did not (failed, timed out or cancelled)."""
        return len(self.results) - self.succeeded

    @property
    def degraded(self) -> bool:
        """True when some slot has no output: an answer built from this aggregate is partial."""
        return self.failed > 0
