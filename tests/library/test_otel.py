"""OpenTelemetry spans of runs, streams, trees and re-planning runs, through the SDK's in-memory
exporter, on virtual time: the tree's shape, the attributes, errors, and nothing left open."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
import trio.lowlevel
import trio.testing
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from trio_supervisor import (
    Backoff,
    Batch,
    Done,
    Durable,
    Hedge,
    Journal,
    Ledger,
    Restarts,
    Retry,
    Status,
    Supervisor,
    Trace,
    Usage,
    report_usage,
)
from trio_supervisor import Budget as RealBudget
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.otel import SEMCONV_VERSION, Spans, error_type
from trio_supervisor.testing import devserver

KEY = "sk-SENTINEL-0tel-5be1a2c9d7"
SLOT_KEY = "trio_supervisor.slot"


class Recorded:
    """A tracer whose ended spans are kept, and a way to read them as a tree."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.spans = Spans(self.provider.get_tracer("test"))
        self.started = 0
        original = self.spans.tracer.start_span

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.started += 1
            return original(*args, **kwargs)

        self.spans.tracer.start_span = counted  # type: ignore[method-assign]

    @property
    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def all_ended(self) -> bool:
        """Every span started was ended (the exporter sees only ended spans)."""
        return len(self.finished) == self.started

    def children(self, span: ReadableSpan | None) -> list[ReadableSpan]:
        parent = None if span is None else span.context.span_id
        found = [
            s
            for s in self.finished
            if (s.parent.span_id if s.parent is not None else None) == parent
        ]
        return sorted(found, key=lambda s: (s.start_time or 0, attrs(s).get(SLOT_KEY, 0)))

    def shape(self, span: ReadableSpan | None = None) -> Any:
        """The tree under ``span`` (the roots when None): (name, [children]) nested."""
        return [(s.name, self.shape(s)) for s in self.children(span)]

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished if s.name == name]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    made = Recorded()
    yield made
    made.provider.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def wait(n: float) -> float:
    await trio.sleep(n)
    return n


# -- the tree of a run ------------------------------------------------------------------------


