"""Stay within an endpoint's limits: a RateLimit for a rate the provider documents, an Adaptive
limit for a bound nobody told you, and a 429's Retry-After obeyed either way.

The runs call the loopback endpoint in this process, on virtual time: the first one holds a
rate of 60 requests a minute, the second one at most 3 requests at once, and both answer 429
with ``Retry-After`` past their limit; the last two meet an endpoint that never refuses and
answers one request at a time, queueing the rest, as a GPU server without batching does.
tests/docs/test_howto_examples.py runs it.
"""

from __future__ import annotations

import statistics
from typing import Any

import httpx2
import trio
import trio.testing

from trio_supervisor import Adaptive, Meter, RateLimit, Retry, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.testing.devserver import Loopback, Serving, loopback

PLAN = [f"review {number:02}" for number in range(1, 13)]  # a dozen subtasks


async def stats(server: Loopback) -> dict[str, Any]:
    """What the loopback endpoint counted: requests, and answers by status."""
    async with httpx2.AsyncClient(transport=server.transport, base_url="http://loopback") as web:
        counted: dict[str, Any] = (await web.get("/stats")).json()
        return counted


async def run(meter: Meter, **limits: Any) -> dict[str, Any]:
    """A dozen subtasks, up to 12 at once, through ``meter``, against an endpoint with
    ``limits``; what the endpoint counted, and how long it took."""
    simulated = SimulatedAgent(seed=1, min_latency=0.5, max_latency=1.0)
    async with loopback(simulated, **limits) as server:
        async with ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,
            transport=server.transport,
            max_connections=12,
        ) as agent:
            supervisor = Supervisor(
                agent, max_workers=12, retry=Retry(attempts=5, on=TRANSIENT, seed=1), meters=[meter]
            )
            aggregate = await supervisor.run(PLAN)
        assert all(result.ok for result in aggregate), aggregate
        return {**await stats(server), "seconds": trio.current_time()}


async def typical(meter: Meter, subtasks: int = 48) -> float:
    """``subtasks`` through ``meter``, up to 12 at once, against an endpoint that answers one
    request at a time (0.5 s each) and queues the rest: the median time a subtask took."""
    simulated = SimulatedAgent(seed=1, min_latency=0.5, max_latency=0.5)
    async with (
        loopback(simulated, serving=Serving("sequential")) as server,
        ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,
            transport=server.transport,
            max_connections=12,
            request_timeout=None,
        ) as agent,
    ):
        supervisor = Supervisor(agent, max_workers=12, meters=[meter], retry=Retry(seed=1))
        aggregate = await supervisor.run([f"review {n:02}" for n in range(subtasks)])
    return statistics.median(r.finished - r.started for r in aggregate if r.finished and r.started)


async def main() -> None:
    # a documented limit: 60 requests a minute, bursts of 2. A token bucket of the same rate
    # spaces the calls out, so the endpoint never has to refuse one.
    counted = await run(RateLimit(rate=60 / 60, burst=2), rpm=60, burst=2)
    print(f"RateLimit: {counted['requests']} requests, {counted['rate_limited']} answered 429")
    assert counted["rate_limited"] == 0

    # an unknown bound (3 at once): Adaptive starts at 10, each 429 fits its limit to what was
    # in flight, and each refused call sleeps the Retry-After the server sent before it retries.
    adaptive = Adaptive(12)
    counted = await run(adaptive, concurrency=3)
    print(
        f"Adaptive: {counted['requests']} requests, {counted['rate_limited']} answered 429, "
        f"limit now {adaptive.limit}, peak in flight {counted['peak_in_flight']}"
    )
    assert counted["peak_in_flight"] <= 3
    assert adaptive.limit <= 3

    # an endpoint that never refuses but queues: 12 at once only wait longer, while Adaptive
    # reads the latency that grew without more answers a second and goes to 1 at once
    fixed = await typical(trio.Semaphore(12))
    adaptive = Adaptive(12)
    fitted = await typical(adaptive)
    print(f"one at a time: 12 at once, median {fixed:.1f} s a subtask; Adaptive, {fitted:.1f} s")
    print(f"Adaptive's limit now {adaptive.limit}")
    assert adaptive.limit <= 2
    assert fitted < fixed


if __name__ == "__main__":
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
