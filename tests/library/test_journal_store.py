"""The journal's store: what it keeps comes back equal, whatever text a result holds; a file
that is not a journal is refused before any work and left as it was; a closed journal holds
its data in its main file; its command line answers every mistake in one line."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from trio_supervisor import Durable, Hedge, Journal, Status, SubResult, Supervisor, approval
from trio_supervisor.journal import main as journal_main

NAME = os.fsdecode(b"caf\xe9.txt")  # a file name that is not UTF-8: a lone surrogate


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


async def files(n: int) -> str:
    await trio.sleep(n)
    if n == 2:
        raise OSError(f"cannot read {NAME}")
    return NAME if n == 1 else f"file {n}"


def test_an_output_and_an_error_holding_a_lone_surrogate_are_kept_and_come_back_equal(
    tmp_path: Path,
) -> None:
    calls: list[int] = []

    async def worker(n: int) -> str:
        calls.append(n)
        return await files(n)

    async def main() -> tuple[Any, Any, Any]:
        with Journal(tmp_path / "runs.db", keep_failed=True) as journal:
            supervisor = Supervisor(worker, max_workers=2)
            first = await supervisor.run([0, 1, 2, 3], durable=Durable("r", journal))
            again = await supervisor.run([0, 1, 2, 3], durable=Durable("r", journal))
            kept = journal.results("r")
        return first, again, kept

    first, again, kept = virtual(main)
    assert first[1].output == NAME
    assert first[2].error == f"OSError: cannot read {NAME}"
    assert again == first
    assert calls == [0, 1, 2, 3]  # every slot from the journal, the failed one too
    assert [r.output for r in kept] == ["file 0", NAME, None, "file 3"]
    assert kept[2].error == first[2].error


class Raw:
    """A codec that hands over text as it is, whatever SQLite can hold, and lists as they are."""

    name = "raw"

    def encode(self, value: Any) -> Any:
        return value

    def decode(self, data: str | bytes) -> Any:
        return data


@pytest.mark.parametrize(
    ("bad", "said"),
    [(NAME, "a str, cannot be encoded"), (["a", "list"], "a list, cannot be encoded")],
)
def test_a_codec_giving_what_sqlite_cannot_hold_fails_by_its_slot_and_the_journal_goes_on(
    tmp_path: Path, bad: Any, said: str
) -> None:
    async def worker(n: int) -> Any:
        await trio.sleep(n)
        return bad if n == 2 else f"out {n}"

    async def main() -> list[str | None]:
        with Journal(tmp_path / "runs.db", codec=Raw()) as journal:
            supervisor = Supervisor(worker, max_workers=1)
            with pytest.raises(TypeError) as caught:
                await supervisor.run([0, 1, 2, 3], durable=Durable("r", journal))
            assert f"slot 2's output, {said}" in str(caught.value)
            done = await supervisor.run([0, 1], durable=Durable("next", journal))
            assert [r.output for r in done] == ["out 0", "out 1"]  # the journal is open
            return [r.output for r in journal.results("r")]

    assert virtual(main) == ["out 0", "out 1"]  # what was journaled before stays


def test_a_row_the_database_refuses_costs_that_row_only_and_the_journal_stays_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commit thread's own guard: a row that passes the checks of ``record`` and still fails
    (here a start time SQLite cannot hold) loses that row, not its group nor the journal."""
    run = ("r", 0)
    with Journal(tmp_path / "runs.db", interval=60, count=10) as journal:
        journal.record(run, 0, SubResult(0, output="a"))
        journal.record(run, 1, SubResult(1, output="b", started=2**70))
        journal.record(run, 2, SubResult(2, output="c"))
        with pytest.raises(RuntimeError, match="slot 1 of run 'r' round 0 could not be"):
            trio.run(journal.committed)
        assert [r.output for r in journal.results("r")] == ["a", "c"]
        journal.record(run, 3, SubResult(3, output="d"))
        trio.run(journal.committed)
        assert len(journal.results("r")) == 3
    assert "Traceback" not in capsys.readouterr().err


def test_a_run_id_sqlite_cannot_hold_is_refused_before_any_work(tmp_path: Path) -> None:
    async def main() -> None:
        with (
            Journal(tmp_path / "runs.db") as journal,
            pytest.raises(ValueError, match="run_id must be text SQLite holds"),
        ):
            await Supervisor(files, max_workers=1).run([0], durable=Durable(NAME, journal))

    virtual(main)


def test_a_hedged_slot_comes_back_from_the_journal_with_its_hedges(tmp_path: Path) -> None:
    slow = {3}

    async def agent(n: int) -> int:
        delay = 10 if n in slow else 1
        slow.discard(n)
        await trio.sleep(delay)
        return n

    async def main() -> tuple[Any, Any]:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(agent, max_workers=20, hedge=Hedge(after=2.0))
            first = await supervisor.run(range(10), durable=Durable("h", journal))
            again = await supervisor.run(range(10), durable=Durable("h", journal))
        return first, again

    first, again = virtual(main)
    assert first[3].hedges == 1
    assert again[3].hedges == 1
    assert first == again


