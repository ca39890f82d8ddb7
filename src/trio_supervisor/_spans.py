"""The hook a span recorder (``trio_supervisor.otel``) plugs into; the core imports no tracing
library.

A supervisor made with ``spans=`` hands each run, stream and re-planning run to it once, at the
start: [`Spans.run`][trio_supervisor._spans.Spans.run] and its siblings return the
[`Trace`][trio_supervisor.Trace] the run records into (the caller's, or a new one), with a
recorder listening to it that emits a span at each of its events (admitted, started, ended,
...). The engine already tells a trace about
every attempt, on its one attempt path, so a supervisor without ``spans=`` creates no span and
pays nothing per slot: not even a test.

A chat worker (``trio_supervisor.agents.ChatAgent``) asks
[`chat_spans`][trio_supervisor._spans.chat_spans] for a recorder of its requests: a recorded
run sets it while its workers run, so a request made inside one is a span of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, Protocol

from ._trace import Trace


class ChatCall(Protocol):
    """One chat request being recorded."""

    def reply(self, body: str) -> None:
        """The endpoint's reply, as its JSON text, for what it says of the request (tokens,
        finish reasons, the model that answered)."""


class ChatSpans(Protocol):
    """What records a chat worker's requests."""

    def chat(self, model: str, base_url: str) -> AbstractContextManager[ChatCall]:
        """A request to ``model`` at ``base_url``: its span runs while the block does, and an
        exception leaving the block is its error."""


class Spans(Protocol):
    """What a supervisor's ``spans=`` is: it gives each run the trace that records it."""

    def run(self, trace: Trace | None, plan: Sequence[Any], supervisor: Any) -> Trace:
        """The trace a run of ``plan`` records into; ``trace`` is the caller's (recorded too)."""

    def stream(self, trace: Trace | None, planned: Sequence[Any] | None, supervisor: Any) -> Trace:
        """The trace a stream records into."""

    def replan(self, trace: Trace | None, task: str, supervisor: Any) -> Trace:
        """The trace a re-planning run records into (its rounds are its ``part()``)."""


chat_spans: ContextVar[ChatSpans | None] = ContextVar("trio_supervisor_chat_spans", default=None)
"""The recorder of chat requests in force, or None: a recorded run sets it for its workers."""


def check_spans(value: object) -> Spans | None:
    """A supervisor's ``spans=``: None, or an object with ``run``, ``stream`` and ``replan``
    (``trio_supervisor.otel.Spans``), not a class; anything else is refused with the rule."""
    if value is None:
        return None
    if not all(callable(getattr(value, name, None)) for name in ("run", "stream", "replan")):
        raise TypeError(
            "spans must be a trio_supervisor.otel.Spans (Spans(tracer)) or None, got "
            f"{type(value).__name__}"
        )
    if isinstance(value, type):  # its methods are there, unbound: every run would fail
        raise TypeError(
            f"spans must be a {value.__name__} instance, not the class: give "
            f"spans={value.__name__}() (or {value.__name__}(tracer))"
        )
    return value  # type: ignore[return-value]  # it has the protocol's methods
