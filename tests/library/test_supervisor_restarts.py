"""The library's restart intensity and restart strategies (Erlang/OTP's), and that the library
and the course's step 9 agree on every run they both accept.

All on virtual time.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lessons import step09_restart_intensity as step09
from tests.library.virtual_time import run_virtual
from trio_supervisor import Aggregate, Backoff, Restarts, Retry, Status, Strategy, Supervisor
from trio_supervisor.testing import SimulatedAgent, SubAgentError

NO_WAIT = Backoff(initial=0, maximum=0)
STRATEGIES: list[Strategy] = ["one_for_one", "one_for_all", "rest_for_one"]


@st.composite
def agents(
    draw: st.DrawFn,
) -> tuple[list[str], dict[str, float], set[str], dict[str, int], set[str]]:
    """A plan of 1-5 subtasks, each ok, failing for good, flaky (its first calls fail) or hung,
    with distinct latencies in 64ths of a second."""
    size = draw(st.integers(1, 5))
    plan = [f"s{slot}" for slot in range(size)]
    ticks = draw(st.lists(st.integers(1, 96), min_size=size, max_size=size, unique=True))
    latencies = {subtask: tick / 64 for subtask, tick in zip(plan, ticks, strict=True)}
    kinds = draw(
        st.lists(st.sampled_from(["ok", "fail", "flaky", "hang"]), min_size=size, max_size=size)
    )
    fail = {subtask for subtask, kind in zip(plan, kinds, strict=True) if kind == "fail"}
    hang = {subtask for subtask, kind in zip(plan, kinds, strict=True) if kind == "hang"}
    flaky = {
        subtask: draw(st.integers(1, 3))
        for subtask, kind in zip(plan, kinds, strict=True)
        if kind == "flaky"
    }
    return plan, latencies, fail, flaky, hang


def no_ties(latencies: dict[str, float], hang: set[str], timeout: float | None, calls: int) -> bool:
    """Whether no two attempts' ends can fall on one instant: every slot starts at 0 and its
    attempts follow each other at once, so an attempt ends at a multiple of its duration (its
    latency, or the timeout where it hangs or runs past it)."""
    durations = []
    for subtask, latency in latencies.items():
        if timeout is not None and (subtask in hang or latency >= timeout):
            durations.append(timeout)
        elif subtask not in hang:  # a hung slot without a timeout ends at no instant
            durations.append(latency)
    ends = [k * duration for duration in durations for k in range(1, calls + 1)]
    return len(ends) == len(set(ends))


@settings(max_examples=150)
@given(
    agent=agents(),
    attempts=st.integers(1, 4),
    restarts=st.integers(0, 3),
    period=st.integers(1, 200).map(lambda n: n / 16),
    timeout=st.none() | st.integers(0, 60).map(lambda n: (2 * n + 1) / 128),
)
def test_the_library_and_step_8_agree_on_every_run_they_both_accept(
    agent: tuple[list[str], dict[str, float], set[str], dict[str, int], set[str]],
    attempts: int,
    restarts: int,
    period: float,
    timeout: float | None,
) -> None:
    """Both accept any plan, worker, attempts, intensity and timeout; they schedule alike where
    nobody waits for a worker (``max_workers`` is the plan's size) and retries start at once
    (step 9 releases a worker between attempts, the library keeps it; with a wait for a place
    the two orders differ by design). There every slot ends the same: status, calls, output,
    and the error of a failure or of giving up (a timeout's text is each one's own)."""
    plan, latencies, fail, flaky, hang = agent
    assume(no_ties(latencies, hang, timeout, attempts))
    task = "; ".join(plan)

    def make() -> SimulatedAgent:
        return SimulatedAgent(fail=fail, hang=hang, flaky=flaky, latencies=latencies)

    async def both() -> tuple[Aggregate[str, str], Aggregate[str, str]]:
        course = await step09.supervise(
            task,
            make(),
            max_workers=len(plan),
            attempts=attempts,
            intensity=(restarts, period),
            backoff=(0.0, 0.0),
            deadline=100.0,
            worker_timeout=math.inf if timeout is None else timeout,
        )
        library: Supervisor[str, str] = Supervisor(
            make(),
            max_workers=len(plan),
            retry=Retry(attempts=attempts, backoff=NO_WAIT),
            restarts=Restarts(max_restarts=restarts, within=period),
            timeout=timeout,
        )
        return course, await library.run(task, deadline=100.0)

    course, library = run_virtual(both)
    for ours, theirs in zip(library.results, course.results, strict=True):
        assert (ours.status, ours.attempts, ours.output) == (
            theirs.status,
            theirs.attempts,
            theirs.output,
        )
        if ours.status is Status.FAILED:
            assert ours.error == theirs.error


class Calls:
    """A worker whose subtasks fail their first ``flaky[s]`` calls, recording when each call
    started and how it ended."""

    def __init__(self, latencies: dict[int, float], flaky: dict[int, int]) -> None:
        self.latencies = latencies
        self.flaky = flaky
        self.calls: dict[int, list[tuple[float, str]]] = {slot: [] for slot in latencies}

    async def __call__(self, slot: int) -> int:
        made = self.calls[slot]
        made.append((trio.current_time(), "running"))
        index = len(made) - 1
        try:
            await trio.sleep(self.latencies[slot])
        except BaseException:
            made[index] = (made[index][0], "cancelled")
            raise
        if len(made) <= self.flaky.get(slot, 0):
            made[index] = (made[index][0], "failed")
            raise SubAgentError(f"slot {slot} failed")
        made[index] = (made[index][0], "ok")
        return slot

    def failures(self) -> list[tuple[float, int]]:
        """When each failed call ended, and its slot."""
        return [
            (start + self.latencies[slot], slot)
            for slot, made in self.calls.items()
            for start, outcome in made
            if outcome == "failed"
        ]


def taken_by(strategy: Strategy, failed: int, slot: int, size: int) -> bool:
    """Whether a restart of slot ``failed`` takes slot ``slot``."""
    return {
        "one_for_one": slot == failed,
        "one_for_all": True,
        "rest_for_one": slot >= failed,
    }[strategy] and slot < size


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=60)
@given(
    ticks=st.lists(st.integers(1, 64), min_size=1, max_size=6),
    flaky=st.dictionaries(st.integers(0, 5), st.integers(1, 2), max_size=3),
    workers=st.integers(1, 6),
)
def test_every_result_is_newer_than_every_restart_that_takes_its_slot(
    strategy: Strategy, ticks: list[int], flaky: dict[int, int], workers: int
) -> None:
    """The law of the strategies: a slot's result comes from a call that started after every
    restart that took that slot (so no result was made from a sibling's stale work), and a slot
    no restart took was called once."""
    size = len(ticks)
    worker = Calls({slot: tick / 32 for slot, tick in enumerate(ticks)}, flaky)

    async def main() -> Aggregate[int, int]:
        supervisor: Supervisor[int, int] = Supervisor(
            worker,
            max_workers=workers,
            retry=Retry(attempts=3, backoff=NO_WAIT),
            restarts=Restarts(strategy=strategy),
        )
        return await supervisor.run(range(size))

    aggregate = run_virtual(main)
    assert all(result.ok for result in aggregate.results)
    failures = worker.failures()
    for slot in range(size):
        last_start = worker.calls[slot][-1][0]
        taking = [when for when, failed in failures if taken_by(strategy, failed, slot, size)]
        assert all(last_start >= when for when in taking), (slot, worker.calls, failures)
        if not taking:
            assert len(worker.calls[slot]) == 1


@pytest.mark.parametrize(
    ("strategy", "calls"),
    [
        ("one_for_one", [1, 2, 1, 1]),  # the flaky slot alone
        ("one_for_all", [2, 2, 2, 1]),  # everything that had started (3 had not, with K=3)
        ("rest_for_one", [1, 2, 2, 1]),  # the flaky slot and the started one after it
    ],
)
async def test_a_restart_takes_the_slots_its_strategy_names(
    strategy: Strategy, calls: list[int], autojump_clock: object
) -> None:
    worker = Calls({0: 1.0, 1: 0.5, 2: 1.0, 3: 1.0}, {1: 1})
    supervisor: Supervisor[int, int] = Supervisor(
        worker,
        max_workers=3,
        retry=Retry(attempts=2, backoff=NO_WAIT),
        restarts=Restarts(strategy=strategy),
    )
    aggregate = await supervisor.run(range(4))
    assert [result.attempts for result in aggregate.results] == calls
    assert [len(made) for made in worker.calls.values()] == calls


async def test_a_slot_restarted_for_a_sibling_is_not_charged_an_attempt(
    autojump_clock: object,
) -> None:
    """With attempts=2 the sibling is called three times (restarted twice for slot 0) and
    still succeeds: only its own failures count against its attempts."""
    worker = Calls({0: 0.5, 1: 1.0}, {0: 1, 1: 0})
    supervisor: Supervisor[int, int] = Supervisor(
        worker,
        max_workers=2,
        retry=Retry(attempts=2, backoff=NO_WAIT),
        restarts=Restarts(strategy="one_for_all"),
    )
    aggregate = await supervisor.run(range(2))
    assert [result.ok for result in aggregate.results] == [True, True]
    assert aggregate.results[1].attempts == 2  # cancelled once, then ran to its end


async def test_past_its_intensity_the_run_gives_up_and_fails_every_unfinished_slot(
    autojump_clock: object,
) -> None:
    agent = SimulatedAgent(fail={"b", "c", "d", "e"}, latencies={"a": 0.5, "e": 9.0})
    supervisor: Supervisor[str, str] = Supervisor(
        agent,
        max_workers=5,
        retry=Retry(attempts=4, backoff=NO_WAIT),
        restarts=Restarts(max_restarts=3, within=10.0),
    )
    aggregate = await supervisor.run("a; b; c; d; e")
    assert aggregate.results[0].ok  # finished before: kept
    gave_up = [
        result
        for result in aggregate.results
        if result.error == ("gave up: more than 3 restarts within 10s")
    ]
    own = [result for result in aggregate.results[1:] if result not in gave_up]
    assert len(own) == 1
    assert str(own[0].error).startswith("SubAgentError")
    assert len(gave_up) == 3
    assert all(result.status is Status.FAILED for result in gave_up)
    assert trio.current_time() < 9.0  # it did not wait for the slow slot


class Asks(Exception):
    """A failure that asks for a wait before its slot is tried again."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"wait {wait:g}s")
        self.retry_after = wait


@settings(max_examples=150)
@given(
    first=st.lists(
        st.none() | st.tuples(st.integers(1, 32), st.integers(0, 64)), min_size=2, max_size=5
    ),
    workers=st.integers(1, 5),
)
def test_after_a_rest_for_one_restart_the_slots_taken_start_again_in_plan_order(
    first: list[tuple[int, int] | None], workers: int
) -> None:
    """The law of ``rest_for_one``'s order: whichever restarts take them (failures at any
    instants, asking any waits, one restart holding slots longer than another), the slots that
    start at one instant start in plan order, as the first admission does, whatever order trio
    runs their tasks in. A slot's first call fails after ``first[slot]``'s ticks asking its
    wait (in 16ths of a second), or runs long; every later call runs long."""
    calls: list[tuple[float, int]] = []

    async def worker(slot: int) -> int:
        calls.append((trio.current_time(), slot))
        failing = first[slot]
        if failing is not None and sum(1 for _, s in calls if s == slot) == 1:
            await trio.sleep(failing[0] / 16)
            raise Asks(failing[1] / 16)
        await trio.sleep(100)
        return slot

    async def main() -> Aggregate[int, int]:
        supervisor: Supervisor[int, int] = Supervisor(
            worker,
            max_workers=workers,
            retry=Retry(attempts=2, on=Asks, backoff=NO_WAIT),
            restarts=Restarts(strategy="rest_for_one"),
        )
        return await supervisor.run(range(len(first)))

    aggregate = run_virtual(main)
    assert all(result.ok for result in aggregate.results)
    instants = sorted({when for when, _ in calls})
    for instant in instants:
        started = [slot for when, slot in calls if when == instant]
        assert started == sorted(started), (instant, calls)


async def test_a_deadline_cuts_a_restarting_run_short(autojump_clock: object) -> None:
    agent = SimulatedAgent(fail={"b"}, latencies={"a": 5.0, "b": 0.25, "c": 0.5})
    supervisor: Supervisor[str, str] = Supervisor(
        agent,
        max_workers=2,
        retry=Retry(attempts=100, backoff=NO_WAIT),
        restarts=Restarts(strategy="rest_for_one"),
    )
    aggregate = await supervisor.run("a; b; c", deadline=1.0)
    assert [result.status for result in aggregate.results] == [Status.CANCELLED] * 3
    assert aggregate.results[0].error == (
        "Cancelled: the run's deadline of 1s expired before it finished"
    )
    assert trio.current_time() == 1.0


RULE = r"^Restarts needs max_restarts \(an int >= 0\) and within \(seconds > 0\) given together, "


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_restarts": -1, "within": 5.0}, ValueError, RULE + r"got max_restarts=-1, within"),
        ({"max_restarts": 1, "within": 0}, ValueError, RULE + r"got within=0$"),
        ({"max_restarts": 1.5, "within": 5}, TypeError, RULE + r"got max_restarts=1\.5$"),
        ({"max_restarts": 3}, ValueError, RULE + r"got max_restarts=3, within=None$"),
        ({"within": 3}, ValueError, RULE + r"got max_restarts=None, within=3$"),
        ({"max_restarts": 1, "within": "5"}, TypeError, RULE + r"got within='5'$"),
        (
            {"strategy": "one_for_rest"},
            ValueError,
            r"^Restarts strategy must be one of one_for_one, one_for_all, rest_for_one, "
            r"got 'one_for_rest'$",
        ),
    ],
)
def test_bad_restarts_are_refused_when_they_are_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        Restarts(**options)


