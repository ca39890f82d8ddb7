"""The how-to page's example (docs/examples/howto_otel.py) runs, on virtual time, and its spans
make the tree the page describes."""

from __future__ import annotations

import trio
import trio.testing
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.docs.test_docs_examples import example
from trio_supervisor.otel import Spans


def test_the_howto_run_is_a_tree_of_spans_down_to_each_chat_request() -> None:
    howto = example("howto_otel")
    exporter = InMemorySpanExporter()
    provider = howto.tracer_provider(exporter)
    outputs = trio.run(
        howto.main,
        Spans(provider.get_tracer("test")),
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    provider.shutdown()
    assert outputs == [
        "answer to: pricing: risks; answer to: pricing: costs",
        "answer to: hiring: risks; answer to: hiring: costs",
    ]
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}

    def path(span: object) -> tuple[str, ...]:
        names = []
        current = span
        while current is not None:
            names.append(current.name)  # type: ignore[attr-defined]
            parent = current.parent  # type: ignore[attr-defined]
            current = None if parent is None else by_id[parent.span_id]
        return tuple(reversed(names))

    chats = [path(span) for span in spans if span.name == "chat devserver"]
    assert (
        chats
        == [("run lead", "slot", "attempt", "run ChatAgent", "slot", "attempt", "chat devserver")]
        * 4
    )
    assert len(spans) == 1 + 2 * 2 + 2 * (1 + 2 * 3)  # parent run, its slots and attempts, ...
    assert {span.resource.attributes["openinference.project.name"] for span in spans} == {
        "trio-supervisor"
    }
