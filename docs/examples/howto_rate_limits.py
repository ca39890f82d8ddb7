"""Stay within an endpoint's limits: a RateLimit for a rate the provider documents, an Adaptive
limit for a bound nobody told you, and a 429's Retry-After obeyed either way.

Both runs call the loopback endpoint in this process, on virtual time: the first one holds a
rate of 60 requests a minute, the second one at most 3 requests at once, and both answer 429
with ``Retry-After`` past their limit. tests/docs/test_howto_examples.py runs it.
"""

from __future__ import annotations

from typing import Any

import httpx2
import trio
import trio.testing

from trio_supervisor import Adaptive, Meter, RateLimit, Retry, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.testing.devserver import Loopback, loopback

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


if __name__ == "__main__":
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
