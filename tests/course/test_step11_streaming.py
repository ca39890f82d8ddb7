"""Step 11: results streamed in plan order, read by the caller at its own pace; leaving the
stream early stops the hand-over, and waits for every worker.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import (
    STEP11,
    Probe,
    agent_with,
    task_of,
)
from tests.course.step_laws import cases
from trio_supervisor import Trace
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.timeline import timeline_rows


@pytest.mark.parametrize("step", cases(laws.READ_AS_A_STREAM))
def test_the_caller_reads_the_results_as_a_stream_and_may_leave_it_after_any(
    step: ModuleType,
) -> None:
    laws.READ_AS_A_STREAM.verify(step)


async def test_leaving_early_still_waits_for_every_worker_and_hands_nothing_more_over(
    autojump_clock: trio.abc.Clock,
) -> None:
    probe = Probe(agent_with([8, 64, 64, 64]))  # s0 ends at 0.25 s, the rest at 2 s
    async with STEP11.stream(task_of(4), probe, max_workers=4) as results:
        first = await results.receive()
    assert first.subtask == "s0"
    assert trio.current_time() == 2.0, "the block ended only when every worker had"
    assert [call.outcome for call in probe.calls] == ["ok"] * 4, "nothing was cancelled"


async def test_the_timeline_draws_a_result_held_from_its_end_to_its_hand_over(
    autojump_clock: trio.abc.Clock,
) -> None:
    trace = Trace(["s0", "s1", "s2"])
    probe = Probe(agent_with([8, 32, 4]))
    async with STEP11.stream(task_of(3), trace.watch(probe), max_workers=3) as results:
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
