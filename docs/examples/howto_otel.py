"""See a run in Phoenix: a supervision tree of chat agents, its spans exported over OTLP/HTTP.

Start Phoenix (``pip install arize-phoenix``, then ``phoenix serve``: its UI and its collector
on http://127.0.0.1:6006), then run this file: each run, slot, attempt and chat request is a
span in Phoenix's project ``trio-supervisor``. tests/docs/test_howto_otel.py runs ``main`` with
the SDK's in-memory exporter instead.
"""

from __future__ import annotations

import os

import httpx2
import trio
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from trio_supervisor import Retry, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.otel import Spans
from trio_supervisor.testing import devserver


# --8<-- [start:provider]
def tracer_provider(exporter: SpanExporter) -> TracerProvider:
    """A tracer provider that batches its spans to ``exporter``, named for Phoenix's project."""
    resource = Resource.create(
        {"service.name": "trio-supervisor", "openinference.project.name": "trio-supervisor"}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


# --8<-- [end:provider]


# --8<-- [start:run]
async def main(spans: Spans) -> list[str]:
    """Two teams, each a child supervisor of chat agents, under one parent supervisor."""
    endpoint = httpx2.ASGITransport(app=devserver.app(latency=(0.01, 0.05)))  # in process
    async with ChatAgent(
        "devserver", base_url="http://devserver/v1", api_key="k", transport=endpoint
    ) as agent:
        team = Supervisor(agent, max_workers=4, retry=Retry(attempts=3, on=TRANSIENT), spans=spans)

        async def lead(topic: str) -> str:  # a parent's worker: it runs a child supervisor
            aggregate = await team.run([f"{topic}: risks", f"{topic}: costs"])
            return "; ".join(str(result.output) for result in aggregate)

        parent = Supervisor(lead, max_workers=2, spans=spans)
        aggregate = await parent.run(["pricing", "hiring"])
    return [str(result.output) for result in aggregate]


# --8<-- [end:run]


if __name__ == "__main__":
    # --8<-- [start:export]
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    phoenix = os.environ.get("PHOENIX_COLLECTOR_ENDPOINT", "http://127.0.0.1:6006")
    provider = tracer_provider(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces"))
    print(trio.run(main, Spans(provider.get_tracer("howto"))))
    provider.shutdown()  # exports what the batch still holds
    # --8<-- [end:export]
