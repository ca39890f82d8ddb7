"""Step 18: a rate (a token bucket) over step 17's supervisor.

The rate's law runs on fake workers, on virtual time; step 17, which takes no rate, starts every
attempt at once (a strict xfail). The demo runs through the loopback server's app in this
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


@pytest.mark.parametrize("step", cases(laws.ATTEMPTS_START_AT_THE_RATE))
def test_attempts_start_no_faster_than_the_rate(step: ModuleType) -> None:
    laws.ATTEMPTS_START_AT_THE_RATE.verify(step)


def refusals(run: Run) -> list[float]:
    """When each attempt the server answered 429 ended, in order."""
    assert run.trace is not None
    return sorted(
        span.end - run.trace.origin
        for slot in run.trace.slots
        for span in slot.spans
        if span.retry_after is not None and span.end is not None
    )


def test_the_rate_demo_meets_no_429_where_step_17_meets_them() -> None:
    (demo,) = STEP_DEMOS[18]
    assert demo.options == {"rate": 2.0}
    args = parser().parse_args(["18", "--virtual"])
    run = run_demo("step18_rate", demo, args)
    assert run.aggregate is not None
    assert run.aggregate.succeeded == 12
    assert refusals(run) == []
    assert refusals(run_demo("step17_http_subagents", demo, args)) != []
