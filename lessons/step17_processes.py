"""Step 17: crashes a process contains. A worker's body runs in a worker process.

What it adds: the sub-agent's body is a sync function, ``research``, and the worker runs it in
a worker process through the library's ``ProcessWorker`` (a ``trio_parallel`` pool). A hard
crash there (``os._exit``, a segfault in a C extension, a kill for memory) is not an exception
this process could catch: run in this process it ends the supervisor and every finished result.
In a worker process it ends that process only: the slot fails with ``WorkerCrashed``, which names
the exit code or signal, the pool starts another process, and the siblings finish. A timeout
kills a hung body's process; past ``MEMORY_LIMIT`` an allocation fails with ``MemoryError``. The
processes are started (``warm``) before the run, so that no timeout counts a process's start. On
virtual time (``--virtual``, the docs) no process runs: the body waits on the clock, and a crash
is raised as ``ProcessWorker`` reports one.

What is still wrong: a run lives in one process on one machine. If the supervisor itself dies,
every finished result dies with it, and the work has only this machine's cores.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager

import trio

from lessons.step13_lazy_input import synthesize as synthesize  # unchanged since step 5
from trio_supervisor import Aggregate, Backoff, Supervisor, Worker
from trio_supervisor.processes import ProcessWorker, WorkerCrashed, crash_reason
from trio_supervisor.testing import SimulatedAgent, SubAgentError

CRASH = 70  # the exit code of a body that kills its process (EX_SOFTWARE)
MEMORY_LIMIT = 512 * 2**20  # step 17: bytes of address space a body's process may have

Call = tuple[str, float, str]
"""What crosses to the worker process: the subtask, its latency, and what the body does with
it: ``ok``, ``fail``, ``hang`` or ``crash``."""


def research(call: Call) -> str:
    """The sub-agent's body: sync, run in a worker process. It works ``latency`` seconds, then
    answers, fails, or ends its process; ``hang`` never returns."""
    subtask, latency, act = call
    if act == "hang":
        while True:
            time.sleep(60)
    time.sleep(latency)
    if act == "crash":
        os._exit(CRASH)  # step 17: no exception, no cleanup: the process is gone
    if act == "fail":
        raise SubAgentError(f"sub-agent failed on {subtask!r}")
    return f"findings on {subtask}"


async def research_on_virtual_time(call: Call) -> str:
    """The body as a run on ``trio.testing.MockClock`` sees it: real processes cannot run there
    (the clock would jump past their work), so it waits on the clock, and a crash is raised as
    ``ProcessWorker`` reports one."""
    subtask, latency, act = call
    if act == "hang":
        await trio.sleep_forever()
    await trio.sleep(latency)
    if act == "crash":
        raise WorkerCrashed(crash_reason(CRASH), CRASH)  # step 17: as ProcessWorker says it
    if act == "fail":
        raise SubAgentError(f"sub-agent failed on {subtask!r}")
    return f"findings on {subtask}"


@asynccontextmanager
async def open_worker(
    agent: SimulatedAgent,
    *,
    crash: Collection[str] = (),
    virtual: bool = False,
    max_workers: int = 1,
) -> AsyncIterator[Worker[str, str]]:
    """The worker of this step: ``agent`` decides, in this process, what each call does (its
    latency, a failure, a hang; a subtask in ``crash`` kills its process), and ``research`` does
    it in a worker process, one of ``max_workers`` started before the run; on virtual time,
    ``research_on_virtual_time`` does it here."""
    in_process = ProcessWorker(research, memory_limit=MEMORY_LIMIT)  # step 17: a process pool
    if not virtual:
        await in_process.warm(max_workers)  # step 17: no timeout counts a process's start

    async def worker(subtask: str) -> str:
        agent.calls[subtask] += 1
        act = "ok"
        if subtask in crash:
            act = "crash"
        elif agent.hangs(subtask):
            act = "hang"
        elif agent.fails(subtask) or agent.calls[subtask] <= agent.flaky.get(subtask, 0):
            act = "fail"
        call = (subtask, agent.latency(subtask), act)
        if virtual:
            return await research_on_virtual_time(call)
        return await in_process(call)  # step 17: a crash there fails this call alone

    yield worker


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float = math.inf,
    deadline: float = math.inf,
    attempts: int = 1,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> Aggregate[str, str]:
    supervisor = Supervisor(
        worker,
        max_workers=max_workers,
        timeout=None if math.isinf(worker_timeout) else worker_timeout,
        attempts=attempts,  # a crashed call is a failure like any: retried if attempts allow
        backoff=Backoff(*backoff),
        seed=seed,
    )
    return await supervisor.run(task, deadline=None if math.isinf(deadline) else deadline)


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
