"""A trace tells its listeners of each event once it has recorded it: a listener (the span
recorder is one) reads the trace's own record instead of keeping a copy, so what it sees is
what the trace says, on every path and for every drawn hedged run on virtual time."""

from __future__ import annotations

from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import PATHS
from tests.library.test_hedge_laws import Scenario, scenario_supervisor, scenarios
from tests.library.virtual_time import run_virtual
from trio_supervisor import Hedge, Status, Supervisor, Trace
from trio_supervisor._trace import Listener, Span


class Heard(Listener):
    """Every event heard, with what the trace said of its span when it was told."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.closed = False

    def on_begin(self) -> None:
        self.events.append(("begin",))

    def on_admitted(self, slot: int) -> None:
        self.events.append(("admitted", slot))

    def on_started(self, slot: int, span: Span) -> None:
        assert span.end is None  # recorded: open
        self.events.append(("started", slot, span))

    def on_ended(self, slot: int, span: Span, failure: BaseException | None) -> None:
        assert span.end is not None  # recorded first: its end and status are the trace's
        assert span.status is not None
        self.events.append(("ended", slot, span, span.status))

    def on_lost(self, slot: int, span: Span) -> None:
        assert span.lost
        self.events.append(("lost", slot, span))

    def on_over_budget(self, slot: int, span: Span, failure: BaseException) -> None:
        self.events.append(("over_budget", slot, span))

    def on_close(self) -> None:
        self.closed = True


def heard_run(scenario: Scenario, path: str) -> tuple[Any, Trace, Heard]:
    heard = Heard()

    async def main() -> tuple[Any, Trace]:
        trace = Trace()
        trace.listen(heard)
        supervisor = scenario_supervisor(scenario, **PATHS[path])
        return await supervisor.run(range(scenario.slots), trace=trace), trace

    aggregate, trace = run_virtual(main)
    return aggregate, trace, heard


@settings(max_examples=60, deadline=None)
@given(scenarios(timeout=True), st.sampled_from(["lanes", "intensity"]))
def test_a_listener_hears_every_attempt_start_and_end_once_as_the_trace_recorded_it(
    scenario: Scenario, path: str
) -> None:
    _, trace, heard = heard_run(scenario, path)
    assert heard.events[0] == ("begin",)
    assert heard.closed
    for slot, recorded in enumerate(trace.slots):
        started = [e[2] for e in heard.events if e[0] == "started" and e[1] == slot]
        ended = [e[2] for e in heard.events if e[0] in ("ended", "lost") and e[1] == slot]
        assert [id(span) for span in started] == [id(span) for span in recorded.spans]
        assert sorted(map(id, ended)) == sorted(map(id, recorded.spans))  # each ends once
        for event in heard.events:
            if event[0] == "ended" and event[1] == slot:
                assert event[3] is event[2].status  # as the trace says, never changed after


async def test_a_hedged_slot_cut_short_ends_every_attempt_to_its_listeners(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A deadline that cuts a hedged race ends each of its open attempts, and a listener is
    told of each (a recorder that ended only the last one left the others open)."""
    heard = Heard()
    trace = Trace()
    trace.listen(heard)

    async def slow(n: int) -> int:
        await trio.sleep(10)
        return n

    supervisor = Supervisor(slow, max_workers=4, hedge=Hedge(after=1.0, max_extra=2, throttle=1.0))
    aggregate = await supervisor.run([0], trace=trace, deadline=5)
    assert aggregate[0].status is Status.CANCELLED
    spans = trace.slots[0].spans
    assert len(spans) == 3
    ended = [e for e in heard.events if e[0] == "ended"]
    assert sorted(id(e[2]) for e in ended) == sorted(map(id, spans))
    assert all(e[3] is Status.CANCELLED for e in ended)