def test_restarts_must_be_a_restarts() -> None:
    with pytest.raises(TypeError, match=r"^restarts must be a Restarts \(Restarts\("):
        Supervisor(SimulatedAgent(), max_workers=1, restarts=(1, 5.0))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "restarts",
    [Restarts(max_restarts=1, within=1.0), Restarts(strategy="one_for_all")],
)
def test_a_stream_refuses_restarts_it_cannot_make(restarts: Restarts) -> None:
    supervisor: Supervisor[str, str] = Supervisor(
        SimulatedAgent(), max_workers=1, restarts=restarts
    )
    with pytest.raises(ValueError, match=r"^a stream hands each result over as it is done"):
        supervisor.stream(["a"])


def test_the_restarts_are_read_only_and_shown() -> None:
    restarts = Restarts(max_restarts=2, within=5, strategy="rest_for_one")
    supervisor: Supervisor[str, str] = Supervisor(
        SimulatedAgent(), max_workers=1, restarts=restarts
    )
    assert supervisor.restarts == restarts
    assert restarts.within == 5.0
    assert repr(supervisor).endswith(
        ", restarts=Restarts(max_restarts=2, within=5.0, strategy='rest_for_one'))"
    )
    with pytest.raises(AttributeError):
        supervisor.restarts = None  # type: ignore[misc]
