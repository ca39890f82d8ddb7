"""OpenTelemetry spans of every run: a run, its slots, their attempts, and each chat request.

A [`Supervisor`][trio_supervisor.Supervisor] made with ``spans=Spans(tracer)`` emits, for each
run (and each stream, and each re-planning run), one span for the run, one per slot under it,
one per attempt under its slot, and, for each request a
[`ChatAgent`][trio_supervisor.agents.ChatAgent] makes in an attempt, a ``chat {model}`` span
under that attempt, following OpenTelemetry's GenAI semantic conventions (version
``SEMCONV_VERSION``). An attempt's span is the current
span while its worker runs, so a supervisor the worker runs (a supervision tree) nests its run
under the attempt, and so under its parent's slot; a re-planning run's rounds are spans under
it. Failures follow the conventions for errors: the span's status is ``ERROR``, ``error.type``
names the exception (``timeout`` and ``cancelled`` for a timed-out or cut-short attempt), and
the exception is recorded as an event.

This module needs the ``otel`` extra (``pip install 'trio-supervisor[otel]'``, the
``opentelemetry-api`` package only: the SDK and an exporter are the application's choice); the
core ``trio_supervisor`` does not import it, and a supervisor without ``spans=`` creates no span.
"""

from .._util import fixup_module_metadata
from ._record import SEMCONV_VERSION, Spans, error_type

__all__ = ["SEMCONV_VERSION", "Spans", "error_type"]

fixup_module_metadata(__name__, globals())
