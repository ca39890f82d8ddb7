"""Step 10: results streamed in plan order, each as soon as every earlier one is done; leaving
the stream early cancels the rest.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio
from probing import (
    HOUR,
    STEP10,
    Probe,
    agent_with,
    since,
    task_of,
)
from step_laws import cases

from lessons._course import laws
from trio_supervisor import Trace
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.timeline import timeline_rows

SINCE_10 = since(10)
FLAW = "step 9's flaw: nothing is handed over until the last slot is done"


@pytest.mark.parametrize("step", cases(laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0))
def test_the_first_result_arrives_when_slot_0_completes(step: ModuleType) -> None:
    laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0.verify(step)


@pytest.mark.parametrize("step", cases(laws.HANDED_OVER_AS_SOON_AS_POSSIBLE))
def test_each_result_is_handed_over_in_plan_order_as_soon_as_every_earlier_slot_is_done(
    step: ModuleType,
) -> None:
    laws.HANDED_OVER_AS_SOON_AS_POSSIBLE.verify(step)


@pytest.mark.parametrize("step", cases(laws.LEAVING_EARLY_CANCELS_THE_REST))
def test_leaving_early_cancels_the_rest_and_calls_no_further_worker(step: ModuleType) -> None:
    laws.LEAVING_EARLY_CANCELS_THE_REST.verify(step)


@pytest.mark.parametrize("step", SINCE_10)
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
    async with STEP10.stream(task_of(3), trace.watch(probe), max_workers=3) as results:
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
