"""trace_events: a recorded run as Chrome/Perfetto trace events, a track per slot and a slice per
attempt, so that any run opens in Perfetto's UI."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import Behaviour, Script, fail, hang, latencies, ok
from tests.library.virtual_time import run_virtual
from tests.trace_documents import check_trace_document
from trio_supervisor import Backoff, Retry, Status, Supervisor, Trace
from trio_supervisor.timeline import trace_events


def micros(seconds: float) -> float:
    return round(seconds * 1e6, 3)


@settings(max_examples=50, deadline=None)
@given(
    plan_behaviours=st.lists(
        st.builds(
            Behaviour,
            latencies,
            st.lists(st.sampled_from(["ok", "fail", "hang"]), min_size=1, max_size=3).map(tuple),
        ),
        min_size=1,
        max_size=8,
    ),
    k=st.integers(min_value=1, max_value=3),
    attempts=st.integers(min_value=1, max_value=3),
)
def test_every_attempt_is_one_slice_on_its_slots_track_in_microseconds(
    plan_behaviours: list[Behaviour], k: int, attempts: int
) -> None:
    supervisor = Supervisor(
        Script(plan_behaviours),
        max_workers=k,
        timeout=49 / 64,
        retry=Retry(attempts=attempts, backoff=Backoff(0.25, 1)),
    )

    async def main() -> Trace:
        trace = Trace(range(len(plan_behaviours)))
        await supervisor.run(range(len(plan_behaviours)), trace=trace)
        return trace

    trace = run_virtual(main)
    document = json.loads(json.dumps({"traceEvents": trace_events(trace, pid=3)}))
    tracks = check_trace_document(document)
    for slot in trace.slots:
        track = tracks[3, slot.slot + 1]
        slices = [event for event in track if event["ph"] == "X"]
        assert [(event["ts"], event["dur"]) for event in slices] == [
            (micros(span.start - trace.origin), micros(span.end - span.start))
            for span in slot.spans
            if span.end is not None
        ]
        assert [event["args"]["status"] for event in slices] == [
            span.status.value for span in slot.spans if span.status is not None
        ]
        assert all(event["args"]["slot"] == slot.slot for event in track)
        retries = [event for event in track if event["name"] == "retry"]
        assert [event["ts"] for event in retries] == [event["ts"] for event in slices[1:]]
        assert [event["args"]["attempt"] for event in retries] == list(range(2, len(slices) + 1))


async def test_admission_retries_and_their_waits_are_instants(autojump_clock: Any) -> None:
    # slot 0 fails its first call after 8/32 s and waits a backoff of at most 0.25 s holding no
    # place: slot 1 takes the only worker at once, and slot 0's retry starts when it is done
    script = Script([Behaviour(8, ("fail", "ok")), ok(16)])
    trace = Trace([0, 1])
    supervisor = Supervisor(
        script, max_workers=1, retry=Retry(attempts=2, backoff=Backoff(0.25, 0.25), seed=1)
    )
    await supervisor.run([0, 1], trace=trace)
    events = trace_events(trace, process="step 7 · flaky")
    instants = [
        (event["tid"], event["name"], event["ts"], event["args"])
        for event in events
        if event["ph"] == "i"
    ]
    first_end = trace.slots[0].spans[0].end
    assert first_end == 0.25
    slot_1_done = trace.slots[1].spans[0].end
    assert slot_1_done == 0.75
    retried = trace.slots[0].spans[1].start
    assert retried == slot_1_done  # its wait was over sooner: it queued for the place
    instants.sort(key=lambda instant: (instant[2], instant[0]))  # in time, not by track
    instant_names = [(tid, name, ts) for tid, name, ts, _ in instants]
    assert instant_names == [
        (1, "admitted", 0.0),
        (2, "admitted", micros(first_end)),
        (1, "retry", micros(retried)),
    ]
    assert instants[1][3] == {"slot": 1, "subtask": 1, "waited": first_end}
    assert instants[2][3]["attempt"] == 2
    assert instants[2][3]["after"] == retried - first_end  # its wait, and its turn for a place
    names = {(event["name"], event["tid"]): event["args"] for event in events if event["ph"] == "M"}
    assert names[("process_name", 0)] == {"name": "step 7 · flaky"}
    assert names[("thread_name", 1)] == {"name": "slot 0: 0"}
    assert names[("thread_name", 2)] == {"name": "slot 1: 1"}


async def test_a_stream_marks_each_hand_over(autojump_clock: Any) -> None:
    supervisor = Supervisor(Script([ok(16), ok(8)]), max_workers=2)
    trace = Trace()
    async with supervisor.stream([0, 1], trace=trace) as results:
        async for _ in results:
            pass
    handed = [
        (event["tid"], event["ts"])
        for event in trace_events(trace)
        if event["name"] == "handed over"
    ]
    assert handed == [(1, micros(0.5)), (2, micros(0.5))]  # slot 1 is held behind slot 0


async def test_an_attempt_still_running_ends_at_the_right_edge_and_says_running(
    autojump_clock: Any,
) -> None:
    trace = Trace(["stuck"])
    trace.started(0, "stuck")  # as a watchdog's snapshot of a hung run keeps it
    await trio.sleep(1.5)
    trace.close()
    (attempt,) = [event for event in trace_events(trace) if event["ph"] == "X"]
    assert (attempt["ts"], attempt["dur"], attempt["args"]["status"]) == (0.0, 1.5e6, "running")


async def test_final_statuses_replace_the_last_attempts_and_mark_slots_that_never_ran(
    autojump_clock: Any,
) -> None:
    # one worker: slot 0 times out at 33/64 s, slot 1 fails at 49/64 s, slot 2 is cut by the
    # deadline at 53/64 s while it runs, slot 3 never runs
    supervisor = Supervisor(Script([hang(), fail(8), ok(8), ok(8)]), max_workers=1, timeout=33 / 64)
    trace = Trace([0, 1, 2, 3])
    await supervisor.run([0, 1, 2, 3], deadline=53 / 64, trace=trace)
    assert [slot.status for slot in trace.slots] == [
        Status.TIMED_OUT,
        Status.FAILED,
        Status.CANCELLED,
        None,
    ]
    # a hand-written step's trace records its timeouts as cancellations; its results say more
    final = {1: Status.TIMED_OUT, 3: Status.CANCELLED}
    events = trace_events(trace, final)
    statuses = [
        (event["tid"], event["name"], event["args"]["status"])
        for event in events
        if event["ph"] != "M" and "status" in event["args"]
    ]
    assert statuses == [
        (1, "attempt 1", "timed out"),
        (2, "attempt 1", "timed out"),
        (3, "attempt 1", "cancelled"),
        (4, "never ran", "cancelled"),
    ]


def test_a_pid_below_one_is_refused() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match=r"^pid must be >= 1, got 0$"):
            trace_events(Trace(), pid=0)

    trio.run(main)
