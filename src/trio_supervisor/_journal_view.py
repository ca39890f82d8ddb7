"""What a journal holds, run by run, read from its tables alone: what the command line's
``runs``, ``show`` and ``gc`` say and do (``journal/__init__.py``).

Each function takes a connection to the journal's database; none writes but ``collect``. A
journal of an earlier version (no ``written`` or ``owner`` column, no ``leases`` table) is read
as it is: what it lacks reads as unknown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._digest import plan_texts
from ._store import Store, text_of

PARKED = "awaiting approval"


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run of a journal, all its rounds together: its plan's size (None while a lazy
    stream's input is not known to its end), its final results by kind, the slots a supervisor
    holds a lease of now, and when anything was last written for it (unix time)."""

    run_id: str
    plan: int | None
    done: int
    failed: int
    parked: int
    running: int
    last: float | None
    finished: bool
    """Every slot of every round has a final result, none parked, none running, no question
    waits for an answer, and a re-planning run's planner decided it was done."""


@dataclass(frozen=True, slots=True)
class SlotRow:
    """One slot of a run as the journal holds it: its result (``status`` None without one), or
    the lease a supervisor holds of it (``claimed``, unix time)."""

    round: int
    slot: int
    subtask: str
    status: str | None
    error: str | None
    attempts: int
    started: float | None  # trio time of its first attempt, on its supervisor's clock
    finished: float | None  # trio time it ended, on the same clock
    hedges: int
    written: float | None  # unix time its row was recorded
    owner: str | None
    claimed: float | None = None  # a running slot's lease: when it was claimed


_text = text_of


def summaries(conn: Store, now: float, done_kind: Callable[[Any], bool]) -> list[RunSummary]:
    """Every run the journal holds, by run_id; ``now``: the unix time leases are read at;
    ``done_kind(data)``: whether a re-planning run's last decision (as journaled) ends it."""
    tables = conn.found()  # a journal read as it is may lack some
    written = "written" in tables.get("results", ())
    ids: set[str] = set()
    plans: dict[str, int | None] = defaultdict(int)
    last: dict[str, float] = {}

    def later(run_id: str, when: float | None) -> None:
        if when is not None and when > last.get(run_id, float("-inf")):
            last[run_id] = when

    rounds: dict[str, list[tuple[int, int | None]]] = defaultdict(list)
    for run_id, round_, plan, started in conn.execute(
        "SELECT run_id, round, plan, started FROM runs"
    ):
        name = _text(run_id)
        ids.add(name)
        size = None if plan is None else len(plan_texts(plan))
        rounds[name].append((round_, size))
        known = plans[name]
        plans[name] = None if known is None or size is None else known + size
        later(name, started)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_round: dict[tuple[str, int], int] = defaultdict(int)
    when = "max(written)" if written else "NULL"
    for run_id, round_, status, count, at in conn.execute(
        f"SELECT run_id, round, status, count(*), {when} FROM results "
        "GROUP BY run_id, round, status"
    ):
        name = _text(run_id)
        ids.add(name)
        counts[name][status] += count
        if status != PARKED:
            per_round[name, round_] += count
        later(name, at)
    running: dict[str, int] = defaultdict(int)
    if "leases" in tables:
        for run_id, count, at in conn.execute(  # a live lease's slots without a final row
            "SELECT run_id, last_slot - first_slot + 1 - (SELECT count(*) FROM results WHERE "
            "results.run_id = leases.run_id AND results.round = leases.round AND results.slot "
            "BETWEEN leases.first_slot AND leases.last_slot AND results.status != ?), claimed "
            "FROM leases WHERE expires > ?",
            (PARKED, now),
        ):
            running[_text(run_id)] += count
            later(_text(run_id), at)
    waiting: set[str] = set()
    asked_at = (
        "SELECT run_id, status, max(asked), max(decided) FROM approvals GROUP BY run_id, status"
    )
    for run_id, status, asked, decided in conn.execute(asked_at) if "approvals" in tables else ():
        name = _text(run_id)
        ids.add(name)
        later(name, asked)
        later(name, decided)
        if status == "pending":
            waiting.add(name)
    decided_last: dict[str, Any] = {}
    decisions = "SELECT run_id, decision, decided FROM decisions ORDER BY run_id, number"
    for run_id, decision, at in conn.execute(decisions) if "decisions" in tables else ():
        name = _text(run_id)
        ids.add(name)
        decided_last[name] = decision
        later(name, at)
    found = []
    for name in sorted(ids):
        kinds = counts.get(name, {})
        done = kinds.get("ok", 0)
        parked = kinds.get(PARKED, 0)
        failed = sum(kinds.values()) - done - parked
        plan = plans.get(name, 0) if name in plans else 0
        complete = all(
            size is not None and per_round.get((name, round_), 0) >= size
            for round_, size in rounds.get(name, [])
        )
        if name in decided_last:
            complete = complete and done_kind(decided_last[name])
        elif name not in rounds:
            complete = False  # only a question: a run that never began its plan
        finished = complete and not parked and not running.get(name) and name not in waiting
        found.append(
            RunSummary(
                name, plan, done, failed, parked, running.get(name, 0), last.get(name), finished
            )
        )
    return found


