"""The contract every supervisor here speaks: workers, slot results, aggregates."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, SupportsIndex, TypeVar, final, overload

import msgspec
from msgspec import StructMeta

S = TypeVar("S")
T = TypeVar("T")

Worker = Callable[[S], Awaitable[T]]
"""A sub-agent: takes one subtask of type ``S``, returns its output of type ``T`` (an LLM call,
in production). ``Worker[str, str]`` for text in, text out."""


class Status(enum.Enum):
    """How a slot ended.

    ```pycon
    >>> [status.value for status in Status]
    ['ok', 'failed', 'timed out', 'cancelled', 'awaiting approval', 'rejected', 'over budget']

    ```

    ``OK`` returned an output; ``FAILED`` raised an `Exception`; ``TIMED_OUT`` ran past its
    own timeout; ``CANCELLED`` was stopped, or never started, because the whole run was cut short;
    ``AWAITING_APPROVAL`` asked a question ([`approval`][trio_supervisor.approval]) nobody has
    answered yet (a resume runs it again); ``REJECTED`` was answered no; ``OVER_BUDGET`` could
    not reserve its worst case from a [`Budget`][trio_supervisor.Budget], so its worker was not
    called (again).
    """

    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed out"
    CANCELLED = "cancelled"
    AWAITING_APPROVAL = "awaiting approval"
    REJECTED = "rejected"
    OVER_BUDGET = "over budget"


def describe(exc: BaseException) -> str:
    """Name an exception's type and message, the way a slot's ``error`` records it.

    An exception group is described whole, with every exception it holds, so nothing a worker's
    own nursery raised is lost. An exception whose ``str()`` itself fails is named by its type,
    with a note that its message could not be read: describing a failure never fails.
    """
    try:
        message = str(exc)
    except Exception as error:
        message = f"<its message could not be read: str() raised {type(error).__name__}>"
    text = f"{type(exc).__name__}: {message}"
    if isinstance(exc, BaseExceptionGroup):
        inner = "; ".join(describe(sub) for sub in exc.exceptions)
        text = f"{text} [{inner}]"
    return text


HEDGES = 32  # a result's hedges are kept in its attempts' field, from this bit up
_CALLS = (1 << HEDGES) - 1
_STATUSES = tuple(Status)
_CODES = {status: code for code, status in enumerate(_STATUSES)}
_OK = _CODES[Status.OK]
_make = StructMeta.__call__  # a result from its fields as stored, unchecked


class _Checked(StructMeta):
    """SubResult's type: calling it checks the fields and stores them (see SubResult)."""

    def __call__(
        cls,
        subtask: Any,
        output: Any = None,
        error: str | None = None,
        status: Status | None = None,
        attempts: int = 1,
        started: float | None = None,
        finished: float | None = None,
        exception: BaseException | None = None,
        *,
        hedges: int = 0,
    ) -> Any:
        if error is not None and output is not None:
            raise ValueError(
                "a SubResult holds an output or an error, not both, "
                f"got output={output!r}, error={error!r}"
            )
        if status is None:
            status = Status.OK if error is None else Status.FAILED
        elif not isinstance(status, Status):
            raise TypeError(f"status must be a Status, got {type(status).__name__} {status!r}")
        elif (status is Status.OK) != (error is None):
            raise ValueError(
                f"status {status.name} does not fit "
                f"{'an output' if error is None else 'an error'}: OK goes with an output, "
                "every other status with an error"
            )
        return _make(
            cls,
            subtask,
            output,
            error,
            _CODES[status],
            attempts | (hedges << HEDGES) if hedges else attempts,
            started,
            finished,
            exception,
        )


