"""Step 9: results streamed in plan order, each as soon as every earlier one is done; leaving
the stream early cancels the rest.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio
from course_support import (
    HOUR,
    STEP08,
    STEP09,
    STEP10,
    Probe,
    agent_with,
    arrivals,
    task_of,
    tasks_below,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from support import flawed, run_virtual

from trio_supervisor import Trace
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.timeline import timeline_rows

SINCE_9 = [STEP09, STEP10]
FLAW = "step 8's flaw: nothing is handed over until the last slot is done"


@pytest.mark.parametrize("step", [flawed(STEP08, FLAW), *SINCE_9])
def test_the_first_result_arrives_when_slot_0_completes(step: ModuleType) -> None:
    latencies = [8, 24, 16, 20]

    async def main() -> None:
        start = trio.current_time()
        got = await arrivals(step, task_of(4), agent_with(latencies), max_workers=4)
        assert got[0][0] - start == latencies[0] / 32

    run_virtual(main)  # not the fixture: a failure must come out bare for the xfail to match it


@pytest.mark.parametrize("step", SINCE_9)
@settings(max_examples=80, deadline=None)
@given(order=st.integers(1, 7).flatmap(lambda size: st.permutations(range(size))))
def test_each_result_is_handed_over_in_plan_order_as_soon_as_every_earlier_slot_is_done(
    step: ModuleType, order: list[int]
) -> None:
    """Whatever order the slots complete in (every permutation), slot i is handed over at the
    moment the last of slots 0..i completes."""
    latencies = [(rank + 1) * 4 for rank in order]  # slot i completes order[i]-th

    async def main() -> None:
        size = len(order)
        start = trio.current_time()
        got = await arrivals(step, task_of(size), agent_with(latencies), max_workers=size)
        assert [result.subtask for _, result in got] == [f"s{slot}" for slot in range(size)]
        assert [time - start for time, _ in got] == [
            max(latencies[: slot + 1]) / 32 for slot in range(size)
        ]

    run_virtual(main)


@pytest.mark.parametrize("step", SINCE_9)
# leaving can tie with a worker's start at the same instant: enough runs to meet that tie
@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 12),
    workers=st.integers(1, 4),
    data=st.data(),
    seed=st.integers(0, 2**16),
)
def test_leaving_early_cancels_the_rest_and_calls_no_further_worker(
    step: ModuleType, size: int, workers: int, data: st.DataObject, seed: int
) -> None:
    taken = data.draw(st.integers(0, size), label="results taken before leaving")
    probe = Probe(SimulatedAgent(seed, fail={"s3"}))

    async def main() -> None:
        consumer = trio.lowlevel.current_task()
        async with step.stream(task_of(size), probe, max_workers=workers) as results:
            got = [await results.receive() for _ in range(taken)]
            calls = len(probe.calls)  # the calls made when the caller leaves
            running = [call for call in probe.calls if call.end is None]
        assert [result.subtask for result in got] == [f"s{slot}" for slot in range(taken)]
        assert len(probe.calls) == calls, "a worker was called after the caller left"
        assert probe.live == 0, "a worker outlived the stream"
        assert tasks_below(consumer) == 0, "a task outlived the stream"
        assert all(call.outcome == "cancelled" for call in running)
        await trio.sleep(HOUR)
        assert len(probe.calls) == calls, "a worker was called after the stream was left"

    run_virtual(main)


@pytest.mark.parametrize("step", SINCE_9)
async def test_leaving_the_block_early_cancels_every_running_worker_at_once(
    step: ModuleType, autojump_clock: trio.abc.Clock
) -> None:
    probe = Probe(SimulatedAgent(hang={"s1", "s2"}))
    with trio.fail_after(HOUR):  # leaving must not wait for the hung workers
        async with step.stream("s0; s1; s2; s3", probe, max_workers=3) as results:
            first = await results.receive()
            left = trio.current_time()
    assert first.subtask == "s0"
    assert trio.current_time() == left
    assert probe.live == 0
    # s3 takes s0's token as s0 ends, at the instant the caller leaves: called or not, it ends
    # then, cancelled
    assert [(call.subtask, call.outcome) for call in probe.calls][:3] == [
        ("s0", "ok"),
        ("s1", "cancelled"),
        ("s2", "cancelled"),
    ]
    assert [call.outcome for call in probe.of("s3")] in ([], ["cancelled"])


async def test_the_timeline_draws_a_result_held_from_its_end_to_its_hand_over(
    autojump_clock: trio.abc.Clock,
) -> None:
    trace = Trace(["s0", "s1", "s2"])
    probe = Probe(agent_with([8, 32, 4]))
    async with STEP09.stream(task_of(3), trace.watch(probe), max_workers=3) as results:
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
