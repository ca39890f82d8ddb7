"""A crashed worker process ends its attempt's and its slot's spans in error; these start real
processes on trio's real clock, so they are few and assert no durations."""

from __future__ import annotations

from opentelemetry.trace import StatusCode

from tests.library.process_bodies import body
from tests.library.test_otel import Recorded, attrs
from trio_supervisor import Status, Supervisor
from trio_supervisor.processes import ProcessWorker


async def test_a_crashed_process_ends_its_spans_with_an_error_status() -> None:
    recorded = Recorded()
    try:
        supervisor = Supervisor(ProcessWorker(body), max_workers=2, spans=recorded.spans)
        aggregate = await supervisor.run(["a", "exit"])
        assert [result.status for result in aggregate] == [Status.OK, Status.FAILED]
        assert recorded.all_ended()
        slots = sorted(recorded.named("slot"), key=lambda s: attrs(s)["trio_supervisor.slot"])
        crashed = slots[1]
        assert attrs(crashed)["error.type"] == "trio_supervisor.processes.WorkerCrashed"
        assert crashed.status.status_code is StatusCode.ERROR
        (attempt,) = recorded.children(crashed)
        assert attempt.status.status_code is StatusCode.ERROR
        event = attempt.events[0]
        assert event.name == "exception"
        assert "exited with code 70" in str((event.attributes or {})["exception.message"])
        assert slots[0].status.status_code is StatusCode.UNSET
    finally:
        recorded.provider.shutdown()
