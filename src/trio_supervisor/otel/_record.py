"""The span recorder: a listener of a run's [`Trace`][trio_supervisor.Trace] that turns its
events into spans.

The engine tells a run's trace when each slot is admitted and each attempt starts and ends, on
its one attempt path; the trace tells its listeners of each event once it has recorded it. The
recorder here is such a listener: spans come from the very events a timeline is drawn from,
their times and attributes read from the trace's record (the recorder keeps only the spans it
has open), and a supervisor without ``spans=`` pays nothing for them. The run records into the
caller's own trace, or, without one, into a new trace that only the recorder reads.

Times are trio's clock, laid onto the wall clock once per trio run, so the spans of a run on
``trio.testing.MockClock`` have the run's virtual durations.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer
except ImportError as error:  # pragma: no cover - exercised by a test that hides the API
    raise ImportError(
        "trio_supervisor.otel needs the 'otel' extra (opentelemetry-api is missing): "
        "pip install 'trio-supervisor[otel]'"
    ) from error

import trio

from .. import __version__
from .._budget import Budget
from .._contract import Status, describe
from .._spans import chat_spans
from .._trace import Listener, Trace, deciding
from .._trace import Span as TraceSpan

SEMCONV_VERSION = "1.37.0"
"""The version of OpenTelemetry's semantic conventions the spans follow (the GenAI ones for
``chat`` spans, ``error.type`` and the exception event for failures)."""

# this library's own attributes
SLOT = "trio_supervisor.slot"  # the slot's place in the run (in a re-planning run, the ledger's)
ATTEMPT = "trio_supervisor.attempt"  # 1 for a slot's first attempt
ATTEMPTS = "trio_supervisor.attempts"  # on a slot: how many attempts it made
STATUS = "trio_supervisor.status"  # a Status name, lower case: ok, failed, timed_out, ...
RETRY_WAIT = "trio_supervisor.retry.wait"  # seconds between the attempt before and this one
RETRY_AFTER = "trio_supervisor.retry.after"  # the wait the failure asked for (Retry-After)
RESTART = "trio_supervisor.restart"  # how many times the slot was restarted after it ended
JOURNALED = "trio_supervisor.journaled"  # the result came from a journal: not run again
HEDGE = "trio_supervisor.hedge"  # an attempt started while another of its slot still ran
HEDGES = "trio_supervisor.hedges"  # on a slot: how many such attempts it made
HEDGE_LOST = "trio_supervisor.hedge.lost"  # cancelled: another attempt of its slot won first
BUDGET = "trio_supervisor.budget"  # on a run: .calls.spent, .calls.limit, ... of its Budgets
ROUND = "trio_supervisor.round"  # on a round: the n-th batch a re-planning run dispatched
KIND = "trio_supervisor.kind"  # run, stream, replan or round
WORKER = "trio_supervisor.worker"
MAX_WORKERS = "trio_supervisor.max_workers"
SLOTS = "trio_supervisor.slots"  # on a run: how many slots it has; .ok, .failed, ... by status
SUBTASK = "trio_supervisor.subtask"  # only with Spans(record_subtasks=True)
ERROR_TYPE = "error.type"

NEVER_STARTED = "never_started"
NOTHING: Any = object()


def error_type(failure: BaseException) -> str:
    """An exception's ``error.type``: its class's qualified name (without ``builtins.``), as a
    failed attempt's span records it; ``cancelled`` for a ``trio.Cancelled``, or a group of
    nothing but (an in-process transport's task group, cut short, raises one).

    ```pycon
    >>> error_type(KeyError("pricing"))
    'KeyError'
    >>> error_type(RateLimited("429", retry_after=2.0))
    'trio_supervisor.agents.RateLimited'

    ```
    """
    if isinstance(failure, trio.Cancelled) or (
        isinstance(failure, BaseExceptionGroup) and failure.split(trio.Cancelled)[1] is None
    ):
        return "cancelled"
    cls = type(failure)
    module = cls.__module__
    name = cls.__qualname__
    return name if module in ("builtins", "__main__") else f"{module}.{name}"


class _Clock:
    """Trio's clock in wall-clock nanoseconds, anchored once per trio run (per clock)."""

    __slots__ = ("clock", "offset")

    def __init__(self) -> None:
        self.clock: Any = None
        self.offset = 0

    def ns(self) -> int:
        clock = trio.lowlevel.current_clock()
        if clock is not self.clock:
            self.clock = clock
            self.offset = time.time_ns() - int(clock.current_time() * 1e9)
        return self.offset + int(clock.current_time() * 1e9)

    def at(self, time: float) -> int:
        """A time of the current trio run's clock (a trace's) in wall-clock nanoseconds."""
        self.ns()  # anchored on this run's clock
        return self.offset + int(time * 1e9)


CLOCK = _Clock()
"""One anchor for every recorder: the spans of a child supervisor's run (its own ``Spans``, say)
line up with its parent's on virtual time too."""


class Spans:
    """Emits OpenTelemetry spans of every run of the supervisors it is given to.

    ```pycon
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> provider, exported = TracerProvider(), InMemorySpanExporter()
    >>> provider.add_span_processor(SimpleSpanProcessor(exported))  # an OTLP exporter, in an app
    >>> spans = Spans(provider.get_tracer("app"))
    >>> run = Supervisor(SimulatedAgent(0), max_workers=2, spans=spans).run
    >>> aggregate = trio.run(run, ["a"], clock=trio.testing.MockClock(autojump_threshold=0))
    >>> [span.name for span in exported.get_finished_spans()]
    ['attempt', 'slot', 'run SimulatedAgent']

    ```

    An application gives its provider a ``BatchSpanProcessor(OTLPSpanExporter())`` instead, to
    send the spans to a collector.

    The spans of one run: ``run {worker}`` (``stream {worker}``, ``replan {worker}``) under the
    span current when the run starts; ``slot`` for each slot under it (in a re-planning run,
    under its ``round``); ``attempt`` for each call of the worker under its slot, current while
    the worker runs; ``chat {model}`` for each request of a ``ChatAgent``, under its attempt.
    A slot ends with its final attempt (a slot that failed, when the run ends or its result is
    handed over); every span a run opened is ended when it returns or raises.

    Attributes (``trio_supervisor.*``): ``slot``, ``attempt``, ``attempts``, ``status`` (a
    [`Status`][trio_supervisor.Status]'s name, lower case: ``ok``, ``timed_out``, ...; a slot
    that never started is ``never_started``), ``retry.wait`` (seconds since the attempt
    before), ``retry.after`` (the wait a failure asked for), ``restart``, ``journaled``,
    ``hedge``, ``hedges``, ``hedge.lost``, ``budget.calls.spent`` and ``budget.calls.limit``
    (and ``.tokens``, ``.cost``: on a run, for each dimension a
    [`Budget`][trio_supervisor.Budget] among its meters bounds, the budget's total as the run
    ends; a meter of one's own with numbers ``spent`` and ``limit`` gives ``budget.spent`` and
    ``budget.limit``), ``round``; and
    the conventions' ``error.type``, ``gen_ai.operation.name``, ``gen_ai.provider.name``,
    ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.input_tokens``,
    ``gen_ai.usage.output_tokens``, ``gen_ai.response.finish_reasons``, ``server.address``,
    ``server.port``. No span holds a request's content, nor the API key; subtasks are recorded
    (as ``trio_supervisor.subtask``, their ``repr``, cut at 200 characters) only when asked for.

    Args:
      tracer: the tracer to start spans with; None takes one from the global tracer provider
        (``opentelemetry.trace.get_tracer``), which follows a provider set later.
      record_subtasks: whether slot spans carry their subtask.
    """

    __slots__ = ("record_subtasks", "tracer")

    def __init__(self, tracer: Tracer | None = None, *, record_subtasks: bool = False) -> None:
        if tracer is None:
            tracer = otel_trace.get_tracer("trio_supervisor", __version__)
        if not callable(getattr(tracer, "start_span", None)):
            raise TypeError(
                "tracer must be an opentelemetry Tracer (provider.get_tracer(name)) or None, "
                f"got {type(tracer).__name__}"
            )
        self.tracer = tracer
        self.record_subtasks = bool(record_subtasks)

    def __repr__(self) -> str:
        return f"Spans(tracer={type(self.tracer).__name__})"

    def run(self, trace: Trace | None, plan: Sequence[Any], supervisor: Any) -> Trace:
        """The trace a run of ``plan`` records into (the caller's, or a new one), its spans
        emitted by a recorder listening to it; a round of a re-planning run is listened to
        already, and recorded as it is."""
        if trace is not None and any(
            isinstance(listener, Recorder) and listener.spans is self
            for listener in trace.listeners
        ):
            return trace
        return Recorder(self, trace, "run", supervisor).trace

    def stream(self, trace: Trace | None, planned: Sequence[Any] | None, supervisor: Any) -> Trace:
        """The trace a stream records into, listened to as ``run``'s is."""
        return Recorder(self, trace, "stream", supervisor).trace

    def replan(self, trace: Trace | None, task: str, supervisor: Any) -> Trace:
        """The trace a re-planning run records into; its span is open from now on, and each
        round (a ``part()`` of the trace) is a span under it."""
        recorder = Recorder(self, trace, "replan", supervisor)
        recorder.open()
        return recorder.trace

    @contextmanager
    def chat(self, model: str, base_url: str) -> Iterator[ChatRequest]:
        """A ``chat {model}`` span (kind ``CLIENT``) for one request, current in the block."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",  # the OpenAI-compatible API
            "gen_ai.request.model": model,
        }
        try:
            url = urlsplit(base_url)  # its host and port only: never a userinfo part
            if url.hostname:
                attributes["server.address"] = url.hostname
                port = url.port or {"http": 80, "https": 443}.get(url.scheme)
                if port is not None:
                    attributes["server.port"] = port
        except ValueError:
            pass
        span = self.tracer.start_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes, start_time=self.ns()
        )
        token = otel_context.attach(otel_trace.set_span_in_context(span))
        try:
            yield ChatRequest(span)
        except BaseException as exc:
            span.set_attribute(ERROR_TYPE, error_type(exc))
            if isinstance(exc, Exception):
                span.record_exception(exc)
            span.set_status(StatusCode.ERROR, describe(exc))
            raise
        finally:
            otel_context.detach(token)
            span.end(end_time=self.ns())

    def ns(self) -> int:
        """Now, on the current trio run's clock, in wall-clock nanoseconds."""
        return CLOCK.ns()


class ChatRequest:
    """A ``chat`` span's request: what its reply says is recorded on the span."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span

    def reply(self, body: str) -> None:
        """Record the usage, finish reasons and model of a chat completion's JSON ``body``."""
        try:
            data = json.loads(body)
        except ValueError:
            return
        if not isinstance(data, dict):
            return
        attributes: dict[str, Any] = {}
        usage = data.get("usage")
        if isinstance(usage, dict):
            for name, key in (
                ("input_tokens", "prompt_tokens"),
                ("output_tokens", "completion_tokens"),
            ):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    attributes[f"gen_ai.usage.{name}"] = value
        choices = data.get("choices")
        if isinstance(choices, list):
            reasons = [
                choice["finish_reason"]
                for choice in choices
                if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
            ]
            if reasons:
                attributes["gen_ai.response.finish_reasons"] = reasons
        if isinstance(data.get("model"), str):
            attributes["gen_ai.response.model"] = data["model"]
        self.span.set_attributes(attributes)


class _Slot:
    """What the recorder holds of one slot while its span is open: the span, its context, and
    its attempts' open spans. How the slot went (its attempts, when and how each ended) is the
    trace's record: the slot span's attempts are the trace slot's spans from ``first`` on."""

    __slots__ = ("context", "done", "failed", "first", "open", "restarts", "slot", "span")

    def __init__(self, slot: int, span: Span, context: Context, restarts: int, first: int) -> None:
        self.slot = slot
        self.span = span
        self.context = context
        self.restarts = restarts
        self.first = first
        # the attempts running: the trace's span, its attempt span, context token and task
        self.open: list[tuple[TraceSpan, Span, object, trio.lowlevel.Task]] = []
        # the latest failed attempt and what it raised (the trace keeps its text only)
        self.failed: tuple[TraceSpan, BaseException] | None = None
        self.done = False


def _worker_name(supervisor: Any) -> str:
    worker = getattr(supervisor, "worker", None)
    name = getattr(worker, "__name__", None)
    return name if isinstance(name, str) else type(worker).__name__


class Recorder(Listener):
    """Emits the spans of one run (or stream, re-planning run, round) as a listener of its
    trace (the caller's, or a new one when None): each event the trace records becomes a span's
    start or end, its times and attributes read from the trace's own record of the slot."""

    def __init__(
        self,
        spans: Spans,
        trace: Trace | None,
        kind: str,
        supervisor: Any,
        whole: Recorder | None = None,
    ) -> None:
        self.spans = spans
        self.trace = Trace() if trace is None else trace
        self._tracer = spans.tracer
        self._kind = kind
        self._supervisor = supervisor
        self._whole = whole
        self._span: Span | None = None
        self._context: Context | None = None
        self._token: Any = None
        self._chat_token: Any = None
        self._task: trio.lowlevel.Task | None = None
        # invariant: _slots holds the slots whose span is open; _done, slot -> its restarts,
        # those whose span ended (a slot that runs again is restarted), until handed over
        self._slots: dict[int, _Slot] = {}
        self._done: dict[int, int] = {}
        self._rounds: list[Recorder] = []
        self._counts: dict[str, int] = {}
        self._closed = False
        self.trace.listen(self)

    # -- the run's own span ---------------------------------------------------------------

    def open(self, attach: bool = True) -> None:
        """Start the run's span (once), and make it current in this task while the run goes on
        (the workers' tasks, started from here, have it too)."""
        if self._span is not None:
            return
        if self._whole is not None:
            parent = self._whole._context
            name = "round"
            attributes: dict[str, Any] = {KIND: "round", ROUND: len(self._whole._rounds)}
        else:
            parent = otel_context.get_current()
            name = f"{self._kind} {_worker_name(self._supervisor)}"
            attributes = {KIND: self._kind, WORKER: _worker_name(self._supervisor)}
            workers = getattr(self._supervisor, "max_workers", None)
            if isinstance(workers, int):
                attributes[MAX_WORKERS] = workers
        span = self._tracer.start_span(
            name, context=parent, attributes=attributes, start_time=self.spans.ns()
        )
        self._span = span
        self._context = otel_trace.set_span_in_context(span, parent)
        if attach:
            self._task = trio.lowlevel.current_task()
            self._token = otel_context.attach(self._context)
            if self._whole is None:
                self._chat_token = chat_spans.set(self.spans)

    def on_begin(self) -> None:
        self.open()

    def on_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for part in self._rounds:  # a round taken from a journal is never run, nor closed
            part.on_close()
        self.open(attach=False)  # a run that recorded nothing still has its span
        now = self.spans.ns()
        for record in list(self._slots.values()):
            while record.open:  # the trace ended them as the run did: none is left, normally
                self._end_attempt(record.open.pop(), Status.CANCELLED, None, now)
            self._end_slot(record, self._last_end(record, now), *self._outcome(record))
        if self._kind != "replan":  # a re-planning run's slots are its rounds'
            recorded = self.trace.slots
            for slot, planned in enumerate(recorded):  # never started: cut short before it could
                if slot not in self._done and slot not in self._slots and planned.delivered is None:
                    self._end_slot(self._new_slot(slot, now), now, None, None)
        span = self._span
        assert span is not None
        attributes: dict[str, Any] = {SLOTS: sum(self._counts.values())}
        for status, count in self._counts.items():
            attributes[f"{SLOTS}.{status}"] = count
        attributes.update(self._budget())
        span.set_attributes(attributes)
        cut = self._counts.get("cancelled", 0) + self._counts.get(NEVER_STARTED, 0)
        if cut:
            span.set_attribute(ERROR_TYPE, "cancelled")
            span.set_status(StatusCode.ERROR, f"{cut} slots were cut short")
        span.end(end_time=now)
        if self._token is not None and self._task is trio.lowlevel.current_task():
            otel_context.detach(self._token)
            if self._chat_token is not None:
                chat_spans.reset(self._chat_token)
        self._token = self._chat_token = None

    def _budget(self) -> dict[str, Any]:
        """What the supervisor's budgets say was spent: for each dimension a
        [`Budget`][trio_supervisor.Budget] bounds (the first that bounds it), its total and
        its limit; else a meter's own ``spent`` and ``limit``, when they are numbers."""
        found: dict[str, Any] = {}
        if self._whole is not None:
            return found
        meters = getattr(self._supervisor, "meters", ())
        for meter in meters:
            if isinstance(meter, Budget):
                total = meter.spent
                for dimension, limit, used in (
                    ("calls", meter.calls, total.calls),
                    ("tokens", meter.tokens, total.tokens),
                    ("cost", meter.cost, total.cost),
                ):
                    if limit is not None and f"{BUDGET}.{dimension}.spent" not in found:
                        found[f"{BUDGET}.{dimension}.spent"] = used
                        found[f"{BUDGET}.{dimension}.limit"] = limit
        if found:
            return found
        for meter in meters:  # a meter of its own that counts against a limit
            spent = getattr(meter, "spent", None)
            if _is_number(spent):
                found[f"{BUDGET}.spent"] = spent
                limit = getattr(meter, "limit", None)
                if _is_number(limit):
                    found[f"{BUDGET}.limit"] = limit
                break
        return found

    def on_part(self, part: Trace) -> None:
        """A round of a re-planning run: a span under the run's, its slots under it."""
        self.open()
        if self._rounds:
            self._rounds[-1].on_close()  # the round before ended when the next one began
        self._rounds.append(Recorder(self.spans, part, "round", self._supervisor, whole=self))

    # -- slots and attempts ---------------------------------------------------------------

    def _new_slot(self, slot: int, now: int, restarts: int = 0, first: int = 0) -> _Slot:
        """A new span for slot ``slot``, under the run's; its attempts are the trace slot's
        spans from ``first`` on."""
        if self._span is None:
            self.open(attach=False)
        recorded = self.trace.slots[slot]
        attributes: dict[str, Any] = {SLOT: recorded.slot}  # a round's: numbered in the whole
        if restarts:
            attributes[RESTART] = restarts
        if self.spans.record_subtasks and recorded.subtask is not None:
            attributes[SUBTASK] = repr(recorded.subtask)[:200]
        span = self._tracer.start_span(
            "slot", context=self._context, attributes=attributes, start_time=now
        )
        context = otel_trace.set_span_in_context(span, self._context)
        record = _Slot(slot, span, context, restarts, first)
        self._slots[slot] = record
        return record

    def _attempts(self, record: _Slot) -> list[TraceSpan]:
        """The attempts of ``record``'s slot span, as the trace recorded them (an over-budget
        mark is none: its worker was not called)."""
        spans = self.trace.slots[record.slot].spans[record.first :]
        return [span for span in spans if span.status is not Status.OVER_BUDGET]

    def _last_end(self, record: _Slot, default: int) -> int:
        """When the latest attempt of ``record`` ended (``default`` if none has)."""
        spans = self.trace.slots[record.slot].spans[record.first :]
        ends = [span.end for span in spans if span.end is not None]
        return CLOCK.at(max(ends)) if ends else default

    def _outcome(self, record: _Slot) -> tuple[Status | None, BaseException | None]:
        """How ``record``'s slot ended, as its trace says (see ``SlotTrace.deciding``), and
        what the deciding attempt raised."""
        last = deciding(self.trace.slots[record.slot].spans[record.first :])
        if last is None:
            return None, None
        failed = record.failed
        return last.status, failed[1] if failed is not None and failed[0] is last else None

    def _end_slot(
        self, record: _Slot, end: int, status: Status | None, failure: BaseException | None
    ) -> None:
        """End ``record``'s span with ``status``."""
        if record.done:
            return
        record.done = True
        self._forget(record)
        name = NEVER_STARTED if status is None else status.name.lower()
        self._counts[name] = self._counts.get(name, 0) + 1
        span = record.span
        attempts = self._attempts(record)
        attributes: dict[str, Any] = {STATUS: name, ATTEMPTS: len(attempts)}
        hedges = sum(attempt.hedge for attempt in attempts)
        if hedges:
            attributes[HEDGES] = hedges
        if status is not Status.OK and status is not Status.AWAITING_APPROVAL:
            attributes[ERROR_TYPE] = _kind(status, failure)
            span.set_status(StatusCode.ERROR, _said(status, failure))
        span.set_attributes(attributes)
        span.end(end_time=end)

    def _forget(self, record: _Slot) -> None:
        """Let a slot whose span ended go, once no attempt of it runs (a hedge may): only its
        restarts are kept, so a run holds no span it ended."""
        if record.open or self._slots.get(record.slot) is not record:
            return
        del self._slots[record.slot]
        self._done[record.slot] = record.restarts

    def _running(self, slot: int, now: int, started: int = 0) -> _Slot:
        """Slot ``slot``'s record, for an attempt of it (``started``: 1 when the trace has its
        span already): a new one when it is new, or ended and runs again (restarted for a
        sibling, or ended while a hedge of it ran on)."""
        record = self._slots.get(slot)
        if record is not None and not record.done:
            return record
        restarts = self._done.pop(slot, -1) + 1 if record is None else record.restarts + 1
        first = len(self.trace.slots[slot].spans) - started
        return self._new_slot(slot, now, restarts, first)

    def on_admitted(self, slot: int) -> None:
        self._running(slot, self.spans.ns())  # new, or admitted again: restarted

    def on_started(self, slot: int, span: TraceSpan) -> None:
        now = CLOCK.at(span.start)
        record = self._running(slot, now, started=1)
        recorded = self.trace.slots[slot]
        attempts = recorded.spans[record.first :]
        attributes: dict[str, Any] = {SLOT: recorded.slot, ATTEMPT: len(attempts)}
        if span.hedge:  # as the engine says: a retry that starts while a span is open is none
            attributes[HEDGE] = True
        else:
            ends = [attempt.end for attempt in attempts if attempt.end is not None]
            if ends:
                attributes[RETRY_WAIT] = (now - CLOCK.at(max(ends))) / 1e9
        if record.restarts:
            attributes[RESTART] = record.restarts
        attempt = self._tracer.start_span(
            "attempt", context=record.context, attributes=attributes, start_time=now
        )
        token = otel_context.attach(otel_trace.set_span_in_context(attempt, record.context))
        record.open.append((span, attempt, token, trio.lowlevel.current_task()))

    def on_lost(self, slot: int, span: TraceSpan) -> None:
        record = self._slots.get(slot)
        entry = None if record is None else _taken(record, span)
        if record is None or entry is None:
            return
        _, attempt, token, task = entry
        if task is trio.lowlevel.current_task():
            otel_context.detach(token)  # type: ignore[arg-type]  # attach's own token
        # another attempt of its slot succeeded first: cancelled, and not an error
        attempt.set_attributes({STATUS: "cancelled", HEDGE_LOST: True})
        attempt.end(end_time=CLOCK.at(span.end))  # type: ignore[arg-type]  # lost: ended
        if record.done:
            self._forget(record)

    def on_ended(self, slot: int, span: TraceSpan, failure: BaseException | None) -> None:
        record = self._slots.get(slot)
        entry = None if record is None else _taken(record, span)
        if record is None or entry is None:
            return
        status = span.status
        assert status is not None  # ended: the trace set both
        assert span.end is not None
        now = CLOCK.at(span.end)
        self._end_attempt(entry, status, failure, now)
        if failure is not None:
            record.failed = (span, failure)
        if record.done:  # a hedge's other attempt ended it already
            self._forget(record)
        elif status is Status.OK or status is Status.CANCELLED:
            self._end_slot(record, now, status, failure)

    def _end_attempt(
        self,
        entry: tuple[TraceSpan, Span, object, trio.lowlevel.Task],
        status: Status,
        failure: BaseException | None,
        now: int,
    ) -> None:
        """End an attempt's span, ``entry``, as its trace span ended: with ``status``."""
        mark, span, token, task = entry
        if task is trio.lowlevel.current_task():
            otel_context.detach(token)  # type: ignore[arg-type]  # attach's own token
        if status is Status.OK:
            span.set_attribute(STATUS, "ok")
            span.end(end_time=now)
            return
        attributes: dict[str, Any] = {STATUS: status.name.lower()}
        if status is not Status.AWAITING_APPROVAL:
            attributes[ERROR_TYPE] = _kind(status, failure)
            span.set_status(StatusCode.ERROR, _said(status, failure))
        if mark.retry_after is not None:
            attributes[RETRY_AFTER] = mark.retry_after
        if failure is not None:
            span.record_exception(failure, timestamp=now)
        span.set_attributes(attributes)
        span.end(end_time=now)

    def on_over_budget(self, slot: int, span: TraceSpan, failure: BaseException) -> None:
        """Its worker is not called: no attempt span, and its slot ends ``over_budget``."""
        now = CLOCK.at(span.start)
        record = self._running(slot, now, started=1)
        record.failed = (span, failure)
        self._end_slot(record, now, Status.OVER_BUDGET, failure)

    def on_used(self, slot: int, span: TraceSpan) -> None:
        record = self._slots.get(slot)
        usage = span.usage
        if record is None or usage is None:
            return
        for entry in record.open:  # the attempt that reported it, still open
            if entry[0] is span:
                entry[1].set_attributes(
                    {
                        "trio_supervisor.usage.calls": usage.calls,
                        "trio_supervisor.usage.input_tokens": usage.input_tokens,
                        "trio_supervisor.usage.output_tokens": usage.output_tokens,
                        "trio_supervisor.usage.cost": usage.cost,
                    }
                )

    def on_cut(self, slot: int, status: Status) -> None:
        record = self._slots.get(slot)
        if record is not None and status is Status.CANCELLED:  # waiting to retry: cut short
            self._end_slot(record, self.spans.ns(), Status.CANCELLED, None)

    def on_journaled(self, slot: int) -> None:
        now = self.spans.ns()
        record = self._new_slot(slot, now, first=len(self.trace.slots[slot].spans))
        record.span.set_attribute(JOURNALED, True)
        self._end_slot(record, now, Status.OK, None)

    def on_delivered(self, slot: int) -> None:
        record = self._slots.get(slot)  # handed over: final, and forgotten
        if record is not None:
            self._end_slot(record, self._last_end(record, self.spans.ns()), *self._outcome(record))
        self._done.pop(slot, None)


def _taken(
    record: _Slot, mark: TraceSpan
) -> tuple[TraceSpan, Span, object, trio.lowlevel.Task] | None:
    """The open attempt of ``record`` the trace knows as ``mark``, taken out; None if none."""
    for index, entry in enumerate(record.open):
        if entry[0] is mark:
            return record.open.pop(index)
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(status: Status | None, failure: BaseException | None) -> str:
    """The ``error.type`` of an attempt or slot that ended ``status``."""
    if status is Status.TIMED_OUT:
        return "timeout"
    if status is Status.CANCELLED or status is None:
        return "cancelled"
    return "_OTHER" if failure is None else error_type(failure)


def _said(status: Status | None, failure: BaseException | None) -> str:
    """A span's status description."""
    if failure is not None:
        return describe(failure)
    if status is None:
        return "the slot never started: the run was cut short first"
    if status is Status.TIMED_OUT:
        return "the attempt ran past its timeout"
    return f"the slot ended {status.value}"
