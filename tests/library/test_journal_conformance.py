"""The journal's conformance suite: every durable law, run against each store (a SQLite file, and
a database of its own on a real PostgreSQL server on loopback; see ``stores.py``).

- resume equals a run never killed: a Hypothesis property on virtual time, the run cut at a
  random instant and its journal closed with ``flush=False``, which drops what it had not
  committed yet, as a killed process would; what the database holds then is what a resume
  finds. The journal writes inline (``writer="inline"``), so that its group commits fall at
  virtual instants too; the writer thread meets real kills in ``test_journal_kills.py``;
- each slot recorded once, a final OK row never changed, whoever else runs the same run;
- a resumed run, stream or re-planning run runs only what was not journaled;
- a run_id names one plan: another is refused before any work, naming where it differs;
- the approval gate: a question parks its slot, the command line (another process) answers it,
  once, and the resume finishes it;
- a foreign or damaged database is refused before any work, in one line, and left as it was;
  a journal of an earlier version gains what it lacks.

The leases' laws on virtual time (two supervisors on one run call each worker once; a hung
owner's slot taken over only once its lease ran out, never overwritten; a lost lease stops its
attempt) take the same ``database`` fixture, in ``test_journal_leases.py`` beside their helpers;
so do the laws of limits shared across processes (a shared capacity never exceeded across
journals on one database, a holder that stops renewing losing its places after one lease, a
shared rate limit, places given back on every exit path), in ``test_shared_meters.py``; and
the laws of four processes on one run under real SIGKILLs, in ``test_journal_kill_laws.py``.
"""

from __future__ import annotations

import socket
import sqlite3
from collections import Counter
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.library.stores import OLD_TABLES, Database, Databases
from tests.library.test_journal import Worker as Squares
from tests.library.test_journal_approval import Refunds, command, refund
from tests.library.test_journal_plans import CHECKED, WAYS, Worker, cut_short, streamed
from tests.library.test_journal_replan import Counted, replanned, said
from tests.library.test_replan import research_agent, research_planner
from trio_supervisor import (
    Aggregate,
    Backoff,
    Durable,
    Journal,
    Retry,
    Status,
    Supervisor,
    Trace,
    attempt_key,
)
from trio_supervisor._journal import open_store
from trio_supervisor._postgres import postgres_ddl
from trio_supervisor._store import tables
from trio_supervisor.journal import main as journal_main


class Plan:
    """A worker over slots: slot ``i`` takes ``latency[i]`` seconds an attempt and fails its
    first ``fails[i]`` attempts (by its attempt key, so a resumed slot fails as it did)."""

    def __init__(self, latency: list[float], fails: list[int]) -> None:
        self.latency = latency
        self.fails = fails
        self.calls: Counter[int] = Counter()

    async def __call__(self, slot: int) -> str:
        self.calls[slot] += 1
        key = attempt_key()
        assert key is not None
        assert key.slot == slot
        await trio.sleep(self.latency[slot])
        if key.attempt <= self.fails[slot]:
            raise KeyError(f"slot {slot} attempt {key.attempt}")
        return f"out-{slot}"


def outcome(aggregate: Aggregate[int, str]) -> list[tuple[Any, ...]]:
    """What a run decided for each slot (its times aside: a resume runs on a clock of its own)."""
    return [(r.subtask, r.status, r.output, r.error, r.attempts) for r in aggregate]


def committed(database: Database, run_id: str = "law") -> dict[int, tuple[Any, ...]]:
    found = database.query(
        "SELECT slot, run_id, round, subtask, status, output, error_type, error, attempts, "
        "started, finished FROM results WHERE run_id = ? ORDER BY slot",
        (run_id,),
    )
    return {row[0]: row for row in found}


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    size = draw(st.integers(1, 16))
    return {
        "latency": draw(
            st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0]), min_size=size, max_size=size)
        ),
        "fails": draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 5]), min_size=size, max_size=size)),
        "max_workers": draw(st.integers(1, 4)),
        "attempts": draw(st.integers(1, 3)),
        "crash": draw(st.floats(0, 1, exclude_max=True)),  # a fraction of the run's time
        "flush": draw(st.sampled_from(["group", "each"])),
        "count": draw(st.integers(1, 6)),
        "interval": draw(st.sampled_from([0.25, 1.0, 100.0])),
        "stream": draw(st.booleans()),
    }