@final
class SubResult(
    msgspec.Struct, Generic[S, T], metaclass=_Checked, frozen=True, eq=False, weakref=False
):
    """What one slot of the plan produced: an output, or an error and how the slot ended.

    ```pycon
    >>> result = SubResult("pricing", error="TooSlowError: late", status=Status.TIMED_OUT)
    >>> result.ok, result.status, result.output
    (False, <Status.TIMED_OUT: 'timed out'>, None)

    ```

    A slot holds an output or an error: exactly one of ``output`` and ``error`` is set (an output
    may itself be None when the worker returned None). ``status`` is derived when not given:
    ``OK`` without an error, ``FAILED`` with one. A result is immutable, compares by value
    (``exception`` aside) and is hashable when its subtask and output are.

    Args:
      subtask: the subtask as planned.
      output: the worker's result, when it returned one.
      error: the exception's type and message, when it did not.
      status: how the slot ended; ``OK`` goes with an output, every other status with an error.
      attempts: how many times the worker was called for this slot (0: never started), its
        hedges included.
      started: trio time the first attempt started, None where the slot never ran.
      finished: trio time the slot ended, None where it never ran.
      exception: the exception itself, when there was one (not compared, not shown in repr); its
        traceback keeps no worker's local variables.
      hedges: how many of the ``attempts`` were hedges: extra attempts started while another
        attempt of the slot ran (see [`Hedge`][trio_supervisor.Hedge]).

    Raises:
      ValueError: if both ``output`` and ``error`` are given, or ``status`` disagrees with them.
    """

    # A frozen msgspec struct (C-built, as quick to make as a tuple) behind read-only
    # properties. One whose fields are all untracked values is not tracked by the garbage
    # collector, as a tuple of them is not, so the collector's passes do not walk the results a
    # run keeps; hence the status is kept as its index in Status (an int), not the member. A
    # success of plain values is a _Plain, below, which the collector does not even count.
    # ``_attempts`` holds the hedges too, above bit HEDGES (0 without hedge=). Every public
    # field is a property without a setter, and the struct is frozen: ``result.output = x``
    # raises.
    _subtask: S
    _output: T | None
    _error: str | None
    _status: int
    _attempts: int
    _started: float | None
    _finished: float | None
    _exception: BaseException | None

    if TYPE_CHECKING:  # the signature _Checked.__call__ gives it (a struct defines no __init__)

        def __init__(
            self,
            subtask: S,
            output: T | None = None,
            error: str | None = None,
            status: Status | None = None,
            attempts: int = 1,
            started: float | None = None,
            finished: float | None = None,
            exception: BaseException | None = None,
            *,
            hedges: int = 0,
        ) -> None: ...

    @classmethod
    def from_exception(
        cls,
        subtask: S,
        exc: BaseException,
        status: Status = Status.FAILED,
        *,
        attempts: int = 1,
        started: float | None = None,
        finished: float | None = None,
    ) -> SubResult[S, T]:
        """The result of a slot whose worker raised ``exc``: its error names type and message.

        Raises:
          ValueError: if ``status`` is ``OK``.
        """
        return cls(
            subtask,
            error=describe(exc),
            status=status,
            attempts=attempts,
            started=started,
            finished=finished,
            exception=exc,
        )

    @property
    def subtask(self) -> S:
        """The subtask as planned."""
        return self._subtask

    @property
    def output(self) -> T | None:
        """The worker's output; None when the slot has an error."""
        return self._output

    @property
    def error(self) -> str | None:
        """The failure's type and message; None when the slot has an output."""
        error = self._error
        if error is None and self._exception is not None and self._status != _OK:
            # a failure the supervisor recorded without text: its exception says it all, and
            # is described when asked, not for every failed slot of a run
            return describe(self._exception)
        return error

    @property
    def status(self) -> Status:
        """How the slot ended."""
        return _STATUSES[self._status]

    @property
    def attempts(self) -> int:
        """How many times the worker was called for this slot (0: never started)."""
        return self._attempts & _CALLS

    @property
    def hedges(self) -> int:
        """How many of the ``attempts`` were hedges (extra attempts started while another
        attempt of the slot ran); 0 without ``hedge=``."""
        return self._attempts >> HEDGES

    @property
    def started(self) -> float | None:
        """Trio time the first attempt started; None where the slot never ran."""
        return self._started

    @property
    def finished(self) -> float | None:
        """Trio time the slot ended; None where it never ran."""
        return self._finished

    @property
    def exception(self) -> BaseException | None:
        """The exception itself, when there was one, to inspect or re-raise."""
        return self._exception

    @property
    def ok(self) -> bool:
        """True when the worker returned an output."""
        return self._status == _OK

    def _key(self) -> tuple[Any, ...]:
        return (
            self._subtask,
            self._output,
            self.error,
            self._status,
            self._attempts,
            self._started,
            self._finished,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SubResult):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        hedges = f", hedges={self.hedges!r}" if self.hedges else ""
        return (
            f"SubResult(subtask={self._subtask!r}, output={self._output!r}, "
            f"error={self.error!r}, status={self.status}, attempts={self.attempts!r}, "
            f"started={self._started!r}, finished={self._finished!r}{hedges})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (
                self._subtask,
                self._output,
                self.error,
                self.status,
                self.attempts,
                self._started,
                self._finished,
                self._exception,
                self.hedges,
            ),
        )


class _Plain(SubResult[Any, Any], gc=False, frozen=True, eq=False):  # type: ignore[misc]
    """A success whose subtask and output are plain values (`_PLAIN`): a SubResult in all but
    its storage, which has no garbage collector header at all. What it holds refers to nothing,
    so it can be part of no reference cycle, and it costs the collector nothing, not even the
    count of new objects that starts its passes (each of which walks every task in flight)."""


_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})
"""The types of value that refer to no other object, so hold no cycle."""


def _rebuild(*fields: Any) -> SubResult[Any, Any]:
    return SubResult(*fields[:8], hedges=fields[8] if len(fields) > 8 else 0)


