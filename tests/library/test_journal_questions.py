"""Each question a slot asks is its own: an answer approves (or rejects) only the question it
was given for, and a slot's next question parks it again, shown as the one pending."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import trio
import trio.testing

from trio_supervisor import Durable, Journal, Rejected, Status, Supervisor, approval

REFUND = "refund $500 to order 7"
CLOSE = "close the account of order 7"
HALF = "refund $250 to order 7 instead"


class Closing:
    """Refunds order 7, then closes its account: two questions, asked one after the other."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.done: list[str] = []

    async def __call__(self, order: str) -> str:
        self.calls[order] += 1
        await trio.sleep(1)
        refund = await approval(REFUND)
        self.done.append("refunded")
        closing = await approval(CLOSE)
        self.done.append("closed")
        return f"refunded ({refund.by}), closed ({closing.by})"


class Haggling:
    """Asks for the full refund; rejected, it asks for half instead."""

    async def __call__(self, order: str) -> str:
        await trio.sleep(1)
        try:
            await approval(REFUND)
        except Rejected:
            said = await approval(HALF)
            return f"refunded half ({said.by})"
        return "refunded in full"


def run(path: Path, worker: Any) -> Any:
    async def main() -> Any:
        with Journal(path, writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=1)
            (result,) = await supervisor.run(["7"], durable=Durable("r", journal))
            return result

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_yes_to_a_slots_first_question_does_not_approve_its_second(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    worker = Closing()
    first = run(path, worker)
    assert (first.status, first.error) == (Status.AWAITING_APPROVAL, f"AwaitingApproval: {REFUND}")
    with Journal(path) as journal:
        assert journal.pending("r") == [(0, 0, REFUND)]
        journal.approve("r", 0, by="ana")
        assert journal.pending("r") == []

    second = run(path, worker)
    assert (second.status, second.error) == (Status.AWAITING_APPROVAL, f"AwaitingApproval: {CLOSE}")
    assert worker.done == ["refunded"]  # the account is not closed: nobody was shown that
    with Journal(path) as journal:
        assert journal.pending("r") == [(0, 0, CLOSE)]
        journal.approve("r", 0, by="bob")

    third = run(path, worker)
    assert (third.status, third.output) == (Status.OK, "refunded (ana), closed (bob)")
    assert worker.done == ["refunded", "refunded", "closed"]
    with Journal(path) as journal:
        assert journal.pending("r") == []


def test_a_no_answers_only_its_question(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    run(path, Haggling())
    with Journal(path) as journal:
        journal.reject("r", 0, by="ana", note="too much")
    second = run(path, Haggling())
    assert (second.status, second.error) == (Status.AWAITING_APPROVAL, f"AwaitingApproval: {HALF}")
    with Journal(path) as journal:
        assert journal.pending("r") == [(0, 0, HALF)]
        journal.approve("r", 0, by="bob")
    third = run(path, Haggling())
    assert (third.status, third.output) == (Status.OK, "refunded half (bob)")
