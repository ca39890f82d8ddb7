"""What the laws (``laws.py``) run a step with: virtual time, what Hypothesis draws, workers that
record what ran when, and the schedule a bounded supervisor must follow.

The test suite and ``python -m lessons check`` share them, so that both run the same laws.
"""

from __future__ import annotations

import heapq
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

import trio
import trio.testing
from hypothesis import strategies as st

from lessons._course.steps import Step
from lessons._course.steps import step as step_record
from trio_supervisor import Aggregate, SubResult
from trio_supervisor.testing import SimulatedAgent

T = TypeVar("T")
HOUR = 3600.0


def run_virtual(async_fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run`` on a MockClock that jumps ahead whenever every task is blocked: for
    Hypothesis tests, which cannot use the function-scoped ``autojump_clock`` fixture."""
    return trio.run(async_fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


# --- what Hypothesis draws ----------------------------------------------------------------------


def exact_latencies(max_size: int = 10) -> st.SearchStrategy[list[float]]:
    """Distinct latencies, in a random permutation. Whole 1/32 s: exact in binary, so virtual
    times add up exactly and schedules can be compared with ``==``."""
    distinct = st.lists(
        st.integers(1, 256).map(lambda k: k / 32), min_size=1, max_size=max_size, unique=True
    )
    return distinct.flatmap(st.permutations)


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


# --- plans and the schedule they must follow ----------------------------------------------------


def plan_of(n: int) -> list[str]:
    """The subtasks s0, s1, ... s<n - 1>."""
    return [f"s{i}" for i in range(n)]


def task_of(plan: Sequence[str]) -> str:
    """The task that decomposes into ``plan``."""
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


# --- workers that record ------------------------------------------------------------------------


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


NAMES = (
    "pricing",
    "inventory",
    "reviews",
    "hiring",
    "support",
    "patents",
    "logistics",
    "returns",
    "funding",
    "press",
)
"""Subtasks as a real plan names them: in this order no two of them sort as they stand, so a
result list sorted by name is not in plan order, whatever a law draws (and shrinks to)."""


def named_plans() -> st.SearchStrategy[list[str]]:
    """The `NAMES` shuffled: a law takes as many as it has subtasks, in the order drawn."""
    return st.permutations(NAMES)


def spy_for(
    latencies: Sequence[float], fail: Iterable[int] = (), names: Sequence[str] | None = None
) -> tuple[list[str], Spy]:
    """A plan s0, s1, ... (or the first of ``names``) with the given latencies, and a spy
    failing the slots in ``fail``."""
    plan = plan_of(len(latencies)) if names is None else list(names[: len(latencies)])
    spy = Spy(dict(zip(plan, latencies, strict=True)), {plan[i] for i in fail})
    return plan, spy


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


def agent_with(latencies: list[int], **options: object) -> SimulatedAgent:
    """A sub-agent on subtasks s0, s1, ... whose latencies are the given 32nds of a second."""
    return SimulatedAgent(
        latencies={f"s{slot}": n / 32 for slot, n in enumerate(latencies)},
        **options,  # type: ignore[arg-type]
    )


def tasks_below(task: trio.lowlevel.Task) -> int:
    """How many tasks run below ``task``, in its nurseries and theirs."""
    return sum(
        1 + tasks_below(child) for nursery in task.child_nurseries for child in nursery.child_tasks
    )


# --- calling any step ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """A step's code under a law: a module (the course's step, or a reader's version of it) and
    the record of the step it is meant to be, which says what its entry takes."""

    module: ModuleType
    record: Step

    @property
    def supervise(self) -> Any:
        """The module's ``supervise``."""
        return self.module.supervise

    @property
    def stream(self) -> Any:
        """The module's ``stream`` (a step that streams)."""
        return self.module.stream


def subject(step: Subject | ModuleType) -> Subject:
    """``step`` as a law runs it: a module of the course's is known by its name."""
    if isinstance(step, Subject):
        return step
    return Subject(step, step_record(step.__name__))


async def supervise(
    step: Subject | ModuleType, task: str, worker: Any, **options: Any
) -> Aggregate[str, str]:
    """Run ``step.supervise`` with the options it accepts (steps before 6 take no timeout,
    before 7 no attempts, before 8 no intensity, before 10 no window)."""
    step = subject(step)
    aggregate: Aggregate[str, str] = await step.supervise(
        task, worker, **step.record.accepted(**options)
    )
    return aggregate


async def arrivals(
    step: Subject | ModuleType, task: str, worker: Any, **options: Any
) -> list[tuple[float, SubResult[str, str]]]:
    """Each result with the trio time the caller got it: as it is handed over from a stream, or
    all at once when a batch ``supervise`` returns."""
    step = subject(step)
    if not step.record.streams and "on_result" in inspect.signature(step.supervise).parameters:
        handed: list[tuple[float, SubResult[str, str]]] = []

        async def on_result(result: SubResult[str, str]) -> None:
            handed.append((trio.current_time(), result))

        await step.supervise(task, worker, on_result=on_result, **step.record.accepted(**options))
        return handed
    if not step.record.streams:
        aggregate = await supervise(step, task, worker, **options)
        return [(trio.current_time(), result) for result in aggregate.results]
    got = []
    async with step.stream(task, worker, **step.record.accepted(**options)) as results:
        async for result in results:
            got.append((trio.current_time(), result))
    return got
