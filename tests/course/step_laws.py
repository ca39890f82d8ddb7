"""Shared test helpers: virtual time, and a spy worker that records what ran when (from the
course's ``probes``, which the laws run on), and the steps a law is proven on."""

from __future__ import annotations

from typing import Any

import pytest

from lessons._course.laws import Law
from lessons._course.probes import (
    Schedule,
    Spy,
    exact_latencies,
    list_schedule,
    plan_of,
    run_virtual,
    spy_for,
    task_of,
)
from lessons._course.steps import load_step, steps

__all__ = [
    "Schedule",
    "Spy",
    "cases",
    "exact_latencies",
    "flawed",
    "list_schedule",
    "plan_of",
    "run_virtual",
    "spy_for",
    "task_of",
]


def flawed(step: Any, flaw: str, raises: type[BaseException] = AssertionError) -> Any:
    """``step`` as a test parameter on which the test must fail, strictly: the test states the law
    of the step after it, and ``flaw`` is what ``step`` is still wrong about, which that next
    step fixes."""
    return pytest.param(step, marks=pytest.mark.xfail(strict=True, raises=raises, reason=flaw))


def cases(law: Law) -> list[Any]:
    """The steps ``law`` is proven on, as test parameters, in step order: each step it names,
    and the step before them that fails it, strictly (see `flawed`)."""
    known = steps()
    params = [load_step(known[number]) for number in law.steps]
    if law.flaw is not None:
        number, flaw = law.flaw
        params.append(flawed(load_step(known[number]), flaw, law.raises))
    return sorted(params, key=_step_name)


def _step_name(param: Any) -> str:
    step = param.values[0] if hasattr(param, "marks") else param
    name: str = step.__name__
    return name
