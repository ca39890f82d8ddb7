"""Step 17 (step17_http_subagents), wrongly: it retries the agent's transient failures only: a
request that never answers within its timeout is not retried, though it may pass next time.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 17`` must fail
on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from lessons import step16_library
from lessons.step16_library import synthesize as synthesize  # unchanged since step 1
from trio_supervisor import Aggregate, Supervisor, Worker
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent, devserver
from trio_supervisor.testing.devserver import Serving

CONCURRENCY = 2  # the loopback server's own limit: beyond it, 429 and Retry-After


def supervisor(worker: Worker[str, str], **knobs: Any) -> Supervisor[str, str]:
    """Step 16's supervisor, retrying only the failures that may pass: a 429, a 5xx, a dropped
    connection, a timeout (and never sooner than a 429's ``Retry-After``)."""
    # the mistake: a request that timed out (trio.TooSlowError) is never retried
    return step16_library.supervisor(worker, retry_on=TRANSIENT, **knobs)


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
    serving: Serving | None = None,
    script: Callable[[str], devserver.Script] | None = None,
    **options: Any,
) -> AsyncIterator[Worker[str, Any]]:
    """The step's worker: a ``ChatAgent`` (``options`` its own) against ``endpoint``, or against
    the loopback server doing what ``simulated`` does (or ``script`` says): in this process on
    virtual time, on 127.0.0.1 on real time; two requests at once, or as ``serving`` says."""
    if endpoint is not None:
        chat = ChatAgent(model or "", base_url=endpoint, max_connections=max_workers, **options)
        async with chat as agent:  # the SDK's retries off; its key never shown
            yield agent
        return
    # a 429 beyond the limit asks to wait the mean simulated latency; the server stops with the run
    limits = {"concurrency": CONCURRENCY} if serving is None else {"serving": serving}
    loopback = devserver.loopback(simulated, in_process=virtual, script=script, **limits)
    async with loopback as server:
        chat = server.agent(max_connections=max_workers, **options)  # its address, its key
        async with chat as agent:
            yield agent
