"""The spans of a hedged run say what its trace and its results say, as a Hypothesis law on
virtual time.

For every drawn scenario (stragglers, failures, hedges, the throttle, timeouts, retries), each
attempt span ends when the trace's attempt ends, with its status, marked a hedge (or lost) as
the trace marks it; a slot span's status and counts are its ``SubResult``'s; no span a run
opened is left open, and a run none of whose slots was cut short is not in error.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tests.library.scripted_worker import PATHS
from tests.library.test_hedge_laws import Scenario, scenario_supervisor, scenarios
from tests.library.virtual_time import run_virtual
from trio_supervisor import Status, Trace
from trio_supervisor.otel import Spans

SLOT = "trio_supervisor.slot"
ATTEMPT = "trio_supervisor.attempt"


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def recorded_run(
    scenario: Scenario, path: str = "lanes"
) -> tuple[Any, Trace, list[ReadableSpan], int]:
    """Run ``scenario`` hedged, on ``path`` (the lanes, or the restarting path), into a trace
    and spans: the results, the trace, the ended spans, and how many spans were started."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = Spans(provider.get_tracer("laws"))
    started = 0
    start_span = spans.tracer.start_span

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal started
        started += 1
        return start_span(*args, **kwargs)

    spans.tracer.start_span = counted  # type: ignore[method-assign]

    async def main() -> tuple[Any, Trace]:
        trace = Trace()
        supervisor = scenario_supervisor(scenario, spans=spans, **PATHS[path])
        return await supervisor.run(range(scenario.slots), trace=trace), trace

    aggregate, trace = run_virtual(main)
    finished = list(exporter.get_finished_spans())
    provider.shutdown()
    return aggregate, trace, finished, started


def seconds(span_ns: int | None, origin_ns: int) -> float:
    assert span_ns is not None
    return (span_ns - origin_ns) / 1e9


def check_spans_agree(scenario: Scenario, path: str = "lanes") -> None:
    aggregate, trace, finished, started = recorded_run(scenario, path)
    assert len(finished) == started  # every span started was ended
    (run,) = [span for span in finished if span.name == "run worker"]
    assert run.start_time is not None
    origin = run.start_time  # the trace's origin: the run began as the trace was made
    assert run.status.status_code is not StatusCode.ERROR
    for slot, result in enumerate(aggregate):
        (slot_span,) = [s for s in finished if s.name == "slot" and attrs(s)[SLOT] == slot]
        said = attrs(slot_span)
        assert said["trio_supervisor.status"] == result.status.name.lower()
        recorded_status = trace.slots[slot].status
        assert recorded_status is not None
        assert said["trio_supervisor.status"] == recorded_status.name.lower()
        assert said["trio_supervisor.attempts"] == result.attempts
        assert said.get("trio_supervisor.hedges", 0) == result.hedges
        assert result.finished is not None
        assert abs(seconds(slot_span.end_time, origin) - result.finished) < 1e-6
        recorded = trace.slots[slot].spans
        attempts = sorted(
            (s for s in finished if s.name == "attempt" and attrs(s)[SLOT] == slot),
            key=lambda s: attrs(s)[ATTEMPT],
        )
        assert len(attempts) == len(recorded) == result.attempts
        assert sum(bool(attrs(s).get("trio_supervisor.hedge")) for s in attempts) == result.hedges
        for attempt, span in zip(attempts, recorded, strict=True):
            got = attrs(attempt)
            assert span.end is not None
            assert span.status is not None
            assert got["trio_supervisor.status"] == span.status.name.lower(), (got, span)
            assert got.get("trio_supervisor.hedge", False) == span.hedge, (got, span)
            assert got.get("trio_supervisor.hedge.lost", False) == span.lost, (got, span)
            assert abs(seconds(attempt.start_time, origin) - span.start) < 1e-6
            assert abs(seconds(attempt.end_time, origin) - span.end) < 1e-6, (got, span)
            if span.status is Status.TIMED_OUT:
                assert got["error.type"] == "timeout"
            assert got.get("trio_supervisor.retry.after") == span.retry_after
            before = [s.end for s in recorded[: recorded.index(span)] if s.end is not None]
            if span.hedge or not before:
                assert "trio_supervisor.retry.wait" not in got
            else:  # seconds since the latest end of an attempt before it, as the trace says
                wait = got["trio_supervisor.retry.wait"]
                assert abs(wait - (span.start - max(before))) < 1e-6
            if span.status is Status.FAILED:
                assert attempt.status.description == span.error


@settings(max_examples=60, deadline=None)
@given(scenarios(timeout=True), st.sampled_from(["lanes", "intensity"]))
def test_the_spans_of_a_hedged_run_say_what_its_trace_and_results_say(
    scenario: Scenario, path: str
) -> None:
    check_spans_agree(scenario, path)


def test_a_hedged_race_that_times_out_is_timed_out_in_its_spans() -> None:
    """The case that showed it: every attempt of the race ends timed out at the timeout (none
    stays open, cancelled, to the end of the run), the retry is no hedge, and the slot's counts
    are its SubResult's (3 attempts, 1 hedge)."""
    scenario = Scenario(
        slots=2,
        latencies=[[10.0], [0.5]],
        fails=frozenset(),
        after=1.0,
        max_extra=1,
        throttle=1.0,
        max_workers=4,
        attempts=2,
        timeout=3.0,
    )
    check_spans_agree(scenario)
    aggregate, _, finished, _ = recorded_run(scenario)
    assert (aggregate[0].status, aggregate[0].attempts, aggregate[0].hedges) == (
        Status.TIMED_OUT,
        3,
        1,
    )
    attempts = sorted(
        (s for s in finished if s.name == "attempt" and attrs(s)[SLOT] == 0),
        key=lambda s: attrs(s)[ATTEMPT],
    )
    assert [attrs(s)["trio_supervisor.status"] for s in attempts] == ["timed_out"] * 3
    assert [attrs(s).get("trio_supervisor.hedge", False) for s in attempts] == [
        False,
        True,
        False,
    ]
