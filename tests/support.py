"""Shared test helpers: virtual time, and a spy worker that records what ran when."""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import trio
import trio.testing
from hypothesis import strategies as st

T = TypeVar("T")


def run_virtual(async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run`` on a MockClock that jumps ahead whenever every task is blocked: for
    Hypothesis tests, which cannot use the function-scoped ``autojump_clock`` fixture."""
    return trio.run(async_fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


def exact_latencies(max_size: int = 10) -> st.SearchStrategy[list[float]]:
    """Distinct latencies, in a random permutation. Whole 1/32 s: exact in binary, so virtual
    times add up exactly and schedules can be compared with ``==``."""
    distinct = st.lists(
        st.integers(1, 256).map(lambda k: k / 32), min_size=1, max_size=max_size, unique=True
    )
    return distinct.flatmap(st.permutations)


def plan_of(n: int) -> list[str]:
    return [f"s{i}" for i in range(n)]


def task_of(plan: Sequence[str]) -> str:
    return "; ".join(plan)


@dataclass(frozen=True)
class Schedule:
    """Greedy list scheduling in plan order on k workers: each slot starts when the first worker
    frees up. What a supervisor that admits subtasks in plan order before they run must follow,
    exactly: the law every bounded supervisor here is checked against."""

    starts: list[float]
    ends: list[float]

    @property
    def makespan(self) -> float:
        return max(self.ends, default=0.0)

    @property
    def spans(self) -> list[tuple[float, float]]:
        return list(zip(self.starts, self.ends, strict=True))


def list_schedule(durations: Iterable[float], k: int) -> Schedule:
    free = [0.0] * k
    starts, ends = [], []
    for duration in durations:
        start = heapq.heappop(free)
        starts.append(start)
        ends.append(start + duration)
        heapq.heappush(free, start + duration)
    return Schedule(starts, ends)


class Spy:
    """A worker with a fixed latency per subtask, failing those in ``fail``; it records how many
    calls are in flight (and the peak), the order calls started and completed, and which calls
    were cancelled."""

    def __init__(
        self, latencies: dict[str, float], fail: Iterable[str] = (), exc: type = ValueError
    ) -> None:
        self.latencies = latencies
        self.fail = set(fail)
        self.exc = exc
        self.running = 0
        self.max_running = 0
        self.started: list[str] = []
        self.completed: list[str] = []
        self.cancelled: list[str] = []

    async def __call__(self, subtask: str) -> str:
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.started.append(subtask)
        try:
            await trio.sleep(self.latencies[subtask])
        except trio.Cancelled:
            self.cancelled.append(subtask)
            raise
        finally:
            self.running -= 1
        self.completed.append(subtask)
        if subtask in self.fail:
            raise self.exc(f"{subtask} failed")
        return f"out:{subtask}"


def spy_for(latencies: Sequence[float], fail: Iterable[int] = ()) -> tuple[list[str], Spy]:
    plan = plan_of(len(latencies))
    spy = Spy(dict(zip(plan, latencies, strict=True)), {plan[i] for i in fail})
    return plan, spy


def flawed(step: Any, flaw: str, raises: type[BaseException] = AssertionError) -> Any:
    """``step`` as a test parameter on which the test must fail, strictly: the test states the law
    of the step after it, and ``flaw`` is what ``step`` is still wrong about, which that next
    step fixes."""
    return pytest.param(step, marks=pytest.mark.xfail(strict=True, raises=raises, reason=flaw))
