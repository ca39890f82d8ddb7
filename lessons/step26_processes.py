"""Step 26: crashes a process contains. Each leaf's reply is analysed in a worker process.

What it adds: a leaf asks its sub-agent over HTTP, as since step 17, then analyses the reply with
a sync body, ``analyse``, run in a worker process through the library's ``ProcessWorker``: the
stand-in for the parser or the C extension a real leaf runs on what a model wrote. A hard crash
there (``os._exit``, a segfault, a kill for memory) ends that process only: the leaf's slot fails
with ``WorkerCrashed``, naming the exit code or signal, and its siblings, its child supervisor,
the parent and the rounds go on. ``MEMORY_LIMIT`` turns a runaway allocation into a
``MemoryError``; the processes start (``warm``) before the run. On virtual time no process runs:
``analyse`` runs here, and a crash is raised as ``ProcessWorker`` reports one.

What is still wrong: a run lives in one process on one machine. If the supervisor itself dies,
every finished result dies with it, and the work has only this machine's cores.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from typing import Any

from lessons import step25_strategies as step25
from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
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
            if in_process is not None:
                return await in_process(call)  # step 26: a crash there fails this leaf alone
            if call[2]:  # step 26: on virtual time, as ProcessWorker says it
                raise WorkerCrashed(crash_reason(CRASH), CRASH)
            return body(call)

        yield worker


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