async def execute(
    worker: Plan, options: dict[str, Any], journal: Journal | None, crash: float | None
) -> tuple[Aggregate[int, str] | None, float]:
    supervisor = Supervisor(
        worker,
        max_workers=options["max_workers"],
        retry=Retry(attempts=options["attempts"], backoff=Backoff(0.1, 1.0), seed=3),
    )
    plan = list(range(len(worker.latency)))
    durable = Durable("law", journal)  # "law": the keys the worker fails by
    with trio.move_on_after(crash if crash is not None else float("inf")):
        if options["stream"]:
            async with supervisor.stream(plan, durable=durable) as results:
                return Aggregate([result async for result in results]), trio.current_time()
        return await supervisor.run(plan, durable=durable), trio.current_time()
    return None, trio.current_time()


# -- resume equals a run never killed; each slot recorded once ----------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(options=runs())
def test_resume_after_crash_equals_run(databases: Databases, options: dict[str, Any]) -> None:
    database = databases.emptied()  # each example's store starts empty
    plain = Plan(options["latency"], options["fails"])
    expected, took = virtual(execute, plain, options, None, None)

    crashed = Plan(options["latency"], options["fails"])
    journal = Journal(
        database.target,
        flush=options["flush"],
        count=options["count"],
        interval=options["interval"],
        writer="inline",  # commits at virtual instants
    )
    virtual(execute, crashed, options, journal, options["crash"] * took)
    journal.close(flush=False)  # the crash: what was not committed is lost
    before = committed(database)
    event(
        "none committed"
        if not before
        else "all committed"
        if len(before) == len(options["latency"])
        else "part committed"
    )

    resumed = Plan(options["latency"], options["fails"])
    with Journal(database.target) as journal:
        result, _ = virtual(execute, resumed, options, journal, None)
    after = committed(database)

    assert result is not None
    assert outcome(result) == outcome(expected)  # resume after crash equals run
    kept = {slot for slot, row in before.items() if row[4] == "ok"}
    for slot in resumed.calls:  # re-executed: only slots with no OK record at the crash
        assert slot not in kept
    for slot in kept:
        assert resumed.calls[slot] == 0
        assert after[slot] == before[slot]  # a recorded result never changes
    for slot in set(before) - kept:  # a failed record: the slot ran again, or was kept
        assert crashed.calls[slot] > 0
    assert sorted(after) == list(range(len(options["latency"])))  # each slot once
    for slot in before:  # a committed slot had finished in the crashed run
        assert crashed.calls[slot] > 0


def test_two_journals_on_one_run_record_each_slot_once(database: Database) -> None:
    """Two supervisors (each its own journal, as two processes have) run the same run at once:
    both run every slot (nothing shares the work yet), and each slot is recorded once."""
    workers = [Squares(fail={3}), Squares(fail={3})]

    async def main() -> list[Any]:
        done: list[Any] = [None, None]
        with Journal(database.target) as one, Journal(database.target) as two:

            async def go(index: int, journal: Journal) -> None:
                supervisor = Supervisor(workers[index], max_workers=2)
                done[index] = await supervisor.run([1, 2, 3, 4], durable=Durable("r", journal))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(go, 0, one)
                nursery.start_soon(go, 1, two)
        return done

    first, second = virtual(main)
    assert [r.output for r in first] == [r.output for r in second] == [1, 4, None, 16]
    rows = database.query("SELECT slot, status FROM results WHERE run_id = 'r' ORDER BY slot")
    assert rows == [(0, "ok"), (1, "ok"), (2, "failed"), (3, "ok")]


@pytest.mark.parametrize("flush", ["group", "each"])
def test_a_resumed_run_runs_only_the_slots_without_an_ok_record(
    database: Database, flush: str
) -> None:
    worker = Squares(fail={2})
    plan = [1, 2, 3, 4]

    async def main() -> tuple[Any, Any, Trace]:
        with Journal(database.target, flush=flush) as journal:
            supervisor = Supervisor(worker, max_workers=2)
            first = await supervisor.run(plan, durable=Durable("r", journal))
            trace = Trace()
            again = await supervisor.run(plan, durable=Durable("r", journal), trace=trace)
        return first, again, trace

    first, again, trace = virtual(main)
    assert worker.calls == {1: 1, 2: 2, 3: 1, 4: 1}  # the failed slot, again; no other
    assert [r.output for r in again] == [1, None, 9, 16]
    assert again[1].status is Status.FAILED
    for slot in (0, 2, 3):  # from the journal: the original attempts and times
        assert again[slot] == first[slot]
    assert [slot.journaled for slot in trace.slots] == [True, False, True, True]
    assert trace.to_dict()["slots"][0]["journaled"] is True


