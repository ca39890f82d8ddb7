"""Make a run survive its process: a Journal keeps each final result, a run killed part way
resumes with the same run_id and runs only what had not finished, and a worker can wait for a
person's yes (approval), answered from the journal's command line.

Everything runs on virtual time, with the journal in a scratch directory.
tests/docs/test_howto_examples.py runs it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import trio
import trio.testing

from trio_supervisor import Durable, Journal, Status, Supervisor, approval
from trio_supervisor.journal import main as journal_command

ORDERS = [("A-1", 20), ("A-2", 250), ("A-3", 35), ("A-4", 60)]  # (order, refund in $)
LATENCY = {"A-1": 1.0, "A-2": 1.5, "A-3": 2.0, "A-4": 3.0}  # seconds each refund takes
called: list[str] = []  # each order a worker was called on, across every run


async def refund(order: tuple[str, int]) -> str:
    """Refund an order; one over $100 needs a person's approval first."""
    name, amount = order
    called.append(name)
    if amount > 100:
        granted = await approval(f"refund ${amount} to {name}")  # parks the slot until answered
        await trio.sleep(LATENCY[name])
        return f"refunded ${amount} to {name} (approved by {granted.by})"
    await trio.sleep(LATENCY[name])
    return f"refunded ${amount} to {name}"


def journal(path: Path) -> Journal:
    """The journal, committing inline: on a virtual clock a commit must happen at a virtual
    instant. In production leave ``writer`` as it is: a thread commits, trio never blocks."""
    return Journal(path, writer="inline")


async def main(path: Path) -> None:
    supervisor = Supervisor(refund, max_workers=2)
    with journal(path) as kept:
        # 1. the process is killed at 2.5 s (here: the run is cancelled), part way through
        with trio.move_on_after(2.5):
            await supervisor.run(ORDERS, durable=Durable("refunds-42", kept))
        print(f"killed at 2.5s: called {called}")

        # 2. resumed with the same run_id: had finished and come from the journal,
        # A-4 runs again, A-2 asks for approval again (its slot parks, the others go on)
        called.clear()
        resumed = await supervisor.run(ORDERS, durable=Durable("refunds-42", kept))
        print(f"resumed: called {called}; statuses {[r.status.value for r in resumed]}")
        assert called == ["A-2", "A-4"]
        assert resumed[1].status is Status.AWAITING_APPROVAL

    # 3. a person answers from any process that opens the file: the journal's command line
    # (python -m trio_supervisor.journal approve FILE RUN SLOT --by NAME)
    assert journal_command(["pending", str(path), "refunds-42"]) == 0
    assert journal_command(["approve", str(path), "refunds-42", "1", "--by", "ana"]) == 0

    # 4. resumed again: only the approved slot runs, and the run is complete
    called.clear()
    with journal(path) as kept:
        done = await supervisor.run(ORDERS, durable=Durable("refunds-42", kept))
    print(f"after the approval: called {called}")
    for result in done:
        print(f"  {result.status.value}: {result.output}")
    assert called == ["A-2"]
    assert all(result.ok for result in done)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        clock = trio.testing.MockClock(autojump_threshold=0)
        trio.run(main, Path(scratch) / "runs.db", clock=clock)
