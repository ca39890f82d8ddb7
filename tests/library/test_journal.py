"""The journal: results kept in SQLite, resumed runs and streams, the plan check, the codec, the
idempotency key."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from trio_supervisor import (
    AttemptKey,
    Backoff,
    Durable,
    Journal,
    Restarts,
    Retry,
    Status,
    Supervisor,
    Trace,
    attempt_key,
)


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


class Worker:
    """Squares its subtask after ``subtask / 10`` seconds; fails the subtasks in ``fail``;
    counts its calls and keeps each call's attempt key."""

    def __init__(self, fail: set[int] | None = None) -> None:
        self.fail = fail or set()
        self.calls: Counter[int] = Counter()
        self.keys: list[AttemptKey | None] = []

    async def __call__(self, n: int) -> int:
        self.calls[n] += 1
        self.keys.append(attempt_key())
        await trio.sleep(n / 10)
        if n in self.fail:
            raise KeyError(n)
        return n * n


def rows(path: Path, sql: str = "SELECT run_id, round, slot, status FROM results") -> list[Any]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql + " ORDER BY 1, 2, 3").fetchall()


def test_a_run_is_journaled_in_a_wal_database_the_sqlite3_module_reads(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    worker = Worker(fail={2})

    async def main() -> None:
        with Journal(path) as journal:
            await Supervisor(worker, max_workers=2).run([1, 2, 3], durable=Durable("r", journal))

    virtual(main)
    assert rows(path) == [("r", 0, 0, "ok"), ("r", 0, 1, "failed"), ("r", 0, 2, "ok")]
    full = rows(
        path,
        "SELECT slot, subtask, output, error_type, error, attempts, started, finished FROM results",
    )
    assert full[0] == (0, "1", "1", None, None, 1, 0.0, 0.1)
    assert full[1][2:6] == (None, "KeyError", "KeyError: 2", 1)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        ((run_id, round_, fingerprint, started),) = conn.execute(
            "SELECT run_id, round, fingerprint, started FROM runs"
        ).fetchall()
    assert (run_id, round_, len(fingerprint)) == ("r", 0, 32)
    assert started > 0


def test_keep_failed_keeps_a_failed_result_instead_of_running_it_again(tmp_path: Path) -> None:
    worker = Worker(fail={2})

    async def main() -> tuple[Any, Any]:
        with Journal(tmp_path / "runs.db", keep_failed=True) as journal:
            supervisor = Supervisor(worker, max_workers=2)
            first = await supervisor.run([1, 2], durable=Durable("r", journal))
            again = await supervisor.run([1, 2], durable=Durable("r", journal))
        return first, again

    first, again = virtual(main)
    assert worker.calls == {1: 1, 2: 1}
    assert (again[1].status, again[1].error, again[1].attempts) == (
        Status.FAILED,
        "KeyError: 2",
        1,
    )
    assert again[1].started == first[1].started


def test_a_failed_record_is_replaced_by_the_result_of_the_resume_and_an_ok_one_never(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    worker = Worker(fail={2})

    async def main() -> None:
        with Journal(path) as journal:
            supervisor = Supervisor(worker, max_workers=2)
            await supervisor.run([1, 2], durable=Durable("r", journal))
            worker.fail.clear()
            await supervisor.run([1, 2], durable=Durable("r", journal))
            ok = journal.results("r")
            journal.record(("r", 0), 1, ok[0])  # a second write of an OK slot: a no-op
            await journal.committed()

    virtual(main)
    assert rows(path, "SELECT slot, status, output FROM results") == [
        (0, "ok", "1"),
        (1, "ok", "4"),
    ]


def test_a_different_plan_under_the_same_run_id_is_refused_before_any_work(
    tmp_path: Path,
) -> None:
    worker = Worker()

    async def main() -> None:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            await supervisor.run([1, 2, 3], durable=Durable("r", journal))
            worker.calls.clear()
            with pytest.raises(ValueError, match=r"slot 1 was 2, now 5"):
                await supervisor.run([1, 5, 3], durable=Durable("r", journal))
            with pytest.raises(ValueError, match=r"it had 3 slots, now 4"):
                await supervisor.run([1, 2, 3, 4], durable=Durable("r", journal))
            with pytest.raises(ValueError, match=r"slot 1 was 2, now 5"):
                async with supervisor.stream([1, 5], durable=Durable("r", journal)):
                    pass

    virtual(main)
    assert not worker.calls


def test_a_resumed_stream_yields_its_journaled_results_in_plan_order_without_running_them(
    tmp_path: Path,
) -> None:
    worker = Worker()

    async def lazy(n: int) -> Any:
        for i in range(1, n + 1):
            yield i

    async def main() -> tuple[list[Any], list[Any]]:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            async with supervisor.stream(lazy(5), durable=Durable("s", journal)) as results:
                first = []
                async for result in results:
                    first.append(result)
                    if len(first) == 3:
                        break
            await journal.committed()
            trace = Trace()
            async with supervisor.stream(
                lazy(5), durable=Durable("s", journal), trace=trace
            ) as results:
                again = [result async for result in results]
            assert [slot.journaled for slot in trace.slots][:3] == [True, True, True]
            assert [worker.calls[n] for n in (1, 2, 3)] == [1, 1, 1]  # delivered: not again
        return first, again

    first, again = virtual(main)
    assert [r.output for r in again] == [1, 4, 9, 16, 25]
    assert again[:3] == first


def test_the_restarting_path_is_journaled_and_resumed_too(tmp_path: Path) -> None:
    worker = Worker(fail={2})

    async def main() -> tuple[Any, Any]:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(
                worker, max_workers=2, restarts=Restarts(strategy="one_for_all")
            )
            first = await supervisor.run([1, 2, 3], durable=Durable("r", journal))
            worker.fail.clear()
            again = await supervisor.run([1, 2, 3], durable=Durable("r", journal))
        return first, again

    first, again = virtual(main)
    assert worker.calls == {1: 1, 2: 2, 3: 1}
    assert [r.output for r in again] == [1, 4, 9]
    assert again[0] == first[0]
    assert again[2] == first[2]


class Opaque:
    pass


def test_an_output_the_codec_cannot_encode_names_the_slot_its_type_and_the_fix(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"

    async def worker(n: int) -> Any:
        await trio.sleep(n)
        return Opaque() if n == 3 else n

    async def main() -> None:
        with Journal(path) as journal, pytest.raises(TypeError) as caught:
            await Supervisor(worker, max_workers=1).run([1, 2, 3], durable=Durable("r", journal))
        message = str(caught.value)
        assert "slot 2's output, a Opaque" in message
        assert "Journal(codec=" in message

    virtual(main)
    assert rows(path) == [("r", 0, 0, "ok"), ("r", 0, 1, "ok")]  # nothing before is lost


def test_a_codec_given_encodes_and_decodes_the_outputs(tmp_path: Path) -> None:
    class Tuples:
        name = "tuples"

        def encode(self, value: Any) -> str:
            return repr(value)

        def decode(self, data: str | bytes) -> Any:
            return tuple(int(x) for x in str(data).strip("()").split(",") if x.strip())

    async def worker(n: int) -> tuple[int, int]:
        return (n, n)

    async def main() -> tuple[Any, Any]:
        with Journal(tmp_path / "runs.db", codec=Tuples()) as journal:
            supervisor = Supervisor(worker, max_workers=1)
            first = await supervisor.run([1, 2], durable=Durable("r", journal))
            again = await supervisor.run([1, 2], durable=Durable("r", journal))
        return first, again

    first, again = virtual(main)
    assert first == again
    assert again[1].output == (2, 2)


def test_each_attempt_reads_its_key_and_no_key_outside_a_named_run(tmp_path: Path) -> None:
    worker = Worker(fail={2})

    async def main() -> None:
        supervisor = Supervisor(
            worker, max_workers=2, retry=Retry(attempts=2, backoff=Backoff(0, 0))
        )
        await supervisor.run([1, 2], durable=Durable("k"))
        await supervisor.run([1])
        restarting = Supervisor(worker, max_workers=2, restarts=Restarts(max_restarts=5, within=10))
        await restarting.run([3], durable=Durable("z"))

    virtual(main)
    assert worker.keys == [
        AttemptKey("k", 0, 0, 1),
        AttemptKey("k", 0, 1, 1),
        AttemptKey("k", 0, 1, 2),
        None,
        AttemptKey("z", 0, 0, 1),
    ]
    assert attempt_key() is None
    assert str(worker.keys[2]) == "k/0/1/2"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"flush": "sometimes"}, 'flush must be "group" or "each"'),
        ({"interval": 0}, "interval must be a positive number"),
        ({"count": 0}, "count must be an int >= 1"),
    ],
)
def test_a_journal_states_its_rule_for_a_bad_option(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Journal(tmp_path / "runs.db", **options)


def test_a_durable_states_its_rule_for_a_bad_journal_or_run_id(tmp_path: Path) -> None:
    with Journal(tmp_path / "runs.db") as journal:
        for run_id in ("", None, 7):
            with pytest.raises(TypeError, match=r"^Durable run_id must be a non-empty str, got"):
                Durable(run_id, journal)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^Durable journal must be a Journal or None, got str"):
            Durable("r", "runs.db")  # type: ignore[arg-type]


def test_a_run_or_stream_refuses_anything_but_a_durable(tmp_path: Path) -> None:
    worker = Worker()

    async def main() -> None:
        supervisor = Supervisor(worker, max_workers=1)
        refused = r"^durable must be a Durable \(Durable\(run_id\) or Durable\(run_id, journal\)\)"
        with pytest.raises(TypeError, match=refused):
            await supervisor.run([1], durable="r")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=refused):
            supervisor.stream([1], durable="r")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=refused):
            await supervisor.replan("t", None, durable="r")  # type: ignore[arg-type]

    virtual(main)
    assert not worker.calls


