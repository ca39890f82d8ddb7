"""What the tests of steps 5-10 share: a probe around a worker, the schedule a run must follow,
and a way to call any step with only the options it accepts."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import strategies as st

from lessons import (
    step05_fault_isolation,
    step06_timeouts,
    step07_retries,
    step08_restart_intensity,
    step09_streaming,
    step10_lazy_window,
)
from trio_supervisor import Aggregate, SubResult
from trio_supervisor.testing import SimulatedAgent

STEP05, STEP06, STEP07, STEP08, STEP09, STEP10 = (
    step05_fault_isolation,
    step06_timeouts,
    step07_retries,
    step08_restart_intensity,
    step09_streaming,
    step10_lazy_window,
)
HOUR = 3600.0


@dataclass
class Call:
    """One call of a worker: when it started and ended, and how (ok, error or cancelled)."""

    subtask: str
    start: float
    end: float | None = None
    outcome: str | None = None


@dataclass
class Probe:
    """A worker wrapped so that every call is recorded, with how many run at once."""

    worker: Callable[[str], Awaitable[str]]
    calls: list[Call] = field(default_factory=list)
    live: int = 0
    most: int = 0

    async def __call__(self, subtask: str) -> str:
        call = Call(subtask, trio.current_time())
        self.calls.append(call)
        self.live += 1
        self.most = max(self.most, self.live)
        try:
            output = await self.worker(subtask)
        except Exception:
            call.outcome = "error"
            raise
        except BaseException:
            call.outcome = "cancelled"
            raise
        finally:
            call.end = trio.current_time()
            self.live -= 1
        call.outcome = "ok"
        return output

    def of(self, subtask: str) -> list[Call]:
        """The calls made for ``subtask``, in order."""
        return [call for call in self.calls if call.subtask == subtask]


def accepted(function: Callable[..., Any], **options: Any) -> dict[str, Any]:
    """The options ``function`` accepts (steps before 6 take no timeout, before 7 no attempts,
    before 8 no intensity, before 10 no window)."""
    parameters = inspect.signature(function).parameters
    return {name: value for name, value in options.items() if name in parameters}


async def supervise(
    step: ModuleType, task: str, worker: Any, **options: Any
) -> Aggregate[str, str]:
    """Run ``step.supervise`` with the options it accepts."""
    aggregate: Aggregate[str, str] = await step.supervise(
        task,
        worker,
        **accepted(step.stream if hasattr(step, "stream") else step.supervise, **options),
    )
    return aggregate


async def arrivals(
    step: ModuleType, task: str, worker: Any, **options: Any
) -> list[tuple[float, SubResult[str, str]]]:
    """Each result with the trio time the caller got it: as it is handed over from a stream, or
    all at once when a batch ``supervise`` returns."""
    if not hasattr(step, "stream"):
        aggregate = await supervise(step, task, worker, **options)
        return [(trio.current_time(), result) for result in aggregate.results]
    got = []
    async with step.stream(task, worker, **accepted(step.stream, **options)) as results:
        async for result in results:
            got.append((trio.current_time(), result))
    return got


async def refused(step: ModuleType, options: dict[str, Any], message: str) -> None:
    """Check that ``step.supervise`` refuses ``options`` with exactly ``message`` (a regex),
    before any worker is called."""
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=f"^{message}$"):
        await step.supervise("a; b", agent, max_workers=2, **options)
    assert not agent.calls


KINDS = st.sampled_from(["ok", "ok", "fail", "hang"])


@st.composite
def plans(draw: st.DrawFn, max_size: int = 8) -> list[str]:
    """A plan of distinct subtasks, each ordinary, failing ("fail" in its text) or hanging
    ("hang" in its text), for `trio_supervisor.testing.SimulatedAgent`."""
    kinds = draw(st.lists(KINDS, min_size=1, max_size=max_size))
    return [f"{kind} {slot}" for slot, kind in enumerate(kinds)]


def odd_fraction(low: int, high: int, denominator: int) -> st.SearchStrategy[float]:
    """``(2n + 1) / denominator`` for n in [low, high]: exact in binary, and never equal to a
    sum of latencies on a coarser grid, so no two events of a run fall on the same instant."""
    return st.integers(low, high).map(lambda n: (2 * n + 1) / denominator)


def agent_with(latencies: list[int], **options: object) -> SimulatedAgent:
    """A sub-agent on subtasks s0, s1, ... whose latencies are the given 32nds of a second."""
    return SimulatedAgent(
        latencies={f"s{slot}": n / 32 for slot, n in enumerate(latencies)},
        **options,  # type: ignore[arg-type]
    )


def task_of(size: int) -> str:
    """The task of subtasks s0, s1, ... s<size - 1>."""
    return "; ".join(f"s{slot}" for slot in range(size))


def tasks_below(task: trio.lowlevel.Task) -> int:
    """How many tasks run below ``task``, in its nurseries and theirs."""
    return sum(
        1 + tasks_below(child) for nursery in task.child_nurseries for child in nursery.child_tasks
    )
