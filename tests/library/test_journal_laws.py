"""The law of durable runs, as a Hypothesis property on virtual time: a run crashed at any
instant and resumed equals the run never crashed.

The crash is the journal's own: the run is cut at a random virtual instant, then the journal is
closed with ``flush=False``, which drops what it had not committed yet, as a killed process
would. What the database holds then is what a resume finds. The journal writes inline
(``writer="inline"``), so that its group commits fall at virtual instants too; the writer thread
meets real kills in ``test_journal_kills.py``.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from trio_supervisor import Aggregate, Backoff, Durable, Journal, Retry, Supervisor, attempt_key


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


def committed(path: Path) -> dict[int, tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT slot, run_id, round, subtask, status, output, error_type, error, attempts, "
            "started, finished FROM results ORDER BY slot"
        ).fetchall()
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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_resume_after_crash_equals_run(options: dict[str, Any]) -> None:
    where = Path(tempfile.mkdtemp())
    try:
        path = where / "journal.db"
        plain = Plan(options["latency"], options["fails"])
        expected, took = virtual(execute, plain, options, None, None)

        crashed = Plan(options["latency"], options["fails"])
        journal = Journal(
            path,
            flush=options["flush"],
            count=options["count"],
            interval=options["interval"],
            writer="inline",  # commits at virtual instants
        )
        virtual(execute, crashed, options, journal, options["crash"] * took)
        journal.close(flush=False)  # the crash: what was not committed is lost
        before = committed(path)
        event(
            "none committed"
            if not before
            else "all committed"
            if len(before) == len(options["latency"])
            else "part committed"
        )

        resumed = Plan(options["latency"], options["fails"])
        with Journal(path) as journal:
            result, _ = virtual(execute, resumed, options, journal, None)
        after = committed(path)

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
    finally:
        shutil.rmtree(where, ignore_errors=True)
