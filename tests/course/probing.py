"""What the tests of Part I's later steps share: a probe around a worker, and a way to call any
step with only the options it accepts (from the course's ``probes``, which the laws run on)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from lessons._course.probes import (
    HOUR,
    Call,
    Probe,
    agent_with,
    arrivals,
    odd_fraction,
    plans,
    supervise,
    tasks_below,
)
from lessons._course.steps import PART_TWO, load_step, steps
from trio_supervisor.testing import SimulatedAgent

__all__ = [
    "HOUR",
    "Call",
    "Probe",
    "agent_with",
    "arrivals",
    "odd_fraction",
    "plans",
    "refused",
    "since",
    "supervise",
    "task_of",
    "tasks_below",
]

PART_ONE = {number: load_step(name) for number, name in steps().items() if number < PART_TWO}
"""Every step of Part I, by number."""
STEP05, STEP06, STEP07, STEP08, STEP09, STEP10, STEP11, STEP12, STEP13, STEP14, STEP15 = (
    PART_ONE[n] for n in range(5, 16)
)


def since(first: int) -> list[ModuleType]:
    """The steps of Part I from step ``first`` on, in order: those that keep its idea."""
    return [module for number, module in PART_ONE.items() if number >= first]


async def refused(step: ModuleType, options: dict[str, Any], message: str) -> None:
    """Check that ``step.supervise`` refuses ``options`` with exactly ``message`` (a regex),
    before any worker is called."""
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=f"^{message}$"):
        await step.supervise("a; b", agent, max_workers=2, **options)
    assert not agent.calls


def task_of(size: int) -> str:
    """The task of subtasks s0, s1, ... s<size - 1>."""
    return "; ".join(f"s{slot}" for slot in range(size))
