"""The approval gate: a worker's question parks its slot, durably; an answer from anywhere
that opens the journal (another process included) lets a resume finish it, exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from trio_supervisor import (
    Batch,
    Done,
    Durable,
    Journal,
    Ledger,
    ReplanLimits,
    Retry,
    Status,
    Supervisor,
    Trace,
    approval,
)

ROOT = Path(__file__).resolve().parents[2]
ORDERS = [("1233", 20), ("1234", 500), ("1235", 40)]


class Refunds:
    """Refunds an order; one above 100 asks for approval first."""

    def __init__(self, wait: float | None = None) -> None:
        self.calls: Counter[str] = Counter()
        self.wait = wait

    async def __call__(self, order: tuple[str, int]) -> str:
        number, amount = order
        self.calls[number] += 1
        await trio.sleep(1)
        if amount > 100:
            said = await approval(f"refund ${amount} to order {number}", wait=self.wait)
            return f"refunded {number}, approved by {said.by}"
        return f"refunded {number}"


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


def refund(path: str | Path, worker: Refunds, trace: list[Trace] | None = None) -> Any:
    async def main() -> Any:
        recorded = Trace()
        if trace is not None:
            trace.append(recorded)
        with Journal(path, writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=2, retry=Retry(attempts=3))
            return await supervisor.run(ORDERS, durable=Durable("refunds", journal), trace=recorded)

    return virtual(main)


def command(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "trio_supervisor.journal", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_with_wait_a_worker_waits_for_an_answer_given_meanwhile(tmp_path: Path) -> None:
    worker = Refunds(wait=30)

    async def main() -> Any:
        with Journal(tmp_path / "journal.db", writer="inline") as journal:

            async def answer() -> None:
                await trio.sleep(5)
                journal.approve("refunds", 1, by="alice")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer)
                supervisor = Supervisor(worker, max_workers=2)
                aggregate = await supervisor.run(ORDERS, durable=Durable("refunds", journal))
            return aggregate, trio.current_time()

    aggregate, ended = virtual(main)
    assert aggregate[1].output == "refunded 1234, approved by alice"
    assert 5 <= aggregate[1].finished <= 6  # read within a second of the answer
    assert ended < 30


def test_a_wait_that_runs_out_parks_the_slot(tmp_path: Path) -> None:
    result = refund(tmp_path / "journal.db", Refunds(wait=3))
    assert result[1].status is Status.AWAITING_APPROVAL
    assert result[1].finished == 4  # its second of work, then three of waiting


def test_approval_outside_a_journaled_run_says_what_it_needs() -> None:
    async def main() -> Any:
        return await Supervisor(Refunds(), max_workers=1).run([("1", 500)], durable=Durable("r"))

    (result,) = virtual(main)
    assert result.status is Status.FAILED
    assert (
        "call it from a worker (or the planner) of a run given durable=Durable(run_id, journal)"
        in (result.error or "")
    )


def test_the_command_line_answers_a_missing_file_and_a_slot_that_asked_nothing_in_one_line(
    tmp_path: Path,
) -> None:
    missing = command("approve", str(tmp_path / "none.db"), "refunds", "1")
    assert (missing.returncode, missing.stderr) == (
        1,
        f"error: no journal at {tmp_path / 'none.db'}\n",
    )
    path = tmp_path / "journal.db"
    refund(path, Refunds())
    nothing = command("approve", str(path), "refunds", "0", "--by", "alice")
    assert (nothing.returncode, nothing.stderr) == (
        1,
        "error: run 'refunds' has no question at round 0 slot 0\n",
    )


class Spending:
    """A planner whose second batch is paid: it asks approval for it first."""

    def __init__(self) -> None:
        self.asked = 0

    async def first(self, task: str) -> Batch[str]:
        return Batch(["free a", "free b"], note="the free sources")

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Batch[str] | Done:
        if len(ledger.rounds) == 1:
            self.asked += 1
            said = await approval("dispatch 2 paid searches at $3 each")
            return Batch(["paid a", "paid b"], note=f"paid, approved by {said.by}")
        return Done(answer="; ".join(str(e.result.output) for e in ledger.entries))


async def echo(subtask: str) -> str:
    await trio.sleep(1)
    return subtask.upper()


def replanned(path: Path, planner: Spending, worker: Any = echo) -> Any:
    async def main() -> Any:
        with Journal(path, writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            return await supervisor.replan(
                "research",
                planner,
                durable=Durable("spend", journal),
                limits=ReplanLimits(max_rounds=4),
            )

    return virtual(main)


def test_a_planner_asks_approval_for_a_batch_and_the_resume_after_the_yes_dispatches_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.db"
    planner = Spending()
    first = replanned(path, planner)
    assert first.degraded
    assert first.ended_by is None
    assert first.reason == (
        "the planner's batch for round 2 waits for approval: dispatch 2 paid searches at $3 each"
    )
    assert [e.subtask for e in first.ledger.entries] == ["free a", "free b"]
    assert command("pending", str(path), "spend").stdout == (
        "the planner's decision 1: dispatch 2 paid searches at $3 each\n"
    )
    done = command("approve", str(path), "spend", "planner", "--round", "1", "--by", "alice")
    assert (done.returncode, done.stdout) == (0, "spend the planner's decision 1: approved\n")
    again = command("approve", str(path), "spend", "planner", "--round", "1", "--by", "bob")
    assert again.stderr.startswith(
        "error: run 'spend' the planner's decision 1 was approved already, by alice"
    )

    calls: Counter[str] = Counter()

    async def counted(subtask: str) -> str:
        calls[subtask] += 1
        return await echo(subtask)

    resumed = replanned(path, planner, counted)
    assert not resumed.degraded
    assert resumed.text == "FREE A; FREE B; PAID A; PAID B"
    assert resumed.ledger.rounds[1].note == "paid, approved by alice"
    assert calls == {"paid a": 1, "paid b": 1}  # the free round came from the journal
    assert planner.asked == 2  # asked, then asked again on resume, answered at once


def test_a_rejected_batch_costs_its_round_and_the_planner_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    planner = Spending()
    replanned(path, planner)
    with Journal(path) as journal:
        journal.reject("spend", Journal.PLANNER, round=1, by="bob", note="no budget")
        assert journal.pending("spend") == []
    resumed = replanned(path, planner)
    assert resumed.ledger.rounds[1].error == (
        "the planner raised Rejected: 'dispatch 2 paid searches at $3 each' rejected by bob: "
        "no budget"
    )
    assert resumed.ledger.rounds[1].entries == ()


def test_the_command_line_names_the_rule_for_a_slot(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    refund(path, Refunds())
    bad = command("approve", str(path), "refunds", "first")
    assert bad.returncode == 1
    assert len(bad.stderr.splitlines()) == 1  # one line, no usage block
    assert "a slot is a number from 0 to 2**63-1, or 'planner', not 'first'" in bad.stderr


RULE = (
    "approval() keeps its question in the run's journal: call it from a worker (or the planner) "
    "of a run given durable=Durable(run_id, journal)"
)


async def asks(subtask: int) -> str:
    return (await approval(f"go {subtask}?")).by


@pytest.mark.parametrize("run_id", [None, "named"])
def test_approval_in_a_run_without_a_journal_fails_its_slot_naming_the_rule(
    run_id: str | None,
) -> None:
    async def main() -> Any:
        return await Supervisor(asks, max_workers=1).run(
            [1], durable=None if run_id is None else Durable(run_id)
        )

    (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert result.status is Status.FAILED
    assert result.error == f"RuntimeError: {RULE}"


def test_approval_outside_a_run_is_refused_naming_the_rule() -> None:
    with pytest.raises(RuntimeError, match=r"^approval\(\) keeps its question"):
        trio.run(asks, 1)