def test_a_hedged_slot_of_a_lazy_stream_comes_back_from_the_journal_as_it_was(
    tmp_path: Path,
) -> None:
    """A lazy stream's journaled results are read before their subtasks are pulled, then given
    their subtask: every other field, its hedges among them, as journaled."""
    slow = {3}

    async def agent(n: int) -> int:
        delay = 10 if n in slow else 1
        slow.discard(n)
        await trio.sleep(delay)
        return n

    async def main() -> tuple[list[Any], list[Any]]:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(agent, max_workers=20, hedge=Hedge(after=2.0))
            runs = []
            for _ in range(2):
                async with supervisor.stream(iter(range(10)), durable=Durable("s", journal)) as out:
                    runs.append([result async for result in out])
        return runs[0], runs[1]

    first, again = virtual(main)
    assert first[3].hedges == 1
    assert again[3].hedges == 1
    assert first == again


def untouched(path: Path, before: bytes) -> None:
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_file_that_is_not_sqlite_is_refused_in_one_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database, " * 100)
    with pytest.raises(ValueError, match=f"^{path} is not a journal: not a SQLite database"):
        Journal(path)
    untouched(path, path.read_bytes())


def test_a_path_that_is_no_file_name_is_refused_saying_which_and_why(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="path must be a str or a path, got int 123"):
        Journal(123)  # type: ignore[arg-type]
    with pytest.raises(IsADirectoryError, match=f"the journal {tmp_path} is a directory"):
        Journal(tmp_path)
    missing = tmp_path / "no" / "runs.db"
    with pytest.raises(FileNotFoundError, match=f"its folder {missing.parent} does not exist"):
        Journal(missing)
    assert list(tmp_path.iterdir()) == []


async def parks(order: str) -> str:
    await approval(f"refund order {order}?")
    return "refunded"


def parked(path: Path, writer: str = "thread") -> None:
    async def main() -> None:
        with Journal(path, writer=writer) as journal:
            done = await Supervisor(parks, max_workers=2).run(
                ["7", "8"], durable=Durable("r", journal)
            )
        assert [r.status for r in done] == [Status.AWAITING_APPROVAL] * 2

    virtual(main)


@pytest.mark.parametrize("writer", ["thread", "inline"])
def test_a_closed_journal_holds_its_data_in_its_main_file(tmp_path: Path, writer: str) -> None:
    path = tmp_path / "runs.db"
    parked(path, writer)
    assert not Path(f"{path}-wal").exists()
    copy = tmp_path / "copy" / "runs.db"
    copy.parent.mkdir()
    shutil.copy(path, copy)  # the main file only
    with Journal(copy) as journal:
        assert [q[2] for q in journal.pending("r")] == ["refund order 7?", "refund order 8?"]
    assert journal_main(["approve", str(path), "r", "0", "--by", "ana"]) == 0
    shutil.copy(path, copy)
    with Journal(copy) as journal:
        assert [q[2] for q in journal.pending("r")] == ["refund order 8?"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = journal_main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err


def one_line(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    status, err = cli(capsys, *argv)
    assert status == 1
    (line,) = err.splitlines()
    assert line.startswith("error: ")
    return line


def test_the_command_line_refuses_a_file_that_is_not_a_journal_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database, " * 100)
    assert "is not a journal: not a SQLite database" in one_line(capsys, "pending", str(text), "r")
    app = tmp_path / "app.db"
    with sqlite3.connect(app) as conn:
        conn.execute("CREATE TABLE results (name TEXT)")
    conn.close()
    assert "its table results lacks" in one_line(capsys, "approve", str(app), "r", "0")
    empty = tmp_path / "empty.db"
    empty.touch()
    for command in ("pending", "approve"):
        argv = [command, str(empty), "r", *(["0", "--by", "ana"] if command == "approve" else [])]
        assert f"{empty} is not a journal: it holds no table" in one_line(capsys, *argv)
        assert empty.read_bytes() == b""
        assert one_line(capsys, *[a.replace("empty", "none") for a in argv]) == (
            f"error: no journal at {tmp_path / 'none.db'}"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "empty.db", "notes.txt"]


def test_the_command_line_says_an_unknown_run_and_refuses_an_empty_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    parked(path)
    assert one_line(capsys, "pending", str(path), "nobody") == (
        f"error: no run 'nobody' in {path} (its runs: r)"
    )
    assert "by must be a non-empty str" in one_line(
        capsys, "approve", str(path), "r", "0", "--by", ""
    )
    big = str(2**64)
    for argv in (["r", big], ["r", "0", "--round", big], ["r", "planner", "--round", "-1"]):
        with pytest.raises(SystemExit) as refused:  # a command that does not parse: one line
            journal_main(["approve", str(path), *argv, "--by", "ana"])
        assert refused.value.code == 1
        said = capsys.readouterr().err.splitlines()
        assert len(said) == 1
        assert "from 0 to 2**63-1" in said[0]
    assert cli(capsys, "pending", str(path), "r")[0] == 0


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes read-only files")
def test_the_command_line_refuses_a_read_only_journal_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    parked(path)
    path.chmod(0o444)
    assert str(path) in one_line(capsys, "approve", str(path), "r", "0", "--by", "ana")
