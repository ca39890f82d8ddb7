"""What the supervisor tests share: a scripted worker, the schedule a run must follow, task counts.

Latencies are whole 1/32 s and timeouts and deadlines odd multiples of 1/64 s, so virtual times
add up exactly and no attempt ever ends at the very instant a timeout or deadline fires.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import trio
import trio.testing
from hypothesis import strategies as st

from trio_supervisor import Restarts
from trio_supervisor.testing import SubAgentError

GRID = 32
R = TypeVar("R")

PATHS: dict[str, dict[str, Any]] = {
    "lanes": {},
    "intensity": {"restarts": Restarts(max_restarts=100, within=10.0)},
    "one_for_all": {"restarts": Restarts(strategy="one_for_all")},
    "rest_for_one": {"restarts": Restarts(strategy="rest_for_one")},
}
"""The two ways a run goes: the lanes, and the restarting path (a bound on restarts, or a
strategy other than one_for_one) that runs each attempt in a task of its own. A promise about
how one attempt is run is tested on both."""


@dataclass(frozen=True)
class Behaviour:
    """What one subtask does on each call: ``outcomes[n - 1]`` on call n, the last one repeating.

    An outcome is ``"ok"`` (return after ``latency``), ``"fail"`` (raise SubAgentError after
    ``latency``) or ``"hang"`` (never return).
    """

    latency: int  # in 1/GRID s
    outcomes: tuple[str, ...] = ("ok",)

    def outcome(self, call: int) -> str:
        return self.outcomes[min(call, len(self.outcomes)) - 1]

    @property
    def seconds(self) -> float:
        return self.latency / GRID


def ok(latency: int) -> Behaviour:
    return Behaviour(latency)


def fail(latency: int) -> Behaviour:
    return Behaviour(latency, ("fail",))


def hang() -> Behaviour:
    return Behaviour(1, ("hang",))


@dataclass
class Script:
    """A worker playing one `Behaviour` per subtask (the subtask is its slot number).

    It records every call: how many per subtask, when each started and ended, and how many calls
    were in flight at once.
    """

    behaviours: Sequence[Behaviour]
    calls: Counter[int] = field(default_factory=Counter)
    spans: dict[int, list[tuple[float, float | None]]] = field(default_factory=dict)
    in_flight: int = 0
    peak: int = 0
    cancelled: int = 0  # calls that ended by cancellation

    async def __call__(self, subtask: int) -> str:
        behaviour = self.behaviours[subtask]
        self.calls[subtask] += 1
        call = self.calls[subtask]
        spans = self.spans.setdefault(subtask, [])
        spans.append((trio.current_time(), None))
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        done = False
        try:
            outcome = behaviour.outcome(call)
            if outcome == "hang":
                await trio.sleep_forever()
            await trio.sleep(behaviour.seconds)
            done = True
            if outcome == "fail":
                raise SubAgentError(f"slot {subtask} failed on call {call}")
            return f"output {subtask}"
        finally:
            self.in_flight -= 1
            self.cancelled += not done
            spans[-1] = (spans[-1][0], trio.current_time())


def occupancy(behaviour: Behaviour, timeout: float | None) -> float:
    """How long one single-attempt slot holds its worker: its latency, or its timeout."""
    if behaviour.outcome(1) == "hang":
        assert timeout is not None, "a hang without a timeout never ends"
        return timeout
    if timeout is not None and behaviour.seconds > timeout:
        return timeout
    return behaviour.seconds


def live_tasks() -> int:
    """How many trio tasks exist right now, the root included."""
    count = 0
    root = trio.lowlevel.current_root_task()
    assert root is not None
    stack = [root]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


latencies = st.integers(min_value=1, max_value=64)
plain_behaviours = st.builds(ok, latencies) | st.builds(fail, latencies)
"""A subtask that ends on its own, succeeding or failing, after 1/32 to 2 s."""
behaviours = plain_behaviours | st.just(hang())
outcome_lists = st.lists(st.sampled_from(["ok", "fail", "hang"]), min_size=1, max_size=4)
mixed_behaviours = st.builds(Behaviour, latencies, outcome_lists.map(tuple))
"""Each call may succeed, fail or hang: flaky, hung-then-recovering, and so on."""
odd_64ths = st.integers(min_value=1, max_value=200).map(lambda n: (2 * n - 1) / 64)
"""Timeouts and deadlines: never a whole 1/32 s, so they never tie with a latency."""
odd_128ths = st.integers(min_value=1, max_value=800).map(lambda n: (2 * n - 1) / 128)
"""Deadlines: never a sum of latencies and timeouts, so no attempt ends as the deadline fires."""
