"""Step 19: adaptive concurrency (AIMD) over step 18's supervisor.

Adaptive concurrency runs on fake workers for its laws (step 18, which takes no adaptive, keeps
a queue four deep: a strict xfail), and its demos through the loopback server's app in this
process, as the docs run the step with ``--virtual``.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from lessons._course import laws
from lessons._course.arguments import parser
from lessons._course.demos import STEP_DEMOS
from lessons._course.running import Run, run_demo
from tests.course.step_laws import cases


@pytest.mark.parametrize("step", cases(laws.ADAPTIVE_HOLDS_A_QUEUE_TO_ONE))
def test_adaptive_holds_a_queue_to_one(step: ModuleType) -> None:
    laws.ADAPTIVE_HOLDS_A_QUEUE_TO_ONE.verify(step)


def refusals(run: Run) -> list[float]:
    """When each attempt the server answered 429 ended, in order."""
    assert run.trace is not None
    return sorted(
        span.end - run.trace.origin
        for slot in run.trace.slots
        for span in slot.spans
        if span.retry_after is not None and span.end is not None
    )


def test_adaptive_ends_the_429s_that_step_18_keeps_meeting() -> None:
    """A dozen on 4 workers, through a server that takes two at once: step 18 meets a 429 on
    most rounds to the end, and loses slots whose every attempt met one; with adaptive the
    first burst cuts the workers to two, and at most one more 429 follows (the limit probing
    one place higher)."""
    demo = STEP_DEMOS[19][0]
    assert demo.options["adaptive"]
    args = parser().parse_args(["19", "--virtual"])
    fixed = run_demo("step18_rate", demo, args)
    fitted = run_demo("step19_adaptive", demo, args)
    assert fixed.aggregate is not None
    assert fitted.aggregate is not None
    assert fitted.aggregate.succeeded == 12
    assert fixed.aggregate.degraded, "step 18 loses slots whose every attempt met a 429"
    before, after = refusals(fixed), refusals(fitted)
    assert len(after) < len(before)
    first = after[0]
    assert len([time for time in after if time > first + 1.0]) <= 1
    assert len([time for time in before if time > first + 1.0]) >= 3


def test_against_a_server_that_queues_adaptive_holds_the_latency_step_18_lets_climb() -> None:
    """20 reviews on 4 workers, through a server that answers one at a time and queues the
    rest: both runs take as long (the server's pace), but once adaptive's first round is in,
    each of its requests waits behind one other at most (within twice the longest answer
    alone, 1s), where each of step 18's waits behind the other three to the end."""
    demo = STEP_DEMOS[19][1]
    assert demo.serving is not None
    assert demo.serving.mode == "sequential"
    assert demo.options["adaptive"]
    args = parser().parse_args(["19", "--virtual"])
    fixed = run_demo("step18_rate", demo, args)
    fitted = run_demo("step19_adaptive", demo, args)

    def latencies(run: Run) -> list[float]:
        assert run.trace is not None
        return [
            span.end - span.start
            for slot in run.trace.slots
            for span in slot.spans
            if span.end is not None
        ]

    assert fixed.trace is not None
    assert fitted.trace is not None
    assert fitted.trace.wall == pytest.approx(fixed.trace.wall)
    last = slice(-8, None)
    assert max(latencies(fitted)[last]) <= 2.0
    assert min(latencies(fixed)[last]) > 2.0