_SAME: Any = object()


def revised(
    result: SubResult[S, T], *, subtask: Any = _SAME, error: str | None = None
) -> SubResult[Any, T]:
    """``result`` with its subtask, or the words of its error, replaced; every other field
    (its status, attempts and hedges, times and exception) kept as it is.

    Raises:
      ValueError: if ``error`` is given for a result with an output.
    """
    return SubResult(
        result.subtask if subtask is _SAME else subtask,
        output=result.output,
        error=result.error if error is None else error,
        status=result.status,
        attempts=result.attempts,
        started=result.started,
        finished=result.finished,
        exception=result.exception,
        hedges=result.hedges,
    )


def ok_result(
    subtask: Any,
    output: Any,
    attempts: int,
    started: float,
    finished: float,
    hedges: int = 0,
) -> SubResult[Any, Any]:
    """A successful slot's result, built without checks: the supervisor's fast path."""
    return _make(  # type: ignore[no-any-return]
        _Plain if type(output) in _PLAIN and type(subtask) in _PLAIN else SubResult,
        subtask,
        output,
        None,
        _OK,
        attempts | (hedges << HEDGES) if hedges else attempts,
        started,
        finished,
        None,
    )


def failed_result(
    subtask: Any,
    error: str | None,
    status: Status,
    attempts: int,
    started: float | None,
    finished: float,
    exception: BaseException,
    hedges: int = 0,
) -> SubResult[Any, Any]:
    """A failed slot's result, built without checks: the supervisor's path for failures.
    ``error`` None: the exception's description, made when it is read."""
    return _make(  # type: ignore[no-any-return]
        SubResult,
        subtask,
        None,
        error,
        _CODES[status],
        attempts | (hedges << HEDGES) if hedges else attempts,
        started,
        finished,
        exception,
    )


@final
class Aggregate(Generic[S, T]):
    """Every slot's result, fanned back in, with the counts derived from them.

    ```pycon
    >>> aggregate = Aggregate([SubResult("a", output=1), SubResult("b", error="KeyError: 'b'")])
    >>> len(aggregate), aggregate.succeeded, aggregate.failed, aggregate.degraded
    (2, 1, 1, True)

    ```

    ``len(aggregate)`` is the number of slots; iterating it yields their results in order, and
    ``aggregate[i]`` is slot ``i``'s result (a slice gives a list of them), as in ``results``.

    Args:
      results: one [`SubResult`][trio_supervisor.SubResult] per slot, in plan order wherever
        the supervisor keeps it.
      gave_up: why the run gave up (past its restart intensity, or short of the successes
        it needed), or None: what a parent supervisor escalates, even when no slot was left
        unfinished to say it.
      need: how many successes the run needed (``run(..., need=k)``), or None for every slot.
    """

    __slots__ = ("_gave_up", "_need", "_results")

    def __init__(
        self, results: list[SubResult[S, T]], gave_up: str | None = None, need: int | None = None
    ) -> None:
        self._results = results
        self._gave_up = gave_up
        self._need = need

    @property
    def gave_up(self) -> str | None:
        """Why the run gave up (``gave up: more than R restarts within Ts``, or ``needed k
        successes, ...``), or None."""
        return self._gave_up

    @property
    def need(self) -> int | None:
        """How many successes the run needed, or None: every slot's."""
        return self._need

    @property
    def results(self) -> list[SubResult[S, T]]:
        """One result per slot, in plan order."""
        return self._results

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[SubResult[S, T]]:
        return iter(self._results)

    @overload
    def __getitem__(self, index: SupportsIndex) -> SubResult[S, T]: ...

    @overload
    def __getitem__(self, index: slice) -> list[SubResult[S, T]]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> SubResult[S, T] | list[SubResult[S, T]]:
        return self._results[index]

    def __reversed__(self) -> Iterator[SubResult[S, T]]:
        return reversed(self._results)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Aggregate):
            return NotImplemented
        return self._results == other._results

    __hash__ = None  # type: ignore[assignment]  # it holds a list

    def __repr__(self) -> str:
        more = "" if self._need is None else f", need={self._need}"
        if self._gave_up is not None:
            more = f", gave_up={self._gave_up!r}{more}"
        return f"Aggregate(results={self._results!r}{more})"

    @property
    def succeeded(self) -> int:
        """How many slots returned an output."""
        return sum(1 for result in self._results if result._status == _OK)

    @property
    def failed(self) -> int:
        """How many slots did not (failed, timed out or cancelled)."""
        return len(self._results) - self.succeeded

    @property
    def degraded(self) -> bool:
        """True when some slot has no output: an answer built from this aggregate is partial;
        for a run that needed ``k`` successes, when it has fewer than ``k``."""
        if self._need is not None:
            return self.succeeded < self._need
        return self.failed > 0
