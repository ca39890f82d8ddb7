"""Step 24 (step24_processes), wrongly: the process pool is started and warmed, and then never
used: each reply is analysed in this process, so a body that crashes takes the whole run with it.
On virtual time, where no process runs, it raises the crash as ``ProcessWorker`` would, and
looks right.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 24`` must fail
on it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager

from lessons import step23_strategies as step23
from lessons.step23_strategies import check_task as check_task
from lessons.step23_strategies import supervise as supervise  # unchanged since step 23
from lessons.step23_strategies import supervise_broken as supervise_broken
from trio_supervisor import Worker
from trio_supervisor.processes import ProcessWorker, WorkerCrashed, crash_reason
from trio_supervisor.testing import SimulatedAgent

CRASH = 70  # the exit code of a body that kills its process (EX_SOFTWARE)
MEMORY_LIMIT = 512 * 2**20  # bytes of address space a body's process may have

Call = tuple[str, str, bool]


def analyse(call: Call) -> str:
    """The leaf's body: it keeps the reply's findings; told to crash, it ends its process."""
    _subtask, reply, crash = call
    if crash:
        os._exit(CRASH)
    return " ".join(reply.split())[:200]


@asynccontextmanager
async def open_worker(
    simulated: SimulatedAgent,
    *,
    virtual: bool,
    max_workers: int,
    endpoint: str | None = None,
    model: str | None = None,
    crash: Collection[str] = (),
) -> AsyncIterator[Worker[str, str]]:
    """The leaf worker: the HTTP sub-agent, then ``analyse`` on its reply."""
    if not virtual:
        pool = ProcessWorker(analyse, memory_limit=MEMORY_LIMIT)
        await pool.warm(max_workers)  # started, and then never called
    crashing = {*crash, *(step23.subtasks_of(company)[0] for company in crash)}
    opened = step23.open_worker(
        simulated, virtual=virtual, max_workers=max_workers, endpoint=endpoint, model=model
    )
    async with opened as agent:

        async def worker(subtask: str) -> str:
            reply = await agent(subtask)
            call = (subtask, reply, subtask in crashing or "crash" in subtask.lower())
            if virtual and call[2]:  # the crash, as ProcessWorker reports one
                raise WorkerCrashed(crash_reason(CRASH), CRASH)
            return analyse(call)  # the mistake: in this process, the pool idle

        yield worker
