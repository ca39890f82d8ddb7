"""The rules of plain values a caller gives (counts, numbers, seconds, exception classes, plans,
windows), checked before any work starts; a rule that belongs to a type of the library lives
beside that type (``Capacity``, ``Trace``, ``Restarts``, ``Backoff``, ``Retry``).

Each check returns the value in the form the library uses, or raises an error that states the
rule and what it got (``max_workers must be >= 1, got 0``): ``TypeError`` for a value of the
wrong kind, ``ValueError`` for a value of the right kind outside its range.
"""

from __future__ import annotations

import inspect
import random
from collections.abc import AsyncIterable, ItemsView, Iterable, KeysView, Mapping
from collections.abc import Set as AbstractSet
from types import FunctionType
from typing import Any

from ._decompose import decompose


def count(name: str, value: object) -> int:
    """``value`` as a whole number >= 1 (``bool`` is refused: ``True`` is no count)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= 1, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def budget(name: str, value: object) -> int:
    """``value`` as a whole number >= 0 (a budget that may be spent at once)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= 0, got {type(value).__name__} {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def planner(value: object) -> None:
    """A re-planning run's planner: an object with async ``first`` and ``next`` methods."""
    if not all(callable(getattr(value, name, None)) for name in ("first", "next")):
        raise TypeError(
            "planner must have async first(task) and next(task, ledger, *, fresh) methods "
            f"(see trio_supervisor.Planner), got {type(value).__name__} {value!r}"
        )


def number(name: str, value: object, *, above: float = 0, strictly: bool = True) -> float:
    """``value`` as a float, or an error stating the rule: a number > ``above`` (>= unless
    ``strictly``); NaN is refused."""
    rule = "a positive number" if (above, strictly) == (0, True) else f"a number >= {above:g}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be {rule}, got {type(value).__name__} {value!r}")
    if not (value > above if strictly else value >= above):  # also rejects NaN
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return float(value)


def seconds(name: str, value: object) -> float | None:
    """``value`` as seconds, None allowed; anything but a positive number is an error."""
    if value is None:
        return None
    return number(name, value)


def retry_on(value: object, name: str = "retry_on") -> tuple[type[Exception], ...]:
    """``value`` as a tuple of `Exception` subclasses, or a clear error."""
    classes = value if isinstance(value, tuple) else (value,)
    if not classes:
        raise ValueError(
            f"{name} must be an Exception subclass or a non-empty tuple of them, got (): "
            f"give the classes to retry, or leave {name.split()[-1]}= out to retry every "
            "Exception"
        )
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            raise TypeError(
                f"{name} must be an Exception subclass or a tuple of them "
                f"(cancellation and KeyboardInterrupt are never retried), got {cls!r}"
            )
    return classes


# The shapes of the plain functions found callable with one subtask (see `_shape`): a
# supervisor made per call of a function (as a benchmark or a request handler does) reads its
# worker's signature once, not each time (inspect.signature costs tens of microseconds).
_FITTING: set[tuple[Any, ...]] = set()
_MOST_FITTING = 1024  # a bound, for programs that compile functions on the fly


def _shape(value: object) -> tuple[Any, ...] | None:
    """What whether a plain function takes one subtask depends on: its code and which of its
    parameters have defaults; None for any other callable, or a function with attributes of
    its own (``__wrapped__`` or ``__signature__`` would change the signature read)."""
    if type(value) is not FunctionType or value.__dict__:
        return None
    return (value.__code__, len(value.__defaults__ or ()), tuple(value.__kwdefaults__ or ()))