async def test_a_run_is_a_span_with_a_slot_span_per_slot_and_an_attempt_span_per_attempt(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    calls: dict[int, int] = {}

    async def worker(n: int) -> int:
        calls[n] = calls.get(n, 0) + 1
        await trio.sleep(1)
        if n == 1 and calls[n] == 1:
            raise ValueError("once")
        return n

    supervisor = Supervisor(
        worker,
        max_workers=2,
        retry=Retry(attempts=2, backoff=Backoff(initial=2, maximum=2), seed=1),
        spans=recorded.spans,
    )
    aggregate = await supervisor.run([0, 1, 2])
    assert [r.output for r in aggregate] == [0, 1, 2]
    assert recorded.shape() == [
        (
            "run worker",
            [
                ("slot", [("attempt", [])]),
                ("slot", [("attempt", []), ("attempt", [])]),
                ("slot", [("attempt", [])]),
            ],
        )
    ]
    assert recorded.all_ended()
    (run,) = recorded.named("run worker")
    assert attrs(run)["trio_supervisor.slots"] == 3
    assert attrs(run)["trio_supervisor.slots.ok"] == 3
    assert attrs(run)["trio_supervisor.max_workers"] == 2
    assert run.status.status_code is StatusCode.UNSET
    slots = recorded.children(run)
    assert [attrs(s)["trio_supervisor.slot"] for s in slots] == [0, 1, 2]
    assert [attrs(s)["trio_supervisor.attempts"] for s in slots] == [1, 2, 1]
    assert {attrs(s)["trio_supervisor.status"] for s in slots} == {"ok"}
    failed, retried = recorded.children(slots[1])
    assert failed.status.status_code is StatusCode.ERROR
    assert attrs(failed)["error.type"] == "ValueError"
    assert attrs(failed)["trio_supervisor.status"] == "failed"
    assert [event.name for event in failed.events] == ["exception"]
    assert failed.events[0].attributes["exception.message"] == "once"  # type: ignore[index]
    assert attrs(retried)["trio_supervisor.attempt"] == 2
    wait_ = attrs(retried)["trio_supervisor.retry.wait"]
    assert 0 <= wait_ <= 2  # full jitter under a bound of 2 s, on virtual time
    # times are trio's: a 1 s attempt on virtual time lasts 1 s
    assert (failed.end_time or 0) - (failed.start_time or 0) == 1_000_000_000


async def test_the_attempt_is_the_current_span_while_its_worker_runs(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    from opentelemetry import trace

    seen: list[int] = []

    async def worker(n: int) -> int:
        seen.append(trace.get_current_span().get_span_context().span_id)
        await trio.lowlevel.checkpoint()
        return n

    await Supervisor(worker, max_workers=2, spans=recorded.spans).run([0, 1, 2])
    attempts = {s.context.span_id for s in recorded.named("attempt")}
    assert set(seen) == attempts
    assert len(attempts) == 3
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing stays current after it


async def test_a_callers_trace_is_still_recorded(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    trace = Trace()
    await Supervisor(wait, max_workers=1, spans=recorded.spans).run([2, 1], trace=trace)
    assert [(slot.started, slot.ended) for slot in trace.slots] == [(0.0, 2.0), (2.0, 3.0)]
    assert trace.closed == 3.0
    assert len(recorded.named("attempt")) == 2


async def test_a_stream_is_a_span_with_its_slots_under_it(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    async def feed() -> Any:
        for n in (3, 1, 2):
            yield n

    supervisor = Supervisor(wait, max_workers=2, spans=recorded.spans)
    async with supervisor.stream(feed()) as results:
        outputs = [result.output async for result in results]
    assert outputs == [3, 1, 2]
    assert recorded.shape() == [("stream wait", [("slot", [("attempt", [])])] * 3)]
    assert recorded.all_ended()


async def test_leaving_a_stream_early_ends_every_span(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(wait, max_workers=2, spans=recorded.spans)
    async with supervisor.stream([5, 1, 5, 5]) as results:
        async for _ in results:
            break
    assert recorded.all_ended()
    statuses = [attrs(s)["trio_supervisor.status"] for s in recorded.named("slot")]
    assert statuses.count("cancelled") >= 1


async def test_a_child_supervisors_run_nests_under_its_parents_slot(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    child = Supervisor(wait, max_workers=2, spans=Spans(recorded.spans.tracer))  # its own

    async def parent_worker(n: float) -> float:
        aggregate = await child.run([n, n])
        return sum(result.output or 0 for result in aggregate)

    parent = Supervisor(parent_worker, max_workers=2, spans=recorded.spans)
    aggregate = await parent.run([1, 2])
    assert [r.output for r in aggregate] == [2, 4]
    leaf: Any = ("run wait", [("slot", [("attempt", [])])] * 2)
    assert recorded.shape() == [("run parent_worker", [("slot", [("attempt", [leaf])])] * 2)]
    assert recorded.all_ended()
    (root,) = recorded.children(None)
    assert len({s.context.trace_id for s in recorded.finished}) == 1  # one trace, root first
    assert root.context.trace_id == recorded.finished[0].context.trace_id
    for attempt in recorded.children(recorded.children(root)[0]):  # times line up, virtual too
        (run,) = recorded.children(attempt)
        assert (attempt.start_time or 0) <= (run.start_time or 0)
        assert (run.end_time or 0) <= (attempt.end_time or 0)


class TwoRounds:
    """A planner that asks for [1, 2], then [3], then is done."""

    async def first(self, task: str) -> Batch[float] | Done:
        return Batch((1.0, 2.0), note="first")

    async def next(
        self, task: str, ledger: Ledger[float, float], *, fresh: bool = False
    ) -> Batch[float] | Done:
        if len(ledger.rounds) == 1:
            return Batch((3.0,), note="again")
        return Done("done")


async def test_a_replan_is_a_span_with_a_span_per_round(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(wait, max_workers=2, spans=recorded.spans)
    answer = await supervisor.replan("t", TwoRounds())
    assert answer.text == "done"
    assert recorded.shape() == [
        (
            "replan wait",
            [
                ("round", [("slot", [("attempt", [])])] * 2),
                ("round", [("slot", [("attempt", [])])]),
            ],
        )
    ]
    assert recorded.all_ended()
    rounds = recorded.named("round")
    assert [attrs(r)["trio_supervisor.round"] for r in rounds] == [1, 2]
    slots = recorded.named("slot")
    assert sorted(attrs(s)["trio_supervisor.slot"] for s in slots) == [0, 1, 2]  # the ledger's


# -- errors, timeouts, cancellation, crashes --------------------------------------------------


async def test_a_timed_out_attempt_ends_in_error_with_error_type_timeout(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(wait, max_workers=2, timeout=1, spans=recorded.spans)
    aggregate = await supervisor.run([5, 0.5])
    assert [r.status for r in aggregate] == [Status.TIMED_OUT, Status.OK]
    slot, _ = sorted(recorded.named("slot"), key=lambda s: attrs(s)["trio_supervisor.slot"])
    assert attrs(slot)["error.type"] == "timeout"
    assert slot.status.status_code is StatusCode.ERROR
    (attempt,) = recorded.children(slot)
    assert attrs(attempt)["error.type"] == "timeout"
    assert attrs(attempt)["trio_supervisor.status"] == "timed_out"
    assert attempt.status.status_code is StatusCode.ERROR
    assert recorded.all_ended()


async def test_a_deadline_ends_every_span_and_marks_the_run_cut_short(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(wait, max_workers=1, spans=recorded.spans)
    aggregate = await supervisor.run([1, 5, 5], deadline=2)
    assert [r.status for r in aggregate] == [Status.OK, Status.CANCELLED, Status.CANCELLED]
    assert recorded.all_ended()
    slots = sorted(recorded.named("slot"), key=lambda s: attrs(s)["trio_supervisor.slot"])
    assert [attrs(s)["trio_supervisor.status"] for s in slots] == [
        "ok",
        "cancelled",
        "never_started",
    ]
    assert all(s.status.status_code is StatusCode.ERROR for s in slots[1:])
    (cut,) = recorded.children(slots[1])
    assert attrs(cut)["error.type"] == "cancelled"
    assert cut.status.status_code is StatusCode.ERROR
    (run,) = recorded.named("run wait")
    assert run.status.status_code is StatusCode.ERROR


async def test_a_run_cancelled_from_outside_ends_every_span_in_error(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(
        wait,
        max_workers=2,
        retry=Retry(attempts=3, backoff=Backoff(initial=10, maximum=10)),
        spans=recorded.spans,
    )
    with trio.move_on_after(2):
        await supervisor.run([1, 5, 5, 5])
    assert recorded.all_ended()
    attempts = recorded.named("attempt")
    cut = [a for a in attempts if attrs(a)["trio_supervisor.status"] == "cancelled"]
    assert len(cut) == 2
    assert all(a.status.status_code is StatusCode.ERROR for a in cut)
    assert recorded.named("run wait")[0].status.status_code is StatusCode.ERROR


async def test_a_failed_slot_that_retries_while_the_run_is_cut_ends_cancelled(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    async def fail(n: int) -> int:
        await trio.sleep(1)
        raise KeyError(n)

    supervisor = Supervisor(
        fail,
        max_workers=1,
        retry=Retry(attempts=3, backoff=Backoff(initial=10, maximum=10), seed=3),
        spans=recorded.spans,
    )
    aggregate = await supervisor.run([1], deadline=1.5)
    assert aggregate[0].status is Status.CANCELLED
    assert recorded.all_ended()
    (slot,) = recorded.named("slot")
    assert attrs(slot)["trio_supervisor.status"] == "cancelled"
    (attempt,) = recorded.named("attempt")
    assert attrs(attempt)["error.type"] == "KeyError"  # a builtin's name, bare


async def test_a_restarted_slot_gets_a_new_span_marked_restart(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    calls: dict[str, int] = {}

    async def worker(subtask: str) -> str:
        calls[subtask] = calls.get(subtask, 0) + 1
        await trio.sleep(0.01 if subtask == "a" else 0.05)
        if subtask == "b" and calls[subtask] == 1:
            raise ValueError("b failed once")
        return subtask

    restarts = Restarts(max_restarts=3, within=60, strategy="one_for_all")
    supervisor = Supervisor(
        worker, max_workers=2, retry=Retry(attempts=2), restarts=restarts, spans=recorded.spans
    )
    aggregate = await supervisor.run(["a", "b"])
    assert [result.output for result in aggregate] == ["a", "b"]
    assert recorded.all_ended()
    restarted: list[ReadableSpan] = [
        s for s in recorded.named("slot") if "trio_supervisor.restart" in attrs(s)
    ]
    assert restarted, [attrs(s) for s in recorded.named("slot")]
    assert all(attrs(s)["trio_supervisor.restart"] >= 1 for s in restarted)


# -- chat spans, following the GenAI conventions ----------------------------------------------


def completion(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(
        200,
        json={
            "id": "c1",
            "object": "chat.completion",
            "model": "m-2024",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "answer"},
                }
            ],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        },
    )


def agent(handler: Any) -> ChatAgent:
    return ChatAgent(
        "m",
        base_url="http://devserver:8080/v1",
        api_key=KEY,
        transport=httpx2.MockTransport(handler),
    )


async def test_a_chat_agents_request_is_a_chat_span_under_its_attempt(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    async with agent(completion) as worker:
        aggregate = await Supervisor(worker, max_workers=2, spans=recorded.spans).run(["a"])
    assert aggregate[0].output == "answer"
    assert recorded.shape() == [("run ChatAgent", [("slot", [("attempt", [("chat m", [])])])])]
    (chat,) = recorded.named("chat m")
    assert attrs(chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "m",
        "gen_ai.response.model": "m-2024",
        "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 3,
        "gen_ai.response.finish_reasons": ("stop",),
        "server.address": "devserver",
        "server.port": 8080,
    }
    assert chat.kind.name == "CLIENT"
    assert SEMCONV_VERSION.startswith("1.")
    assert recorded.all_ended()


async def test_a_failed_request_is_an_error_span_and_the_key_is_in_no_attribute(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        if "retry" in request.content.decode():
            return httpx2.Response(
                429, headers={"retry-after": "1"}, json={"error": {"message": f"slow {KEY}"}}
            )
        return httpx2.Response(401, json={"error": {"message": f"bad key {KEY}"}})

    async with agent(refuse) as worker:
        supervisor = Supervisor(
            worker, max_workers=2, retry=Retry(attempts=2, on=TRANSIENT), spans=recorded.spans
        )
        aggregate = await supervisor.run(["retry", "no"])
    assert not any(result.ok for result in aggregate)
    chats = recorded.named("chat m")
    assert len(chats) == 3  # the 429 twice, the 401 once
    kinds = sorted(attrs(c)["error.type"] for c in chats)
    assert kinds == [
        "trio_supervisor.agents.PermanentError",
        "trio_supervisor.agents.RateLimited",
        "trio_supervisor.agents.RateLimited",
    ]
    assert all(c.status.status_code is StatusCode.ERROR for c in chats)
    retried = [a for a in recorded.named("attempt") if "trio_supervisor.retry.after" in attrs(a)]
    assert {attrs(a)["trio_supervisor.retry.after"] for a in retried} == {1.0}
    everything = json.dumps(
        [
            [attrs(s), [dict(e.attributes or {}) for e in s.events], s.status.description, s.name]
            for s in recorded.finished
        ],
        default=str,
    )
    assert KEY not in everything
    assert "check the API key" in everything  # the failures are there, without the key
    assert recorded.all_ended()


async def test_a_request_cut_short_in_process_is_cancelled_not_a_group(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    """An in-process transport (the loopback server's) lets a timeout's ``Cancelled`` out as a
    group of only ``Cancelled``: the request was cut short, as any other."""
    server = httpx2.ASGITransport(app=devserver.app(latency=(5, 5)))
    async with ChatAgent("m", base_url="http://x/v1", api_key=KEY, transport=server) as worker:
        aggregate = await Supervisor(worker, max_workers=1, timeout=1, spans=recorded.spans).run(
            ["a"]
        )
    assert aggregate[0].status is Status.TIMED_OUT
    (chat,) = recorded.named("chat m")
    assert attrs(chat)["error.type"] == "cancelled"
    assert recorded.all_ended()


def test_error_type_of_a_cancellation() -> None:
    caught: list[BaseException] = []

    async def main() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()
            try:
                await trio.lowlevel.checkpoint()
            except trio.Cancelled as cancelled:
                caught.append(cancelled)
                raise

    trio.run(main)
    (cancelled,) = caught
    only = BaseExceptionGroup("cut", [cancelled, BaseExceptionGroup("in", [cancelled])])
    assert error_type(cancelled) == "cancelled"
    assert error_type(only) == "cancelled"
    mixed = BaseExceptionGroup("mixed", [cancelled, KeyError(1)])
    assert error_type(mixed) == "BaseExceptionGroup"


# -- off costs nothing; the core imports no tracing ------------------------------------------


def test_the_core_imports_no_opentelemetry() -> None:
    probe = (
        "import sys, trio_supervisor, trio_supervisor.agents; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


async def test_without_spans_no_span_is_created(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(wait, max_workers=2)
    assert supervisor.spans is None
    await supervisor.run([1, 2])
    assert recorded.started == 0


def test_spans_must_be_a_spans_or_none() -> None:
    with pytest.raises(TypeError, match=r"spans must be a trio_supervisor\.otel\.Spans"):
        Supervisor(wait, max_workers=1, spans=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tracer must be an opentelemetry Tracer"):
        Spans(object())  # type: ignore[arg-type]
    assert "spans=Spans(" in repr(Supervisor(wait, max_workers=1, spans=Spans()))


def test_spans_given_as_the_class_is_refused_naming_the_fix() -> None:
    with pytest.raises(
        TypeError, match=r"^spans must be a Spans instance, not the class: give spans=Spans\(\)"
    ):
        Supervisor(wait, max_workers=1, spans=Spans)  # type: ignore[arg-type]


# -- journaled, hedged and budgeted slots -------------------------------------------------------


async def test_a_resumed_run_marks_the_slots_it_took_from_the_journal(
    autojump_clock: trio.testing.MockClock, recorded: Recorded, tmp_path: Path
) -> None:
    calls: list[int] = []

    async def once_failing(n: int) -> int:
        calls.append(n)
        await trio.sleep(1)
        if n == 2 and calls.count(2) == 1:
            raise ValueError("first time")
        return n

    supervisor = Supervisor(once_failing, max_workers=2, spans=recorded.spans)
    with Journal(tmp_path / "runs.db") as journal:
        await supervisor.run([1, 2], durable=Durable("r", journal))
        recorded.exporter.clear()
        aggregate = await supervisor.run([1, 2], durable=Durable("r", journal))
    assert [result.output for result in aggregate] == [1, 2]
    slots = sorted(recorded.named("slot"), key=lambda s: attrs(s)[SLOT_KEY])
    assert [attrs(s).get("trio_supervisor.journaled", False) for s in slots] == [True, False]
    assert [attrs(s)["trio_supervisor.attempts"] for s in slots] == [0, 1]
    assert len(recorded.named("attempt")) == 1  # only slot 1 ran again


async def test_an_attempt_started_while_another_of_its_slot_runs_is_a_hedge(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    supervisor = Supervisor(wait, max_workers=1)
    trace = recorded.spans.run(None, ["q"], supervisor)  # as a hedging engine would tell it
    trace.begin(["q"])
    trace.admitted(0, "q")
    trace.started(0, "q")
    await trio.sleep(1)
    trace.started(0, "q", hedge=True)  # the hedge, as the engine says it is one
    await trio.sleep(1)
    trace.ended(0, Status.OK)
    trace.end_open()
    trace.close()
    assert recorded.all_ended()
    first, hedge = sorted(recorded.named("attempt"), key=lambda s: s.start_time or 0)
    assert "trio_supervisor.hedge" not in attrs(first)
    assert attrs(hedge)["trio_supervisor.hedge"] is True
    (slot,) = recorded.named("slot")
    assert attrs(slot)["trio_supervisor.hedges"] == 1
    assert attrs(slot)["trio_supervisor.status"] == "ok"


class Budget:
    """A meter that counts what it let through against a limit, as a budget would."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.spent = 0

    async def acquire(self) -> None:
        self.spent += 1

    def release(self) -> None:
        pass


async def test_a_run_with_a_budget_meter_says_what_it_spent(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    budget = Budget(limit=10)
    supervisor = Supervisor(wait, max_workers=2, meters=[budget], spans=recorded.spans)
    await supervisor.run([1, 2, 3])
    (run,) = recorded.named("run wait")
    assert attrs(run)["trio_supervisor.budget.spent"] == 3
    assert attrs(run)["trio_supervisor.budget.limit"] == 10


async def test_a_run_with_a_real_budget_says_what_it_spent_per_limited_dimension(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    async def work(n: int) -> int:
        await trio.sleep(n)
        report_usage(input_tokens=2, output_tokens=n, cost=0.25)
        return n

    budget = RealBudget(calls=10, tokens=100, reserve=lambda n: Usage(output_tokens=10))
    supervisor = Supervisor(work, max_workers=2, meters=[budget], spans=recorded.spans)
    await supervisor.run([1, 2, 3])
    (run,) = recorded.named("run work")
    said = {k: v for k, v in attrs(run).items() if k.startswith("trio_supervisor.budget.")}
    assert said == {
        "trio_supervisor.budget.calls.spent": 3,
        "trio_supervisor.budget.calls.limit": 10,
        "trio_supervisor.budget.tokens.spent": 12,
        "trio_supervisor.budget.tokens.limit": 100,
    }  # cost is not bounded: not said
    assert budget.spent == Usage(calls=3, input_tokens=6, output_tokens=6, cost=0.75)


async def test_an_over_budget_slot_has_no_attempt_span(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    """Its worker was never called: its slot span says so, with the SubResult's count."""
    budget = RealBudget(calls=1, name="calls")
    supervisor = Supervisor(wait, max_workers=1, meters=[budget], spans=recorded.spans)
    aggregate = await supervisor.run([1, 2])
    assert [r.status for r in aggregate] == [Status.OK, Status.OVER_BUDGET]
    assert [r.attempts for r in aggregate] == [1, 0]
    slots = sorted(recorded.named("slot"), key=lambda s: attrs(s)[SLOT_KEY])
    assert [len(recorded.children(s)) for s in slots] == [1, 0]
    assert [attrs(s)["trio_supervisor.attempts"] for s in slots] == [1, 0]
    assert attrs(slots[1])["trio_supervisor.status"] == "over_budget"
    assert attrs(slots[1])["error.type"].endswith("OverBudget")
    assert slots[1].status.status_code is StatusCode.ERROR
    assert "budget 'calls' is spent" in (slots[1].status.description or "")
    assert len(recorded.named("attempt")) == 1
    assert recorded.all_ended()


async def test_every_slot_span_carries_its_subtask_when_asked_the_never_started_too(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A slot span's subtask is the trace's: a slot the deadline cut before it started has its
    subtask too (the recorder used to keep a subtask only from an attempt's event)."""
    recorded = Recorded()
    spans = Spans(recorded.provider.get_tracer("test"), record_subtasks=True)
    aggregate = await Supervisor(wait, max_workers=1, spans=spans).run([1, 5, 7], deadline=2)
    assert [r.status for r in aggregate] == [Status.OK, Status.CANCELLED, Status.CANCELLED]
    slots = sorted(recorded.named("slot"), key=lambda s: attrs(s)[SLOT_KEY])
    said = [
        (attrs(s)["trio_supervisor.status"], attrs(s).get("trio_supervisor.subtask")) for s in slots
    ]
    assert said == [("ok", "1"), ("cancelled", "5"), ("never_started", "7")]
    recorded.provider.shutdown()


async def test_the_spans_are_a_listener_of_the_callers_trace(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    """The run records into the caller's own trace, the one record of it: the recorder listens
    to it (it keeps no trace of its own), and each attempt span ends when the trace's does."""
    trace = Trace()
    await Supervisor(wait, max_workers=2, spans=recorded.spans).run([1, 2], trace=trace)
    assert len(trace.listeners) == 1
    (run,) = recorded.named("run wait")
    assert run.start_time is not None
    ends = sorted(
        (attrs(s)[SLOT_KEY], ((s.end_time or 0) - run.start_time) / 1e9)
        for s in recorded.named("attempt")
    )
    assert ends == [(slot.slot, slot.ended) for slot in trace.slots]


async def test_a_hedged_race_cut_by_the_deadline_ends_every_attempt_span_cancelled(
    autojump_clock: trio.testing.MockClock, recorded: Recorded
) -> None:
    """Every open attempt of a hedged slot ends as the trace ends it, not the last one only."""

    async def slow(n: int) -> int:
        await trio.sleep(10)
        return n

    hedge = Hedge(after=1.0, max_extra=2, throttle=1.0)
    supervisor = Supervisor(slow, max_workers=4, hedge=hedge, spans=recorded.spans)
    trace = Trace()
    await supervisor.run([0], trace=trace, deadline=5)
    assert recorded.all_ended()
    attempts = recorded.named("attempt")
    assert len(attempts) == len(trace.slots[0].spans) == 3
    assert [attrs(s)["trio_supervisor.status"] for s in attempts] == ["cancelled"] * 3
    (run,) = recorded.named("run slow")
    assert run.start_time is not None
    assert sorted(((s.end_time or 0) - run.start_time) / 1e9 for s in attempts) == [5.0] * 3
