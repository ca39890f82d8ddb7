"""Supervisor tracing: the recorder sees every admission, attempt and ending, as they happen, on
either path a run takes (``PATHS``)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from tests.library.scripted_worker import PATHS, Behaviour, Script, fail, hang, latencies, ok
from tests.library.virtual_time import run_virtual
from trio_supervisor import Backoff, Retry, Status, Supervisor, Trace
from trio_supervisor.timeline import render_timeline


@settings(max_examples=80, deadline=None)
@given(
    plan_behaviours=st.lists(
        st.builds(
            Behaviour,
            latencies,
            st.lists(st.sampled_from(["ok", "fail", "hang"]), min_size=1, max_size=3).map(tuple),
        ),
        max_size=10,
    ),
    k=st.integers(min_value=1, max_value=4),
    attempts=st.integers(min_value=1, max_value=3),
    streamed=st.booleans(),
    planned=st.booleans(),
    path=st.sampled_from(list(PATHS)),
)
def test_the_trace_records_exactly_the_worker_calls(
    plan_behaviours: list[Behaviour],
    k: int,
    attempts: int,
    streamed: bool,
    planned: bool,
    path: str,
) -> None:
    """A span per call of the worker, ending as that call did. Under one_for_all and
    rest_for_one a call a sibling's restart cut short ends CANCELLED (a stream has no such
    path)."""
    streamed = streamed and path == "lanes"
    script = Script(plan_behaviours)
    n = len(plan_behaviours)
    supervisor = Supervisor(
        script,
        max_workers=k,
        timeout=49 / 64,
        retry=Retry(attempts=attempts, backoff=Backoff(0.25, 1)),
        **PATHS[path],
    )

    async def main() -> Trace:
        trace = Trace(range(n)) if planned and not streamed else Trace()
        if streamed:
            async with supervisor.stream(range(n), trace=trace) as results:
                async for _ in results:
                    pass
        else:
            await supervisor.run(range(n), trace=trace)
        return trace

    trace = run_virtual(main)
    assert [slot.subtask for slot in trace.slots] == list(range(n))
    for slot in trace.slots:
        calls = script.spans[slot.slot]
        assert [(span.start, span.end) for span in slot.spans] == calls
        assert slot.admitted == calls[0][0]  # admitted the moment a worker took it
        behaviour = plan_behaviours[slot.slot]
        for span, (call, (start, end)) in zip(slot.spans, enumerate(calls, start=1), strict=True):
            outcome = behaviour.outcome(call)
            timed_out = outcome == "hang" or behaviour.seconds > 49 / 64
            expected = (
                Status.TIMED_OUT if timed_out else Status({"ok": "ok", "fail": "failed"}[outcome])
            )
            assert end is not None
            if span.status is Status.CANCELLED:  # a sibling's restart cut it short
                assert path in ("one_for_all", "rest_for_one")
                assert end - start < (49 / 64 if timed_out else behaviour.seconds)
            else:
                assert span.status is expected
            if span.status is Status.FAILED:
                assert span.error == f"SubAgentError: slot {slot.slot} failed on call {call}"
            else:
                assert span.error is None
    assert trace.closed is not None


@pytest.mark.parametrize("path", PATHS)  # nothing is retried, so nothing restarts: one run
async def test_a_traced_run_draws_its_timeline(autojump_clock: Any, path: str) -> None:
    script = Script([ok(16), fail(8), hang(), Behaviour(8, ("fail", "ok"))])
    plan = list(range(4))
    trace = Trace(plan)
    supervisor = Supervisor(
        script,
        max_workers=2,
        timeout=1,
        retry=Retry(attempts=2, on=KeyError, backoff=Backoff(0, 0)),
        **PATHS[path],
    )
    aggregate = await supervisor.run(plan, trace=trace)
    assert [slot.status for slot in trace.slots] == [
        Status.OK,
        Status.FAILED,
        Status.TIMED_OUT,
        Status.FAILED,  # SubAgentError is not in retry_on
    ]
    assert [result.status for result in aggregate.results] == [slot.status for slot in trace.slots]
    assert trace.completion_rank() == {1: 1, 0: 2, 3: 3, 2: 4}
    console = Console(width=120, record=True, color_system=None)
    console.print(render_timeline(trace))
    text = console.export_text()
    assert "✓ ok 0.50s" in text
    assert "◷ timed out 1.25s" in text
    assert trio.current_time() == trace.closed


def test_a_trace_made_outside_a_run_says_where_to_make_it() -> None:
    with pytest.raises(RuntimeError) as caught:
        Trace()
    assert str(caught.value) == (
        "Trace() reads trio's clock, and there is none outside trio.run: make the trace inside "
        "the async function that trio.run runs, as the run it records"
    )
    assert caught.value.__suppress_context__  # the one line, not trio's own before it
