"""The journal's command line shows the runs a journal holds: ``runs`` counts each run's slots
by how they ended (and those running now, under a live lease), ``show`` draws a run's slots from
the journal alone, ``gc`` removes finished runs older than a duration and nothing running or
parked; ``runs`` and ``show`` never write (an older journal stays as it was); every bad
argument is one line and exit status 1."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.library.stores import OLD_TABLES
from trio_supervisor import Durable, Journal, Supervisor, approval
from trio_supervisor.journal import main as journal_main

ROOT = Path(__file__).resolve().parents[2]


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


async def worker(n: int) -> int:
    await trio.sleep(n)
    if n == 3:
        raise KeyError(n)
    if n == 5:
        await approval(f"ship {n}?")
    return n * n


def journaled(path: Path) -> None:
    """Two runs in ``path``: ``mixed`` (one slot failed, one parked) and ``clean``."""

    async def main() -> None:
        with Journal(path, writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            await supervisor.run([1, 2, 3, 4, 5], durable=Durable("mixed", journal))
            await supervisor.run([1, 2], durable=Durable("clean", journal))

    virtual(main)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = journal_main(list(argv))
    except SystemExit as exit:
        status = exit.code  # type: ignore[assignment]  # the parser's: an int
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status, out, err = cli(capsys, *argv)
    assert (status, out) == (1, "")
    (line,) = err.splitlines()
    return line


def test_runs_counts_each_runs_slots_by_how_they_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    journaled(path)
    status, out, _ = cli(capsys, "runs", str(path))
    assert status == 0
    heading, clean, mixed = out.splitlines()
    assert heading.split() == [
        "run",
        "plan",
        "done",
        "failed",
        "parked",
        "running",
        "last",
        "activity",
    ]
    assert clean.split()[:6] == ["clean", "2", "2", "0", "0", "0"]
    assert mixed.split()[:6] == ["mixed", "5", "3", "1", "1", "0"]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert mixed.split()[6] == today
    assert mixed.endswith(" UTC")


def test_a_live_lease_counts_as_running_and_an_expired_one_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    journaled(path)
    now = time.time()
    with sqlite3.connect(path) as conn:  # two supervisors hold slots (a range of 3, 1 run out)
        conn.execute("INSERT INTO runs VALUES ('busy', 0, NULL, NULL, ?)", (now,))
        conn.execute("INSERT INTO leases VALUES ('busy', 0, 0, 2, 'a', ?, ?)", (now, now + 60))
        conn.execute("INSERT INTO leases VALUES ('busy', 0, 3, 3, 'b', ?, ?)", (now - 90, now - 30))
    conn.close()
    _, out, _ = cli(capsys, "runs", str(path))
    busy = next(line for line in out.splitlines() if line.startswith("busy"))
    assert busy.split()[:6] == ["busy", "?", "0", "0", "0", "3"]
    status, out, _ = cli(capsys, "gc", str(path), "--older-than", "0s")
    assert status == 0
    assert [line.split(":")[0] for line in out.splitlines()] == ["removed clean"]
    _, out, _ = cli(capsys, "runs", str(path))
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["busy", "mixed"]


def test_show_draws_every_slot_of_a_run_from_the_journal_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    journaled(path)
    status, out, _ = cli(capsys, "show", str(path), "mixed")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["slot", "subtask", "timeline"]
    ends = {line.split()[0]: line for line in lines[1:6]}
    assert "✓ ok" in ends["0"]
    assert "✗ failed" in ends["2"]
    assert "awaiting approval" in ends["4"]
    # slot 0 ran 1 s, slot 2 3 s: drawn to the same scale, on the journal's clocks
    assert ends["2"].count("█") == pytest.approx(3 * ends["0"].count("█"), abs=2)


def test_gc_removes_only_finished_runs_older_than_the_duration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    journaled(path)
    status, out, _ = cli(capsys, "gc", str(path), "--older-than", "7d")
    assert (status, out) == (0, "no finished run last active more than 7d ago\n")
    status, out, _ = cli(capsys, "gc", str(path), "--older-than", "0s")
    assert status == 0
    assert out.startswith("removed clean: 2 slots (2 done, 0 failed), last active ")
    assert out.count("\n") == 1  # the parked run stays
    with Journal(path) as journal:
        assert journal.runs() == ["mixed"]
        assert journal.results("clean") == []
        assert len(journal.results("mixed")) == 5


OLD_SCHEMA = (
    OLD_TABLES
    + """
INSERT INTO runs VALUES ('old', 0, NULL, NULL, 1000.0);
INSERT INTO results VALUES ('old', 0, 0, '7', 'ok', '49', NULL, NULL, 2, 0.0, 1.0);
"""
)


def test_runs_and_show_read_an_older_journal_and_never_write_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_SCHEMA)
    conn.close()
    before = path.read_bytes()
    status, out, _ = cli(capsys, "runs", str(path))
    assert status == 0
    assert out.splitlines()[1].split() == [
        "old",
        "?",
        "1",
        "0",
        "0",
        "0",
        "1970-01-01",
        "00:16:40",
        "UTC",
    ]
    status, out, _ = cli(capsys, "show", str(path), "old")
    assert status == 0
    assert "✓ ok" in out
    assert "slot 0: 2 attempts" in out
    assert path.read_bytes() == before  # not migrated: only a writer adds what it lacks
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("old.db")) in (
        ["old.db"],
        ["old.db", "old.db-shm", "old.db-wal"],  # a reader of a WAL file may leave these
    )


def test_every_bad_argument_is_one_line_and_exit_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    journaled(path)
    missing = str(tmp_path / "missing.db")
    for command in (
        ["runs", missing],
        ["show", missing, "r"],
        ["gc", missing, "--older-than", "1d"],
    ):
        assert refused(capsys, *command) == f"error: no journal at {missing}"
    assert not Path(missing).exists()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()
    for command in (["runs", str(other)], ["show", str(other), "r"]):
        assert refused(capsys, *command).startswith(f"error: {other} is not a journal")
    assert refused(capsys, "show", str(path), "nope") == (
        f"error: no run 'nope' in {path} (its runs: clean, mixed)"
    )
    for duration in ("7", "d", "-1d", "1y", "1.d"):
        line = refused(capsys, "gc", str(path), f"--older-than={duration}")
        assert "a duration is a number and a unit, s, m, h, d or w" in line, line
    assert "the following arguments are required: --older-than" in refused(capsys, "gc", str(path))


def test_the_command_runs_as_a_module_in_a_process_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    journaled(path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "trio_supervisor.journal", "runs", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["run", "clean", "mixed"]
    bad = subprocess.run(
        [sys.executable, "-m", "trio_supervisor.journal", "show", str(path), "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert (bad.returncode, bad.stderr.count("\n")) == (1, 1)


def test_show_names_which_supervisor_ran_which_slot_of_a_shared_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"

    async def main() -> None:
        async def share(journal: Journal) -> None:
            async def quick(n: int) -> int:
                await trio.sleep(1 + n % 3)
                return n

            await Supervisor(quick, max_workers=2).run(range(20), durable=Durable("r", journal))

        with Journal(path, writer="inline") as a, Journal(path, writer="inline") as b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(share, a)
                nursery.start_soon(share, b)

    virtual(main)
    status, out, _ = cli(capsys, "show", str(path), "r")
    assert status == 0
    ran = [line for line in out.splitlines() if line.startswith("run by ")]
    assert len(ran) == 2
    slots = [int(slot) for line in ran for slot in line.split(": slots ")[1].split(", ")]
    assert sorted(slots) == list(range(20))  # each slot by one of the two
