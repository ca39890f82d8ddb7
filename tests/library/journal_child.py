"""A child process for the real-kill test: a 1,000-slot journaled run on disk, resumed from
whatever the journal holds. ``python -m tests.library.journal_child DB LOG OUT [--together]``:
every worker call appends its slot to LOG (one write each, which a SIGKILL cannot tear); a run
that finishes writes its outcome to OUT as JSON. With ``--together`` it says ``ready`` and waits
for a line on stdin before it opens the journal, then says ``opened`` and waits for another
before it runs: two children open the journal at one instant, and start the run at one
instant."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import trio

from trio_supervisor import Durable, Journal, Retry, Supervisor, attempt_key

SLOTS = 1000
WORKERS = 16


def fails(slot: int, attempt: int) -> bool:
    """Every seventh slot fails its first attempt, every 97th every attempt."""
    return (slot % 7 == 3 and attempt == 1) or slot % 97 == 5


def outcome(results: Any) -> list[list[Any]]:
    return [[r.subtask, r.status.value, r.output, r.error, r.attempts] for r in results]


def wait(said: str) -> None:
    """Say ``said``, then wait for a line on stdin (blocking: nothing else runs yet)."""
    print(said, flush=True)
    sys.stdin.readline()


def worker_for(log: int) -> Any:
    async def worker(slot: int) -> str:
        key = attempt_key()
        assert key is not None
        os.write(log, f"{slot}\n".encode())
        await trio.sleep(0.0005 * (slot % 5))
        if fails(slot, key.attempt):
            raise ValueError(f"slot {slot} attempt {key.attempt}")
        return f"out-{slot}"

    return worker


async def main(db: str, log_path: str, together: bool = False) -> list[list[Any]]:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    if together:
        wait("ready")
    with Journal(db, interval=0.02, count=64) as journal:
        supervisor = Supervisor(worker_for(log), max_workers=WORKERS, retry=Retry(attempts=2))
        if together:
            wait("opened")
        print("started", flush=True)
        aggregate = await supervisor.run(range(SLOTS), durable=Durable("kills", journal))
    return outcome(aggregate)


if __name__ == "__main__":
    done = trio.run(main, sys.argv[1], sys.argv[2], sys.argv[4:] == ["--together"])
    with open(sys.argv[3], "w") as file:
        json.dump(done, file)
