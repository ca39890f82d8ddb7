"""Step 17: real sub-agents over HTTP. The worker is a chat endpoint; only what may pass is retried.

What it adds: the worker is a ``ChatAgent``: each subtask is one request to an OpenAI-compatible
``/v1/chat/completions``, the SDK's own retries off, so the supervisor alone retries. Its failures
are classified: a 429 carries the server's ``Retry-After``, a 5xx, a dropped connection or a
timeout is transient, any other 4xx (a wrong key, an unknown model) is permanent. Only
``TRANSIENT`` failures and timeouts are retried, what may succeed next time; a permanent one costs
one request. ``open_worker`` says what the worker is: a loopback server scripted to do what the
demo's simulated sub-agent does, with a limit of its own (two requests at once, a 429 beyond;
or serving as the demo's ``serving`` says), or ``--endpoint``.

What is still wrong: nothing keeps the requests under the server's limits. With more workers
than the server takes at once, every attempt past its limit is a 429, retried into the next 429.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import trio

from lessons import step16_library
from lessons.step16_library import synthesize as synthesize  # unchanged since step 1
from trio_supervisor import Aggregate, SubResult, Supervisor, Worker
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import SimulatedAgent, devserver
from trio_supervisor.testing.devserver import Serving

CONCURRENCY = 2  # the loopback server's own limit: beyond it, 429 and Retry-After


def supervisor(worker: Worker[str, str], **knobs: Any) -> Supervisor[str, str]:
    """Step 16's supervisor, retrying only the failures that may pass: a 429, a 5xx, a dropped
    connection, a timeout (and never sooner than a 429's ``Retry-After``)."""
    return step16_library.supervisor(worker, retry_on=(*TRANSIENT, trio.TooSlowError), **knobs)


@asynccontextmanager
async def stream(
    task: str | Iterable[str] | AsyncIterable[str],
    worker: Worker[str, str],
    *,
    max_workers: int,
    window: int | None = None,
    worker_timeout: float | None = None,
    deadline: float | None = None,
    attempts: int = 4,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> AsyncIterator[AsyncIterator[SubResult[str, str]]]:
    if deadline is not None and not deadline > 0:  # also refuses NaN
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    chosen = supervisor(
        worker,
        max_workers=max_workers,
        worker_timeout=worker_timeout,
        attempts=attempts,
        intensity=intensity,  # a stream refuses it: a result handed over cannot fail later
        backoff=backoff,
        seed=seed,
    )
    with trio.move_on_after(math.inf if deadline is None else deadline):  # the caller's block
        async with chosen.stream(task, window=window) as results:  # None: 4 * max_workers
            yield results


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


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
