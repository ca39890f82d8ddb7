"""Step 12: leaving the stream early cancels the rest: every worker still running, at once, and
no worker is called after the caller left.

All on virtual time. Latencies are whole 1/32 s, so arrival times are exact.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import trio

from lessons._course import laws
from tests.course.probing import HOUR, Probe, since
from tests.course.step_laws import cases
from trio_supervisor.testing import SimulatedAgent

SINCE_12 = since(12)


@pytest.mark.parametrize("step", cases(laws.LEAVING_EARLY_CANCELS_THE_REST))
def test_leaving_early_cancels_the_rest_and_calls_no_further_worker(step: ModuleType) -> None:
    laws.LEAVING_EARLY_CANCELS_THE_REST.verify(step)


@pytest.mark.parametrize("step", SINCE_12)
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