def worker(value: object) -> None:
    """A worker is any callable that can be called with one subtask; whether its call returns
    an awaitable is seen at the call. A callable whose signature cannot take one positional
    argument is refused here, before any work, rather than failing every slot; one without a
    signature to read (some builtins) is left to the call."""
    if not callable(value):
        raise TypeError(
            "worker must be a callable that takes one subtask and returns an awaitable "
            f"(an async def function), got {type(value).__name__} {value!r}"
        )
    shape = _shape(value)
    if shape is not None and shape in _FITTING:
        return
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None)
    except TypeError as error:
        name = getattr(value, "__qualname__", None) or type(value).__name__
        shown = signature.replace(  # the parameters, as a reader wrote them, without types
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        raise TypeError(
            f"worker must be callable with one subtask as its only argument, but {name}"
            f"{shown} is not ({error}): make it take the subtask, and give any other "
            "parameter a default or bind it with functools.partial"
        ) from None
    if shape is not None and len(_FITTING) < _MOST_FITTING:
        _FITTING.add(shape)


def not_awaitable(worker: object, returned: object) -> TypeError:
    """The error for a worker whose call returned something that cannot be awaited."""
    name = getattr(worker, "__qualname__", None) or type(worker).__name__
    return TypeError(
        f"a worker must return an awaitable, but calling {name!r} returned "
        f"{type(returned).__name__} {returned!r}: define it with `async def`, or run blocking "
        "code inside one with `await trio.to_thread.run_sync(...)`"
    )


def seed_kind(name: str, value: object) -> None:
    """A jitter's seed is an int, a ``random.Random`` or None."""
    if not (
        value is None
        or isinstance(value, random.Random)
        or (isinstance(value, int) and not isinstance(value, bool))
    ):
        raise TypeError(
            f"{name} must be an int, a random.Random or None, got {type(value).__name__}"
        )


_ENTROPY = random.SystemRandom()
"""Every unseeded supervisor's generator: it holds no state, and reads the system's entropy
at each draw (one per run), where seeding a ``random.Random`` of its own would read 2.5 KB of
it for every supervisor made."""


def seed(value: int | random.Random | None) -> random.Random:
    """The supervisor's own generator, from a checked seed: ``random.Random(value)`` for an int,
    ``value`` itself for a ``random.Random``, and for None one that draws from the system's
    entropy (as ``random.Random(None)`` is seeded from it)."""
    if value is None:
        return _ENTROPY
    return value if isinstance(value, random.Random) else random.Random(value)


def whole(task: object) -> None:
    """Refuse what iterates, but not as a plan of subtasks: bytes (their items are numbers), a
    mapping (its keys alone), a set (in no order, where results come back in plan order). A
    dict's views are ordered, and taken."""
    if isinstance(task, bytes | bytearray | memoryview):
        example = bytes(task)[:12]
        numbers = ", ".join(map(str, example))
        raise TypeError(
            "a plan of subtasks is a str or an iterable of subtasks, not "
            f"{type(task).__name__}, whose items are numbers ({example!r} would run {numbers}): "
            "decode it (.decode()) for a str to split into subtasks, or pass a list of subtasks"
        )
    if isinstance(task, Mapping):
        raise TypeError(
            f"a plan of subtasks is an iterable of subtasks, not a {type(task).__name__}, whose "
            "iteration gives its keys alone: pass list(d), list(d.values()) or list(d.items())"
        )
    if isinstance(task, AbstractSet) and not isinstance(task, KeysView | ItemsView):
        raise TypeError(
            f"a plan of subtasks is an ordered iterable of subtasks, not a {type(task).__name__}, "
            "which has no order: results come back in plan order, so pass a list "
            "(sorted(s), say)"
        )


def plan(task: object) -> list[Any]:
    """A run's plan: a str split by [`decompose`][trio_supervisor.decompose] (one with no
    subtask, as ``""``, is the empty plan, as ``[]`` is), or a sync iterable read in full
    (not bytes, a mapping or a set: see `whole`)."""
    if isinstance(task, str):
        return subtasks_of(task)
    whole(task)
    if isinstance(task, AsyncIterable):
        raise TypeError(
            f"run() needs a str or a sync iterable of subtasks, got the async iterable "
            f"{type(task).__name__}: use supervisor.stream(...) for async or lazy inputs"
        )
    if not isinstance(task, Iterable):
        raise TypeError(f"task must be a str or an iterable of subtasks, got {type(task).__name__}")
    return list(task)


def subtasks_of(task: str) -> list[str]:
    """``task``'s subtasks (see [`decompose`][trio_supervisor.decompose]); none for a str that
    holds none (``""``, blanks, separators only), as for an empty list."""
    try:
        return decompose(task)
    except ValueError:  # no subtask in it
        return []


def window(value: object, max_workers: int) -> int:
    """A stream's window: at least ``max_workers``; ``4 * max_workers`` when None."""
    if value is None:
        return 4 * max_workers
    if count("window", value) < max_workers:
        raise ValueError(
            f"window must be >= max_workers ({max_workers}), got {value}: "
            "a smaller window leaves workers idle"
        )
    return value  # type: ignore[return-value]  # count() checked it is an int


def stream_input(value: object) -> Iterable[Any] | AsyncIterable[Any]:
    """A stream's input: a str (split; one with no subtask is an empty input), or a sync or
    async iterable."""
    if isinstance(value, str):
        return subtasks_of(value)
    whole(value)
    if not isinstance(value, Iterable | AsyncIterable):
        raise TypeError(
            "subtasks must be a str or a sync or async iterable of subtasks, "
            f"got {type(value).__name__}"
        )
    return value
