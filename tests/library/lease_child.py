"""A child process for the lease tests: one supervisor of a run that other processes share, on
one journal (a SQLite file or a PostgreSQL database).
``python -m tests.library.lease_child TARGET LOG [SLOTS CAPACITY LEASE PAUSE]``: it opens the
journal, says ``ready`` and waits for a line on stdin (so that several start at one instant);
every worker call appends ``S slot pid time`` to LOG when it starts and ``E slot pid time``
when it ends (one write each, which a SIGKILL cannot tear; unix time) and, at its
``KILL_AFTER``-th call, says ``called KILL_AFTER``; once the run is done it prints its outcome
as JSON. With a CAPACITY, every attempt holds a place of a ``Capacity`` of that size shared
through the journal (``shared="endpoint"``). ``spawn`` starts one (the tests' side)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

import trio
import trio.testing

from trio_supervisor import Capacity, Durable, Journal, Retry, Supervisor, attempt_key

SLOTS = 400
WORKERS = 8
KILL_AFTER = 60  # the call after which the test kills the process it watches
LEASE = 2.0
PAUSE = 0.002  # seconds a call takes, times 1, 2 or 3
ROOT = Path(__file__).resolve().parents[2]


def attempts(slot: int) -> int:
    """How many calls slot ``slot`` takes: every fifth fails its first attempt."""
    return 2 if slot % 5 == 1 else 1


def worker_for(log: int | None, pause: float = PAUSE) -> Any:
    made = [0]
    pid = os.getpid()

    async def worker(slot: int) -> str:
        key = attempt_key()
        assert key is not None
        if log is not None:
            os.write(log, f"S {slot} {pid} {time.time()!r}\n".encode())
            made[0] += 1
            if made[0] == KILL_AFTER:
                print(f"called {KILL_AFTER}", flush=True)
        try:
            await trio.sleep(pause * (1 + slot % 3))
        finally:
            if log is not None:
                os.write(log, f"E {slot} {pid} {time.time()!r}\n".encode())
        if attempts(slot) > key.attempt:
            raise ValueError(f"slot {slot} attempt {key.attempt}")
        return f"out-{slot}"

    return worker


class Call(NamedTuple):
    """One line of a log: a call started (``S``) or ended (``E``)."""

    kind: str
    slot: int
    pid: int
    at: float


def calls(logs: Iterable[Path]) -> list[Call]:
    """Every line of ``logs``, in the order of their times."""
    found = []
    for log in logs:
        for line in log.read_text().splitlines():
            kind, slot, pid, at = line.split()
            found.append(Call(kind, int(slot), int(pid), float(at)))
    return sorted(found, key=lambda call: call.at)


def outcome(results: Any) -> list[list[Any]]:
    return [[r.subtask, r.status.value, r.output, r.attempts] for r in results]


def expected(slots: int = SLOTS) -> list[list[Any]]:
    """A run never killed, without a journal, on virtual time."""

    async def main() -> list[list[Any]]:
        supervisor = Supervisor(worker_for(None), max_workers=WORKERS, retry=Retry(attempts=2))
        return outcome(await supervisor.run(range(slots), durable=Durable("shared")))

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def spawn(
    target: str,
    log: Path,
    slots: int = SLOTS,
    capacity: int = 0,
    lease: float = LEASE,
    pause: float = PAUSE,
) -> subprocess.Popen[str]:
    """A child on ``target``'s run, its journal open (it said ``ready``): ``go`` starts it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.library.lease_child", target, str(log)]
        + [str(value) for value in (slots, capacity, lease, pause)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    said = child.stdout.readline().strip()
    assert said == "ready", (said, child.stderr.read() if child.stderr else "")
    return child


def go(child: subprocess.Popen[str]) -> None:
    """Start ``child``'s run."""
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


async def main(
    target: str, log_path: str, slots: int, capacity: int, lease: float, pause: float
) -> list[list[Any]]:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    meters = [Capacity(capacity, shared="endpoint")] if capacity else []
    with Journal(target, interval=0.01, count=16, lease=lease) as journal:
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.readline)
        supervisor = Supervisor(
            worker_for(log, pause), max_workers=WORKERS, retry=Retry(attempts=2), meters=meters
        )
        aggregate = await supervisor.run(range(slots), durable=Durable("shared", journal))
    return outcome(aggregate)


if __name__ == "__main__":
    target, log_path, *rest = sys.argv[1:]
    slots, capacity, lease, pause = (
        (int(rest[0]), int(rest[1]), float(rest[2]), float(rest[3]))
        if rest
        else (SLOTS, 0, LEASE, PAUSE)
    )
    print(json.dumps(trio.run(main, target, log_path, slots, capacity, lease, pause)), flush=True)
