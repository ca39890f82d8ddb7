"""Step 28: an approval gate. A refund above a threshold waits for a person's yes, durably.

What it adds: a leaf whose subtask is a refund (``refund $500 to order 1234``) of more than
``THRESHOLD`` dollars asks the library's ``approval`` before it does it. The question is journaled
under the run, round and slot, in its own words (an answer is for that question only); without an
answer the slot is parked (``awaiting approval``), and so is its company's, while the other slots
run on, and the run returns degraded, naming the question. Anyone who can open the journal answers
it, another process included: ``python -m lessons approve FILE RUN SLOT`` (or ``reject``), or the
library's ``python -m trio_supervisor.journal``. The run resumed under its ``run_id`` takes every
finished slot from the journal and calls the parked leaf again, whose ``approval`` now returns the
answer at once: approved, the refund is done; rejected, the slot ends ``rejected`` with the note.

What is still wrong: the journal is one SQLite file on one machine. Runs resume where that file is,
and a person's yes reaches the run only through it. Two supervisors on one run (a second process
resuming it while the first is only slow) each run every slot: step 33 shares the run's slots
between them, each slot leased to one.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lessons import step27_durable_runs as step27
from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step27_durable_runs import check_task as check_task
from lessons.step27_durable_runs import supervise as supervise  # unchanged since step 27
from lessons.step27_durable_runs import supervise_broken as supervise_broken
from trio_supervisor import Worker, approval
from trio_supervisor.testing import SimulatedAgent

THRESHOLD = 100  # step 28: dollars a refund may be without a person's yes
REFUND = re.compile(r"\brefund \$(\d+)")


def refund_of(subtask: str) -> int | None:
    """The dollars ``subtask`` refunds (``"acme refund $500 to order 1234"`` -> 500), or None."""
    found = REFUND.search(subtask)
    return None if found is None else int(found.group(1))


@asynccontextmanager
async def open_worker(
    simulated: SimulatedAgent,
    *,
    virtual: bool,
    max_workers: int,
    **options: Any,
) -> AsyncIterator[Worker[str, Any]]:
    """The leaf worker: step 26's (an HTTP sub-agent, its reply analysed in a worker process;
    ``options`` its own), behind a gate: a refund above ``THRESHOLD`` is done only once a person
    approves it."""
    opened = step27.open_worker(simulated, virtual=virtual, max_workers=max_workers, **options)
    async with opened as leaf:

        async def worker(subtask: str) -> Any:
            dollars = refund_of(subtask)
            if dollars is not None and dollars > THRESHOLD:  # step 28: a person says yes first
                await approval(f"{subtask}: over ${THRESHOLD}, approve?")  # parked until then
            return await leaf(subtask)

        yield worker


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
