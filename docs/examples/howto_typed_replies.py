"""Typed replies from an OpenAI-compatible endpoint: each subtask's answer a pydantic model,
validated whatever the server claims, a reply that does not validate asked again (within the
attempt, within a bound), every request charged to a budget of calls.

With ``OPENAI_BASE_URL`` set (and ``OPENAI_API_KEY``, which ChatAgent reads itself) it calls that
endpoint; without it, it serves the loopback endpoint in this process, on virtual time, scripted
to ignore ``response_format`` once, as some servers do: it answers one subtask with prose, and
only the re-ask with JSON. docs/how-to/endpoint.md shows it; tests/docs/test_howto_examples.py
runs it.
"""

from __future__ import annotations

import json
import os

import httpx2
import trio
import trio.testing
from pydantic import BaseModel, ConfigDict, Field

from trio_supervisor import Aggregate, Budget, Retry, Status, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent, Output
from trio_supervisor.testing import devserver

PLAN = ["pricing", "customer reviews", "inventory"]
SYSTEM = (
    "You research one aspect of a company. Reply with one JSON object: the aspect, a summary "
    "in one sentence, and your confidence from 0 to 1."
)


# --8<-- [start:typed]
class Finding(BaseModel):
    """What a sub-agent must reply: a slot's output is one of these, or the slot fails."""

    model_config = ConfigDict(extra="forbid")

    aspect: str
    summary: str
    confidence: float = Field(ge=0, le=1)


def agent(
    base_url: str, api_key: str | None = None, transport: httpx2.AsyncBaseTransport | None = None
) -> ChatAgent[Finding]:
    """Each reply a Finding, a reply that does not validate asked again at most twice (three
    requests an attempt at most), each reply at most 200 tokens."""
    return ChatAgent(
        os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        base_url=base_url,
        api_key=api_key,  # None: OPENAI_API_KEY
        transport=transport,
        system=SYSTEM,
        output=Output(Finding, retries=2),
        max_tokens=200,
        max_connections=3,
    )


async def research(agent: ChatAgent[Finding]) -> tuple[Aggregate[str, Finding], Budget]:
    budget = Budget(calls=9, name="calls")  # each attempt reserves its three requests
    supervisor = Supervisor(
        agent, max_workers=3, retry=Retry(attempts=2, on=TRANSIENT), meters=[budget]
    )
    return await supervisor.run(PLAN), budget
    # --8<-- [end:typed]


def ignoring_response_format(prompt: str) -> devserver.Script:
    """The loopback server's answers: JSON, but prose the first time it is asked about
    inventory; the re-ask (what was wrong, appended to the conversation) gets JSON."""
    finding = {"aspect": prompt, "summary": f"findings on {prompt}", "confidence": 0.8}
    return devserver.Script(reply=json.dumps(finding), prose=1 if prompt == "inventory" else 0)


async def on_the_loopback() -> None:
    script = ignoring_response_format
    server = httpx2.ASGITransport(app=devserver.app(latency=(0.1, 0.5), script=script))
    async with agent("http://loopback/v1", api_key="k", transport=server) as chat:
        aggregate, budget = await research(chat)
    report(aggregate, budget)
    # what the server was told to do: inventory's first reply was prose, asked again once
    assert all(result.status is Status.OK for result in aggregate)
    assert all(isinstance(result.output, Finding) for result in aggregate)
    assert budget.spent.calls == 4


async def on_your_endpoint() -> None:
    async with agent(os.environ["OPENAI_BASE_URL"]) as chat:
        aggregate, budget = await research(chat)
    report(aggregate, budget)


def report(aggregate: Aggregate[str, Finding], budget: Budget) -> None:
    for result in aggregate:
        found = result.output
        shown = result.error if found is None else f"{found.summary} ({found.confidence:.0%})"
        print(f"{result.subtask:>16}: {result.status.value}: {shown}")
    print(f"requests: {budget.spent.calls} of at most {budget.calls}")


def main() -> None:
    if os.environ.get("OPENAI_BASE_URL"):
        trio.run(on_your_endpoint)
    else:
        trio.run(on_the_loopback, clock=trio.testing.MockClock(autojump_threshold=0))


if __name__ == "__main__":
    main()
