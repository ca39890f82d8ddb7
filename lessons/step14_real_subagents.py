"""Step 14: real sub-agents over HTTP. The worker is a chat endpoint; the supervisor alone retries.

What it adds: Part II builds on the library's ``Supervisor``. The worker is a ``ChatAgent``: each
subtask is one request to an OpenAI-compatible ``/v1/chat/completions``, the SDK's own retries
off. Its failures are classified: a 429 carries the server's ``Retry-After``, a 5xx, a dropped
connection or a timeout is transient, any other 4xx is permanent. Only ``TRANSIENT`` failures
and timeouts are retried (what may succeed next time), never sooner than the server asked.
``rate`` spaces attempts with a token bucket, ``adaptive`` takes the workers allowed down to
what the server holds on a 429 and grows them back. ``open_worker`` says what the worker is: a
loopback server scripted to do what the demo's simulated sub-agent does, with limits of its own
(two requests at once), or ``--endpoint``.

What is still wrong: the plan never changes, whatever the sub-agents find. A finding that calls
for another subtask, or makes a planned one pointless, is ignored: the supervisor runs the plan it
was given and stops.
"""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import httpx2
import trio

from lessons.step13_lazy_input import synthesize as synthesize  # unchanged since step 5
from trio_supervisor import (
    Adaptive,
    Aggregate,
    Backoff,
    Meter,
    RateLimit,
    Supervisor,
    Worker,
)
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent, devserver

CONCURRENCY = 2  # the loopback server's own limit: beyond it, 429 and Retry-After
LOOPBACK_KEY = "loopback"  # the loopback server checks no key, and the SDK needs one


async def supervise(
    task: str | Iterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float = math.inf,
    deadline: float = math.inf,
    attempts: int = 4,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
    rate: float | None = None,
    adaptive: bool = False,
) -> Aggregate[str, str]:
    meters: list[Meter] = []
    if rate is not None:  # at most `rate` attempts start a second, retries included, in turn
        meters.append(RateLimit(rate))  # step 14: a token bucket, under the server's budget
    if adaptive:  # workers allowed: fitted to the server's bound on a 429, then grown back
        meters.append(Adaptive(max_workers))  # step 14: between 1 and max_workers
    supervisor = Supervisor(
        worker,
        max_workers=max_workers,
        timeout=None if math.isinf(worker_timeout) else worker_timeout,
        attempts=attempts,
        retry_on=(*TRANSIENT, trio.TooSlowError),  # step 14: 429, 5xx, network, timeout only
        backoff=Backoff(*backoff),  # step 14: a retry waits at least a 429's Retry-After
        seed=seed,
        meters=meters,
    )
    return await supervisor.run(task, deadline=None if math.isinf(deadline) else deadline)


def scripted(simulated: SimulatedAgent, prompt: str) -> devserver.Script:
    """What the loopback server does with ``prompt``: what the simulated sub-agent would."""
    return devserver.Script(
        latency=simulated.latency(prompt),
        fail=simulated.fails(prompt),
        flaky=simulated.flaky.get(prompt, 0),
        hang=simulated.hangs(prompt),
        reply=f"findings on {prompt}",
    )


@asynccontextmanager
async def open_worker(
    simulated: SimulatedAgent,
    *,
    virtual: bool,
    max_workers: int,
    endpoint: str | None = None,
    model: str | None = None,
) -> AsyncIterator[Worker[str, str]]:
    """The step's worker: a ``ChatAgent`` against ``endpoint`` (its key from ``OPENAI_API_KEY``),
    or against the loopback server, scripted by ``simulated``: served on ``127.0.0.1`` (a free
    port) for a run on real time, or in this process, with no socket, on virtual time."""
    if endpoint is not None:
        chat = ChatAgent(model or "", base_url=endpoint, max_connections=max_workers)
        async with chat as agent:  # step 14: the SDK's retries off; its key never shown
            yield agent
        return
    script = functools.partial(scripted, simulated)
    latency = (simulated.min_latency, simulated.max_latency)  # the mean is a 429's Retry-After
    if virtual:  # the same app, served through the client's transport: exact, instant
        app = devserver.app(script=script, latency=latency, concurrency=CONCURRENCY)
        async with ChatAgent(
            "devserver",
            base_url="http://loopback/v1",
            api_key=LOOPBACK_KEY,
            max_connections=max_workers,
            transport=httpx2.ASGITransport(app=app),
        ) as agent:
            yield agent
        return
    async with trio.open_nursery() as nursery:
        serve = functools.partial(
            devserver.serve, script=script, latency=latency, concurrency=CONCURRENCY
        )
        url = await nursery.start(serve)
        async with ChatAgent(
            "devserver", base_url=url, api_key=LOOPBACK_KEY, max_connections=max_workers
        ) as agent:
            yield agent
        nursery.cancel_scope.cancel()  # the run is over: stop serving


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
