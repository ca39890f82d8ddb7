"""Real kills: a child Python runs a 1,000-slot journaled run on disk and is killed with SIGKILL
at random instants, each followed by a resume in a fresh process. The final aggregate equals an
uninterrupted run's; no slot with a committed OK result runs again; the database stays sound."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.library import journal_child
from trio_supervisor import Durable, Retry, Supervisor

ROOT = Path(__file__).resolve().parents[2]


def expected() -> list[list[Any]]:
    """The uninterrupted run's outcome, in process, on virtual time, without a journal."""
    log = os.open(os.devnull, os.O_WRONLY)

    async def main() -> list[list[Any]]:
        supervisor = Supervisor(
            journal_child.worker_for(log),
            max_workers=journal_child.WORKERS,
            retry=Retry(attempts=2),
        )
        aggregate = await supervisor.run(range(journal_child.SLOTS), durable=Durable("kills"))
        return journal_child.outcome(aggregate)

    try:
        return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    finally:
        os.close(log)


def ok_slots(db: Path) -> set[int]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {row[0] for row in conn.execute("SELECT slot FROM results WHERE status = 'ok'")}


def started(log: Path) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_run_killed_at_random_instants_and_resumed_equals_the_run_never_killed(
    tmp_path: Path,
) -> None:
    db, out = tmp_path / "journal.db", tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    draw = random.Random(22)
    kills = 0
    committed: set[int] = set()
    for attempt in range(40):
        log = tmp_path / f"calls-{attempt}.log"
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.library.journal_child", str(db), str(log), str(out)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started"
        if kills < 10:
            time.sleep(draw.uniform(0.0, 0.08))
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        ran = started(log)
        assert not committed & set(ran), "a slot with a committed OK result ran again"
        if child.returncode == 0:
            break
        assert child.returncode == -signal.SIGKILL
        kills += 1
        now = ok_slots(db)
        assert committed <= now  # nothing committed is lost
        committed = now
    assert kills >= 10
    assert json.loads(out.read_text()) == expected()
    assert len(ok_slots(db)) == sum(1 for row in expected() if row[1] == "ok")


def test_two_processes_starting_one_new_run_on_one_new_file_both_open_and_finish(
    tmp_path: Path,
) -> None:
    """The durable laws with two processes: each pair starts the same new run on a new file at
    one instant (each child waits for a line before it opens the journal, and before it runs).
    Both open it, both finish with the uninterrupted run's outcome (the work may be done twice),
    no error; the journal holds each slot once."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    want = expected()
    for pair in range(10):
        db = tmp_path / f"journal-{pair}.db"
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.library.journal_child",
                    str(db),
                    str(tmp_path / f"calls-{pair}-{n}.log"),
                    str(tmp_path / f"out-{pair}-{n}.json"),
                    "--together",
                ],
                cwd=ROOT,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(2)
        ]
        try:
            for said in ("ready", "opened"):
                for child in children:
                    assert child.stdout is not None
                    assert child.stdout.readline().strip() == said
                for child in children:
                    assert child.stdin is not None
                    child.stdin.write("go\n")
                    child.stdin.flush()
            ends = [child.communicate(timeout=60) for child in children]
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait(timeout=10)
        for n, (child, (_, err)) in enumerate(zip(children, ends, strict=True)):
            assert (child.returncode, err) == (0, ""), f"pair {pair} child {n}: {err}"
            assert json.loads((tmp_path / f"out-{pair}-{n}.json").read_text()) == want
        with sqlite3.connect(db) as conn:
            kept = conn.execute("SELECT slot, status FROM results ORDER BY slot").fetchall()
        conn.close()
        assert kept == [(slot, row[1]) for slot, row in enumerate(want)]