class Pickled:
    """A codec of bytes (what the store keeps as a BLOB, or BYTEA), as pickle is."""

    name = "repr"

    def encode(self, value: Any) -> bytes:
        return repr(value).encode()

    def decode(self, data: str | bytes) -> Any:
        assert isinstance(data, bytes)
        return eval(data.decode())  # only what encode wrote


def test_outputs_of_every_kind_come_back_equal(database: Database) -> None:
    outputs = [{"a": [1, 2.5, None]}, "naïve ✓ \x00", [True, {"n": -(2**62)}], 1e300]
    for codec in (None, Pickled()):
        run_id = f"kinds-{codec is None}"

        async def worker(n: int) -> Any:
            return outputs[n]

        async def main(codec: Any = codec, run_id: str = run_id) -> tuple[Any, Any]:
            with Journal(database.target, codec=codec) as journal:
                supervisor = Supervisor(worker, max_workers=2)
                first = await supervisor.run([0, 1, 2, 3], durable=Durable(run_id, journal))
            with Journal(database.target, codec=codec) as journal:
                again = await supervisor.run([0, 1, 2, 3], durable=Durable(run_id, journal))
            return first, again

        first, again = virtual(main)
        assert [r.output for r in again] == outputs
        assert again == first


# -- a run_id names one plan; streams and re-planning runs resume -----------------------------


