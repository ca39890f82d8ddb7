"""Virtual time for the library's tests: ``trio.run`` on a clock that jumps ahead whenever every
task is blocked, the latencies Hypothesis draws for it, and the schedule a bound of K gives."""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

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


@dataclass(frozen=True)
class Schedule:
    """When each slot of a plan starts and ends."""

    starts: list[float]
    ends: list[float]

    @property
    def makespan(self) -> float:
        return max(self.ends, default=0.0)


def list_schedule(durations: Iterable[float], k: int) -> Schedule:
    """Where each of ``durations``, in order, runs on ``k`` workers, each taken by the next
    duration as soon as it frees up."""
    free = [0.0] * k
    starts, ends = [], []
    for duration in durations:
        start = heapq.heappop(free)
        starts.append(start)
        ends.append(start + duration)
        heapq.heappush(free, start + duration)
    return Schedule(starts, ends)
