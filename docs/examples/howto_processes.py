"""Run a worker that can crash the interpreter (a C extension's segfault, an ``os._exit``, a
kill for memory) in worker processes: a crash fails its own slot, and a timeout kills a hung
call's process.

Real processes run on real time: the hung call costs its two-second timeout.
tests/docs/test_howto_examples.py runs it.
"""

from __future__ import annotations

import os
import time

import trio

from trio_supervisor import Status, Supervisor
from trio_supervisor.processes import ProcessWorker, WorkerCrashed

# the two that go wrong last: the processes warmed before the run take the first two, and the
# process that replaces the crashed one starts (which takes a moment) while the last call hangs
PLAN = ["parse a.pdf", "parse b.pdf", "parse crash.pdf", "parse hang.pdf"]


def parse(subtask: str) -> str:
    """A sync function, at module level: it is pickled to the worker process."""
    if "crash" in subtask:
        os._exit(3)  # what a segfault does to a process: no exception, no cleanup
    if "hang" in subtask:
        time.sleep(3600)  # stuck in C code: only killing the process ends it
    return f"{len(subtask)} pages"


async def main() -> None:
    worker = ProcessWorker(parse)
    await worker.warm(2)  # the processes start before the run, not inside its timeouts
    supervisor = Supervisor(worker, max_workers=2, timeout=2.0)
    aggregate = await supervisor.run(PLAN)
    for result in aggregate:
        print(f"{result.subtask:>16}: {result.status.value:9} {result.output or result.error}")
    statuses = [result.status for result in aggregate]
    assert statuses == [Status.OK, Status.OK, Status.FAILED, Status.TIMED_OUT]
    assert aggregate[2].error is not None
    assert WorkerCrashed.__name__ in aggregate[2].error


if __name__ == "__main__":  # each worker process imports this module again: start runs here only
    trio.run(main)
