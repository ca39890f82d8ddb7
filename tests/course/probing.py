"""What the tests of steps 5-10 share: a probe around a worker, and a way to call any step with
only the options it accepts (from the course's ``probes``, which the laws run on)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from lessons import (
    step05_fault_isolation,
    step06_timeouts,
    step07_retries,
    step08_restart_intensity,
    step09_streaming,
    step10_lazy_window,
)
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
    "supervise",
    "task_of",
    "tasks_below",
]

STEP05, STEP06, STEP07, STEP08, STEP09, STEP10 = (
    step05_fault_isolation,
    step06_timeouts,
    step07_retries,
    step08_restart_intensity,
    step09_streaming,
    step10_lazy_window,
)


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
