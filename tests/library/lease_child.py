"""A child process for the lease test: one supervisor of a 400-slot run that another process
shares, on one SQLite journal. ``python -m tests.library.lease_child DB LOG``: it opens the
journal, says ``ready`` and waits for a line on stdin (so that two start at one instant); every
worker call appends its slot to LOG (one write each, which a SIGKILL cannot tear) and, at its
``KILL_AFTER``-th call, says ``called KILL_AFTER``; once the run is done it prints its outcome
as JSON."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import trio
import trio.testing

from trio_supervisor import Durable, Journal, Retry, Supervisor, attempt_key

SLOTS = 400
WORKERS = 8
KILL_AFTER = 60  # the call after which the test kills the process it watches


def attempts(slot: int) -> int:
    """How many calls slot ``slot`` takes: every fifth fails its first attempt."""
    return 2 if slot % 5 == 1 else 1


def worker_for(log: int | None) -> Any:
    made = [0]

    async def worker(slot: int) -> str:
        key = attempt_key()
        assert key is not None
        if log is not None:
            os.write(log, f"{slot}\n".encode())
            made[0] += 1
            if made[0] == KILL_AFTER:
                print(f"called {KILL_AFTER}", flush=True)
        await trio.sleep(0.002 * (1 + slot % 3))
        if attempts(slot) > key.attempt:
            raise ValueError(f"slot {slot} attempt {key.attempt}")
        return f"out-{slot}"

    return worker


def outcome(results: Any) -> list[list[Any]]:
    return [[r.subtask, r.status.value, r.output, r.attempts] for r in results]


def expected() -> list[list[Any]]:
    """A run never killed, without a journal, on virtual time."""

    async def main() -> list[list[Any]]:
        supervisor = Supervisor(worker_for(None), max_workers=WORKERS, retry=Retry(attempts=2))
        return outcome(await supervisor.run(range(SLOTS), durable=Durable("shared")))

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def main(db: str, log_path: str) -> list[list[Any]]:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with Journal(db, interval=0.01, count=16, lease=2.0) as journal:
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        supervisor = Supervisor(worker_for(log), max_workers=WORKERS, retry=Retry(attempts=2))
        aggregate = await supervisor.run(range(SLOTS), durable=Durable("shared", journal))
    return outcome(aggregate)


if __name__ == "__main__":
    print(json.dumps(trio.run(main, sys.argv[1], sys.argv[2])), flush=True)
