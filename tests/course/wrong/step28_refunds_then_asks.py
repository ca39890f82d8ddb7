"""Step 28 (step28_approval_gate), wrongly: the leaf does the refund, then asks for its
approval: the money is gone before anyone said yes.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 28`` must fail
on it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lessons import step27_durable_runs as step27
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
            done = await leaf(subtask)
            if dollars is not None and dollars > THRESHOLD:
                await approval(f"{subtask}: over ${THRESHOLD}, approve?")
            return done

        yield worker
