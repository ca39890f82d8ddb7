"""Step 15 (step15_http_subagents), wrongly: it retries the agent's transient failures only: a
request that never answers within its timeout is not retried, though it may pass next time.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 15`` must fail
on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from lessons import step14_library
from lessons.step14_library import synthesize as synthesize  # unchanged since step 1
from trio_supervisor import Aggregate, Supervisor, Worker
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent, devserver

CONCURRENCY = 2  # the loopback server's own limit: beyond it, 429 and Retry-After


def supervisor(worker: Worker[str, str], **knobs: Any) -> Supervisor[str, str]:
    """Step 14's supervisor, retrying only the failures that may pass: a 429, a 5xx, a dropped
    connection, a timeout (and never sooner than a 429's ``Retry-After``)."""
    return step14_library.supervisor(worker, retry_on=TRANSIENT, **knobs)


async def supervise(
    task: str | Iterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 4,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> Aggregate[str, str]:
    chosen = supervisor(
        worker,
        max_workers=max_workers,
        worker_timeout=worker_timeout,
        attempts=attempts,
        intensity=intensity,
        backoff=backoff,
        seed=seed,
    )
    return await chosen.run(task, deadline=deadline)


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
    or against the loopback server, scripted to do what ``simulated`` does: served in this
    process, with no socket, on virtual time, or on ``127.0.0.1`` (a free port) on real time."""
    if endpoint is not None:
        chat = ChatAgent(model or "", base_url=endpoint, max_connections=max_workers)
        async with chat as agent:  # the SDK's retries off; its key never shown
            yield agent
        return
    # the loopback server does what the simulated sub-agent does, answers two requests at once
    # (a 429 beyond, asking to wait the mean simulated latency), and stops when the run is over
    loopback = devserver.loopback(simulated, in_process=virtual, concurrency=CONCURRENCY)
    async with loopback as server:
        chat = ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,  # the loopback server checks no key, and the SDK needs one
            max_connections=max_workers,
            transport=server.transport,  # in this process; None: over 127.0.0.1
        )
        async with chat as agent:
            yield agent
