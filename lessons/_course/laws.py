"""The course's laws: each rule a step must keep, as a property Hypothesis checks on virtual time.

One place for them: the test suite proves each law on the steps it names (and shows the step
before them failing it), and ``python -m lessons check N`` runs the laws of step N on a reader's
own code. A law runs a step through a [`Seen`][lessons._course.laws.Seen], which keeps what the
run showed (what was drawn, what the step returned, what the law expected, and the run's trace),
so that a failure can be told, not only raised.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import trio
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from lessons._course import probes
from lessons._course.errors import describe
from lessons._course.probes import (
    HOUR,
    NAMES,
    Probe,
    Spy,
    Subject,
    agent_with,
    arrivals,
    exact_latencies,
    list_schedule,
    named_plans,
    odd_fraction,
    plan_of,
    plans,
    run_virtual,
    spy_for,
    supervise,
    task_of,
    tasks_below,
)
from lessons._course.steps import Step
from trio_supervisor import Adaptive, Aggregate, Status, SubResult, Trace, decompose, report_usage
from trio_supervisor.agents import PermanentError, RateLimited, TransientError
from trio_supervisor.testing import SimulatedAgent

T = TypeVar("T")
DAY = 24 * HOUR  # longer than any law waits on purpose (an hour, after a run)

#: For a law a step before fails: its first counterexample is enough there (shrinking each of the
#: exception groups that step raises would take long, and the expected failure needs none).
NO_SHRINK = (Phase.explicit, Phase.generate)


def kind(error: str | None) -> str:
    """What an error's text says happened, without its wording: its words before the first colon
    (or parenthesis), where an error names its exception's type (``ValueError``) or how its slot
    ended (``timed out``, ``cancelled``, ``gave up``). A law compares these, never the rest of the
    text: how a step words a number (``0.1015625s``, ``0.101562s``) is no part of a law."""
    return re.split(r"[:(]", error or "", maxsplit=1)[0].strip()


def same_kind(error: str | None, wanted: str) -> bool:
    """Whether ``error`` is of the kind ``wanted`` (see `kind`), whatever its case."""
    return kind(error).casefold() == wanted.casefold()


def ended(result: SubResult[Any, Any]) -> str:
    """How a result ended as a law compares it: ``cancelled``, or ``failed, ValueError`` (its
    status, and its error's kind where that says more than the status)."""
    said = kind(result.error)
    if result.ok or said.casefold() == result.status.value:
        return result.status.value
    return f"{result.status.value}, {said}"


def shown(result: SubResult[Any, Any]) -> str:
    """One result as a line: its subtask, status, and output, or its error's kind (see `kind`)."""
    if result.ok:
        return f"{result.subtask}: ok, {result.output}"
    return f"{result.subtask}: {ended(result)}"


def secs(value: float) -> str:
    """A time in seconds, exactly: two times shown alike are equal (``f"{t:g}"`` rounds to six
    digits, and would show 0.1015625 and 0.1015626 alike)."""
    return f"{float(value)!r}".removesuffix(".0") + "s"


@dataclass
class Seen:
    """What one run of a law showed: the values drawn for it, what the step returned, what the
    law expected instead, facts compared one by one, and the trace of the run.

    ``gave_up`` is the trio time at which the law stopped waiting for a run that never ended
    (None: it ended), and ``due`` how long after its start the law expected it to end, where the
    law knows: what the timeline of a run that never ended is drawn to (see `extent`).
    """

    drew: dict[str, Any] = field(default_factory=dict)
    returned: list[str] | None = None
    expected: list[str] | None = None
    facts: list[tuple[str, str, str, bool]] = field(default_factory=list)
    trace: Trace | None = None
    final: dict[int, Status] = field(default_factory=dict)
    gave_up: float | None = None
    due: float | None = None

    def watch(self, worker: Callable[[str], Awaitable[str]], plan: Iterable[str] = ()) -> Any:
        """``worker``, recording each call on a new trace of ``plan``: the run's timeline."""
        self.trace = Trace(plan)
        return self.trace.watch(worker)

    def over(self) -> None:
        """The run is over (it returned or raised, or its stream was left): its timeline ends
        here, whatever the law waits for after it."""
        if self.trace is not None and self.trace.closed is None:
            self.trace.close()

    def extent(self) -> float:
        """How long the run really went on, in seconds from its start: to its end, or to the
        last thing that happened after it (a worker called after it returned). For a run that
        never ended, to the last thing it did before the law gave up on it (not to that moment:
        an hour of nothing), or to when it was due, if later; 1 s for a run that did nothing."""
        trace = self.trace
        if trace is None:
            return 0.0
        events = [trace.closed] if self.gave_up is None else []
        for slot in trace.slots:
            events += [slot.planned, slot.admitted, slot.delivered]
            events += [time for span in slot.spans for time in (span.start, span.end)]
        cut = math.inf if self.gave_up is None else self.gave_up
        last = max(
            (time - trace.origin for time in events if time is not None and time < cut),
            default=0.0,
        )
        if self.gave_up is None:
            return last
        return max(last, self.due or 0.0) or 1.0

    def timeline(self) -> Trace | None:
        """The run's trace as a counterexample draws it: its right edge at the run's `extent`."""
        if self.trace is not None:
            self.trace.closed = self.trace.origin + self.extent()
        return self.trace

    def results(self, results: Iterable[SubResult[str, str]]) -> None:
        """Keep what the step returned, and each slot's status for the timeline: the run is
        over (see `over`)."""
        self.over()
        results = list(results)
        self.returned = [shown(result) for result in results]
        if self.trace is not None:
            for result in results:
                slot = self.trace.slot_of(result.subtask)
                if slot is not None:
                    self.final[slot] = result.status

    def expect(self, lines: Iterable[str]) -> None:
        """What the law expected the step to return, as lines like `shown`'s."""
        self.expected = list(lines)

    def fact(self, what: str, returned: object, expected: object, holds: bool) -> None:
        """One thing the law compares: what the run did, what it should have, and whether that
        part of the law held."""
        self.facts.append((what, str(returned), str(expected), holds))

    def virtual(self, async_fn: Callable[[], Awaitable[T]]) -> T:
        """``async_fn()`` on virtual time (see ``probes.run_virtual``), its trace closed at its
        end, inside the run, so that its timeline can be drawn after. A law still running a day
        of virtual time later waits for something that never comes (a stream that never hands a
        result over): it fails, rather than wait forever."""

        async def closing() -> T:
            try:
                with trio.move_on_after(DAY):
                    return await async_fn()
                self.gave_up = trio.current_time()
                if self.returned is None:
                    self.returned = ["(never ended: still waiting a day of virtual time later)"]
                raise AssertionError("the run never ended")
            finally:
                if self.trace is not None and self.trace.closed is None:
                    self.trace.close()

        return run_virtual(closing)

    async def run(self, call: Callable[[], Awaitable[Aggregate[str, str]]]) -> Aggregate[str, str]:
        """Await ``call()`` (a step's ``supervise``) under a guard of an hour of virtual time,
        keeping what it returns or raises: a run still going then never returns, and fails
        the law."""
        try:
            with trio.move_on_after(HOUR) as guard:
                aggregate = await call()
        except Exception as exc:  # a step that raises: kept, and the law fails with it
            self.over()
            self.returned = [f"(raised {describe(exc)})"]
            raise
        if guard.cancelled_caught:
            self.gave_up = trio.current_time()
            self.returned = ["(never returned: still running an hour of virtual time later)"]
            raise AssertionError("the run never returned")
        self.results(aggregate.results)
        return aggregate


@dataclass(frozen=True)
class Law:
    """A rule that every step in ``steps`` keeps: ``prove(step, seen, **drawn)`` runs ``step``
    on the values Hypothesis draws from ``draws`` (on one fixed case when it draws nothing) and
    raises when the rule is broken.

    ``budget`` is what the test suite spends on it; ``flaw`` names the step before ``steps``
    that fails it and why, the step the next one fixes (``raises`` is how it fails).
    """

    rule: str
    steps: tuple[int, ...]
    prove: Callable[..., None]
    draws: Mapping[str, st.SearchStrategy[Any]] = field(default_factory=dict)
    budget: settings = field(default_factory=lambda: settings(deadline=None))
    flaw: tuple[int, str] | None = None
    raises: type[BaseException] = AssertionError

    def verify(
        self,
        step: ModuleType,
        budget: settings | None = None,
        seen: list[Seen] | None = None,
        record: Step | None = None,
    ) -> None:
        """Check the law on ``step`` with ``budget`` (the law's own by default); ``seen`` gets
        the last run's [`Seen`][lessons._course.laws.Seen]: after a failure, Hypothesis's
        smallest counterexample, which it runs last. ``record`` says which step ``step`` is
        meant to be (a reader's file); a step of the course's is known by its name."""
        subject = Subject(step, record) if record is not None else probes.subject(step)
        kept = seen if seen is not None else []

        def once(**drawn: Any) -> None:
            witness = Seen(drew=dict(drawn))
            kept[:] = [witness]
            self.prove(subject, witness, **drawn)

        if not self.draws:
            once()
            return
        # one example database key (and derandomized seed) per law and step, as Hypothesis's
        # pytest plugin gives each parametrized case: every law runs the same `once`, whose
        # source alone would give them all one key
        key = f"{self.rule}|{step.__name__}".encode()
        once._hypothesis_internal_add_digest = key  # type: ignore[attr-defined]
        settings(budget or self.budget)(given(**self.draws)(once))()


def starts_like_spy(step: Subject, seen: Seen, plan: list[str], spy: Spy, k: int) -> Any:
    """Run ``step`` on ``plan`` with ``spy`` (``max_workers=k`` where it takes a bound), on
    virtual time: its aggregate, and how long it took."""
    options = step.record.accepted(max_workers=k)

    async def timed() -> tuple[Aggregate[str, str], float]:
        start = trio.current_time()
        worker = seen.watch(spy, plan)
        aggregate = await seen.run(lambda: step.supervise(task_of(plan), worker, **options))
        return aggregate, trio.current_time() - start

    return seen.virtual(timed)


def out(plan: Iterable[str]) -> list[str]:
    """Each subtask of ``plan`` ok, as a `Spy` answers it."""
    return [f"{subtask}: ok, out:{subtask}" for subtask in plan]


# --- steps 1-5: plan order, wall time, the bound, failures ---------------------------------------


def _plan_order(
    step: Subject, seen: Seen, latencies: list[float], k: int, names: list[str]
) -> None:
    plan, spy = spy_for(latencies, names=names)
    seen.drew["names"] = plan  # those the plan took
    seen.expect(out(plan))
    aggregate, _ = starts_like_spy(step, seen, plan, spy, k)
    assert [result.subtask for result in aggregate.results] == plan
    assert [result.output for result in aggregate.results] == [f"out:{s}" for s in plan]


PLAN_ORDER = Law(
    "results come back in plan order, whatever order the workers finish in",
    (1, 4, 5, 16),
    _plan_order,
    {"latencies": exact_latencies(), "k": st.integers(1, 6), "names": named_plans()},
    settings(max_examples=60, database=None, phases=NO_SHRINK, deadline=None),
    flaw=(3, "step 3's flaw: results come back in completion order"),
)


def _every_subtask_answered(step: Subject, seen: Seen, latencies: list[float]) -> None:
    plan, spy = spy_for(latencies, names=NAMES)
    aggregate, _ = starts_like_spy(step, seen, plan, spy, len(plan))
    got = sorted(shown(result) for result in aggregate.results)
    seen.expect(sorted(out(plan)))
    seen.returned = got
    assert got == sorted(out(plan)), "a subtask's result is missing, or came back twice"


EVERY_SUBTASK_ANSWERED = Law(
    "each subtask's result comes back once, its worker's output, in whatever order",
    (2, 3, 16),
    _every_subtask_answered,
    {"latencies": exact_latencies()},
    settings(max_examples=20, database=None, deadline=None),
)


def _serial_wall_time(step: Subject, seen: Seen, latencies: list[float]) -> None:
    plan, spy = spy_for(latencies)
    total = 0.0
    for latency in latencies:
        total += latency
    _, elapsed = starts_like_spy(step, seen, plan, spy, 1)
    seen.fact(
        "wall time", secs(elapsed), f"{secs(total)}, the sum of the latencies", elapsed == total
    )
    assert elapsed == total


SERIAL_WALL_TIME = Law(
    "serial: the wall time is the sum of the latencies",
    (1, 16),
    _serial_wall_time,
    {"latencies": exact_latencies()},
    settings(max_examples=40, deadline=None),
)


def _fan_out_wall_time(step: Subject, seen: Seen, latencies: list[float]) -> None:
    plan, spy = spy_for(latencies)
    _, elapsed = starts_like_spy(step, seen, plan, spy, len(plan))
    seen.fact(
        "wall time",
        secs(elapsed),
        f"{secs(max(latencies))}, the longest latency",
        elapsed == max(latencies),
    )
    assert elapsed == max(latencies)


FAN_OUT_WALL_TIME = Law(
    "all at once: the wall time is the longest latency",
    (2, 16),
    _fan_out_wall_time,
    {"latencies": exact_latencies()},
    settings(max_examples=40, database=None, deadline=None),
    flaw=(1, "step 1's flaw: each subtask waits for the one before it"),
)


def _greedy_makespan(step: Subject, seen: Seen, latencies: list[float], k: int) -> None:
    plan, spy = spy_for(latencies)
    makespan = list_schedule(latencies, k).makespan
    _, elapsed = starts_like_spy(step, seen, plan, spy, k)
    seen.fact(
        "wall time",
        secs(elapsed),
        f"{secs(makespan)}, plan order on {k} workers",
        elapsed == makespan,
    )
    seen.fact("calls started in the order", spy.started, plan, spy.started == plan)
    assert elapsed == makespan
    assert spy.started == plan  # dispatch follows plan order


GREEDY_MAKESPAN = Law(
    "the wall time is the greedy makespan, subtasks started in plan order",
    (3, 4, 5, 16),
    _greedy_makespan,
    {"latencies": exact_latencies(), "k": st.integers(1, 6)},
    settings(max_examples=60, deadline=None),
)


def _bounded(step: Subject, seen: Seen, latencies: list[float], k: int) -> None:
    plan, spy = spy_for(latencies)
    starts_like_spy(step, seen, plan, spy, k)
    peak = min(k, len(plan))
    seen.fact("most workers running at once", spy.max_running, peak, spy.max_running == peak)
    assert 0 < spy.max_running <= k
    assert spy.max_running == min(k, len(plan))


BOUNDED = Law(
    "at most max_workers workers run at once, and exactly min(max_workers, n) at the peak",
    (3, 4, 5, 16),
    _bounded,
    {"latencies": exact_latencies(), "k": st.integers(1, 6)},
    settings(max_examples=60, database=None, deadline=None),
    flaw=(2, "step 2's flaw: nothing bounds how many run at once"),
)


def _max_workers_refused(step: Subject, seen: Seen) -> None:
    """``max_workers=0`` is refused with a ValueError naming it, before any worker is called: a
    limiter with no token would admit nobody, and the run would wait forever."""
    plan, spy = spy_for([1.0, 1.0])
    seen.drew.update(plan=plan, max_workers=0)

    async def main() -> None:
        try:
            await step.supervise(task_of(plan), spy, max_workers=0)
        except ValueError as exc:
            named = "max_workers" in str(exc)
            seen.fact("raised", describe(exc), "a ValueError naming max_workers", named)
            assert named, "the ValueError does not name max_workers, the option refused"
        else:
            seen.fact("raised", "nothing", "a ValueError naming max_workers", False)
            raise AssertionError("max_workers=0 was not refused")
        seen.fact("workers called", spy.started, [], spy.started == [])
        assert spy.started == [], "a worker was called before max_workers=0 was refused"

    seen.virtual(main)


MAX_WORKERS_REFUSED = Law(
    "max_workers below 1 is refused with a ValueError before any worker is called",
    tuple(range(3, 34)),  # every step from 3, which brings max_workers, to the last (33)
    _max_workers_refused,
)


def _failures_isolated(
    step: Subject, seen: Seen, data: st.DataObject, latencies: list[float], k: int
) -> None:
    del seen.drew["data"]
    failing = data.draw(st.sets(st.integers(0, len(latencies) - 1)), label="failing slots")
    seen.drew["failing slots"] = sorted(failing)
    plan, spy = spy_for(latencies, fail=failing)
    seen.expect(
        f"s{slot}: failed, ValueError" if slot in failing else f"s{slot}: ok, out:s{slot}"
        for slot in range(len(plan))
    )
    makespan = list_schedule(latencies, k).makespan
    aggregate, elapsed = starts_like_spy(step, seen, plan, spy, k)
    seen.fact(
        "wall time", secs(elapsed), f"{secs(makespan)}, nothing cancelled", elapsed == makespan
    )
    assert [result.subtask for result in aggregate.results] == plan
    for slot, result in enumerate(aggregate.results):
        if slot in failing:
            assert result.status is Status.FAILED
            assert result.output is None
            assert same_kind(result.error, "ValueError")
        else:
            assert result.status is Status.OK
            assert result.error is None
            assert result.output == f"out:s{slot}"
    assert aggregate.failed == len(failing)
    assert aggregate.succeeded == len(plan) - len(failing)
    assert aggregate.degraded == bool(failing)
    assert elapsed == makespan  # siblings ran on, nothing was cancelled
    assert spy.cancelled == []


FAILURES_ISOLATED = Law(
    "exactly the failing slots carry errors; their siblings run on",
    (5, 16),
    _failures_isolated,
    {"data": st.data(), "latencies": exact_latencies(max_size=8), "k": st.integers(1, 6)},
    settings(max_examples=80, database=None, phases=NO_SHRINK, deadline=None),
    flaw=(4, "step 4's flaw: one failure cancels its siblings and the run raises"),
    raises=ExceptionGroup,
)


def _interrupts(error: BaseException) -> bool:
    """Whether ``error`` is a KeyboardInterrupt, or a group holding one (at any depth)."""
    if isinstance(error, BaseExceptionGroup):
        return error.subgroup(KeyboardInterrupt) is not None
    return isinstance(error, KeyboardInterrupt)


def _cancellation_passes_through(step: Subject, seen: Seen) -> None:
    """A worker's KeyboardInterrupt is no failure of its slot: it comes out of the run. And a
    run cancelled from outside (an enclosing cancel scope) ends at that moment, without
    returning, no worker left running: a ``supervise`` that catches ``BaseException`` (or
    ``trio.Cancelled``) breaks one of them."""
    plan, spy = spy_for([2.0, 1.0, 2.0], fail=[1])
    spy.exc = KeyboardInterrupt
    seen.drew.update(case="a worker interrupted", latencies=[2.0, 1.0, 2.0], max_workers=3)
    seen.drew["interrupted"] = "s1 raises KeyboardInterrupt after 1s"
    seen.expect(["(raised KeyboardInterrupt, out of the run)"])

    async def interrupted() -> None:
        worker = seen.watch(spy, plan)
        try:
            await seen.run(lambda: supervise(step, task_of(plan), worker, max_workers=3))
        except BaseException as error:  # what came out of the run is the law's to judge
            seen.over()
            if not _interrupts(error):
                raise
            seen.returned = ["(raised KeyboardInterrupt, out of the run)"]
            return
        raise AssertionError("the KeyboardInterrupt was caught into a slot: it never came out")

    seen.virtual(interrupted)
    # an enclosing cancel scope, 5s in: s0 and s2 are running, s3 waits for a worker
    plan, spy = spy_for([10.0, 1.0, 10.0, 10.0])
    seen.drew = {
        "case": "a run cancelled from outside",
        "latencies": [10.0, 1.0, 10.0, 10.0],
        "max_workers": 2,
        "cancelled": "by an enclosing cancel scope after 5s",
    }
    seen.expected = None

    async def cancelled() -> None:
        worker = seen.watch(spy, plan)
        start = trio.current_time()
        with trio.move_on_after(5) as scope:
            await seen.run(lambda: supervise(step, task_of(plan), worker, max_workers=2))
            raise AssertionError("the run returned after it was cancelled from outside")
        seen.over()
        ended = trio.current_time() - start
        seen.returned = [f"(cancelled from outside: ended at {secs(ended)})"]
        seen.expected = ["(cancelled from outside: ended at 5s)"]
        seen.fact("workers still running", spy.running, 0, spy.running == 0)
        assert scope.cancelled_caught
        assert ended == 5.0, "the cancelled run did not end at once"
        assert spy.running == 0, "a worker outlived the cancelled run"
        assert spy.started == plan[:3], "a worker started after the run was cancelled"

    seen.virtual(cancelled)


CANCELLATION_PASSES_THROUGH = Law(
    "cancellation passes through: a KeyboardInterrupt comes out, an outer cancel ends the run",
    (5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
    _cancellation_passes_through,
)


# --- steps 6 and 7: a worker timeout, a run deadline ---------------------------------------------


def _hung_worker_frees_its_slot(step: Subject, seen: Seen) -> None:
    agent = SimulatedAgent(hang={"stuck"})
    plan = ["stuck", "b", "c"]
    seen.drew.update(plan=plan, max_workers=1, worker_timeout=1.5)
    seen.due = 1.5 + agent.latency("b") + agent.latency("c")  # one after the other, on one worker
    seen.expect(
        ["stuck: timed out"] + [f"{subtask}: ok, findings on {subtask}" for subtask in plan[1:]]
    )

    async def main() -> None:
        worker = seen.watch(agent, plan)
        await seen.run(
            lambda: supervise(step, task_of(plan), worker, max_workers=1, worker_timeout=1.5)
        )
        assert agent.calls == Counter({"stuck": 1, "b": 1, "c": 1})

    seen.virtual(main)


HUNG_WORKER_FREES_ITS_SLOT = Law(
    "a hung worker frees its slot for the next subtask",
    (6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
    _hung_worker_frees_its_slot,
    flaw=(5, "step 5's flaw: one hung worker holds its slot forever, and the run never returns"),
)


def _each_call_is_timed_on_its_own(step: Subject, seen: Seen) -> None:
    """Three hung workers and one that answers, on two workers: each hung call is cut exactly
    ``worker_timeout`` after it started, its own start (the third starts when the first two
    are cut), and the one that answers is not cut at all. A timeout around ``start_soon`` times
    nothing; one around the nursery cuts every call at once, or the run."""
    plan = ["stuck 0", "stuck 1", "stuck 2", "b"]
    agent = SimulatedAgent(hang=set(plan[:3]))
    seen.drew.update(plan=plan, hung=plan[:3], max_workers=2, worker_timeout=1.5)
    seen.due = 3.0
    seen.expect([*(f"{subtask}: timed out" for subtask in plan[:3]), "b: ok, findings on b"])

    async def main() -> None:
        probe = Probe(agent)
        await seen.run(
            lambda: supervise(
                step,
                task_of(plan),
                seen.watch(probe, plan),
                max_workers=2,
                worker_timeout=1.5,
                attempts=1,
            )
        )
        took = [secs((call.end or math.inf) - call.start) for call in probe.calls]
        wanted = [
            secs(1.5 if call.subtask in plan[:3] else agent.latency("b")) for call in probe.calls
        ]
        seen.fact("each call took", took, wanted, took == wanted)
        assert sorted(call.subtask for call in probe.calls) == sorted(plan), "a call never started"
        assert took == wanted, "a call was not cut at its own timeout"

    seen.virtual(main)


EACH_CALL_IS_TIMED_ON_ITS_OWN = Law(
    "worker_timeout cuts each call exactly that long after its own start, and no other call",
    (6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19),
    _each_call_is_timed_on_its_own,
)


def durations(agent: SimulatedAgent, plan: list[str], timeout: float) -> list[float]:
    """How long each slot holds its worker: its latency, or its timeout if it hangs or is slower."""
    return [timeout if agent.hangs(s) else min(agent.latency(s), timeout) for s in plan]


def expected_status(agent: SimulatedAgent, subtask: str, timeout: float) -> Status:
    """How ``subtask`` ends under ``timeout``, when nothing cuts its run short."""
    if agent.hangs(subtask) or agent.latency(subtask) > timeout:
        return Status.TIMED_OUT
    return Status.FAILED if agent.fails(subtask) else Status.OK


def _statuses(results: Iterable[SubResult[str, str]]) -> list[str]:
    return [f"{result.subtask}: {result.status.value}" for result in results]


async def run_plan(
    step: Subject, seen: Seen, plan: list[str], worker: Any, workers: int, **options: float
) -> Aggregate[str, str]:
    """Run ``plan`` on ``step``; a step with a window (13 on) gets one that never holds anything
    back, so that every step follows the same schedule."""
    watched = seen.watch(worker, plan)
    return await seen.run(
        lambda: supervise(
            step,
            "; ".join(plan),
            watched,
            max_workers=workers,
            window=len(plan) + workers,
            **options,
        )
    )


def _makespan_with_timeouts(
    step: Subject, seen: Seen, plan: list[str], workers: int, seed: int, timeout: float
) -> None:
    agent = SimulatedAgent(seed)
    seen.drew["latencies"] = {s: "hangs" if agent.hangs(s) else agent.latency(s) for s in plan}
    spans = list_schedule(durations(agent, plan, timeout), workers).spans
    makespan = max(end for _, end in spans)
    seen.due = makespan
    wanted = [f"{s}: {expected_status(agent, s, timeout).value}" for s in plan]

    async def main() -> None:
        probe = Probe(agent)
        start = trio.current_time()
        aggregate = await run_plan(step, seen, plan, probe, workers, worker_timeout=timeout)
        seen.returned, seen.expected = _statuses(aggregate.results), wanted
        elapsed = trio.current_time() - start
        counted = f"{secs(makespan)}, each hang counted as its timeout"
        seen.fact("wall time", secs(elapsed), counted, elapsed == makespan)
        seen.fact(
            "most workers running at once", probe.most, f"at most {workers}", probe.most <= workers
        )
        assert elapsed == makespan
        assert [result.subtask for result in aggregate.results] == plan
        assert _statuses(aggregate.results) == wanted
        assert probe.most <= workers
        attempts = [result.attempts for result in aggregate.results]
        seen.fact("calls per slot", attempts, [1] * len(plan), attempts == [1] * len(plan))
        assert attempts == [1] * len(plan)

    seen.virtual(main)


MAKESPAN_WITH_TIMEOUTS = Law(
    "the wall time is the makespan with each hung worker counted as its timeout",
    (6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
    _makespan_with_timeouts,
    {
        "plan": plans(),
        "workers": st.integers(1, 5),
        "seed": st.integers(0, 2**16),
        "timeout": odd_fraction(4, 48, 64),
    },
    settings(max_examples=60, deadline=None),
)


def _deadline_accounts_for_every_subtask(
    step: Subject,
    seen: Seen,
    plan: list[str],
    workers: int,
    seed: int,
    timeout: float,
    deadline: float,
) -> None:
    agent = SimulatedAgent(seed)
    seen.drew["latencies"] = {s: "hangs" if agent.hangs(s) else agent.latency(s) for s in plan}
    spans = list_schedule(durations(agent, plan, timeout), workers).spans
    seen.due = due = min(deadline, max(end for _, end in spans))
    seen.expect(
        f"{subtask}: {expected_status(agent, subtask, timeout).value}"
        if finish < deadline
        else f"{subtask}: cancelled, attempts {1 if began < deadline else 0}"
        for subtask, (began, finish) in zip(plan, spans, strict=True)
    )

    async def main() -> None:
        probe = Probe(agent)
        start = trio.current_time()
        aggregate = await run_plan(
            step, seen, plan, probe, workers, worker_timeout=timeout, deadline=deadline
        )
        seen.returned = [
            f"{result.subtask}: {result.status.value}"
            if result.status is not Status.CANCELLED
            else f"{result.subtask}: {ended(result)}, attempts {result.attempts}"
            for result in aggregate.results
        ]
        returned = trio.current_time() - start
        seen.fact("returned after", secs(returned), secs(due), returned == due)
        assert returned == due
        assert probe.live == 0, "a worker outlived the call"
        calls = len(probe.calls)
        await trio.sleep(HOUR)
        assert len(probe.calls) == calls, "a worker started after the call returned"
        assert seen.returned == seen.expected

    seen.virtual(main)


DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK = Law(
    "under a deadline every subtask is accounted for once, and no task outlives the call",
    (7, 8, 9, 10, 11, 12, 13, 14, 15, 16),
    _deadline_accounts_for_every_subtask,
    {
        "plan": plans(),
        "workers": st.integers(1, 4),
        "seed": st.integers(0, 2**16),
        "timeout": st.one_of(st.just(math.inf), odd_fraction(4, 48, 64)),
        "deadline": odd_fraction(0, 300, 128),
    },
    # step 6 fails it two ways (late, or never returning): one failure is enough to show
    settings(max_examples=60, deadline=None, report_multiple_bugs=False),
    flaw=(6, "step 6's flaw: a run past its budget still waits for every worker"),
)


# --- step 8: retries ----------------------------------------------------------------------------


def _transient_failure_retried(step: Subject, seen: Seen) -> None:
    """b fails its first 2 calls, d's first call straggles past its timeout: each is tried
    again, as a failure that may pass is (a timeout is one)."""
    agent = SimulatedAgent(flaky={"b": 2}, straggle={"d": HOUR})
    plan = ["a", "b", "c", "d"]
    seen.drew.update(
        plan=plan,
        flaky="b fails its first 2 calls",
        straggles="d's first call takes an hour",
        max_workers=4,
        attempts=3,
        worker_timeout=2.0,
    )
    seen.expect(f"{subtask}: ok, findings on {subtask}" for subtask in plan)

    async def main() -> None:
        worker = seen.watch(agent, plan)
        aggregate = await seen.run(
            lambda: supervise(
                step, task_of(plan), worker, max_workers=4, attempts=3, worker_timeout=2.0
            )
        )
        wanted = {"a": 1, "b": 3, "c": 1, "d": 2}
        seen.fact("calls per subtask", dict(agent.calls), wanted, agent.calls == wanted)
        assert [result.status for result in aggregate.results] == [Status.OK] * 4
        assert agent.calls == Counter(wanted), "a failure or a timeout was not tried again"

    seen.virtual(main)


TRANSIENT_FAILURE_RETRIED = Law(
    "a transient failure, or a timeout, is retried until it succeeds",
    (8, 9, 10, 11, 12, 13, 14, 15, 16),
    _transient_failure_retried,
    flaw=(7, "step 7's flaw: every failure is final"),
)


def _succeeds_when_attempts_exceed_failures(
    step: Subject, seen: Seen, failures: int, attempts: int, seed: int
) -> None:
    agent = SimulatedAgent(seed, flaky={"b": failures})
    plan = ["a", "b", "c"]

    async def main() -> None:
        worker = seen.watch(agent, plan)
        aggregate = await seen.run(
            lambda: step.supervise(
                task_of(plan), worker, max_workers=2, attempts=attempts, seed=seed
            )
        )
        result = aggregate.results[1]
        calls = min(failures + 1, attempts)
        seen.fact("b ok", result.ok, attempts > failures, result.ok == (attempts > failures))
        seen.fact("b's calls", agent.calls["b"], calls, agent.calls["b"] == calls)
        assert result.ok == (attempts > failures)
        assert result.attempts == agent.calls["b"] == min(failures + 1, attempts)
        if not result.ok:
            assert same_kind(result.error, "SubAgentError")
        assert [result.subtask for result in aggregate.results] == plan

    seen.virtual(main)


SUCCEEDS_WHEN_ATTEMPTS_EXCEED_FAILURES = Law(
    "a slot failing its first k calls succeeds exactly when attempts exceed k",
    (8, 9, 10, 11, 12, 13, 14, 15, 16),
    _succeeds_when_attempts_exceed_failures,
    {"failures": st.integers(0, 4), "attempts": st.integers(1, 5), "seed": st.integers(0, 2**16)},
    settings(max_examples=40, deadline=None),
)


def _a_waiting_retry_holds_no_token(step: Subject, seen: Seen) -> None:
    """One worker; slot 0 fails once, then waits a backoff before its retry: while it waits,
    it holds no token, so slot 1 starts the moment slot 0's first call fails."""
    plan = ["s0", "s1", "s2"]
    agent = agent_with([32, 64, 32], flaky={"s0": 1})  # 1s, 2s, 1s
    seen.drew.update(
        plan=plan, flaky="s0 fails its first call", max_workers=1, attempts=2, backoff=(4.0, 4.0)
    )
    seen.expect(f"{subtask}: ok, findings on {subtask}" for subtask in plan)

    async def main() -> None:
        probe = Probe(agent)
        worker = seen.watch(probe, plan)
        await seen.run(
            lambda: step.supervise(
                task_of(plan), worker, max_workers=1, attempts=2, backoff=(4.0, 4.0), seed=0
            )
        )
        first, *_ = probe.of("s0")
        assert first.end is not None
        calls = probe.of("s1")
        began = calls[0].start if calls else math.inf
        at_once = began == first.end
        seen.fact("s1 started at", secs(began), f"{secs(first.end)}, when s0 failed", at_once)
        assert len(probe.of("s0")) == 2, "s0 was not retried"
        assert at_once, "s1 waited for s0's backoff: the waiting retry held a token"

    seen.virtual(main)


A_WAITING_RETRY_HOLDS_NO_TOKEN = Law(
    "a retry waiting its backoff holds no token: with one worker, slot 1 starts at once",
    (8, 9, 10, 11, 12, 13, 14, 15, 16),
    _a_waiting_retry_holds_no_token,
)


def bound(failures: int, first: float, most: float) -> float:
    """Full jitter's bound after a slot's ``failures``-th failure."""
    return min(most, first * 2.0 ** (failures - 1))


def _alike(these: list[list[float]], those: list[list[float]]) -> bool:
    """Whether two runs' waits are the same draws: equal but for the rounding of times taken
    at other instants of the clock."""
    return len(these) == len(those) and all(
        len(mine) == len(theirs)
        and all(
            math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
            for a, b in zip(mine, theirs, strict=True)
        )
        for mine, theirs in zip(these, those, strict=True)
    )


def _waits_are_seeded_draws(
    step: Subject, seen: Seen, seed: int, other: int, first: float, doublings: int
) -> None:
    """b fails every call: each wait before its retries is within full jitter's bound, the same
    seed replays the same waits, and another seed draws others. How the step draws them (one
    generator for the run, one per slot) is its own. (One failing slot: trio runs the tasks of
    one instant in an order of its own, so two slots drawing at one instant from one generator
    could swap their draws from run to run.)"""
    most = first * 2**doublings
    attempts = 5
    other = other if other != seed else seed + 1
    seen.drew.update(backoff=(first, most), attempts=attempts, other=other)
    plan = ["a", "b", "c", "d"]

    async def waits_of(chosen: int) -> list[list[float]]:
        probe = Probe(SimulatedAgent(chosen, fail={"b"}))
        worker = seen.watch(probe, plan)
        await seen.run(
            lambda: step.supervise(
                task_of(plan),
                worker,
                max_workers=4,
                attempts=attempts,
                backoff=(first, most),
                seed=chosen,
            )
        )
        waits = []
        for subtask in ("b",):
            calls = probe.of(subtask)
            seen.fact(f"{subtask}'s calls", len(calls), attempts, len(calls) == attempts)
            assert len(calls) == attempts
            waits.append(
                [
                    after.start - (before.end or math.inf)
                    for before, after in itertools.pairwise(calls)
                ]
            )
        return waits

    # each run on a clock of its own, from 0: a tie between two slots' failures falls alike
    others = seen.virtual(lambda: waits_of(other))
    again = seen.virtual(lambda: waits_of(seed))
    drawn = seen.virtual(lambda: waits_of(seed))  # last: the run a failure draws
    shown_waits = [[f"{wait:.4g}" for wait in waits] for waits in drawn]
    limits = [[f"<= {bound(n, first, most):g}" for n in range(1, attempts)]]
    within = all(
        0 <= wait <= bound(n, first, most) + 1e-12
        for waits in drawn
        for n, wait in enumerate(waits, start=1)
    )
    seen.fact("waits before b's retries", shown_waits, limits, within)
    assert within, "a wait is outside full jitter's bound"
    replayed = _alike(again, drawn)
    seen.fact(
        f"the waits again with seed {seed}",
        [[f"{w:.4g}" for w in ws] for ws in again],
        shown_waits,
        replayed,
    )
    assert replayed, "the same seed drew other waits: the run cannot be replayed"
    differ = not _alike(others, drawn)
    seen.fact(
        f"the waits with seed {other}",
        [[f"{w:.4g}" for w in ws] for ws in others],
        "other draws",
        differ,
    )
    assert differ, "another seed drew the same waits: the seed is not what draws them"


WAITS_ARE_SEEDED_DRAWS = Law(
    "each wait before a retry is a draw within the backoff bound, replayed by the same seed",
    (8, 9, 10, 11, 12, 13, 14, 15, 16),
    _waits_are_seeded_draws,
    {
        "seed": st.integers(0, 2**32),
        "other": st.integers(0, 2**32),
        "first": st.integers(1, 64).map(lambda n: n / 32),
        "doublings": st.integers(0, 4),
    },
    settings(max_examples=20, deadline=None),
)


# --- step 9: restart intensity ------------------------------------------------------------------


def _at_most_r_restarts_in_t(
    step: Subject,
    seen: Seen,
    kinds: list[str],
    workers: int,
    restarts: int,
    period: float,
    seed: int,
) -> None:
    plan = [f"{kind} {slot}" for slot, kind in enumerate(kinds)]

    async def main() -> None:
        probe = Probe(SimulatedAgent(seed))
        worker = seen.watch(probe, plan)
        await seen.run(
            lambda: supervise(
                step,
                "; ".join(plan),
                worker,
                max_workers=workers,
                attempts=5,
                intensity=(restarts, period),
                seed=seed,
            )
        )
        # a slot was restarted at the end of each of its calls that another call followed
        instants = []
        for subtask in plan:
            for call in probe.of(subtask)[:-1]:
                assert call.end is not None
                instants.append(call.end)
        most = max(
            (len([then for then in instants if now - period < then <= now]) for now in instants),
            default=0,
        )
        seen.fact(
            f"most restarts within {secs(period)}", most, f"at most {restarts}", most <= restarts
        )
        for now in instants:
            within = [then for then in instants if now - period < then <= now]
            assert len(within) <= restarts, f"{len(within)} restarts within {period}s of {now}"

    seen.virtual(main)


AT_MOST_R_RESTARTS_IN_T = Law(
    "never more than R restarts in any T-second window",
    (9, 10, 11, 12, 13, 14, 15, 16),
    _at_most_r_restarts_in_t,
    {
        "kinds": st.lists(st.sampled_from(["ok", "fail"]), min_size=1, max_size=6),
        "workers": st.integers(1, 4),
        "restarts": st.integers(0, 4),
        "period": odd_fraction(1, 100, 8),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=40, deadline=None, phases=NO_SHRINK),
    flaw=(8, "step 8's flaw: nothing limits the retries of the run as a whole"),
)


def _gives_up_past_the_intensity(
    step: Subject, seen: Seen, restarts: int, workers: int, seed: int
) -> None:
    plan = ["a", "fail b", "c", "d", "e"]

    async def main() -> None:
        probe = Probe(SimulatedAgent(seed))
        worker = seen.watch(probe, plan)
        start = trio.current_time()
        aggregate = await seen.run(
            lambda: step.supervise(
                "; ".join(plan),
                worker,
                max_workers=workers,
                attempts=100,
                intensity=(restarts, HOUR),
                seed=seed,
            )
        )
        failing = probe.of("fail b")
        seen.expect(
            "fail b: failed, SubAgentError"
            if subtask == "fail b"
            else f"{subtask}: ok, findings on {subtask}"
            if calls and calls[-1].outcome == "ok"
            else f"{subtask}: failed, gave up"
            for subtask, calls in ((s, probe.of(s)) for s in plan)
        )
        seen.fact("calls of 'fail b'", len(failing), restarts + 1, len(failing) == restarts + 1)
        assert len(failing) == restarts + 1, "one restart per failure, up to the intensity"
        assert failing[-1].end is not None
        took, gave_up_at = trio.current_time() - start, failing[-1].end - start
        seen.fact("returned after", secs(took), secs(gave_up_at), took == gave_up_at)
        assert trio.current_time() - start == failing[-1].end - start, "it gave up at once"
        assert probe.live == 0
        results = aggregate.results
        assert [result.subtask for result in results] == plan
        assert same_kind(results[1].error, "SubAgentError")
        assert results[1].attempts == restarts + 1
        for result, calls in zip(results, (probe.of(s) for s in plan), strict=True):
            if result.subtask == "fail b":
                continue
            finished = bool(calls) and calls[-1].outcome == "ok"
            if finished:
                assert result.status is Status.OK
            else:
                assert result.status is Status.FAILED
                assert same_kind(result.error, "gave up")
                assert result.attempts == len(calls)

    seen.virtual(main)


GIVES_UP_PAST_THE_INTENSITY = Law(
    "past the restart intensity the supervisor gives up at once and fails the rest",
    (9, 10, 11, 12, 13, 14, 15, 16),
    _gives_up_past_the_intensity,
    {"restarts": st.integers(0, 5), "workers": st.integers(1, 3), "seed": st.integers(0, 2**16)},
    settings(max_examples=30, deadline=None),
)


def _old_restarts_are_forgotten(
    step: Subject, seen: Seen, period: float, failures: int, seed: int
) -> None:
    """With an intensity of 1 restart in T, b fails its first calls, each taking longer than
    T: no two restarts fall within T of each other, so b is restarted until it succeeds. A
    window that never forgets its old restarts gives up at b's second failure."""
    plan = ["pricing", "b", "reviews"]
    slow = period + 1 / 32
    agent = SimulatedAgent(seed, flaky={"b": failures}, latencies={"b": slow})
    seen.drew["latencies"] = f"b takes {secs(slow)} a call"
    seen.expect(f"{subtask}: ok, findings on {subtask}" for subtask in plan)

    async def main() -> None:
        worker = seen.watch(agent, plan)
        aggregate = await seen.run(
            lambda: supervise(
                step,
                task_of(plan),
                worker,
                max_workers=3,
                attempts=failures + 1,
                intensity=(1, period),
                seed=seed,
            )
        )
        calls = agent.calls["b"]
        seen.fact("b's calls", calls, failures + 1, calls == failures + 1)
        assert aggregate.results[1].ok, "a restart older than T still counted: the run gave up"
        assert calls == failures + 1

    seen.virtual(main)


OLD_RESTARTS_ARE_FORGOTTEN = Law(
    "a restart older than T no longer counts: restarts spaced wider than T never give up",
    (9, 10, 11, 12, 13, 14, 15, 16),
    _old_restarts_are_forgotten,
    {
        "period": odd_fraction(1, 40, 8),
        "failures": st.integers(2, 4),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=15, deadline=None),
)


# --- steps 10-12: a hand-over, streaming, and leaving early ---------------------------------------


def _first_result_arrives_with_slot_0(step: Subject, seen: Seen) -> None:
    latencies = [8, 24, 16, 20]
    plan = plan_of(4)
    seen.drew.update(latencies={s: n / 32 for s, n in zip(plan, latencies, strict=True)})

    async def main() -> None:
        start = trio.current_time()
        worker = seen.watch(agent_with(latencies), plan)
        got = await arrivals(step, task_of(plan), worker, max_workers=4)
        seen.results(result for _, result in got)
        first = got[0][0] - start
        seen.fact("the first result arrived after", secs(first), secs(0.25), first == 0.25)
        assert got[0][0] - start == latencies[0] / 32

    seen.virtual(main)


FIRST_RESULT_ARRIVES_WITH_SLOT_0 = Law(
    "the first result arrives when slot 0 completes",
    (10, 11, 12, 13, 14, 15, 16),
    _first_result_arrives_with_slot_0,
    flaw=(9, "step 9's flaw: nothing is handed over until the last slot is done"),
)


def _handed_over_as_soon_as_possible(step: Subject, seen: Seen, order: list[int]) -> None:
    """Whatever order the slots complete in (every permutation), slot i is handed over at the
    moment the last of slots 0..i completes."""
    latencies = [(rank + 1) * 4 for rank in order]  # slot i completes order[i]-th
    size = len(order)
    plan = plan_of(size)
    seen.drew["latencies"] = {s: n / 32 for s, n in zip(plan, latencies, strict=True)}
    seen.expect(f"s{slot}: at {secs(max(latencies[: slot + 1]) / 32)}" for slot in range(size))

    async def main() -> None:
        start = trio.current_time()
        worker = seen.watch(agent_with(latencies), plan)
        got = await arrivals(step, task_of(plan), worker, max_workers=size)
        seen.over()
        seen.returned = [f"{result.subtask}: at {secs(time - start)}" for time, result in got]
        assert seen.returned == seen.expected

    seen.virtual(main)


HANDED_OVER_AS_SOON_AS_POSSIBLE = Law(
    "each result is handed over in plan order as soon as every earlier slot is done",
    (10, 11, 12, 13, 14, 15, 16),
    _handed_over_as_soon_as_possible,
    {"order": st.integers(1, 7).flatmap(lambda size: st.permutations(range(size)))},
    settings(max_examples=80, deadline=None),
)


class Enough(Exception):
    """What a caller raises from its ``on_result`` to stop a hand-over it cannot leave."""


def _read_as_a_stream(
    step: Subject, seen: Seen, latencies: list[int], workers: int, data: st.DataObject
) -> None:
    """The caller takes the first results and stops: from a stream it leaves the block, and
    gets those results, in plan order, with no error. A step that only calls an ``on_result``
    leaves it one way to stop, raising from it."""
    del seen.drew["data"]
    taken = data.draw(st.integers(1, len(latencies)), label="results taken before leaving")
    seen.drew["taken before leaving"] = taken
    plan = plan_of(len(latencies))
    seen.expect(f"{subtask}: ok" for subtask in plan[:taken])
    got: list[SubResult[str, str]] = []

    async def on_result(result: SubResult[str, str]) -> None:
        got.append(result)
        if len(got) == taken:
            raise Enough(f"the caller has its {taken} results")

    async def main() -> None:
        worker = seen.watch(agent_with(latencies), plan)
        options = step.record.accepted(max_workers=workers)
        try:
            if hasattr(step.module, "stream"):
                async with step.stream(task_of(plan), worker, **options) as results:
                    async for result in results:
                        got.append(result)
                        if len(got) == taken:
                            break
            else:  # no stream: its caller can only raise from the function it is called with
                await step.supervise(task_of(plan), worker, on_result=on_result, **options)
        except Exception as exc:
            seen.results(got)
            seen.fact("the caller stopped", f"with {describe(exc)}", "with no error", False)
            said = f"the caller could not stop without an error: {describe(exc)}"
            raise AssertionError(said) from None
        seen.results(got)
        seen.returned = [f"{result.subtask}: {ended(result)}" for result in got]
        assert seen.returned == seen.expected

    seen.virtual(main)


READ_AS_A_STREAM = Law(
    "the caller reads the results as a stream, and may leave it after any of them",
    (11, 12, 13, 14, 15, 16),
    _read_as_a_stream,
    {
        "latencies": st.lists(st.integers(1, 32), min_size=1, max_size=8),
        "workers": st.integers(1, 4),
        "data": st.data(),
    },
    settings(max_examples=30, deadline=None),
    flaw=(10, "step 10's flaw: the caller cannot stop; its raise comes out of supervise"),
)


def _leaving_early_cancels_the_rest(
    step: Subject, seen: Seen, size: int, workers: int, data: st.DataObject, seed: int
) -> None:
    del seen.drew["data"]
    taken = data.draw(st.integers(1, size), label="results taken before leaving")
    seen.drew["taken before leaving"] = taken
    probe = Probe(SimulatedAgent(seed, fail={"s3"}))
    plan = plan_of(size)

    async def main() -> None:
        consumer = trio.lowlevel.current_task()
        worker = seen.watch(probe, plan)
        try:
            async with step.stream(task_of(plan), worker, max_workers=workers) as results:
                got = [await anext(results) for _ in range(taken)]
                calls = len(probe.calls)  # the calls made when the caller leaves
                running = [call for call in probe.calls if call.end is None]
        except Exception as exc:  # leaving raised: kept, and the law fails with it
            seen.over()
            seen.returned = [f"(raised {describe(exc)} when the caller left)"]
            raise
        seen.results(got)
        seen.fact("workers still running after leaving", probe.live, 0, probe.live == 0)
        assert [result.subtask for result in got] == plan[:taken]
        assert len(probe.calls) == calls, "a worker was called after the caller left"
        assert probe.live == 0, "a worker outlived the stream"
        assert tasks_below(consumer) == 0, "a task outlived the stream"
        assert all(call.outcome == "cancelled" for call in running)
        await trio.sleep(HOUR)
        seen.fact("calls after leaving", len(probe.calls) - calls, 0, len(probe.calls) == calls)
        assert len(probe.calls) == calls, "a worker was called after the stream was left"

    seen.virtual(main)


LEAVING_EARLY_CANCELS_THE_REST = Law(
    "leaving the stream early cancels the rest and calls no further worker",
    (12, 13, 14, 15, 16),
    _leaving_early_cancels_the_rest,
    {
        "size": st.integers(1, 12),
        "workers": st.integers(1, 4),
        "data": st.data(),
        "seed": st.integers(0, 2**16),
    },
    # leaving can tie with a worker's start at the same instant: enough runs to meet that tie
    settings(max_examples=200, deadline=None, report_multiple_bugs=False),
    flaw=(11, "step 11's flaw: leaving the stream early waits for every worker to finish"),
)


# --- steps 13-15: a window, a lazy input, an async one --------------------------------------------


def _held_to_the_window(
    step: Subject, seen: Seen, latencies: list[int], workers: int, extra: int
) -> None:
    window = workers + extra
    started: set[str] = set()
    received = 0
    ahead = 0  # the most slots started and not yet handed over, at any call
    agent = agent_with(latencies)
    plan = plan_of(len(latencies))

    async def counted(subtask: str) -> str:
        nonlocal ahead
        started.add(subtask)
        ahead = max(ahead, len(started) - received)
        return await agent(subtask)

    async def main() -> None:
        nonlocal received
        options = step.record.accepted(max_workers=workers, window=window)
        got = []
        async with step.stream(task_of(plan), seen.watch(counted, plan), **options) as results:
            async for result in results:
                assert result.ok
                got.append(result)
                received += 1
                await trio.sleep(1)  # a slow caller: only the window may run ahead of it
        seen.results(got)
        seen.fact(
            "most slots started and not yet handed over",
            ahead,
            f"at most {window}",
            ahead <= window,
        )
        assert received == len(plan)
        assert ahead <= window, f"{ahead} slots started and not handed over, window {window}"

    seen.virtual(main)


HELD_TO_THE_WINDOW = Law(
    "at most window slots are started and not yet handed over",
    (13, 14, 15, 16),
    _held_to_the_window,
    {
        "latencies": st.lists(st.integers(1, 96), min_size=1, max_size=12),
        "workers": st.integers(1, 3),
        "extra": st.integers(0, 3),
    },
    settings(max_examples=40, deadline=None),
    flaw=(
        12,
        "step 12's flaw: nothing holds the work back while the caller waits for an early slot",
    ),
)


def _head_of_line_is_held_to_the_window(step: Subject, seen: Seen) -> None:
    """Eight subtasks on two workers with a window of four; slot 1 takes 3 s, the rest 0.25 s.
    Slot 0 comes out at 0.25 s; slots 1-4 wait for slot 1 and come out together at 3 s, then
    the rest; while slot 1 runs, the window (slots 1-4) is full and nothing more starts."""
    latencies = [8, 96, 8, 8, 8, 8, 8, 8]
    plan = plan_of(len(latencies))
    seen.drew.update(
        latencies={s: n / 32 for s, n in zip(plan, latencies, strict=True)}, max_workers=2, window=4
    )
    times = [0.25, 3, 3, 3, 3, 3.25, 3.25, 3.5]
    seen.expect(f"{subtask}: at {secs(time)}" for subtask, time in zip(plan, times, strict=True))

    async def main() -> None:
        probe = Probe(agent_with(latencies))
        start = trio.current_time()
        got = await arrivals(step, task_of(plan), seen.watch(probe, plan), max_workers=2, window=4)
        seen.over()
        seen.returned = [f"{result.subtask}: at {secs(time - start)}" for time, result in got]
        early = [call.subtask for call in probe.calls if call.start - start < 3]
        seen.fact("started while slot 1 ran", early, plan[:5], early == plan[:5])
        assert seen.returned == seen.expected
        assert early == plan[:5], "a slot started past the window while slot 1 held its head"

    seen.virtual(main)


HEAD_OF_LINE_IS_HELD_TO_THE_WINDOW = Law(
    "while an early slot runs long, the window fills with finished later slots and nothing "
    "more starts",
    (13, 14, 15, 16),
    _head_of_line_is_held_to_the_window,
)


def _a_lazy_million_is_held(
    step: Subject, seen: Seen, workers: int, extra: int, taken: int, seed: int
) -> None:
    window = workers + extra
    pulled = received = ahead = 0  # ahead: the most subtasks pulled and not yet handed over
    late = False  # whether the input was pulled after the caller left
    consumer: trio.lowlevel.Task | None = None
    left = False
    probe = Probe(SimulatedAgent(seed, fail={"s3"}))

    def held_in_bounds() -> None:
        finished = sum(1 for call in probe.calls if call.outcome in {"ok", "error"})
        assert finished - received <= window, "more results waiting than the window"
        assert probe.live <= workers
        # the stream's own tasks: work, deliver, the puller and the dispatcher, and its workers
        assert consumer is not None
        assert tasks_below(consumer) <= workers + 4

    def lazy() -> Iterator[str]:
        """A million subtasks, pulled one at a time; the input ends at once if it is pulled past
        the window or after the caller left, so that a step that reads it whole still runs, on
        what it read, and the law can show that run."""
        nonlocal pulled, ahead, late
        for slot in range(10**6):
            late = left
            ahead = max(ahead, pulled + 1 - received)
            if late or ahead > window:
                return
            pulled += 1
            held_in_bounds()
            yield f"s{slot}"

    async def checked(subtask: str) -> str:
        held_in_bounds()
        try:
            return await probe(subtask)
        finally:
            held_in_bounds()

    async def main() -> None:
        nonlocal received, consumer, left
        consumer = trio.lowlevel.current_task()
        got = []
        worker = seen.watch(checked)
        async with step.stream(lazy(), worker, max_workers=workers, window=window) as results:
            async for result in results:
                got.append(result)
                assert result.subtask == f"s{received}"
                received += 1
                held_in_bounds()
                if received == taken:
                    break
            running = [call for call in probe.calls if call.end is None]
            left = True
        seen.results(got)
        seen.fact(
            "most subtasks pulled and not yet handed over",
            ahead,
            f"at most {window}",
            ahead <= window,
        )
        assert ahead <= window, f"{ahead} subtasks pulled and not handed over, window {window}"
        assert not late, "the input was pulled after the caller left"
        most = taken + window
        seen.fact("subtasks pulled", pulled, f"at most {most}", pulled <= most)
        assert probe.live == 0, "a worker outlived the stream"
        assert tasks_below(consumer) == 0, "a task outlived the stream"
        assert all(call.end is not None for call in probe.calls)
        assert all(call.outcome == "cancelled" for call in running)
        assert pulled <= most
        calls = len(probe.calls)
        await trio.sleep(HOUR)
        assert len(probe.calls) == calls, "a worker started after the stream was left"

    seen.virtual(main)


A_LAZY_MILLION_IS_HELD = Law(
    "a lazy input of a million is held to the window, and leaving it cancels every worker",
    (14, 15, 16),
    _a_lazy_million_is_held,
    {
        "workers": st.integers(1, 4),
        "extra": st.integers(0, 5),
        "taken": st.integers(1, 40),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=25, deadline=None),
    flaw=(13, "step 13's flaw: it reads its whole input before any work starts"),
)


def _an_async_input_is_awaited(
    step: Subject, seen: Seen, gaps: list[int], latency: int, workers: int, extra: int
) -> None:
    """An input that arrives as it is made: an async iterable whose subtask i comes ``gaps[i]``
    32nds of a second after the one before. Every subtask comes out, in plan order; slot 0 is
    handed over its worker's latency after it arrived, whatever is still to arrive; and at most
    ``window`` subtasks are pulled and not yet handed over."""
    window = workers + extra
    plan = plan_of(len(gaps))
    arrives = list(itertools.accumulate(gaps))
    seen.drew["arrives at"] = {s: secs(n / 32) for s, n in zip(plan, arrives, strict=True)}
    seen.expect(f"{subtask}: ok" for subtask in plan)
    pulled = received = ahead = 0  # ahead: the most subtasks pulled and not yet handed over

    async def arriving() -> AsyncIterator[str]:
        nonlocal pulled, ahead
        for subtask, gap in zip(plan, gaps, strict=True):
            await trio.sleep(gap / 32)
            pulled += 1
            ahead = max(ahead, pulled - received)
            yield subtask

    async def main() -> None:
        nonlocal received
        start = trio.current_time()
        worker = seen.watch(agent_with([latency] * len(plan)), plan)
        options = step.record.accepted(max_workers=workers, window=window)
        got: list[tuple[float, SubResult[str, str]]] = []

        async def take(task: Any) -> None:
            nonlocal received
            async with step.stream(task, worker, **options) as results:
                async for result in results:
                    got.append((trio.current_time() - start, result))
                    received += 1

        refused = None
        try:
            await take(arriving())
        except TypeError as exc:  # it takes no async input: its caller must read it whole first
            refused = describe(exc)
            seen.fact("an async input", f"refused: {refused}", "awaited", False)
            await take([subtask async for subtask in arriving()])
        seen.results(result for _, result in got)
        seen.returned = [f"{result.subtask}: {ended(result)}" for _, result in got]
        first = (arrives[0] + latency) / 32
        seen.fact("slot 0 handed over at", secs(got[0][0]), secs(first), got[0][0] == first)
        seen.fact("most pulled and not handed over", ahead, f"at most {window}", ahead <= window)
        assert refused is None, f"an async input made it raise {refused}"
        assert seen.returned == seen.expected
        assert got[0][0] == first, "slot 0 waited for subtasks still to arrive"
        assert ahead <= window, f"{ahead} subtasks pulled and not handed over, window {window}"

    seen.virtual(main)


AN_ASYNC_INPUT_IS_AWAITED = Law(
    "an async input is awaited one subtask at a time as the window has room",
    (15, 16),
    _an_async_input_is_awaited,
    {
        "gaps": st.lists(st.integers(0, 16), min_size=1, max_size=8),
        "latency": st.integers(1, 32),
        "workers": st.integers(1, 3),
        "extra": st.integers(0, 2),
    },
    settings(max_examples=30, deadline=None),
    flaw=(14, "step 14's flaw: it takes no async input; a plan made as it goes cannot be given"),
)


# --- Part II --------------------------------------------------------------------------------------


def _streamed_as_each_is_final(
    step: Subject, seen: Seen, latencies: list[float], names: list[str]
) -> None:
    """The plan, pulled lazily from an async iterable, on as many workers and as wide a window
    as it has slots: whatever order they complete in, slot i is handed over in plan order, the
    moment the last of slots 0..i is done."""
    plan, spy = spy_for(latencies, names=names)
    size = len(plan)
    seen.drew["names"] = plan  # those the plan took
    seen.expect(f"{s}: at {secs(max(latencies[: i + 1]))}" for i, s in enumerate(plan))

    async def lazily() -> AsyncIterator[str]:
        for subtask in plan:
            yield subtask

    async def main() -> None:
        start = trio.current_time()
        options = step.record.streamed(max_workers=size, window=size)
        got = []
        async with step.stream(lazily(), seen.watch(spy, plan), **options) as results:
            async for result in results:
                got.append((trio.current_time() - start, result))
        seen.results(result for _, result in got)
        seen.returned = [f"{result.subtask}: at {secs(time)}" for time, result in got]
        assert seen.returned == seen.expected, (
            "a result was not handed over as soon as it was final"
        )

    seen.virtual(main)


STREAMED_AS_EACH_IS_FINAL = Law(
    "results stream in plan order, each as soon as it and every earlier slot are done, from the "
    "library's step to the last",
    (16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _streamed_as_each_is_final,
    {"latencies": exact_latencies(max_size=8), "names": named_plans()},
    settings(max_examples=10, database=None, phases=NO_SHRINK, deadline=None),
)


def _an_endless_input_ends_at_the_deadline(step: Subject, seen: Seen) -> None:
    """A stream over an endless input, under a deadline of 1 s: it ends at the deadline."""
    seen.drew.update(input="s0, s1, ... one every 0.05s, never ending", deadline=1.0)

    async def endless() -> AsyncIterator[str]:
        for slot in itertools.count():
            await trio.sleep(0.05)
            yield f"s{slot}"

    async def main() -> None:
        start = trio.current_time()
        with trio.move_on_after(10.0) as guard:  # ten times the deadline: it never ends
            async with step.stream(
                endless(), SimulatedAgent(), max_workers=2, deadline=1.0
            ) as results:
                async for _ in results:
                    pass
        took = trio.current_time() - start
        seen.fact("the stream ended after", secs(took), "1s, its deadline", took == 1.0)
        assert not guard.cancelled_caught, "the stream never ended: it pulls on past its deadline"
        assert took == 1.0

    seen.virtual(main)


AN_ENDLESS_INPUT_ENDS_AT_THE_DEADLINE = Law(
    "under a deadline, a stream over an endless input ends at the deadline",
    (16,),
    _an_endless_input_ends_at_the_deadline,
    flaw=(15, "step 15's flaw: an endless input never ends"),
)


def _the_callers_exception_comes_out_bare(step: Subject, seen: Seen) -> None:
    """The caller's own block raises while it reads the stream: the exception comes out of the
    ``async with`` as it was raised, not wrapped in an exception group."""
    seen.drew.update(task="a; b; c", raises="LookupError in the caller's async for")

    def bug() -> None:
        raise LookupError("the caller's bug")

    async def main() -> None:
        try:
            async with step.stream("a; b; c", SimulatedAgent(), max_workers=2) as results:
                async for _ in results:
                    bug()
        except LookupError:
            seen.fact("came out as", "LookupError", "LookupError, bare", True)
            return
        except BaseExceptionGroup as group:
            seen.fact("came out as", describe(group), "LookupError, bare", False)
            raise AssertionError("the caller's exception came out in an exception group") from None
        raise AssertionError("the caller's exception did not come out at all")

    seen.virtual(main)


THE_CALLERS_EXCEPTION_COMES_OUT_BARE = Law(
    "an exception raised in the caller's block comes out bare, not in an exception group",
    (16,),
    _the_callers_exception_comes_out_bare,
    flaw=(15, "step 15's flaw: the caller's exception comes out wrapped in a group"),
)


def _a_retry_waits_out_its_retry_after(
    step: Subject, seen: Seen, waits: list[float], workers: int, seed: int
) -> None:
    """Each subtask's first call is answered 429 with its own Retry-After; its second call
    starts no sooner than that wait after the 429, and then it succeeds."""
    plan = plan_of(len(waits))
    asked = dict(zip(plan, waits, strict=True))
    refused: dict[str, float] = {}  # subtask -> when its 429 came
    retried: dict[str, float] = {}  # subtask -> when its second call started
    seen.expect(out(plan))

    async def endpoint(subtask: str) -> str:
        await trio.sleep(1 / 32)
        if subtask not in refused:
            refused[subtask] = trio.current_time()
            raise RateLimited("429 Too Many Requests", retry_after=asked[subtask])
        retried[subtask] = trio.current_time()
        return f"out:{subtask}"

    async def main() -> None:
        worker = seen.watch(endpoint, plan)
        aggregate = await seen.run(
            lambda: step.supervise(
                task_of(plan), worker, max_workers=workers, attempts=2, seed=seed
            )
        )
        assert [result.output for result in aggregate.results] == [f"out:{s}" for s in plan]
        waited = {s: retried[s] - 1 / 32 - refused[s] for s in plan if s in retried}
        # within float rounding: the clock adds the waits up in seconds since its start
        short = [s for s in plan if waited.get(s, math.inf) < asked[s] - 1e-9]
        seen.fact(
            "retried sooner than its Retry-After",
            [f"{s}: after {secs(waited[s])}, asked {secs(asked[s])}" for s in short],
            [],
            not short,
        )
        assert not short, "a retry started before the wait its 429 asked for"

    seen.virtual(main)


A_RETRY_WAITS_OUT_ITS_RETRY_AFTER = Law(
    "a retry never starts sooner than the Retry-After its 429 asked for",
    (16, 17, 18, 19),
    _a_retry_waits_out_its_retry_after,
    {
        "waits": st.lists(st.integers(1, 96).map(lambda k: k / 32), min_size=1, max_size=8),
        "workers": st.integers(1, 4),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=40, deadline=None),
    flaw=(15, "step 15's flaw: its backoff draw decides the wait, whatever the server asked"),
)


def _only_transient_failures_are_retried(
    step: Subject, seen: Seen, kinds: list[str], attempts: int
) -> None:
    """A subtask whose endpoint says 401 is called once; one answered 500 or 429, or never
    answered within the timeout (every time), is called ``attempts`` times; one that succeeds,
    once."""
    plan = [f"{kind} {slot}" for slot, kind in enumerate(kinds)]
    calls: Counter[str] = Counter()
    retried = ("transient", "429", "timeout")
    expected = {s: attempts if s.split()[0] in retried else 1 for s in plan}

    async def endpoint(subtask: str) -> str:
        calls[subtask] += 1
        await trio.sleep(1 / 32)
        kind = subtask.split()[0]
        if kind == "permanent":
            raise PermanentError("401 Unauthorized: check the API key", status=401)
        if kind == "transient":
            raise TransientError("500 Internal Server Error", status=500)
        if kind == "429":
            raise RateLimited("429 Too Many Requests", retry_after=0.5)
        if kind == "timeout":
            await trio.sleep_forever()
        return "found"

    async def main() -> None:
        worker = seen.watch(endpoint, plan)
        await seen.run(
            lambda: supervise(
                step,
                task_of(plan),
                worker,
                max_workers=2,
                attempts=attempts,
                seed=1,
                worker_timeout=1.5,
            )
        )
        seen.fact("calls per subtask", dict(calls), expected, dict(calls) == expected)
        assert dict(calls) == expected

    seen.virtual(main)


ONLY_TRANSIENT_FAILURES_ARE_RETRIED = Law(
    "only what may pass is retried: a 429, a 5xx or a timeout, never a 401",
    (17, 18, 19),
    _only_transient_failures_are_retried,
    {
        "kinds": st.lists(
            st.sampled_from(["permanent", "transient", "429", "timeout", "ok"]),
            min_size=1,
            max_size=6,
        ),
        "attempts": st.integers(2, 4),
    },
    settings(max_examples=30, deadline=None),
    flaw=(16, "step 16's flaw: it retries whatever fails, a wrong key as much as a 429"),
)


def _through_a_server_each_subtask_is_answered_once(
    step: Subject, seen: Seen, size: int, workers: int, flaky: dict[int, int], seed: int
) -> None:
    """Through the loopback server (its app in this process, scripted by a simulated agent),
    which takes two requests at once and answers 429 beyond: every subtask is accounted for
    once, in plan order; each 429's Retry-After is waited out before the next attempt; a slot
    that failed fewer times than its attempts allow succeeds."""
    plan = [f"subtask {slot}" for slot in range(size)]
    agent = SimulatedAgent(seed, flaky={plan[s]: k for s, k in flaky.items() if s < size})
    seen.expect(f"{subtask}: ok, findings on {subtask}" for subtask in plan)

    async def main() -> None:
        async with step.module.open_worker(agent, virtual=True, max_workers=workers) as worker:
            await seen.run(
                lambda: step.supervise(
                    task_of(plan),
                    seen.watch(worker, plan),
                    max_workers=workers,
                    attempts=12,
                    seed=seed,
                )
            )
        assert seen.trace is not None
        undercut = []
        for slot in seen.trace.slots:
            for span, after in itertools.pairwise(slot.spans):
                waited = after.start - (span.end or math.inf)
                if waited < (span.retry_after or 0) - 1e-9:
                    undercut.append(
                        f"{slot.subtask}: {secs(waited)} of {secs(span.retry_after or 0)}"
                    )
        seen.fact("Retry-After undercut", undercut, [], not undercut)
        assert seen.returned == seen.expected
        assert not undercut, "a retry started before the wait its 429 asked for"

    seen.virtual(main)


THROUGH_A_SERVER_EACH_SUBTASK_IS_ANSWERED_ONCE = Law(
    "through a server over its limit, every subtask is answered once, in plan order, no "
    "Retry-After undercut",
    (17, 18, 19),
    _through_a_server_each_subtask_is_answered_once,
    {
        "size": st.integers(1, 8),
        "workers": st.integers(1, 5),
        "flaky": st.dictionaries(st.integers(0, 7), st.integers(1, 2), max_size=3),
        "seed": st.integers(0, 1000),
    },
    settings(max_examples=25, deadline=None),
)


def _attempts_start_at_the_rate(step: Subject, seen: Seen, size: int, rate: float) -> None:
    """With ``rate`` r, the k-th attempt to start (retries included) starts no sooner than k/r
    seconds after the first: a token bucket of one token, refilled r times a second."""
    plan = plan_of(size)
    starts: list[float] = []

    async def quick(subtask: str) -> str:
        starts.append(trio.current_time())
        await trio.sleep(1 / 32)
        return f"out:{subtask}"

    async def main() -> None:
        worker = seen.watch(quick, plan)
        if step.record.replans:  # in rounds; from step 23 each subtask a company of one leaf
            options = step.record.accepted(max_workers=4, rate=rate)
            await step.supervise(task_of(plan), worker, **options)
            seen.over()
        else:
            await seen.run(lambda: supervise(step, task_of(plan), worker, max_workers=4, rate=rate))
        gaps = [secs(start - starts[0]) for start in starts]
        wanted = [f"at least {secs(k / rate)}" for k in range(len(starts))]
        spaced = all(start - starts[0] >= k / rate - 1e-9 for k, start in enumerate(starts))
        seen.fact("attempts started after the first", gaps, wanted, spaced)
        assert spaced, "attempts started faster than the rate"

    seen.virtual(main)


ATTEMPTS_START_AT_THE_RATE = Law(
    "with a rate of r a second, the k-th attempt starts no sooner than k/r after the first",
    (18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _attempts_start_at_the_rate,
    {"size": st.integers(2, 8), "rate": st.sampled_from([0.5, 1.5, 2.5, 10.0])},
    settings(max_examples=20, deadline=None),
    flaw=(17, "step 17's flaw: nothing spaces the requests, they all start at once"),
)


def _adaptive_ends_the_429s(step: Subject, seen: Seen, size: int, seed: int) -> None:
    """Four workers, through an endpoint that takes two requests at once and answers 429 to
    any beyond: with ``adaptive`` the first 429s cut the workers allowed, and at most one
    more 429 follows them (the limit probing one place higher); every subtask succeeds."""
    plan = [f"source {slot}" for slot in range(size)]
    agent = SimulatedAgent(seed)
    running = 0
    refused: list[float] = []

    async def limited(subtask: str) -> str:
        nonlocal running
        if running >= 2:
            await trio.sleep(1 / 32)
            refused.append(trio.current_time())
            raise RateLimited("429 Too Many Requests", retry_after=0.25)
        running += 1
        try:
            return await agent(subtask)
        finally:
            running -= 1

    async def main() -> None:
        worker = seen.watch(limited, plan)
        start = trio.current_time()
        aggregate = await seen.run(
            lambda: supervise(
                step, task_of(plan), worker, max_workers=4, attempts=12, seed=seed, adaptive=True
            )
        )
        first = refused[0] if refused else 0.0
        later = [time for time in refused if time > first + 1.0]
        seen.fact(
            f"429s more than a second after the first ({len(refused)} in all), at",
            [secs(time - start) for time in later],
            "at most one",
            len(later) <= 1,
        )
        assert aggregate.succeeded == size
        assert len(later) <= 1, "the 429s went on: nothing cut the workers allowed"

    seen.virtual(main)


ADAPTIVE_ENDS_THE_429S = Law(
    "with adaptive, the first 429s cut the workers allowed and the 429s all but end",
    (19,),
    _adaptive_ends_the_429s,
    {"size": st.integers(10, 16), "seed": st.integers(0, 2**16)},
    settings(max_examples=10, deadline=None),
)


def _adaptive_holds_a_queue_to_one(
    step: Subject, seen: Seen, size: int, workers: int, took: float
) -> None:
    """Through an endpoint that answers one request at a time in ``took`` seconds and queues
    the rest, never refusing: with ``adaptive``, once its first round of answers is in
    (``Adaptive.ROUND``, 8), each request sent waits behind at most one other (so it answers
    within twice its time alone), where a fixed count of ``workers`` keeps ``workers - 1``
    ahead of each to the end. A limit moved by 429s alone never moves here."""
    plan = plan_of(size)
    turn = trio.Lock()  # trio's lock is fair: the requests take their turns in order
    inside = answered = 0
    ahead: list[tuple[int, int]] = []  # each request: the answers in when sent, those ahead

    async def one_at_a_time(subtask: str) -> str:
        nonlocal inside, answered
        ahead.append((answered, inside))
        inside += 1
        try:
            async with turn:
                await trio.sleep(took)
            answered += 1
            return f"out:{subtask}"
        finally:
            inside -= 1

    async def main() -> None:
        worker = seen.watch(one_at_a_time, plan)
        aggregate = await seen.run(
            lambda: supervise(step, task_of(plan), worker, max_workers=workers, adaptive=True)
        )
        later = [queued for answers, queued in ahead if answers >= Adaptive.ROUND]
        seen.fact(
            f"requests ahead of each sent after the first {Adaptive.ROUND} answers",
            later,
            "at most 1 each",
            max(later, default=0) <= 1,
        )
        assert aggregate.succeeded == size
        assert max(later, default=0) <= 1, "the requests queued up: nothing held the limit"

    seen.virtual(main)


ADAPTIVE_HOLDS_A_QUEUE_TO_ONE = Law(
    "with adaptive, a server that answers one at a time and queues the rest: after the first "
    "round of answers, each request waits behind one other at most",
    (19,),
    _adaptive_holds_a_queue_to_one,
    {
        "size": st.integers(16, 32),
        "workers": st.integers(3, 8),
        "took": st.sampled_from([0.25, 0.5, 1.0, 3.0]),
    },
    settings(max_examples=10, deadline=None),
    flaw=(18, "step 18's flaw: its workers all send at once, and a queue holds them all"),
)


# --- Part II: rounds to processes ----------------------------------------------------------------

RESEARCHED = "competitor pricing; customer reviews; inventory"
"""The task of Part II's laws: pricing names the competitor (a follow-up), the reviews fail (a
reroute), as step 20's rules read them."""


def researcher(seed: int, failing: Iterable[str] = ()) -> SimulatedAgent:
    """The simulated sub-agent of Part II's laws: ``failing`` (and "customer reviews") fail."""
    return SimulatedAgent(seed, fail={"customer reviews", *failing})


async def flaky_http(subtask: str) -> str:
    """A leaf worker as an HTTP sub-agent fails: a subtask holding "failing" is answered 500,
    a failure the chain retries (and so a restart), every time."""
    from trio_supervisor.agents import TransientError

    await trio.sleep(1 / 32)
    if "failing" in subtask:
        raise TransientError(f"500 Internal Server Error on {subtask!r}", status=500)
    return f"findings on {subtask}"


def _asks_what_the_results_call_for(step: Subject, seen: Seen, workers: int, seed: int) -> None:
    agent = researcher(seed)

    async def main() -> Any:
        worker = seen.watch(agent)
        return await step.supervise(RESEARCHED, worker, **step.record.accepted(max_workers=workers))

    answer = seen.virtual(main)
    asked = set(agent.calls)
    wanted = {"competitor discounts", "customer reviews, from app stores"}
    seen.fact(
        "follow-up and reroute asked", sorted(asked & wanted), sorted(wanted), wanted <= asked
    )
    assert wanted <= asked, "the follow-up or the reroute was never asked"
    ledger = [entry.subtask for entry in answer.ledger.entries]
    seen.fact("ledger", ledger, "each call's subtask once", sorted(ledger) == sorted(asked))
    assert sorted(ledger) == sorted(asked), "the ledger is not every subtask dispatched, once"
    assert answer.ended_by is None
    assert not answer.degraded


ASKS_WHAT_THE_RESULTS_CALL_FOR = Law(
    "a re-planning run asks what its results call for: each follow-up and reroute once, "
    "each in the ledger once",
    (20, 21, 22),
    _asks_what_the_results_call_for,
    {"workers": st.integers(1, 4), "seed": st.integers(0, 2**16)},
    settings(max_examples=15, deadline=None),
    flaw=(19, "step 19's flaw: the plan never changes, whatever the sub-agents find"),
)


def _every_dispatched_subtask_in_the_ledger_once(
    step: Subject, seen: Seen, workers: int, seed: int
) -> None:
    """The research task, each subtask tried once: the worker's calls are the ledger's entries,
    each once; each round's entries are indexed 0, 1, ... in batch order; at most
    ``max_workers`` run at once; the run's trace holds one slot per entry, in ledger order;
    and on one worker, the calls are made in ledger order."""
    probe = Probe(researcher(seed))
    options = step.record.accepted(max_workers=workers, attempts=1)

    async def main() -> tuple[Any, Trace]:
        trace = seen.trace = Trace()
        if step.record.records_trace:
            options["trace"] = trace
        return await step.supervise(RESEARCHED, probe, **options), trace

    answer, trace = seen.virtual(main)
    entries = [entry.subtask for entry in answer.ledger.entries]
    called = [call.subtask for call in probe.calls]
    seen.returned, seen.expected = entries, sorted(called, key=entries.index)
    seen.fact("worker calls", sorted(called), sorted(entries), sorted(called) == sorted(entries))
    assert sorted(called) == sorted(entries), "the worker's calls are not the ledger's entries"
    rounds = answer.ledger.rounds
    indexed = [[entry.index for entry in done.entries] for done in rounds]
    seen.fact(
        "each round's indexes",
        indexed,
        [list(range(len(i))) for i in indexed],
        all(i == list(range(len(i))) for i in indexed),
    )
    assert all(i == list(range(len(i))) for i in indexed), "a round's entries are not 0, 1, ..."
    assert [entry for done in rounds for entry in done.entries] == list(answer.ledger.entries)
    seen.fact("most calls at once", probe.most, f"at most {workers}", probe.most <= workers)
    assert probe.most <= workers
    if step.record.records_trace:
        slots = [slot.subtask for slot in trace.slots]
        seen.fact("the trace's slots", slots, entries, slots == entries)
        assert slots == entries, "the trace's slots are not the ledger's entries, in order"
    if workers == 1:
        seen.fact("calls in the order", called, entries, called == entries)
        assert called == entries, "on one worker, the calls were not made in ledger order"


EVERY_DISPATCHED_SUBTASK_IN_THE_LEDGER_ONCE = Law(
    "every dispatched subtask is in the ledger once, indexed in its batch's order, and the "
    "trace holds one slot per entry",
    (20, 21, 22),
    _every_dispatched_subtask_in_the_ledger_once,
    {"workers": st.integers(1, 4), "seed": st.integers(0, 2**16)},
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
)


def _answers_by_its_deadline(
    step: Subject, seen: Seen, workers: int, hung: int, deadline: float, seed: int
) -> None:
    plan = decompose(RESEARCHED)
    agent = SimulatedAgent(seed, hang={plan[hung]})
    options = step.record.accepted(max_workers=workers, deadline=deadline)

    async def main() -> tuple[Any, float]:
        start = trio.current_time()
        answer = await step.supervise(RESEARCHED, seen.watch(agent), **options)
        return answer, trio.current_time() - start

    answer, took = seen.virtual(main)
    seen.fact("ended by", answer.ended_by, "deadline", answer.ended_by == "deadline")
    seen.fact("took", secs(took), f"at most {secs(deadline)}", took <= deadline)
    assert answer.ended_by == "deadline"
    assert answer.degraded
    assert took <= deadline
    assert answer.text.endswith(f"(degraded: {answer.reason})")
    assert "deadline" in answer.reason


ANSWERS_BY_ITS_DEADLINE = Law(
    "a re-planning run with a hung sub-agent answers by its deadline, degraded, naming it",
    (20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _answers_by_its_deadline,
    {
        "workers": st.integers(1, 4),
        "hung": st.integers(0, 2),
        "deadline": st.integers(1, 256).map(lambda k: k / 32),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=15, deadline=None, phases=NO_SHRINK),
)


def _ends_by_the_budget_it_was_given(step: Subject, seen: Seen, seed: int) -> None:
    """Two runs of "a; b failing; c": with ``max_subtasks=2`` the run dispatches two subtasks
    and ends by that budget; with no stall allowed and no fresh plan, the stalled round ends it
    by ``max_stalls``. Each answer is degraded and names the budget."""
    task = "a; b failing; c"
    seen.drew.update(task=task)

    async def main() -> list[tuple[str | None, int]]:
        ended = []
        for budgets in ({"max_subtasks": 2}, {"max_stalls": 0, "max_resets": 0}):
            agent = SimulatedAgent(seed, fail={"b failing"})
            options = step.record.accepted(max_workers=2, **budgets)
            answer = await step.supervise(task, seen.watch(agent), **options)
            ended.append((answer.ended_by, len(answer.ledger.entries)))
        return ended

    (subtasks, dispatched), (stalls, _) = seen.virtual(main)
    seen.fact("with max_subtasks=2, ended by", subtasks, "max_subtasks", subtasks == "max_subtasks")
    seen.fact("subtasks dispatched", dispatched, "at most 2", dispatched <= 2)
    seen.fact(
        "with max_stalls=0, max_resets=0, ended by", stalls, "max_stalls", stalls == "max_stalls"
    )
    assert subtasks == "max_subtasks", "max_subtasks never reached the run"
    assert dispatched <= 2, "more subtasks dispatched than max_subtasks"
    assert stalls == "max_stalls", "max_stalls never reached the run"


ENDS_BY_THE_BUDGET_IT_WAS_GIVEN = Law(
    "a re-planning run ends by the budget it was given, max_subtasks or max_stalls, naming it",
    # not step 23: a failing leaf there is answered "missing", a success, so nothing stalls
    (21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _ends_by_the_budget_it_was_given,
    {"seed": st.integers(0, 2**16)},
    settings(max_examples=3, deadline=None, phases=NO_SHRINK),
    flaw=(20, "step 20's flaw: max_rounds and the deadline are its only budgets"),
)


def fresh_plans(stalled: Iterable[bool], max_stalls: int, max_resets: int) -> list[bool]:
    """Which rounds are fresh plans, by the counting rule, given whether each round but the
    last stalled: the count goes up one on a stall and down one (not below 0) on progress; past
    ``max_stalls`` a fresh plan (and the count back to 0), at most ``max_resets`` times."""
    fresh = [False]
    stalls = resets = 0
    for verdict in stalled:
        stalls = stalls + 1 if verdict else max(0, stalls - 1)
        if stalls > max_stalls and resets < max_resets:
            resets += 1
            stalls = 0
            fresh.append(True)
        else:
            fresh.append(False)
    return fresh


def _stalls_are_counted_up_and_down(
    step: Subject, seen: Seen, failing: int, max_stalls: int, max_resets: int, seed: int
) -> None:
    """A task whose failing subtasks keep the rounds from progress: a round in which nothing
    new succeeded is a stall, and the fresh plans follow the counting rule (`fresh_plans`)
    from the rounds' stalls; a run ended by ``max_stalls`` is past it with no reset left."""
    plan = ["a", *(f"b{n} failing" for n in range(failing)), "c"]
    agent = SimulatedAgent(seed, fail={s for s in plan if "failing" in s})
    options = step.record.accepted(
        max_workers=2, max_stalls=max_stalls, max_resets=max_resets, max_rounds=12, attempts=1
    )

    async def main() -> Any:
        return await step.supervise(task_of(plan), seen.watch(agent), **options)

    answer = seen.virtual(main)
    rounds = answer.ledger.rounds
    succeeded: set[str] = set()
    unmarked = []
    for done in rounds[:-1]:
        new = {entry.subtask for entry in done.entries if entry.result.ok} - succeeded
        succeeded |= new
        if not new and not done.stalled:
            unmarked.append(done.number)
    seen.fact("rounds with nothing new that are no stall", unmarked, [], not unmarked)
    assert not unmarked, "a round in which nothing new succeeded was not counted a stall"
    stalled = [bool(done.stalled) for done in rounds[:-1]]
    fresh = [done.fresh for done in rounds]
    wanted = fresh_plans(stalled, max_stalls, max_resets)[: len(rounds)]
    seen.drew["stalled"] = stalled
    seen.fact("fresh plans", fresh, wanted, fresh == wanted)
    assert fresh == wanted, "the fresh plans do not follow the stall count"
    if answer.ended_by == "max_stalls":
        count = resets = 0
        for verdict in [*stalled, bool(rounds[-1].stalled)]:
            count = count + 1 if verdict else max(0, count - 1)
            if count > max_stalls and resets < max_resets:
                resets, count = resets + 1, 0
        past = count > max_stalls and resets == max_resets
        seen.fact("ended by max_stalls with the count", count, f"past {max_stalls}", past)
        assert past, "the run ended by max_stalls before the count was past it"


STALLS_ARE_COUNTED_UP_AND_DOWN = Law(
    "a round with nothing new is a stall; the stall count goes up on a stall, down on "
    "progress, and past max_stalls asks a fresh plan, at most max_resets times",
    (21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _stalls_are_counted_up_and_down,
    {
        "failing": st.integers(1, 3),
        "max_stalls": st.integers(0, 2),
        "max_resets": st.integers(0, 2),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
)


def _a_planner_that_fails_costs_rounds(step: Subject, seen: Seen, workers: int) -> None:
    """``planner="llm"`` at an endpoint nothing answers (a loopback port no one listens on):
    each decision fails, costs its round and is recorded; no subtask is dispatched, and the
    answer is degraded, naming the planner's failure. A step that plans by its rules whatever
    it is told asks its worker."""
    import os
    import socket

    seen.drew.update(planner="llm", endpoint="a loopback port nobody listens on")
    agent = researcher(0)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        key = os.environ.get("OPENAI_API_KEY")
        os.environ["OPENAI_API_KEY"] = key or "loopback"  # the SDK needs one; nobody reads it
        try:

            async def main() -> Any:
                return await step.supervise(
                    RESEARCHED,
                    seen.watch(agent),
                    max_workers=workers,
                    planner="llm",
                    endpoint=endpoint,
                    model="planner",
                )

            answer = seen.virtual(main)
        finally:
            if key is None:
                del os.environ["OPENAI_API_KEY"]
    calls = sum(agent.calls.values())
    seen.fact("worker calls", calls, 0, calls == 0)
    assert calls == 0, "the run planned without its chat model: planner='llm' used the rules"
    errors = [round_.error for round_ in answer.ledger.rounds]
    seen.fact(
        "rounds with the planner's failure", len([e for e in errors if e]), len(errors), all(errors)
    )
    assert errors, "no round was recorded"
    assert all(errors), "a failed decision was not recorded in its round"
    assert answer.degraded
    assert "planner" in answer.reason


A_PLANNER_THAT_FAILS_COSTS_ROUNDS = Law(
    "planner='llm' asks its chat model: one that cannot be reached costs each round, never "
    "the run, and the answer names it",
    (22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _a_planner_that_fails_costs_rounds,
    {"workers": st.integers(1, 4)},
    settings(max_examples=2, deadline=None, phases=NO_SHRINK),
)


def _an_llm_plans_as_the_rules_do(step: Subject, seen: Seen, workers: int, seed: int) -> None:
    async def ledger(planner: str) -> list[tuple[int, str, str]]:
        agent = researcher(seed)
        answer = await step.supervise(
            RESEARCHED, seen.watch(agent), max_workers=workers, planner=planner
        )
        return [(e.round, e.subtask, e.result.status.value) for e in answer.ledger.entries]

    async def main() -> tuple[list[tuple[int, str, str]], list[tuple[int, str, str]]]:
        return await ledger("scripted"), await ledger("llm")

    rules, chat = seen.virtual(main)
    seen.fact("the chat model's ledger", chat, rules, chat == rules)
    assert chat == rules, "the loopback model, playing the rules, planned otherwise"


AN_LLM_PLANS_AS_THE_RULES_DO = Law(
    "planner='llm' asks a chat model over HTTP; the loopback model, playing the rules, makes "
    "the scripted planner's ledger",
    (22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _an_llm_plans_as_the_rules_do,
    {"workers": st.integers(1, 4), "seed": st.integers(0, 2**16)},
    settings(max_examples=5, deadline=None, phases=NO_SHRINK),
    flaw=(21, "step 21's flaw: its planner is rules written in advance; it takes no planner"),
    raises=TypeError,
)


@st.composite
def companies(draw: st.DrawFn) -> str:
    """A task of 1-4 companies, each with 1-3 subtasks of its own."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    return "; ".join(f"c{n}: {', '.join('abc'[:size])}" for n, size in enumerate(sizes))


def _a_company_is_a_child_supervisor(
    step: Subject, seen: Seen, task: str, workers: int, seed: int
) -> None:
    probe = Probe(SimulatedAgent(seed))

    async def main() -> Any:
        return await step.supervise(task, probe, max_workers=workers)

    answer = seen.virtual(main)
    leaves = [
        f"{company.partition(':')[0]} {aspect.strip()}"
        for company in decompose(task)
        for aspect in company.partition(":")[2].split(",")
    ]
    called = sorted(call.subtask for call in probe.calls)
    seen.fact("the worker was called with", called, sorted(leaves), called == sorted(leaves))
    assert called == sorted(leaves), "the worker was called with a company, not its leaves"
    seen.fact("most leaves at once", probe.most, f"at most {workers}", probe.most <= workers)
    assert probe.most <= workers
    first = [entry for entry in answer.ledger.entries if entry.round == 1]
    assert [entry.subtask for entry in first] == decompose(task)
    for entry in first:
        name = entry.subtask.partition(":")[0]
        assert entry.result.ok
        assert f"findings on {name} a" in str(entry.result.output)


A_COMPANY_IS_A_CHILD_SUPERVISOR = Law(
    "a company 'c: a, b' is a child supervisor: the worker gets its leaves, at most K at once "
    "in the whole tree, and its slot the child's digest",
    (23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _a_company_is_a_child_supervisor,
    {"task": companies(), "workers": st.integers(1, 4), "seed": st.integers(0, 2**16)},
    settings(max_examples=15, deadline=None, phases=NO_SHRINK),
    flaw=(22, "step 22's flaw: one flat level: a company is one subtask to one worker"),
)


def _no_leaf_outlives_the_deadline(
    step: Subject, seen: Seen, task: str, workers: int, seed: int, deadline: float
) -> None:
    """A tree under a deadline: every leaf's call has ended by it (cancel scopes nest)."""
    probe = Probe(SimulatedAgent(seed))

    async def main() -> None:
        await step.supervise(task, seen.watch(probe), max_workers=workers, deadline=deadline)

    seen.virtual(main)
    late = [
        f"{call.subtask}: ended at {secs(call.end) if call.end is not None else 'never'}"
        for call in probe.calls
        if call.end is None or call.end > deadline
    ]
    seen.fact("leaves past the deadline", late, [], not late)
    assert not late, "a leaf outlived the run's deadline"


NO_LEAF_OUTLIVES_THE_DEADLINE = Law(
    "no leaf of the tree outlives the run's deadline",
    (23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _no_leaf_outlives_the_deadline,
    {
        "task": companies(),
        "workers": st.integers(1, 4),
        "seed": st.integers(0, 2**16),
        "deadline": st.integers(0, 80).map(lambda n: (2 * n + 1) / 64),
    },
    settings(max_examples=30, deadline=None),
)


def _a_child_that_gives_up_escalates(step: Subject, seen: Seen, restarts: int, others: int) -> None:
    task = f"c0: {', '.join(['a', *('b' * others)][: others + 1])}, z failing; c1: a"
    bound = (restarts, 3600.0)

    async def main() -> Any:
        return await step.supervise(task, flaky_http, max_workers=2, attempts=9, intensity=bound)

    answer = seen.virtual(main)
    first = {entry.subtask.partition(":")[0]: entry.result for entry in answer.ledger.entries}
    given_up = first["c0"]
    seen.fact("c0's slot", given_up.status.value, "failed", not given_up.ok)
    assert not given_up.ok, "a child that gave up answered its parent"
    seen.fact(
        "c0's error, of the kind",
        kind(given_up.error),
        "Escalated",
        same_kind(given_up.error, "Escalated"),
    )
    assert same_kind(given_up.error, "Escalated"), "the child's slot failed, but not with Escalated"
    assert "c0" in str(given_up.error), "the escalation does not name the child that gave up"
    assert first["c1"].ok
    assert answer.degraded


A_CHILD_THAT_GIVES_UP_ESCALATES = Law(
    "a child past its restart intensity fails its parent's slot with Escalated and its reason",
    (24, 25, 26, 27, 28, 29, 30, 31, 32, 33),
    _a_child_that_gives_up_escalates,
    {"restarts": st.integers(0, 3), "others": st.integers(0, 2)},
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
    flaw=(23, "step 23's flaw: a child that gave up still answers its parent"),
)


ASPECTS = ["a", "b", "c", "d"]


class Board:
    """Leaves that depend on each other: each publishes a note as it starts, and returns the
    notes of the subtasks before it in its company's plan as it ends. A flaky leaf fails its
    first call after publishing (a 500, which the chain retries): a note from a failed call is
    stale."""

    def __init__(self, latencies: dict[str, float], flaky: set[str]) -> None:
        self.latencies = latencies
        self.flaky = flaky
        self.notes: dict[str, str] = {}
        self.calls: Counter[str] = Counter()
        self.stale: set[str] = set()

    async def __call__(self, leaf: str) -> str:
        self.calls[leaf] += 1
        note = f"{leaf}#{self.calls[leaf]}"
        self.notes[leaf] = note
        await trio.sleep(self.latencies[leaf])
        if leaf in self.flaky and self.calls[leaf] == 1:
            self.stale.add(note)
            raise TransientError(f"{leaf} failed", status=500)
        company, aspect = leaf.split(" ")
        earlier = [f"{company} {other}" for other in ASPECTS[: ASPECTS.index(aspect)]]
        return ",".join(self.notes[other] for other in earlier if other in self.notes)


def stale_reads(
    step: Subject, seen: Seen, task: str, board: Board, strategy: str, k: int
) -> list[str]:
    """The stale notes (from calls that then failed) in the company's answer."""

    async def main() -> list[str]:
        answer = await step.supervise(
            task, seen.watch(board), max_workers=k, attempts=2, backoff=(0, 0), strategy=strategy
        )
        (entry,) = answer.ledger.entries
        assert entry.result.ok
        return sorted(note for note in board.stale if note in str(entry.result.output))

    return seen.virtual(main)


def _a_then_b() -> Board:
    """Leaves a (1 s) and b (0.5 s), b reading a's note; a fails once."""
    return Board({"acme a": 1.0, "acme b": 0.5}, {"acme a"})


def _a_strategy_restarts_what_it_names(
    step: Subject, seen: Seen, strategy: str, ticks: list[int], flaky: int, k: int
) -> None:
    """Leaves that read the notes of those before them: with ``rest_for_one`` or
    ``one_for_all`` no answer keeps a note of a failed call; with ``one_for_one``, b keeps a's
    (b read it, a failed, and nothing restarts b)."""
    # b reads a's note, then a fails: the one case every run of the law holds, so that a step
    # that ignores its strategy fails whatever else is drawn
    fixed = stale_reads(step, seen, "acme: a, b", _a_then_b(), strategy, 2)
    seen.fact(f"stale notes kept with {strategy}, b having read a's", fixed, [], fixed == [])
    assert fixed == [], f"{strategy} kept a note of a failed call: it restarted too little"
    aspects = ASPECTS[: len(ticks)]
    task = f"acme: {', '.join(aspects)}"
    latencies = {f"acme {aspect}": tick / 32 for aspect, tick in zip(aspects, ticks, strict=True)}
    board = Board(latencies, {f"acme {aspects[flaky % len(aspects)]}"})
    stale = stale_reads(step, seen, task, board, strategy, k)
    seen.fact(f"stale notes kept with {strategy}", stale, [], stale == [])
    assert stale == [], f"{strategy} kept a note of a failed call: it restarted too little"
    kept = stale_reads(step, seen, "acme: a, b", _a_then_b(), "one_for_one", 2)
    seen.fact("stale notes kept with one_for_one", kept, ["acme a#1"], kept == ["acme a#1"])
    assert kept == ["acme a#1"], "one_for_one restarted more than the failed leaf"


A_STRATEGY_RESTARTS_WHAT_IT_NAMES = Law(
    "children restarted with the one they depend on keep no stale work; one_for_one restarts "
    "the failed leaf alone",
    (25, 26, 27, 28, 29, 30, 31, 32, 33),
    _a_strategy_restarts_what_it_names,
    {
        "strategy": st.sampled_from(["rest_for_one", "one_for_all"]),
        "ticks": st.lists(st.integers(1, 64), min_size=2, max_size=4, unique=True),
        "flaky": st.integers(0, 3),
        "k": st.integers(1, 4),
    },
    settings(max_examples=10, deadline=None),
    flaw=(24, "step 24's flaw: a restart takes the failed leaf alone; it takes no strategy"),
    raises=TypeError,
)


def _a_crash_fails_its_leaf_alone(step: Subject, seen: Seen, crashed: int, seed: int) -> None:
    task = "acme: pricing, reviews, inventory"
    leaves = ["acme pricing", "acme reviews", "acme inventory"]
    agent = SimulatedAgent(seed)

    async def main() -> Any:
        hook = step.module.open_worker(agent, virtual=True, max_workers=3, crash={leaves[crashed]})
        async with hook as worker:
            return await step.supervise(task, worker, max_workers=3)

    answer = seen.virtual(main)
    (entry,) = [entry for entry in answer.ledger.entries if entry.round == 1]
    lines = dict(part.split(": ", 1) for part in str(entry.result.output).split("; "))
    seen.fact("the crashed leaf", lines.get(leaves[crashed]), "missing", True)
    assert lines[leaves[crashed]] == "missing"
    assert all(lines[leaf] != "missing" for leaf in leaves if leaf != leaves[crashed])


A_CRASH_FAILS_ITS_LEAF_ALONE = Law(
    "a leaf whose body crashes its process fails its own slot; its siblings get their results",
    (26, 27, 28, 29, 30, 31, 32, 33),
    _a_crash_fails_its_leaf_alone,
    {"crashed": st.integers(0, 2), "seed": st.integers(0, 2**16)},
    settings(max_examples=5, deadline=None, phases=NO_SHRINK),
    flaw=(25, "step 25's flaw: its leaves run in this process, and take no crash"),
    raises=TypeError,
)


CRASHING_CHILD = """
import importlib, json, sys
import trio
from trio_supervisor.testing import SimulatedAgent

module = importlib.import_module(sys.argv[1])
agent = SimulatedAgent(latencies={"acme a": 0.1, "acme b": 0.05, "acme c": 0.2})

async def main():
    hook = module.open_worker(agent, virtual=False, max_workers=3, crash={"acme b"})
    async with hook as worker:
        answer = await module.supervise("acme: a, b, c", worker, max_workers=3)
    print(json.dumps([str(entry.result.output) for entry in answer.ledger.entries]))

trio.run(main)
"""
"""A child Python running a step on real time, its worker from the step's ``open_worker`` with
real processes, the body crashing on "acme b": what it prints is the ledger's outputs."""
REAL_TIME = 60.0  # seconds the child may take: its start, its processes', and a run of 0.2 s


def crashing_child(module: ModuleType) -> subprocess.CompletedProcess[str]:
    """Run `CRASHING_CHILD` on ``module`` (a step of the course's, or a reader's file,
    imported there by its name from its folder, so that its worker processes import it too)."""
    if module.__name__.startswith("lessons."):
        name, folders = module.__name__, []
    else:
        path = Path(module.__file__ or "")
        name, folders = path.stem, [str(path.parent)]
    found = [*folders, *(entry for entry in sys.path if entry)]
    return subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, name],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(found)},
        timeout=REAL_TIME,
        check=False,
    )


def _a_crash_in_a_real_process_spares_the_run(step: Subject, seen: Seen) -> None:
    """The one case a law runs on real processes: the step's worker made by its
    ``open_worker(virtual=False)``, in a child Python, the body crashing on "acme b". A body
    run in a worker process takes only that process with it: the child returns, "acme b"
    missing and its siblings answered. A body run in the supervisor's own process (a pool
    started, and not used) takes the whole run with it: the child dies with the body's exit
    code, and returns nothing."""
    seen.drew.update(
        task="acme: a, b, c", crash="acme b", max_workers=3, time="real, in a child Python"
    )
    if not step.record.takes_crash:
        raise TypeError("open_worker takes no crash: its leaves run in this process")
    leaves = ["acme a", "acme b", "acme c"]
    seen.expect(
        f"{leaf}: {'missing' if leaf == 'acme b' else f'findings on {leaf}'}" for leaf in leaves
    )
    done = crashing_child(step.module)
    said = done.stdout.strip().splitlines()
    seen.fact("the child Python exited with", done.returncode, 0, done.returncode == 0)
    if done.returncode != 0:
        said_last = done.stderr.strip().splitlines()[-1:] or ["nothing returned, nothing said"]
        seen.returned = [f"(the run's process died, exit code {done.returncode}: {said_last[0]})"]
        raise AssertionError(
            f"the crash ended the supervisor's own process (exit code {done.returncode}): "
            "the body ran in this process, not in a worker process"
            if not said
            else f"the child Python failed (exit code {done.returncode})"
        )
    outputs = json.loads(said[-1])[0]
    seen.returned = str(outputs).split("; ")
    assert seen.returned == seen.expected, "a leaf's result is not what its body made of it"


A_CRASH_IN_A_REAL_PROCESS_SPARES_THE_RUN = Law(
    "on real processes, a body that crashes takes only its worker process: the run returns, "
    "the crashed leaf missing, its siblings answered",
    (26,),
    _a_crash_in_a_real_process_spares_the_run,
    flaw=(25, "step 25's flaw: its leaves run in this process, and take no crash"),
    raises=TypeError,
)


def _a_cut_leaf_ends_its_call(step: Subject, seen: Seen, hung: int, seed: int) -> None:
    """A leaf that never answers is cut at its ``worker_timeout``, its call ended there (as
    ``ProcessWorker`` kills its process), its siblings answered; and a run cancelled from
    outside ends every call at that instant, none left running (every process killed)."""
    task = "acme: pricing, reviews, inventory"
    leaves = ["acme pricing", "acme reviews", "acme inventory"]
    agent = SimulatedAgent(seed, hang={leaves[hung]})
    seen.drew["hangs"] = leaves[hung]

    async def timed_out() -> Any:
        probe = Probe(agent)
        answer = await step.supervise(
            task, seen.watch(probe), max_workers=3, worker_timeout=1.5, attempts=1
        )
        return probe, answer

    probe, answer = seen.virtual(timed_out)
    took = [
        f"{call.subtask}: {call.outcome} after {secs((call.end or math.inf) - call.start)}"
        for call in probe.of(leaves[hung])
    ]
    cut = [f"{leaves[hung]}: cancelled after 1.5s"]
    seen.fact("the hung leaf's call", took, cut, took == cut)
    assert took == cut, "the hung leaf's call was not ended at its timeout"
    (entry,) = [entry for entry in answer.ledger.entries if entry.round == 1]
    lines = dict(part.split(": ", 1) for part in str(entry.result.output).split("; "))
    answered = [leaf for leaf in leaves if lines.get(leaf, "missing") != "missing"]
    others = [leaf for leaf in leaves if leaf != leaves[hung]]
    seen.fact("leaves answered", answered, others, answered == others)
    assert answered == others, "the hung leaf's siblings did not get their results"

    async def cancelled() -> None:
        probe = Probe(SimulatedAgent(seed, hang={leaves[hung]}))
        with trio.move_on_after(1.0):
            await step.supervise(task, seen.watch(probe), max_workers=3, attempts=1)
        live, after = probe.live, len(probe.calls)
        await trio.sleep(HOUR)
        seen.fact("calls running after the cancel", live, 0, live == 0)
        assert live == 0, "a leaf's call outlived the cancelled run"
        assert len(probe.calls) == after, "a leaf was called after the run was cancelled"

    seen.drew["cancelled"] = "from outside, after 1s"
    seen.virtual(cancelled)


A_CUT_LEAF_ENDS_ITS_CALL = Law(
    "a leaf cut by its timeout, or by a cancelled run, has its call ended there: no body "
    "outlives the call that started it",
    (26, 27, 28, 29, 30, 31, 32, 33),
    _a_cut_leaf_ends_its_call,
    {"hung": st.integers(0, 2), "seed": st.integers(0, 2**16)},
    settings(max_examples=5, deadline=None, phases=NO_SHRINK),
)


# --- Part II: durable runs and an approval gate --------------------------------------------------


def ledger_of(answer: Any) -> list[tuple[int, str, str, object]]:
    """A re-planning run's ledger as plain facts: round, subtask, status, output."""
    return [
        (entry.round, entry.subtask, entry.result.status.value, entry.result.output)
        for entry in answer.ledger.entries
    ]


def _resume_after_a_crash_equals_a_run(
    step: Subject, seen: Seen, workers: int, seed: int, kill: float
) -> None:
    from trio_supervisor import Journal

    options = step.record.accepted(max_workers=workers)

    async def main() -> tuple[Any, Any, tuple[int, int], int]:
        if not step.record.takes("journal"):
            raise TypeError("supervise() takes no journal: its run lives in memory only")
        fresh = researcher(seed)
        whole = await step.supervise(RESEARCHED, fresh, **options)  # never killed, no journal
        with tempfile.TemporaryDirectory() as scratch:
            crashed = Journal(Path(scratch) / "kill.db", writer="inline")
            probe = Probe(researcher(seed))
            started = trio.current_time()
            async with trio.open_nursery() as nursery:  # the kill, at an instant of the run

                async def killer() -> None:
                    await trio.sleep(kill * 6.0)
                    nursery.cancel_scope.cancel()

                nursery.start_soon(killer)
                await step.supervise(RESEARCHED, probe, journal=crashed, run_id="r", **options)
                nursery.cancel_scope.cancel()
            killed_at = trio.current_time()
            done = len(
                [
                    call
                    for call in probe.calls
                    if call.outcome == "ok" and call.end is not None and call.end < killed_at
                ]
            )
            crashed.close(flush=False)  # as a crash leaves it: what was not committed, lost
            with Journal(Path(scratch) / "kill.db", writer="inline") as journal:
                agent = researcher(seed)
                resumed = await step.supervise(
                    RESEARCHED, seen.watch(agent), journal=journal, run_id="r", **options
                )
            seen.drew["killed at"] = secs(killed_at - started)
            seen.drew["leaves done before the kill"] = done
            return whole, resumed, (sum(agent.calls.values()), sum(fresh.calls.values())), done

    whole, resumed, (again, once), done = seen.virtual(main)
    same = ledger_of(resumed) == ledger_of(whole)
    seen.fact("the resumed ledger", ledger_of(resumed), ledger_of(whole), same)
    assert same, "the resumed run differs from a run never killed"
    assert resumed.text == whole.text
    most = once - 1 if done else once
    seen.fact(
        "calls after the kill",
        again,
        f"at most {most}, fewer than a whole run's {once}" if done else f"at most {once}",
        again <= most,
    )
    assert again <= most, "the resume ran the leaves finished before the kill again"


RESUME_AFTER_A_CRASH_EQUALS_A_RUN = Law(
    "a journaled run whose supervisor is killed at any instant, resumed under its run_id, ends "
    "with the ledger and the answer of a run never killed",
    (27, 28, 29, 30, 31, 32, 33),
    _resume_after_a_crash_equals_a_run,
    {
        "workers": st.integers(1, 4),
        "seed": st.integers(0, 2**16),
        "kill": st.floats(0.0, 1.0),
    },
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
    flaw=(26, "step 26's flaw: its run lives in memory only; it takes no journal"),
    raises=TypeError,
)


def _a_parked_slot_is_finished_by_its_approval(
    step: Subject, seen: Seen, dollars: int, answer: str, seed: int
) -> None:
    from trio_supervisor import Journal

    refund = f"acme refund ${dollars} to order 1"
    task = f"acme: pricing, refund ${dollars} to order 1; globex: refund $40 to order 2"
    child = f"r/{decompose(task)[0]}"

    agent = SimulatedAgent(seed)
    leaf = refund  # the leaf, as its company names it

    async def main() -> tuple[Any, list[tuple[int, int, str]], Any]:
        hook = step.module.open_worker(agent, virtual=True, max_workers=2)
        async with hook as worker:
            with (
                tempfile.TemporaryDirectory() as scratch,
                Journal(Path(scratch) / "runs.db", writer="inline") as journal,
            ):
                run = {"journal": journal, "run_id": "r", "max_workers": 2}
                probe = Probe(worker)
                first = await step.supervise(task, probe, **run)
                spent = [secs((call.end or call.start) - call.start) for call in probe.of(leaf)]
                seen.fact(
                    "the parked refund's calls took",
                    spent,
                    "0s each: nothing sent",
                    set(spent) <= {"0s"},
                )
                assert set(spent) <= {"0s"}, "the refund was sent before anyone approved it"
                asked = journal.pending(child)
                for round_, slot, _ in asked:
                    answering = journal.approve if answer == "approve" else journal.reject
                    answering(child, slot, by="law", round=round_)
                resumed = await step.supervise(task, seen.watch(worker), **run)
        return first, asked, resumed

    first, asked, resumed = seen.virtual(main)
    seen.fact("questions asked", [q for _, _, q in asked], [f"{refund}: ..."], len(asked) == 1)
    assert len(asked) == 1, "a refund over the threshold was done without a person's yes"
    assert first.degraded
    assert refund in first.reason
    assert "findings on globex refund $40 to order 2" in first.text  # the rest ran on
    said = "findings" if answer == "approve" else "missing"
    seen.fact(
        "the resumed refund", resumed.text, f"{refund}: {said}", f"{refund}: {said}" in resumed.text
    )
    assert f"{refund}: {said}" in resumed.text
    assert not resumed.degraded


A_PARKED_SLOT_IS_FINISHED_BY_ITS_APPROVAL = Law(
    "a refund over the threshold is parked, the run degraded naming its question; the resume "
    "after an answer finishes it: done if approved, missing if rejected",
    (28, 29, 30, 31, 32, 33),
    _a_parked_slot_is_finished_by_its_approval,
    {
        "dollars": st.integers(101, 10_000),
        "answer": st.sampled_from(["approve", "reject"]),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
    flaw=(27, "step 27's flaw: a refund runs as soon as it can, asking nobody"),
)


# --- Part II: hedged requests and the first k of n ---------------------------------------------

STRAGGLES = 30.0
"""Seconds a straggling leaf's first request takes: far past any leaf's normal latency."""


def _leaves(n: int) -> str:
    """A company of ``n`` leaves, ``acme: l0, l1, ...``."""
    return "acme: " + ", ".join(f"source {index}" for index in range(n))


def _a_straggler_is_answered_by_its_hedge(
    step: Subject, seen: Seen, leaves: int, straggler: int, after: float, seed: int
) -> None:
    task = _leaves(leaves)
    slow = f"acme source {straggler % leaves}"

    async def main() -> tuple[Any, float]:
        agent = SimulatedAgent(seed, straggle={slow: STRAGGLES})
        async with step.module.open_worker(agent, virtual=True, max_workers=2) as worker:
            started = trio.current_time()
            answer = await step.supervise(task, worker, max_workers=2, hedge=after)
            return answer, trio.current_time() - started

    answer, took = seen.virtual(main)
    seen.fact(
        "the answer took", secs(took), f"less than the straggler's {STRAGGLES:g}s", took < STRAGGLES
    )
    assert took < STRAGGLES, "the straggler's first request held the answer: no hedge answered it"
    said = f"findings on {slow}"
    seen.fact("the straggler's leaf", said in answer.text, True, said in answer.text)
    assert said in answer.text, "the straggling leaf has no answer of its own"
    assert not answer.degraded


A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE = Law(
    "a leaf whose first request straggles is answered by its hedge, a second request of the "
    "same subtask: the answer comes long before the straggler would have, whole",
    (29, 30, 31, 32, 33),
    _a_straggler_is_answered_by_its_hedge,
    {
        "leaves": st.integers(1, 4),
        "straggler": st.integers(0, 3),
        "after": st.sampled_from([0.5, 1.0, 2.0, 4.0]),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
    flaw=(28, "step 28's flaw: a straggler holds its company's answer; it takes no hedge"),
    raises=TypeError,
)


def _the_first_k_leaves_answer(
    step: Subject, seen: Seen, leaves: int, straggler: int, seed: int
) -> None:
    task = _leaves(leaves)
    slow = f"acme source {straggler % leaves}"
    need = leaves - 1

    async def main() -> tuple[Any, float]:
        agent = SimulatedAgent(seed, straggle={slow: STRAGGLES})
        async with step.module.open_worker(agent, virtual=True, max_workers=2) as worker:
            started = trio.current_time()
            answer = await step.supervise(task, worker, max_workers=2, need=need)
            return answer, trio.current_time() - started

    answer, took = seen.virtual(main)
    seen.fact(
        "the answer took", secs(took), f"less than the straggler's {STRAGGLES:g}s", took < STRAGGLES
    )
    assert took < STRAGGLES, "the run waited for a leaf it did not need"
    kept = [f"findings on acme source {i}" for i in range(leaves) if f"acme source {i}" != slow]
    whole = all(part in answer.text for part in kept)
    seen.fact("the first k leaves' answers", whole, True, whole)
    assert whole, "a leaf that answered in time is missing from the company's answer"
    assert f"findings on {slow}" not in answer.text, "the leaf not needed is in the answer"
    assert not answer.degraded


THE_FIRST_K_LEAVES_ANSWER = Law(
    "with need=k, a company's child run returns at its k-th leaf's success: the slower leaf is "
    "cancelled and left out, the answer whole",
    (30, 31, 32, 33),
    _the_first_k_leaves_answer,
    {
        "leaves": st.integers(2, 4),
        "straggler": st.integers(0, 3),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=10, deadline=None, phases=NO_SHRINK),
    flaw=(29, "step 29's flaw: a company waits for every leaf; it takes no need"),
    raises=TypeError,
)


def _the_tokens_spent_never_exceed_the_budget(
    step: Subject, seen: Seen, sizes: list[int], workers: int, budget: int, seed: int
) -> None:
    """Companies of leaves that answer at once with the most their request may use (a token a
    character of the leaf, and a reply of ``REPLY_TOKENS``), each reported through
    ``report_usage`` and counted here as the endpoint bills it: whatever the budget and the
    width of the fan-out, what was billed never exceeds ``budget_tokens``, and a budget that
    fits a request's worst case pays for one at least. A check made before a request and
    charged after it lets every request running at once through, and overshoots."""
    task = "; ".join(
        f"c{n}: {', '.join(f'source {i}' for i in range(size))}" for n, size in enumerate(sizes)
    )
    agent = SimulatedAgent(seed)
    billed: list[int] = []
    reply = 64  # the course's REPLY_TOKENS: what a reply may take at most

    async def leaf(subtask: str) -> str:
        answer = await agent(subtask)
        report_usage(input_tokens=len(subtask), output_tokens=reply)
        billed.append(len(subtask) + reply)
        return answer

    async def main() -> None:
        await step.supervise(
            task, seen.watch(leaf), max_workers=workers, attempts=1, budget_tokens=budget
        )

    seen.drew["task"] = task
    seen.virtual(main)
    spent = sum(billed)
    seen.fact("tokens billed", spent, f"at most {budget}", spent <= budget)
    assert spent <= budget, "the leaves spent more tokens than budget_tokens"
    cheapest = min(len(f"c0 source {i}") + 4 + reply for i in range(max(sizes)))
    if budget >= cheapest:
        seen.fact("requests paid for", len(billed), "at least 1", bool(billed))
        assert billed, "a budget that fits a request paid for none"


THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET = Law(
    "the tokens the leaves spend, hedges included, never exceed budget_tokens, however many "
    "requests run at once",
    (31,),
    _the_tokens_spent_never_exceed_the_budget,
    {
        "sizes": st.lists(st.integers(1, 4), min_size=1, max_size=3),
        "workers": st.integers(2, 6),
        "budget": st.integers(80, 600),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=15, deadline=None),
    flaw=(30, "step 30's flaw: nothing bounds what the leaves spend; it takes no budget_tokens"),
    raises=TypeError,
)

# --- Part II: typed replies ----------------------------------------------------------------------

REASKS = 2
"""How many times the course's step asks a reply again that does not validate (its ``RETRIES``)."""
TOPICS = ("pricing", "news", "filings", "reviews")  # names that do not sort in plan order


def _leaf_slots(trace: Trace) -> list[Any]:
    """The leaf slots of a traced tree, company by company, each company's in its plan order."""
    found = []
    for slot in trace.slots:
        for child in slot.children:
            found += _leaf_slots(child)
        if not slot.children:
            found.append(slot)
    return found


def _a_reply_is_held_to_its_contract(
    step: Subject, seen: Seen, proses: list[int], workers: int, budget: int | None, seed: int
) -> None:
    """One company whose leaves the loopback server answers in prose k times each (a leaf
    named ``... prose k``: the server ignores the schema), then with valid JSON: a leaf whose k
    is at most ``REASKS`` is ok after k + 1 requests, its output a pydantic model; past the
    bound its slot fails, ``InvalidReply``, after ``REASKS + 1`` requests. The leaves keep their
    plan order in the answer, each failing alone, and with ``budget_tokens`` every request, a
    re-ask too, is charged: the tokens billed never exceed it, and a leaf it cannot pay for
    sends nothing."""
    leaves = [f"{TOPICS[i]} prose {k}" for i, k in enumerate(proses)]
    task = "acme: " + ", ".join(leaves)
    outputs: dict[str, object] = {}
    options = {} if budget is None else {"budget_tokens": budget}
    seen.drew["task"] = task

    async def main() -> tuple[Any, Trace]:
        agent = SimulatedAgent(seed)
        async with step.module.open_worker(agent, virtual=True, max_workers=workers) as worker:

            async def watched(subtask: str) -> Any:
                outputs[subtask] = output = await worker(subtask)
                return output

            trace = Trace()
            answer = await step.supervise(
                task, watched, max_workers=workers, trace=trace, **options
            )
            return answer, trace

    answer, trace = seen.virtual(main)
    slots = {str(slot.subtask).removeprefix("acme "): slot for slot in _leaf_slots(trace)}
    billed = 0
    for leaf, k in zip(leaves, proses, strict=True):
        slot = slots[leaf]
        used = [span.usage for span in slot.spans if span.usage is not None]
        asked = sum(usage.calls for usage in used)
        billed += sum(usage.tokens for usage in used)
        if slot.status is Status.OVER_BUDGET:
            seen.fact(f"{leaf}: requests of a leaf over budget", asked, 0, asked == 0)
            assert asked == 0, "a leaf the budget could not pay for sent a request"
            continue
        wanted = min(k, REASKS) + 1
        seen.fact(f"{leaf}: requests", asked, wanted, asked == wanted)
        assert asked == wanted, (
            f"a leaf answered in prose {k} times made {asked} requests, not {wanted}"
        )
        status = slot.status.value if slot.status is not None else "never ended"
        if k <= REASKS:
            typed = isinstance(outputs.get(f"acme {leaf}"), BaseModel)
            seen.fact(f"{leaf}: ended", status, "ok, a pydantic model", status == "ok" and typed)
            assert slot.status is Status.OK, "a leaf whose reply validated in time failed"
            assert typed, "a leaf's output is not its contract's model"
        else:
            error = kind(slot.spans[-1].error) if slot.spans else ""
            holds = slot.status is Status.FAILED and error == "InvalidReply"
            seen.fact(f"{leaf}: ended", f"{status}, {error}", "failed, InvalidReply", holds)
            assert holds, "a leaf whose replies never validated did not fail with InvalidReply"
    ok = [leaf for leaf in leaves if slots[leaf].status is Status.OK]
    places = [answer.text.find(f"acme {leaf}") for leaf in ok]
    seen.fact(
        "the ok leaves' places in the answer", places, "in plan order", places == sorted(places)
    )
    assert -1 not in places, "a leaf that was ok is missing from the answer"
    assert places == sorted(places), "the answer lost the plan order"
    if budget is not None:
        seen.fact("tokens billed", billed, f"at most {budget}", billed <= budget)
        assert billed <= budget, "the leaves spent more tokens than budget_tokens"


A_REPLY_IS_HELD_TO_ITS_CONTRACT = Law(
    "a leaf answered in prose k times is ok after k + 1 requests, its output the contract's "
    "model, when k is at most the bound, and fails with InvalidReply past it; plan order, "
    "isolation and the token budget hold, each re-ask charged",
    (32, 33),
    _a_reply_is_held_to_its_contract,
    {
        "proses": st.lists(st.integers(0, REASKS + 1), min_size=1, max_size=4),
        "workers": st.integers(1, 2),  # the loopback server takes two at once: no 429 here
        # a tight budget too: one that pays for a leaf's first request, not for its re-asks
        "budget": st.none() | st.integers(100, 400) | st.integers(400, 12_000),
        "seed": st.integers(0, 2**16),
    },
    settings(max_examples=15, deadline=None, phases=NO_SHRINK),
    flaw=(31, "step 31's flaw: a reply is taken as text, whatever it says; nothing asks again"),
)


# --- Part II: several supervisors on one run ----------------------------------------------------

SHARED = "acme: pricing, reviews, news; globex: filings, hiring; initech: pricing, patents, jobs"
"""The tree several supervisors share in the lease law: three companies, eight leaves."""


def _one_run_many_supervisors(
    step: Subject, seen: Seen, supervisors: int, workers: int, lease: float, seed: int, kill: Any
) -> None:
    """``supervisors`` runs of ``step`` on one ``run_id``, each with its own ``Journal`` on one
    file (opened as one supervisor's, ``lease=None``: leasing is the step's to ask for), on one
    worker whose calls are counted. With ``kill`` (a fraction of a run's length), the first is
    killed then: its journal dropped as a crash leaves it, its run cancelled. Each leaf's worker
    is called once across them, but for the slots the killed one held, called again only after
    its lease ran out; every survivor returns the answer of one supervisor run alone."""
    from trio_supervisor import Journal

    options = step.record.accepted(max_workers=workers, lease=lease)
    leases = "lease" in options

    async def main() -> tuple[Any, list[Any], Probe, float | None]:
        began = trio.current_time()
        whole = await step.supervise(SHARED, researcher(seed), max_workers=workers)
        span = trio.current_time() - began  # how long one supervisor alone takes
        probe = Probe(researcher(seed))
        answers: list[Any] = [None] * supervisors
        killed_at = None
        with tempfile.TemporaryDirectory() as scratch:
            journals = [
                Journal(Path(scratch) / "run.db", writer="inline", lease=None)
                for _ in range(supervisors)
            ]
            scopes = [trio.CancelScope() for _ in range(supervisors)]

            async def one(index: int) -> None:
                with scopes[index]:
                    try:
                        answers[index] = await step.supervise(
                            SHARED, probe, journal=journals[index], run_id="r", **options
                        )
                    except* Exception:  # its journal closed under it: a killed one's last
                        if index != 0 or killed_at is None:
                            raise

            async with trio.open_nursery() as nursery:
                began = trio.current_time()
                for index in range(supervisors):
                    nursery.start_soon(one, index)
                if kill is not None:
                    await trio.sleep(kill * span)
                    if answers[0] is None:
                        killed_at = trio.current_time()
                        seen.drew["first supervisor killed at"] = secs(round(killed_at - began, 6))
                        journals[0].close(flush=False)  # what was not committed, lost
                        scopes[0].cancel()
            for journal in journals:
                journal.close()
        return whole, answers, probe, killed_at

    whole, answers, probe, killed_at = seen.virtual(main)
    seen.drew["leases"] = f"lease={lease:g}s" if leases else "no lease option: none asked for"
    calls = Counter(call.subtask for call in probe.calls)
    twice = sorted(subtask for subtask, n in calls.items() if n > 1)
    if killed_at is None:
        once = all(n == 1 for n in calls.values())
        seen.fact(
            "leaves called more than once",
            {subtask: calls[subtask] for subtask in twice} or "none",
            "none: each leaf once, whichever supervisor ran it",
            once,
        )
        assert once, (
            f"{len(twice)} of {len(calls)} leaves were called by more than one supervisor: "
            "the supervisors on one run did not share its slots"
        )
    else:
        # a slot the killed one held is free once its lease, renewed every third of it, ran out
        free = killed_at + lease * 2 / 3
        early = [
            call.subtask for subtask in twice for call in probe.of(subtask)[1:] if call.start < free
        ]
        seen.fact(
            "leaves called again before the killed one's lease ran out",
            early or "none",
            f"none: none before {secs(lease * 2 / 3)} after the kill",
            not early,
        )
        assert not early, (
            f"{len(early)} leaves were called again before the killed supervisor's lease ran "
            "out: a slot was run by two supervisors at once"
        )
        most = max(calls.values(), default=0)
        seen.fact(
            "calls of one leaf, at most", most, "2: the killed one's, then a survivor's", most <= 2
        )
        assert most <= 2, "a leaf was called by more than the killed supervisor and one other"
    survivors = answers[1:] if killed_at is not None else answers
    said = [
        "none" if answer is None else "the same" if answer.text == whole.text else "another"
        for answer in survivors
    ]
    same = set(said) == {"the same"}
    seen.fact("each survivor's answer, against one supervisor's", said, "the same", same)
    assert same, "a supervisor on the shared run answered differently from one run alone"


ONE_RUN_MANY_SUPERVISORS = Law(
    "supervisors sharing one run_id and one journal call each leaf once between them; one "
    "killed part way has its slots taken over only after its lease ran out; each survivor "
    "answers as one supervisor alone would",
    (33,),
    _one_run_many_supervisors,
    {
        "supervisors": st.integers(2, 3),
        "workers": st.integers(1, 3),
        "lease": st.sampled_from([1.5, 3.0, 6.0]),
        "seed": st.integers(0, 2**16),
        "kill": st.none() | st.floats(0.0, 1.0),
    },
    settings(max_examples=8, deadline=None, phases=NO_SHRINK),
    flaw=(32, "step 32's flaw: two supervisors on one run both run every slot"),
)

LAWS = (
    PLAN_ORDER,
    SERIAL_WALL_TIME,
    FAN_OUT_WALL_TIME,
    EVERY_SUBTASK_ANSWERED,
    GREEDY_MAKESPAN,
    BOUNDED,
    MAX_WORKERS_REFUSED,
    FAILURES_ISOLATED,
    CANCELLATION_PASSES_THROUGH,
    HUNG_WORKER_FREES_ITS_SLOT,
    EACH_CALL_IS_TIMED_ON_ITS_OWN,
    MAKESPAN_WITH_TIMEOUTS,
    DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK,
    TRANSIENT_FAILURE_RETRIED,
    SUCCEEDS_WHEN_ATTEMPTS_EXCEED_FAILURES,
    WAITS_ARE_SEEDED_DRAWS,
    A_WAITING_RETRY_HOLDS_NO_TOKEN,
    AT_MOST_R_RESTARTS_IN_T,
    GIVES_UP_PAST_THE_INTENSITY,
    OLD_RESTARTS_ARE_FORGOTTEN,
    FIRST_RESULT_ARRIVES_WITH_SLOT_0,
    HANDED_OVER_AS_SOON_AS_POSSIBLE,
    READ_AS_A_STREAM,
    LEAVING_EARLY_CANCELS_THE_REST,
    HELD_TO_THE_WINDOW,
    HEAD_OF_LINE_IS_HELD_TO_THE_WINDOW,
    A_LAZY_MILLION_IS_HELD,
    AN_ASYNC_INPUT_IS_AWAITED,
    AN_ENDLESS_INPUT_ENDS_AT_THE_DEADLINE,
    THE_CALLERS_EXCEPTION_COMES_OUT_BARE,
    STREAMED_AS_EACH_IS_FINAL,
    A_RETRY_WAITS_OUT_ITS_RETRY_AFTER,
    ONLY_TRANSIENT_FAILURES_ARE_RETRIED,
    THROUGH_A_SERVER_EACH_SUBTASK_IS_ANSWERED_ONCE,
    ATTEMPTS_START_AT_THE_RATE,
    ADAPTIVE_ENDS_THE_429S,
    ADAPTIVE_HOLDS_A_QUEUE_TO_ONE,
    # Part II: rounds to processes
    ASKS_WHAT_THE_RESULTS_CALL_FOR,
    EVERY_DISPATCHED_SUBTASK_IN_THE_LEDGER_ONCE,
    ANSWERS_BY_ITS_DEADLINE,
    ENDS_BY_THE_BUDGET_IT_WAS_GIVEN,
    STALLS_ARE_COUNTED_UP_AND_DOWN,
    AN_LLM_PLANS_AS_THE_RULES_DO,
    A_PLANNER_THAT_FAILS_COSTS_ROUNDS,
    A_COMPANY_IS_A_CHILD_SUPERVISOR,
    NO_LEAF_OUTLIVES_THE_DEADLINE,
    A_CHILD_THAT_GIVES_UP_ESCALATES,
    A_STRATEGY_RESTARTS_WHAT_IT_NAMES,
    A_CRASH_FAILS_ITS_LEAF_ALONE,
    A_CRASH_IN_A_REAL_PROCESS_SPARES_THE_RUN,
    A_CUT_LEAF_ENDS_ITS_CALL,
    # Part II: durable runs and an approval gate
    RESUME_AFTER_A_CRASH_EQUALS_A_RUN,
    A_PARKED_SLOT_IS_FINISHED_BY_ITS_APPROVAL,
    # Part II: hedged requests and the first k of n
    A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE,
    THE_FIRST_K_LEAVES_ANSWER,
    THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET,
    # Part II: typed replies
    A_REPLY_IS_HELD_TO_ITS_CONTRACT,
    # Part II: several supervisors on one run
    ONE_RUN_MANY_SUPERVISORS,
)
"""Every law of the course, in the order of the steps that bring them."""


def laws_of(step: int) -> list[Law]:
    """The laws step ``step`` keeps: what ``python -m lessons check`` runs on it."""
    return [law for law in LAWS if step in law.steps]
