"""Shared test helpers: virtual time, and a spy worker that records what ran when."""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import trio
import trio.testing
from hypothesis import strategies as st

T = TypeVar("T")


def run_virtual(fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """Run ``fn`` under a fresh autojumping MockClock; return its result and the virtual seconds
    it took. For Hypothesis tests, which cannot use the function-scoped ``autojump_clock``."""

    async def timed() -> tuple[T, float]:
        start = trio.current_time()
        result = await fn(*args, **kwargs)
        return result, trio.current_time() - start

    return trio.run(timed, clock=trio.testing.MockClock(autojump_threshold=0))


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


def makespan(latencies: Iterable[float], k: int) -> float:
    """Greedy list scheduling in plan order on k workers: each subtask starts on the first worker
    to free up. What a supervisor that admits subtasks in plan order must take, exactly."""
    free = [0.0] * k
    end = 0.0
    for latency in latencies:
        finish = heapq.heappop(free) + latency
        heapq.heappush(free, finish)
        end = max(end, finish)
    return end


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
