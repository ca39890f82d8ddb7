"""Research a company through an OpenAI-compatible chat endpoint: one ChatAgent as the worker,
retried on what is worth retrying, the endpoint and its key taken from the environment.

With ``OPENAI_BASE_URL`` set (and ``OPENAI_API_KEY``, which ChatAgent reads itself) it calls that
endpoint; without it, it serves the loopback endpoint in this process and runs on virtual time.
tests/docs/test_howto_examples.py runs it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import trio
import trio.testing

from trio_supervisor import Aggregate, Retry, Status, Supervisor, Trace
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.testing.devserver import loopback

PLAN = ["pricing", "customer reviews", "inventory", "competitors"]
SYSTEM = "You research one aspect of a company. Answer in two sentences."


def supervisor(agent: ChatAgent) -> Supervisor[str, str]:
    """At most four requests at once, each cut at 30 s, a failed one tried twice more when its
    error is transient (a 429, a 5xx, a dropped connection, a timeout)."""
    return Supervisor(
        agent, max_workers=4, timeout=30, retry=Retry(attempts=3, on=TRANSIENT, seed=1)
    )


def report(aggregate: Aggregate[str, str], trace: Trace) -> None:
    for result, slot in zip(aggregate, trace.slots, strict=True):
        tries = f"{len(slot.spans)} calls" if len(slot.spans) > 1 else "1 call"
        print(f"{result.subtask:>16}: {result.status.value} after {tries}: {result.output}")


async def on_your_endpoint(trace: Trace) -> Aggregate[str, str]:
    """The endpoint named by the environment: the key is never in the code."""
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    base_url = os.environ["OPENAI_BASE_URL"]  # e.g. https://api.openai.com/v1
    async with ChatAgent(model, base_url=base_url, system=SYSTEM, max_connections=4) as agent:
        return await supervisor(agent).run(PLAN, trace=trace)


async def on_the_loopback(trace: Trace) -> Aggregate[str, str]:
    """The same run against the loopback endpoint, which answers as a simulated sub-agent: no
    network, no key, and on a MockClock no real time."""
    simulated = SimulatedAgent(seed=1, flaky={"inventory": 1})  # inventory's first call: a 500
    async with (
        loopback(simulated, concurrency=4) as server,
        ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,
            transport=server.transport,
            system=SYSTEM,
            max_connections=4,
        ) as agent,
    ):
        return await supervisor(agent).run(PLAN, trace=trace)


async def traced(run: Callable[[Trace], Awaitable[Aggregate[str, str]]]) -> None:
    trace = Trace()  # made inside the run: its origin is the run's start
    aggregate = await run(trace)
    report(aggregate, trace)
    if run is on_the_loopback:  # what the loopback was told to do: inventory failed once
        assert all(result.status is Status.OK for result in aggregate)
        assert [len(slot.spans) for slot in trace.slots] == [1, 1, 2, 1]


def main() -> None:
    if os.environ.get("OPENAI_BASE_URL"):
        trio.run(traced, on_your_endpoint)
    else:
        trio.run(traced, on_the_loopback, clock=trio.testing.MockClock(autojump_threshold=0))


if __name__ == "__main__":
    main()
