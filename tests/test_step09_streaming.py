"""Step 8: results streamed in plan order from a lazy input, under a bounded window.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from types import ModuleType

import pytest
import trio
from helpers678 import HOUR, STEP07, STEP08, Probe, arrivals
from hypothesis import given, settings
from hypothesis import strategies as st
from support import run_virtual

from trio_supervisor import Status, Trace
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.timeline import timeline_rows

FLAW = "step 7's flaw: nothing is handed over until the last slot is done"


def agent_with(latencies: list[int], **options: object) -> SimulatedAgent:
    """A sub-agent on subtasks s0, s1, ... whose latencies are the given 32nds of a second."""
    return SimulatedAgent(
        latencies={f"s{slot}": n / 32 for slot, n in enumerate(latencies)},
        **options,  # type: ignore[arg-type]
    )


def task_of(size: int) -> str:
    return "; ".join(f"s{slot}" for slot in range(size))


@pytest.mark.parametrize(
    "step",
    [
        pytest.param(
            STEP07, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=FLAW)
        ),
        STEP08,
    ],
)
def test_the_first_result_arrives_when_slot_0_completes(step: ModuleType) -> None:
    latencies = [8, 24, 16, 20]

    async def main() -> None:
        start = trio.current_time()
        got = await arrivals(step, task_of(4), agent_with(latencies), max_workers=4)
        assert got[0][0] - start == latencies[0] / 32

    run_virtual(main)  # not the fixture: a failure must come out bare for the xfail to match it


@settings(max_examples=80, deadline=None)
@given(order=st.integers(1, 7).flatmap(lambda size: st.permutations(range(size))))
def test_each_result_is_handed_over_in_plan_order_as_soon_as_every_earlier_slot_is_done(
    order: list[int],
) -> None:
    """Whatever order the slots complete in (every permutation), slot i is handed over at the
    moment the last of slots 0..i completes."""
    latencies = [(rank + 1) * 4 for rank in order]  # slot i completes order[i]-th

    async def main() -> None:
        size = len(order)
        start = trio.current_time()
        got = await arrivals(STEP08, task_of(size), agent_with(latencies), max_workers=size)
        assert [result.subtask for _, result in got] == [f"s{slot}" for slot in range(size)]
        assert [time - start for time, _ in got] == [
            max(latencies[: slot + 1]) / 32 for slot in range(size)
        ]

    run_virtual(main)


def tasks_below(task: trio.lowlevel.Task) -> int:
    """How many tasks run below ``task``, in its nurseries and theirs."""
    return sum(
        1 + tasks_below(child) for nursery in task.child_nurseries for child in nursery.child_tasks
    )


@settings(max_examples=25, deadline=None)
@given(
    workers=st.integers(1, 4),
    extra=st.integers(0, 5),
    taken=st.integers(0, 40),
    seed=st.integers(0, 2**16),
)
def test_a_lazy_input_of_a_million_is_held_to_the_window_and_abandoning_it_cancels_every_worker(
    workers: int, extra: int, taken: int, seed: int
) -> None:
    window = workers + extra
    pulled = received = 0
    consumer: trio.lowlevel.Task | None = None
    left = False
    probe = Probe(SimulatedAgent(seed, fail={"s3"}))

    def held_in_bounds() -> None:
        finished = sum(1 for call in probe.calls if call.outcome in {"ok", "error"})
        assert pulled - received <= window, "more slots pulled and not handed over than the window"
        assert finished - received <= window, "more results waiting than the window"
        assert probe.live <= workers
        # the stream's own tasks: work, deliver, the puller and the dispatcher, and its workers
        assert consumer is not None
        assert tasks_below(consumer) <= workers + 4

    def lazy() -> Iterator[str]:
        nonlocal pulled
        for slot in range(10**6):
            assert not left, "the input was pulled after the caller left"
            pulled += 1
            held_in_bounds()
            yield f"s{slot}"

    async def worker(subtask: str) -> str:
        held_in_bounds()
        try:
            return await probe(subtask)
        finally:
            held_in_bounds()

    async def main() -> None:
        nonlocal received, consumer, left
        consumer = trio.lowlevel.current_task()
        async with STEP08.stream(lazy(), worker, max_workers=workers, window=window) as results:
            if taken:
                async for result in results:
                    assert result.subtask == f"s{received}"
                    received += 1
                    held_in_bounds()
                    if received == taken:
                        break
            running = [call for call in probe.calls if call.end is None]
            left = True
        assert probe.live == 0, "a worker outlived the stream"
        assert tasks_below(consumer) == 0, "a task outlived the stream"
        assert all(call.end is not None for call in probe.calls)
        assert all(call.outcome == "cancelled" for call in running)
        assert pulled <= taken + window
        calls = len(probe.calls)
        await trio.sleep(HOUR)
        assert len(probe.calls) == calls, "a worker started after the stream was left"

    run_virtual(main)


async def test_head_of_line_blocking_holds_the_window_while_an_early_slot_runs_long(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(agent_with([8, 96, 8, 8, 8, 8, 8, 8]))  # slot 1 takes 3 s, the rest 0.25 s
    start = trio.current_time()
    got = await arrivals(STEP08, task_of(8), probe, max_workers=2, window=4)
    # slot 0 at 0.25 s; slots 1-4 wait for slot 1 and come out together at 3 s, then the rest
    assert [time - start for time, _ in got] == [0.25, 3, 3, 3, 3, 3.25, 3.25, 3.5]
    # while slot 1 runs, the window (slots 1-4) is full: nothing more is pulled, workers idle
    assert [call.subtask for call in probe.calls if call.start - start < 3] == [
        "s0",
        "s1",
        "s2",
        "s3",
        "s4",
    ]


async def test_leaving_the_block_early_cancels_every_running_worker_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(SimulatedAgent(hang={"s1", "s2"}))
    with trio.fail_after(HOUR):  # leaving must not wait for the hung workers
        async with STEP08.stream("s0; s1; s2; s3", probe, max_workers=3) as results:
            first = await results.receive()
            left = trio.current_time()
    assert first.subtask == "s0"
    assert trio.current_time() == left
    assert probe.live == 0
    assert [(call.subtask, call.outcome) for call in probe.calls] == [
        ("s0", "ok"),
        ("s1", "cancelled"),
        ("s2", "cancelled"),
        ("s3", "cancelled"),
    ]


@pytest.mark.parametrize(
    ("step", "calls"),
    [(STEP07, Counter(s0=2, s1=2, s2=2, s3=2)), (STEP08, Counter(s0=1, s1=2, s2=2, s3=2))],
)
async def test_one_for_all_in_a_stream_restarts_every_slot_not_yet_handed_over(
    step: ModuleType, calls: Counter[str], autojump_clock: trio.abc.Clock
) -> None:
    # s0 is handed over at 0.125 s; s2 fails its first call at 0.25 s while s1 and s3 run
    agent = agent_with([4, 16, 8, 24], flaky={"s2": 1})
    aggregate = await step.supervise(
        task_of(4), agent, max_workers=4, attempts=2, strategy="one_for_all", seed=0
    )
    assert agent.calls == calls
    assert [result.status for result in aggregate.results] == [Status.OK] * 4


async def test_after_a_deadline_the_rest_of_a_finite_input_still_comes_out_marked(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(agent_with([8] * 10))
    aggregate = await STEP08.supervise(task_of(10), probe, max_workers=1, window=2, deadline=0.6)
    assert [result.subtask for result in aggregate.results] == [f"s{slot}" for slot in range(10)]
    assert [result.status for result in aggregate.results] == [Status.OK] * 2 + [
        Status.CANCELLED
    ] * 8
    assert [result.attempts for result in aggregate.results] == [1, 1, 1] + [0] * 7
    assert len(probe.calls) == 3


async def test_an_async_iterable_input_is_pulled_lazily_too(autojump_clock: trio.abc.Clock) -> None:
    async def planner() -> AsyncGenerator[str]:
        for slot in range(5):
            await trio.sleep(0.125)  # a planner that streams its plan
            yield f"s{slot}"

    got = []
    async with (
        aclosing(planner()) as plan,
        STEP08.stream(plan, SimulatedAgent(), max_workers=2) as results,
    ):
        async for result in results:
            got.append(result.subtask)
    assert got == [f"s{slot}" for slot in range(5)]


async def test_an_error_in_the_input_comes_out_of_the_stream(
    autojump_clock: trio.abc.Clock,
) -> None:
    def broken() -> Iterator[str]:
        yield "s0"
        raise LookupError("the plan broke")

    with pytest.RaisesGroup(
        pytest.RaisesExc(LookupError, match="^the plan broke$"), flatten_subgroups=True
    ):
        async with STEP08.stream(broken(), SimulatedAgent(), max_workers=2) as results:
            async for _ in results:
                pass


async def test_a_window_smaller_than_max_workers_is_refused_before_any_work() -> None:
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=r"^window must be >= max_workers \(4\), got 3$"):
        async with STEP08.stream("a; b", agent, max_workers=4, window=3):
            pass
    assert not agent.calls


async def test_the_timeline_draws_a_result_held_from_its_end_to_its_hand_over(
    autojump_clock: trio.abc.Clock,
) -> None:
    trace = Trace()
    probe = Probe(agent_with([8, 32, 4]))
    async with STEP08.stream(task_of(3), trace.watch(probe), max_workers=3) as results:
        for slot in range(3):
            await results.receive()
            trace.delivered(slot)  # as the runner marks each result it is handed
    trace.close()
    rows = timeline_rows(trace)
    assert [[(bar.kind, bar.start, bar.end) for bar in row.bars] for row in rows] == [
        [("running", 0, 0.25)],
        [("running", 0, 1)],
        [("running", 0, 0.125), ("held", 0.125, 1)],  # done first, handed over after slot 1
    ]


def test_a_sub_agent_latency_can_be_set_per_subtask() -> None:
    agent = SimulatedAgent(latencies={"slow": 3.0})
    assert agent.latency("slow") == 3.0
    assert agent.latency("fast") == SimulatedAgent().latency("fast")
    with pytest.raises(ValueError, match=r"^latencies must be >= 0, got -1 for 'slow'$"):
        SimulatedAgent(latencies={"slow": -1})
