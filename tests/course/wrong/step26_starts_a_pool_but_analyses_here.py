"""Step 26 (step26_processes), wrongly: the process pool is started and warmed, and then never
used: each reply is analysed in this process, so a body that crashes takes the whole run with it.
On virtual time, where no process runs, it raises the crash as ``ProcessWorker`` would, and
looks right.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 26`` must fail
on it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from typing import Any

from lessons import step25_strategies as step25
from lessons.step25_strategies import check_task as check_task
from lessons.step25_strategies import supervise as supervise  # unchanged since step 25
from lessons.step25_strategies import supervise_broken as supervise_broken
from trio_supervisor import Worker
from trio_supervisor.processes import ProcessWorker, WorkerCrashed, crash_reason
from trio_supervisor.testing import SimulatedAgent

CRASH = 70  # the exit code of a body that kills its process (EX_SOFTWARE)
MEMORY_LIMIT = 512 * 2**20  # step 26: bytes of address space a body's process may have

Call = tuple[str, str, bool]
"""What crosses to the worker process: the subtask, its sub-agent's reply, and whether the
body is to crash on it."""


def analyse(call: Call) -> str:
    """The leaf's body: sync, run in a worker process. It keeps the reply's findings, one line
    of at most 200 characters; told to crash, it ends its process instead."""
    _subtask, reply, crash = call
    if crash:
        os._exit(CRASH)  # step 26: no exception, no cleanup: the process is gone
    return " ".join(reply.split())[:200]


@asynccontextmanager
async def open_worker(
    simulated: SimulatedAgent,
    *,
    virtual: bool,
    max_workers: int,
    crash: Collection[str] = (),
    body: Callable[[Any], Any] = analyse,
    **options: Any,
) -> AsyncIterator[Worker[str, Any]]:
    """The leaf worker: step 18's HTTP sub-agent (``options``, its endpoint and all), then
    ``body`` on its reply, in one of ``max_workers`` worker processes started before the run. A
    leaf named "... crash ...", or the first leaf of a company in ``crash``, crashes its body."""
    in_process = None  # on virtual time no process runs, nor is the body pickled
    if not virtual:
        in_process = ProcessWorker(body, memory_limit=MEMORY_LIMIT)  # step 26: a process pool
        await in_process.warm(max_workers)  # step 26: no timeout counts a process's start
    crashing = {*crash, *(step25.subtasks_of(company)[0] for company in crash)}
    opened = step25.open_worker(simulated, virtual=virtual, max_workers=max_workers, **options)
    async with opened as agent:

        async def worker(subtask: str) -> Any:
            reply = await agent(subtask)  # the sub-agent, over HTTP, retried as before
            call = (subtask, reply, subtask in crashing or "crash" in subtask.lower())
            # the mistake: the body runs here, in this process, the pool started and idle
            if virtual and call[2]:  # on virtual time, as ProcessWorker says it
                raise WorkerCrashed(crash_reason(CRASH), CRASH)
            return body(call)

        yield worker
