"""The span recorder: a [`Trace`][trio_supervisor.Trace] whose events are spans.

The engine tells a run's trace when each slot is admitted and each attempt starts and ends, on
its one attempt path; the recorder here is such a trace, so spans come from the very events a
timeline is drawn from, and a supervisor without ``spans=`` pays nothing for them. A caller's
own trace is still recorded: the recorder passes every event on to it.

Times are trio's clock, laid onto the wall clock once per trio run, so the spans of a run on
``trio.testing.MockClock`` have the run's virtual durations.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
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
from .._trace import Span as TraceSpan
from .._trace import Trace, still_open

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
        """The trace a run of ``plan`` records into (a round of a re-planning run is one
        already: it is recorded as it is)."""
        if isinstance(trace, Recorder):
            return trace
        return Recorder(self, trace, "run", supervisor)

    def stream(self, trace: Trace | None, planned: Sequence[Any] | None, supervisor: Any) -> Trace:
        """The trace a stream records into."""
        return Recorder(self, trace, "stream", supervisor)

    def replan(self, trace: Trace | None, task: str, supervisor: Any) -> Trace:
        """The trace a re-planning run records into; it is open from now on."""
        recorder = Recorder(self, trace, "replan", supervisor)
        recorder.open()
        return recorder

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
    """What the recorder knows of one slot: its span, and its attempts' open spans."""

    __slots__ = (
        "attempts",
        "context",
        "done",
        "ended",
        "failure",
        "hedges",
        "open",
        "restarts",
        "slot",
        "span",
        "status",
    )

    def __init__(self, slot: int, span: Span, context: Context, restarts: int) -> None:
        self.slot = slot
        self.span = span
        self.context = context
        self.attempts = 0
        self.hedges = 0
        self.restarts = restarts
        # the attempts running, each with its context token, its task and the engine's span
        self.open: list[tuple[Span, object, trio.lowlevel.Task, TraceSpan]] = []
        self.ended: int | None = None  # when its last attempt ended, in ns
        self.status: Status | None = None  # how its last attempt ended
        self.failure: BaseException | None = None
        self.done = False


def _worker_name(supervisor: Any) -> str:
    worker = getattr(supervisor, "worker", None)
    name = getattr(worker, "__name__", None)
    return name if isinstance(name, str) else type(worker).__name__


