"""The options' old spellings, each refused in one line that says what to write now.

A supervisor's options used to be flat keywords; they are policies now: retries are one
[`Retry`][trio_supervisor.Retry], a run's name and journal one
[`Durable`][trio_supervisor.Durable], a re-planning run's budgets one
[`ReplanLimits`][trio_supervisor.ReplanLimits], and a shared
[`Capacity`][trio_supervisor.Capacity] is one of the ``meters``. The table below is the one
place that knows the old spellings: ``refusing`` wraps the constructor and the three methods, so
a caller of the old ones learns the new one from the ``TypeError``, before any work.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

MOVED: dict[str, tuple[str, str, str]] = {
    # old keyword: (the keyword it is part of now, the policy's class, its field there)
    "attempts": ("retry", "Retry", "attempts"),
    "retry_on": ("retry", "Retry", "on"),
    "backoff": ("retry", "Retry", "backoff"),
    "seed": ("retry", "Retry", "seed"),
    "run_id": ("durable", "Durable", "run_id"),
    "journal": ("durable", "Durable", "journal"),
    "max_rounds": ("limits", "ReplanLimits", "max_rounds"),
    "max_subtasks": ("limits", "ReplanLimits", "max_subtasks"),
    "max_stalls": ("limits", "ReplanLimits", "max_stalls"),
    "max_resets": ("limits", "ReplanLimits", "max_resets"),
}
"""Each old keyword that became a field of a policy."""

GONE: dict[str, str] = {
    "capacity": (
        "capacity= is gone: give a shared Capacity as one of meters=[...] (each attempt holds "
        "one of its places): Supervisor(worker, max_workers=..., meters=[capacity])"
    ),
    "round": (
        "round= is no option of Supervisor.run: rounds are set by Supervisor.replan, which runs "
        "each round's batch under its number"
    ),
}
"""Each old keyword with no field to go to, and what to do instead."""


def refusing(call: str, *old: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Wrap a function so that its old keywords ``old`` raise a ``TypeError`` naming the new
    spelling, written into ``call`` (how the function is called, with ``{}`` where the new
    keyword goes); its signature, as ``inspect`` and the reference show it, is its own."""
    known = frozenset(old)

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def checked_async(*args: Any, **options: Any) -> Any:
                if not known.isdisjoint(options):
                    raise TypeError(message(call, options))
                return await function(*args, **options)

            return checked_async  # type: ignore[return-value]  # the same signature, wrapped

        @functools.wraps(function)
        def checked(*args: P.args, **options: P.kwargs) -> R:
            if not known.isdisjoint(options):
                raise TypeError(message(call, options))
            return function(*args, **options)

        return checked

    return wrap


def message(call: str, options: Mapping[str, object]) -> str:
    """The one line for the first old keyword in ``options``: which keyword it is part of now,
    and the call written the new way, with the values given (every old keyword of that policy
    the caller gave, in the policy's order)."""
    first = next(name for name in options if name in MOVED or name in GONE)
    if first in GONE:
        return GONE[first]
    keyword, policy, _ = MOVED[first]
    given = [name for name, moved in MOVED.items() if moved[0] == keyword and name in options]
    fields = ", ".join(f"{MOVED[name][2]}={_shown(name, options[name])}" for name in given)
    old = " and ".join(f"{name}=" for name in given)
    verb = "is" if len(given) == 1 else "are"
    return f"{old} {verb} now part of {keyword}=: {call.format(f'{keyword}={policy}({fields})')}"


def _shown(name: str, value: object) -> str:
    """``value`` as a caller would write it: a class by its name, a tuple of classes as a tuple
    of names, a value whose repr reads back as that repr, anything else by its old keyword."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, tuple) and value and all(isinstance(item, type) for item in value):
        names = [item.__name__ for item in value]
        return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"
    shown = repr(value)
    return name if shown.startswith("<") or len(shown) > 60 else shown