def test_a_closed_journal_says_so(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "runs.db")
    journal.close()
    journal.close()  # twice: nothing

    async def main() -> None:
        with pytest.raises(RuntimeError, match="is closed"):
            await Supervisor(Worker(), max_workers=1).run([1], durable=Durable("r", journal))

    virtual(main)


def test_the_schema_the_docstring_shows_is_the_schema_the_journal_makes(tmp_path: Path) -> None:
    doc = Journal.__doc__ or ""
    shown = doc[doc.index("```sql") + len("```sql") : doc.index("```", doc.index("```sql") + 6)]

    def tables(sql: str) -> dict[str, list[tuple[Any, ...]]]:
        with sqlite3.connect(":memory:") as conn:
            conn.executescript(sql)
            names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
            return {
                name: conn.execute(f"PRAGMA table_xinfo({name})").fetchall()
                for name in names
                if not name.startswith("sqlite_")
            }

    Journal(tmp_path / "made.db").close()
    with sqlite3.connect(tmp_path / "made.db") as conn:
        made = "".join(row[0] + ";\n" for row in conn.execute("SELECT sql FROM sqlite_master"))
    assert tables(shown) == tables(made)
    assert set(tables(shown)) == {
        "runs",
        "decisions",
        "approvals",
        "results",
        "leases",
        "places",
        "buckets",
    }


def test_the_restarting_path_journals_what_finished_before_its_deadline(tmp_path: Path) -> None:
    worker = Worker()

    async def main() -> Any:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(
                worker, max_workers=2, restarts=Restarts(max_restarts=3, within=60)
            )
            first = await supervisor.run([1, 2, 30], durable=Durable("r", journal), deadline=1)
            again = await supervisor.run([1, 2, 30], durable=Durable("r", journal))
        return first, again

    first, again = virtual(main)
    assert [r.status for r in first] == [Status.OK, Status.OK, Status.CANCELLED]
    assert worker.calls == {1: 1, 2: 1, 30: 2}
    assert again[:2] == first[:2]
    assert again[2].output == 900
