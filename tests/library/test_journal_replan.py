"""A journaled re-planning run resumes after its last finished round: the planner is asked only
for what it had not decided, and the answer is the one an uninterrupted run gives."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.library.test_replan import TASK, research_agent, research_planner
from trio_supervisor import Answer, Batch, Done, Durable, Journal, Supervisor, attempt_key


class Counted:
    """A planner, or a worker, whose calls are counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    async def __call__(self, subtask: str) -> Any:
        self.calls[subtask] += 1
        return await self.inner(subtask)

    async def first(self, task: str) -> Any:
        self.calls["first"] += 1
        return await self.inner.first(task)

    async def next(self, task: str, ledger: Any, *, fresh: bool) -> Any:
        self.calls["next"] += 1
        return await self.inner.next(task, ledger, fresh=fresh)


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


def said(answer: Answer[Any, Any]) -> tuple[Any, ...]:
    entries = [
        (e.round, e.index, e.subtask, e.result.status, e.result.output, e.replaces)
        for e in answer.ledger.entries
    ]
    return (answer.text, answer.degraded, answer.ended_by, answer.reason, entries)


async def replanned(
    worker: Counted, planner: Counted, journal: Journal | None, crash: float = float("inf")
) -> Answer[Any, Any] | None:
    named: dict[str, Any] = {} if journal is None else {"durable": Durable("plan", journal)}
    with trio.move_on_after(crash):
        return await Supervisor(worker, max_workers=4).replan(TASK, planner, **named)
    return None


def test_a_journaled_replan_refuses_another_task_under_its_run_id(tmp_path: Path) -> None:
    async def main() -> None:
        with Journal(tmp_path / "journal.db") as journal:
            supervisor = Supervisor(research_agent(), max_workers=4)
            await supervisor.replan(TASK, research_planner(), durable=Durable("plan", journal))
            with pytest.raises(ValueError, match="was journaled for another task"):
                await supervisor.replan(
                    "other", research_planner(), durable=Durable("plan", journal)
                )

    virtual(main)


class TwoRounds:
    """A planner of two rounds of one subtask each."""

    async def first(self, task: str) -> Batch[str] | Done:
        return Batch(["a"])

    async def next(self, task: str, ledger: Any, *, fresh: bool) -> Batch[str] | Done:
        return Batch(["b"]) if len(ledger.rounds) == 1 else Done("done")


async def key_of(subtask: str) -> str:
    return str(attempt_key())


@pytest.mark.parametrize("journaled", [True, False])
def test_each_round_of_a_replan_keys_its_attempts_by_its_number(
    tmp_path: Path, journaled: bool
) -> None:
    async def main() -> list[Any]:
        supervisor = Supervisor(key_of, max_workers=2)
        if not journaled:
            answer = await supervisor.replan(TASK, TwoRounds(), durable=Durable("plan"))
        else:
            with Journal(tmp_path / "journal.db", writer="inline") as journal:
                answer = await supervisor.replan(
                    TASK, TwoRounds(), durable=Durable("plan", journal)
                )
        return [entry.result.output for entry in answer.ledger.entries]

    keys = virtual(main)
    assert keys == (["plan/1/0/1", "plan/2/0/1"] if journaled else ["None", "None"])