@pytest.mark.parametrize("first", list(WAYS))
@pytest.mark.parametrize("then", CHECKED)
def test_another_plan_under_a_known_run_id_is_refused_before_any_work(
    database: Database, first: str, then: str
) -> None:
    worker = Worker()

    async def main() -> None:
        with Journal(database.target, writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            await WAYS[first](supervisor, ["a", "b", "c"], journal)
            worker.calls.clear()
            with pytest.raises(ValueError, match=r"journaled with another (plan|input) \(slot 0 "):
                await WAYS[then](supervisor, ["p", "q", "r"], journal)
            assert not worker.calls  # refused before any work
            again = await WAYS[then](supervisor, ["a", "b", "c"], journal)
            assert again == [f"findings on {s}" for s in "abc"]

    virtual(main)
    if first != "lazy stream cut short":
        assert not worker.calls  # the same plan resumed: every slot from the journal


def test_a_lazy_stream_cut_short_is_checked_against_the_slots_it_journaled(
    database: Database,
) -> None:
    worker = Worker()

    async def main() -> None:
        with Journal(database.target, writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=1)
            await cut_short(supervisor, iter("abcdef"), journal, "s")
            with pytest.raises(ValueError, match=r"another input \(slot 0 was 'a', now 'x'\)"):
                await streamed(supervisor, iter("xbcdef"), journal, "s")
            outputs = await streamed(supervisor, iter("abcdefg"), journal, "s")  # longer: unknown
            assert outputs == [f"findings on {c}" for c in "abcdefg"]

    virtual(main)


def test_a_replan_killed_in_its_second_round_resumes_after_the_first(database: Database) -> None:
    writer = "inline"  # its commits at virtual instants
    path = database.target
    plain = virtual(replanned, Counted(research_agent()), Counted(research_planner()), None)
    assert plain is not None
    first, second = plain.ledger.rounds[0], plain.ledger.rounds[1]
    crash = (second.dispatched + second.finished) / 2  # the second round runs

    journal = Journal(path, writer=writer, interval=100.0, count=1000)
    worker, planner = Counted(research_agent()), Counted(research_planner())
    assert virtual(replanned, worker, planner, journal, crash) is None
    journal.close(flush=False)  # the crash
    assert planner.calls == {"first": 1, "next": 1}
    assert first.finished <= crash

    worker, planner = Counted(research_agent()), Counted(research_planner())
    with Journal(path, writer=writer) as journal:
        resumed = virtual(replanned, worker, planner, journal)
    assert resumed is not None
    assert said(resumed) == said(plain)
    assert planner.calls == {"next": 1}  # only the decision after the unfinished round
    assert set(worker.calls) == {entry.subtask for entry in second.entries}  # round 2 only

    with Journal(path, writer=writer) as journal:  # finished: nothing is asked or run again
        worker, planner = Counted(research_agent()), Counted(research_planner())
        again = virtual(replanned, worker, planner, journal)
    assert again is not None
    assert said(again) == said(plain)
    assert not planner.calls
    assert not worker.calls


# -- the approval gate ----------------------------------------------------------------------


def test_a_question_parks_its_slot_and_an_approval_from_another_process_finishes_it(
    database: Database,
) -> None:
    path = database.target
    worker = Refunds()
    traces: list[Trace] = []
    first = refund(path, worker, traces)
    assert [r.status for r in first] == [Status.OK, Status.AWAITING_APPROVAL, Status.OK]
    assert [slot.status for slot in traces[0].slots] == [r.status for r in first]
    assert first[1].error == "AwaitingApproval: refund $500 to order 1234"
    assert first[1].attempts == 1  # a question is not retried
    assert first.degraded
    with Journal(path) as journal:
        assert journal.pending("refunds") == [(0, 1, "refund $500 to order 1234")]
    assert command("pending", str(path), "refunds").stdout == (
        "round 0 slot 1: refund $500 to order 1234\n"
    )

    done = command("approve", str(path), "refunds", "1", "--by", "alice", "--note", "ok")
    assert (done.returncode, done.stdout) == (0, "refunds slot 1: approved\n")
    again = command("reject", str(path), "refunds", "1", "--by", "bob")
    assert again.returncode == 1
    assert again.stderr.startswith("error: run 'refunds' slot 1 was approved already, by alice")
    assert again.stderr.count("\n") == 1
    with Journal(path) as journal, pytest.raises(ValueError, match="approved already, by alice"):
        journal.approve("refunds", 1, by="carol")

    worker = Refunds()
    resumed = refund(path, worker, traces)
    assert [slot.journaled for slot in traces[1].slots] == [True, False, True]
    assert worker.calls == {"1234": 1}  # finished slots are never run again
    assert [r.output for r in resumed] == [
        "refunded 1233",
        "refunded 1234, approved by alice",
        "refunded 1235",
    ]
    assert not resumed.degraded


def test_a_rejected_question_ends_its_slot_rejected_with_the_note(database: Database) -> None:
    path = database.target
    refund(path, Refunds())
    with Journal(path) as journal:
        journal.reject("refunds", 1, by="bob", note="over the limit")
    resumed = refund(path, Refunds())
    assert resumed[1].status is Status.REJECTED
    assert (
        resumed[1].error == "Rejected: 'refund $500 to order 1234' rejected by bob: over the limit"
    )
    assert resumed[0].ok


# -- what is not a journal is refused before any work; an older one gains what it lacks --------


@pytest.mark.parametrize(
    ("ddl", "said"),
    [
        (
            "CREATE TABLE results (name TEXT, size INTEGER)",
            "its table results lacks the columns run_id, round, slot",
        ),
        (
            "CREATE TABLE users (name TEXT)",
            "it holds tables of another schema (users) and none of a journal's",
        ),
    ],
)
def test_a_database_of_another_schema_is_refused_on_open_and_left_as_it_was(
    database: Database, ddl: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    database.execute(ddl)
    before = database.tables()
    with pytest.raises(ValueError, match=r"^\S+ is not a journal: ") as caught:
        Journal(database.target)
    assert said in str(caught.value)
    assert "\n" not in str(caught.value)
    assert journal_main(["pending", database.target, "r"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ")
    assert said in line
    assert database.tables() == before


def test_the_command_line_never_makes_an_empty_database_a_journal(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    if database.kind == "sqlite":
        sqlite3.connect(database.target).close()  # an empty file
    assert journal_main(["approve", database.target, "r", "0", "--by", "ana"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith(
        "is not a journal: it holds no table (an empty database): give the "
        "database a journaled run made"
    )
    assert database.tables() == {}


OLD_SCHEMA = (
    OLD_TABLES
    + """
INSERT INTO results VALUES ('old', 0, 0, '7', 'ok', '49', NULL, NULL, 1, 0.0, 1.0)
"""
)


def test_a_journal_of_an_older_version_opens_and_gains_what_it_lacks(database: Database) -> None:
    for statement in OLD_SCHEMA.split(";"):
        database.execute(statement if database.kind == "sqlite" else postgres_ddl(statement))
    with Journal(database.target) as journal:
        (old,) = journal.results("old")
        assert (old.output, old.hedges, old.finished) == (49, 0, 1.0)
        assert journal.pending("old") == []
    made = database.tables()
    assert {name: made[name] for name in tables()} == {
        name: list(columns) for name, (_, columns) in tables().items()
    }


PER_SLOT_LEASES = (
    OLD_TABLES
    + """
CREATE TABLE leases (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, slot INTEGER NOT NULL, owner TEXT NOT NULL,
  claimed REAL NOT NULL, expires REAL NOT NULL, PRIMARY KEY (run_id, round, slot)
) WITHOUT ROWID
"""
)
"""A journal as the version before leases by ranges made it: a lease row per slot."""


def test_a_journal_whose_leases_are_per_slot_is_refused_in_one_line_and_left_as_it_was(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    for statement in PER_SLOT_LEASES.split(";"):
        database.execute(statement if database.kind == "sqlite" else postgres_ddl(statement))
    before = database.tables()
    said = "is a journal of an earlier version, whose leases table holds a row per slot"
    with pytest.raises(ValueError, match=said) as caught:
        Journal(database.target)
    assert "\n" not in str(caught.value)
    assert journal_main(["runs", database.target]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert said in line
    assert database.tables() == before


def test_a_new_journal_holds_the_documented_tables_and_columns(database: Database) -> None:
    Journal(database.target).close()
    assert database.tables() == {name: list(columns) for name, (_, columns) in tables().items()}


# -- what only a server has: an address that answers nothing, a password ---------------------


def test_a_server_that_cannot_be_reached_is_said_in_one_line_without_its_password(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:  # a loopback port nobody serves
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = f"postgresql://ana:s3cret@127.0.0.1:{port}/runs?sslmode=disable"
    with pytest.raises(ConnectionError) as caught:
        Journal(unreachable)
    said = str(caught.value)
    assert said.startswith(f"cannot open the journal postgresql://ana@127.0.0.1:{port}/runs: ")
    assert "s3cret" not in said
    missing = postgres_url.rsplit("/", 1)[0] + "/no_such_database"
    for target in (unreachable, missing):
        assert journal_main(["pending", target, "r"]) == 1
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("error: cannot open the journal postgresql://")
        assert "s3cret" not in line
    with Journal(postgres_url.replace("postgres@", "postgres:s3cret@")) as journal:
        assert "s3cret" not in repr(journal)


# -- the store under the journal: one protocol, each store's dialect --------------------------


def test_each_store_runs_the_journals_statements_alike(database: Database) -> None:
    """What the journal's SQL may rely on, on either store: ``?`` and numbered ``?N``
    placeholders (a value named twice, a NULL only tested, a NULL in an INSERT's SELECT list),
    the write transaction, its rollback, and a read-only open that reads and never writes."""
    store = open_store(database.target, create=True)
    try:
        assert store.found() == {name: columns for name, (_, columns) in tables().items()}
        insert = (
            "INSERT INTO runs (run_id, round, fingerprint, plan, started) "
            "SELECT ?1, ?2, ?3, ?4, ?5 WHERE ?6 IS NULL OR EXISTS "
            "(SELECT 1 FROM runs WHERE run_id = ?6)"
        )
        with store.transaction():
            store.executemany(
                insert, [("a", 0, None, None, 1.5, None), ("b", 0, "f", b"\x00p", 2.5, "a")]
            )
        store.execute(insert, ("c", 0, None, None, 3.5, "nobody"))  # no such run: not written

        def cut() -> None:
            with store.transaction():
                store.execute("DELETE FROM runs WHERE run_id = ?", ("a",))
                raise KeyError("rolled back")

        with pytest.raises(KeyError):
            cut()
        rows = store.execute("SELECT run_id, plan, started FROM runs ORDER BY run_id").fetchall()
        assert [tuple(row) for row in rows] == [("a", None, 1.5), ("b", b"\x00p", 2.5)]
    finally:
        store.close()
    reader = open_store(database.target, create=False, read_only=True)
    try:
        names = [row[0] for row in reader.execute("SELECT run_id FROM runs ORDER BY 1")]
        assert names == ["a", "b"]
        with pytest.raises(Exception, match=r"(?i)read.only|readonly"):
            reader.execute("DELETE FROM runs")
    finally:
        reader.close()
    assert len(database.query("SELECT run_id FROM runs")) == 2


def test_a_read_only_open_refuses_what_is_not_a_journal_and_leaves_it(database: Database) -> None:
    database.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(ValueError, match="it holds tables of another schema"):
        open_store(database.target, create=True, read_only=True)
    assert database.tables() == {"users": ["name"]}


def test_the_runs_a_journal_holds_are_listed_and_shown_from_either_store(
    database: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    refund(database.target, Refunds())  # 3 slots: two done, one parked
    capsys.readouterr()
    assert journal_main(["runs", database.target]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:6] == ["run", "plan", "done", "failed", "parked", "running"]
    assert row.split()[:6] == ["refunds", "3", "2", "0", "1", "0"]
    assert journal_main(["show", database.target, "refunds"]) == 0
    shown = capsys.readouterr().out
    assert "awaiting approval" in shown
    assert shown.count("✓ ok") == 2