def slot_rows(conn: Store, run_id: str, now: float) -> tuple[float | None, list[SlotRow]]:
    """When run ``run_id`` was first journaled (unix time; None if it never began a plan), and
    every slot of it the journal knows of, by round and slot: each planned slot (those without
    a result or a lease too), each with its result or its live lease."""
    tables = conn.found()
    columns = tables.get("results", ())
    added = {"hedges": "0", "written": "NULL", "owner": "NULL"}  # what an older journal lacks
    extra = ", ".join(name if name in columns else added[name] for name in added)
    rows: dict[tuple[int, int], SlotRow] = {}
    begun: float | None = None
    for round_, plan, started in conn.execute(
        "SELECT round, plan, started FROM runs WHERE run_id = ? ORDER BY round", (run_id,)
    ):
        begun = started if begun is None else min(begun, started)
        if plan is not None:
            for slot, text in enumerate(plan_texts(plan)):
                rows[round_, slot] = SlotRow(
                    round_, slot, text, None, None, 0, None, None, 0, None, None
                )
    for row in conn.execute(
        "SELECT round, slot, subtask, status, error, attempts, started, finished, "
        f"{extra} FROM results WHERE run_id = ?",
        (run_id,),
    ):
        round_, slot, subtask, status, error, *rest = row
        rows[round_, slot] = SlotRow(
            round_,
            slot,
            _text(subtask),
            status,
            None if error is None else _text(error),
            *rest,
        )
    if "leases" in tables:
        for round_, first, last, owner, claimed in conn.execute(
            "SELECT round, first_slot, last_slot, owner, claimed FROM leases "
            "WHERE run_id = ? AND expires > ?",
            (run_id, now),
        ):
            for slot in range(first, last + 1):  # a lease's slots, those without a final row
                known = rows.get((round_, slot))
                if known is None or known.status is None or known.status == PARKED:
                    subtask = "" if known is None else known.subtask
                    rows[round_, slot] = SlotRow(
                        round_, slot, subtask, None, None, 0, None, None, 0, None, owner, claimed
                    )
    return begun, [rows[key] for key in sorted(rows)]


TABLES = ("results", "approvals", "decisions", "runs", "leases")


def collect(
    conn: Store,
    before: float,
    now: float,
    done_kind: Callable[[Any], bool],
) -> list[RunSummary]:
    """Remove every finished run last active before ``before`` (unix time), in one
    transaction; the runs removed. A run running, parked, or waiting for an answer stays."""
    with conn.transaction():  # no writer slips a result in between the check and the cut
        gone = [
            run
            for run in summaries(conn, now, done_kind)
            if run.finished and run.last is not None and run.last < before
        ]
        tables = [table for table in TABLES if table in conn.found()]
        for run in gone:
            for table in tables:
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run.run_id,))
    return gone