class Recorder(Trace):
    """The trace of one run (or stream, re-planning run, round) that emits its spans, and
    passes every event on to the caller's own trace, ``inner``, when there is one."""

    def __init__(
        self,
        spans: Spans,
        inner: Trace | None,
        kind: str,
        supervisor: Any,
        whole: Recorder | None = None,
    ) -> None:
        super().__init__()
        self._spans = spans
        self._tracer = spans.tracer
        self._inner = inner
        self._kind = kind
        self._supervisor = supervisor
        self._whole = whole
        self._offset: int = 0 if whole is None else whole._next  # a round's slots are numbered on
        self._next: int = 0  # a whole re-planning run: its rounds' slots so far
        self._span: Span | None = None
        self._context: Context | None = None
        self._token: Any = None
        self._chat_token: Any = None
        self._task: trio.lowlevel.Task | None = None
        # invariant: _slots holds the slots whose span is open; _done, slot -> its restarts,
        # those whose span ended (a slot that runs again is restarted), until handed over
        self._slots: dict[int, _Slot] = {}
        self._done: dict[int, int] = {}
        self._planned = 0
        self._parts: list[Recorder] = []
        self._counts: dict[str, int] = {}
        self._closed = False
        self._delivered = 0  # a stream hands slots over in order: those below are gone

    # -- the run's own span ---------------------------------------------------------------

    def open(self, attach: bool = True) -> None:
        """Start the run's span (once), and make it current in this task while the run goes on
        (the workers' tasks, started from here, have it too)."""
        if self._span is not None:
            return
        if self._whole is not None:
            parent = self._whole._context
            name = "round"
            attributes: dict[str, Any] = {KIND: "round", ROUND: len(self._whole._parts)}
        else:
            parent = otel_context.get_current()
            name = f"{self._kind} {_worker_name(self._supervisor)}"
            attributes = {KIND: self._kind, WORKER: _worker_name(self._supervisor)}
            workers = getattr(self._supervisor, "max_workers", None)
            if isinstance(workers, int):
                attributes[MAX_WORKERS] = workers
        span = self._tracer.start_span(
            name, context=parent, attributes=attributes, start_time=self._spans.ns()
        )
        self._span = span
        self._context = otel_trace.set_span_in_context(span, parent)
        if attach:
            self._task = trio.lowlevel.current_task()
            self._token = otel_context.attach(self._context)
            if self._whole is None:
                self._chat_token = chat_spans.set(self._spans)

    def begin(self, plan: Iterable[Any] = ()) -> None:
        plan = list(plan)
        if self._inner is not None:
            self._inner.begin(plan)
        self._in_use = True
        self._planned = max(self._planned, len(plan))
        self._grow(len(plan))
        self.open()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._inner is not None:
            self._inner.close()
        self.closed = trio.current_time()
        for part in self._parts:  # a round taken from a journal is never run, nor closed
            part.close()
        self.open(attach=False)  # a run that recorded nothing still has its span
        now = self._spans.ns()
        self.end_open()
        for record in list(self._slots.values()):
            self._end_slot(record, record.ended if record.ended is not None else now)
        for slot in range(self._planned):  # a slot never started: cut short before it could
            if slot not in self._done and slot not in self._slots and slot >= self._delivered:
                record = self._new_slot(slot, None, now)
                self._end_slot(record, now, None)
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

    def part(self) -> Trace:
        """A round of a re-planning run: a span under the run's, its slots under it."""
        self._in_use = True
        self.open()
        if self._parts:
            self._parts[-1].close()  # the round before ended when the next one began
        inner = None if self._inner is None else self._inner.part()
        part = Recorder(self._spans, inner, "round", self._supervisor, whole=self)
        self._parts.append(part)
        return part

    def _grow(self, slots: int) -> None:
        whole = self._whole
        if whole is not None:
            whole._next = max(whole._next, self._offset + slots)

    # -- slots and attempts ---------------------------------------------------------------

    def _new_slot(self, slot: int, subtask: Any, now: int, restarts: int = 0) -> _Slot:
        """A new span for slot ``slot``, under the run's."""
        if self._span is None:
            self.open(attach=False)
        attributes: dict[str, Any] = {SLOT: self._offset + slot}
        if restarts:
            attributes[RESTART] = restarts
        if self._spans.record_subtasks and subtask is not None:
            attributes[SUBTASK] = repr(subtask)[:200]
        span = self._tracer.start_span(
            "slot", context=self._context, attributes=attributes, start_time=now
        )
        record = _Slot(slot, span, otel_trace.set_span_in_context(span, self._context), restarts)
        self._slots[slot] = record
        if slot >= self._planned:
            self._planned = slot + 1
            self._grow(slot + 1)
        return record

    def _end_slot(self, record: _Slot, end: int, status: Status | None = NOTHING) -> None:
        """End ``record``'s span with ``status`` (by default, its last attempt's)."""
        if record.done:
            return
        record.done = True
        self._forget(record)
        if status is NOTHING:
            status = record.status
        name = NEVER_STARTED if status is None else status.name.lower()
        self._counts[name] = self._counts.get(name, 0) + 1
        span = record.span
        attributes: dict[str, Any] = {STATUS: name, ATTEMPTS: record.attempts}
        if record.hedges:
            attributes[HEDGES] = record.hedges
        if status is not Status.OK and status is not Status.AWAITING_APPROVAL:
            failure = record.failure if status is record.status else None
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

    def admitted(self, slot: int, subtask: Any = None) -> None:
        if self._inner is not None:
            self._inner.admitted(slot, subtask)
        self._running(slot, subtask, self._spans.ns())  # new, or admitted again: restarted

    def _running(self, slot: int, subtask: Any, now: int) -> _Slot:
        """Slot ``slot``'s record, for an attempt of it: a new one when it is new, or ended and
        runs again (restarted for a sibling, or ended while a hedge of it ran on)."""
        record = self._slots.get(slot)
        if record is None:
            return self._new_slot(slot, subtask, now, self._done.pop(slot, -1) + 1)
        if record.done:
            return self._new_slot(slot, subtask, now, record.restarts + 1)
        return record

    def started(self, slot: int, subtask: Any = None, *, hedge: bool = False) -> TraceSpan:
        mark = None
        if self._inner is not None:
            mark = self._inner.started(slot, subtask, hedge=hedge)
        now = self._spans.ns()
        if mark is None:  # the attempt as the engine knows it: what it names in ended/lost
            mark = TraceSpan(trio.current_time(), hedge=hedge)
        record = self._running(slot, subtask, now)
        record.attempts += 1
        attributes: dict[str, Any] = {SLOT: self._offset + slot, ATTEMPT: record.attempts}
        if hedge:  # as the engine says: a retry that starts while a span is open is none
            attributes[HEDGE] = True
            record.hedges += 1
        elif record.ended is not None:
            attributes[RETRY_WAIT] = (now - record.ended) / 1e9
        if record.restarts:
            attributes[RESTART] = record.restarts
        span = self._tracer.start_span(
            "attempt", context=record.context, attributes=attributes, start_time=now
        )
        token = otel_context.attach(otel_trace.set_span_in_context(span, record.context))
        record.open.append((span, token, trio.lowlevel.current_task(), mark))
        return mark

    def ended(
        self,
        slot: int,
        status: Status,
        failure: BaseException | None = None,
        *,
        span: TraceSpan | None = None,
    ) -> None:
        if self._inner is not None:
            self._inner.ended(slot, status, failure, span=span)
        elif span is not None:
            span.end, span.status = trio.current_time(), status
        self._ended(slot, status, failure, span)

    def over_budget(self, slot: int, subtask: Any, failure: BaseException) -> None:
        """Its worker is not called: no attempt span, and its slot ends ``over_budget``."""
        if self._inner is not None:
            self._inner.over_budget(slot, subtask, failure)
        now = self._spans.ns()
        record = self._running(slot, subtask, now)
        record.ended = now
        record.status = Status.OVER_BUDGET
        record.failure = failure
        self._end_slot(record, now)

    def lost(self, slot: int, span: TraceSpan) -> None:
        if self._inner is not None:
            self._inner.lost(slot, span)
        else:
            span.end, span.status, span.lost = trio.current_time(), Status.CANCELLED, True
        record = self._slots.get(slot)
        if record is None:
            return
        entry = _taken(record, span)
        if entry is None:
            return
        attempt, token, task, _ = entry
        if task is trio.lowlevel.current_task():
            otel_context.detach(token)  # type: ignore[arg-type]  # attach's own token
        # another attempt of its slot succeeded first: cancelled, and not an error
        attempt.set_attributes({STATUS: "cancelled", HEDGE_LOST: True})
        attempt.end(end_time=self._spans.ns())

    def _ended(
        self,
        slot: int,
        status: Status,
        failure: BaseException | None = None,
        mark: TraceSpan | None = None,
    ) -> None:
        record = self._slots.get(slot)
        if record is None or not record.open:
            return
        entry = record.open.pop() if mark is None else _taken(record, mark)
        if entry is None:
            return
        span, token, task, _ = entry
        if task is trio.lowlevel.current_task():
            otel_context.detach(token)  # type: ignore[arg-type]  # attach's own token
        now = self._spans.ns()
        record.ended = now
        record.status = status
        record.failure = failure
        if status is Status.OK:
            span.set_attribute(STATUS, "ok")
            span.end(end_time=now)
            if record.done:  # a hedge's other attempt ended it already
                self._forget(record)
            else:
                self._end_slot(record, now)
            return
        attributes: dict[str, Any] = {STATUS: status.name.lower()}
        if status is not Status.AWAITING_APPROVAL:
            attributes[ERROR_TYPE] = _kind(status, failure)
            span.set_status(StatusCode.ERROR, _said(status, failure))
        if failure is not None:
            asked = getattr(failure, "retry_after", None)
            if isinstance(asked, int | float) and not isinstance(asked, bool) and asked >= 0:
                attributes[RETRY_AFTER] = float(asked)
            span.record_exception(failure, timestamp=now)
        span.set_attributes(attributes)
        span.end(end_time=now)
        if record.done:
            self._forget(record)
        elif status is Status.CANCELLED:
            self._end_slot(record, now)

    def used(self, slot: int, usage: Any) -> None:
        if self._inner is not None:
            self._inner.used(slot, usage)
        record = self._slots.get(slot)
        if record is None or not record.open:
            return
        span = record.open[-1][0]  # the attempt that reported it, still open
        span.set_attributes(
            {
                "trio_supervisor.usage.calls": usage.calls,
                "trio_supervisor.usage.input_tokens": usage.input_tokens,
                "trio_supervisor.usage.output_tokens": usage.output_tokens,
                "trio_supervisor.usage.cost": usage.cost,
            }
        )

    def end_open_slot(self, slot: int, status: Status) -> None:
        record = self._slots.get(slot)
        # the attempts it ends, as a trace decides it (before the caller's trace ends them)
        ending = [] if record is None else still_open([entry[3] for entry in record.open])
        if self._inner is not None:
            self._inner.end_open_slot(slot, status)
        if record is None:
            return
        if record.open:
            for mark in ending:
                self._ended(slot, status, None, mark)
        elif status is Status.CANCELLED:  # waiting to retry when the run was cut short
            self._end_slot(record, self._spans.ns(), Status.CANCELLED)

    def end_open(self, status: Status = Status.CANCELLED) -> None:
        if self._inner is not None:
            self._inner.end_open(status)
        for slot, record in list(self._slots.items()):
            while record.open:
                self._ended(slot, status)

    def journaled(self, slot: int, subtask: Any = None) -> None:
        if self._inner is not None:
            self._inner.journaled(slot, subtask)
        now = self._spans.ns()
        record = self._new_slot(slot, subtask, now)
        record.span.set_attribute(JOURNALED, True)
        record.status = Status.OK
        self._end_slot(record, now)

    def pulled(self, slot: int, subtask: Any = None) -> None:
        if self._inner is not None:
            self._inner.pulled(slot, subtask)
        if slot >= self._planned:
            self._planned = slot + 1

    def delivered(self, slot: int) -> None:
        if self._inner is not None:
            self._inner.delivered(slot)
        record = self._slots.get(slot)  # handed over: final, and forgotten
        self._delivered = slot + 1
        if record is not None:
            self._end_slot(record, record.ended if record.ended is not None else self._spans.ns())
        self._done.pop(slot, None)

    def nest(self, subtask: Any) -> Trace:
        if self._inner is None:
            raise ValueError(
                "nest() draws a child run in its parent's own Trace: give the parent's run a "
                "trace= (a child supervisor with spans= nests its spans by itself)"
            )
        return self._inner.nest(subtask)


def _taken(
    record: _Slot, mark: TraceSpan
) -> tuple[Span, object, trio.lowlevel.Task, TraceSpan] | None:
    """The open attempt of ``record`` the engine knows as ``mark``, taken out; None if none."""
    for index, entry in enumerate(record.open):
        if entry[3] is mark:
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
