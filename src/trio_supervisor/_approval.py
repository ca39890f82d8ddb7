"""The approval gate: a worker (or a re-planning run's planner) asks a person before it acts;
its question is kept in the run's journal, and its slot parked until someone answers.
"""

from __future__ import annotations

from typing import NamedTuple

import trio

from ._identity import NOT_JOURNALED, PLANNER, bound


class AwaitingApproval(Exception):  # a state, not an error: the slot is parked
    """A worker's question has no answer yet: its slot is parked, ``Status.AWAITING_APPROVAL``,
    until someone answers (``Journal.approve`` or ``reject``) and a resume calls it again.

    ```pycon
    >>> AwaitingApproval("refund order 7?").question
    'refund order 7?'

    ```"""

    def __init__(self, question: str) -> None:
        super().__init__(question)
        self.question = question


class Rejected(Exception):  # the answer, not an error of the worker's
    """A worker's question was rejected: its slot ends ``Status.REJECTED``, with the note.

    ```pycon
    >>> str(Rejected("refund order 7?", by="ana", note="over the limit"))
    "'refund order 7?' rejected by ana: over the limit"

    ```"""

    def __init__(self, question: str, by: str, note: str) -> None:
        said = f": {note}" if note else ""
        super().__init__(f"{question!r} rejected by {by}{said}")
        self.question, self.by, self.note = question, by, note


class Approved(NamedTuple):
    """What [`approval`][trio_supervisor.approval] returns once a question is approved.

    ```pycon
    >>> Approved(by="ana", note="")
    Approved(by='ana', note='')

    ```"""

    by: str
    note: str


async def approval(question: str, *, wait: float | None = None) -> Approved:
    """Ask a human to approve what the calling worker is about to do, on durable state.

    ```pycon
    >>> import pathlib, tempfile
    >>> from functools import partial
    >>> journal = Journal(pathlib.Path(tempfile.mkdtemp()) / "runs.db")
    >>> async def refund(amount):
    ...     if amount > 100:
    ...         await approval(f"refund ${amount}?")
    ...     return f"refunded ${amount}"  # reached only once approved
    >>> run = partial(Supervisor(refund, max_workers=2).run, durable=Durable("refunds", journal))
    >>> [r.status.value for r in trio.run(run, [20, 500])]
    ['ok', 'awaiting approval']
    >>> journal.approve("refunds", 1, by="ana")  # or: python -m trio_supervisor.journal approve
    >>> [r.output for r in trio.run(run, [20, 500])]  # the resume: slot 0 from the journal
    ['refunded $20', 'refunded $500']
    >>> journal.close()

    ```

    The question is journaled, once, under the run, round and slot of the attempt, and its own
    words: an answer is for that question only, so a worker that asks a second one (``close the
    account?`` after ``refund?``) parks its slot again, and a resume shows that one pending.
    Without an answer the worker raises
    [`AwaitingApproval`][trio_supervisor.AwaitingApproval]: its slot is parked
    (``Status.AWAITING_APPROVAL``, the question its error), the run goes on with the other slots
    and returns degraded. Anyone who opens the journal answers, another process included
    (``Journal.approve``, ``Journal.reject``, or ``python -m trio_supervisor.journal approve FILE
    RUN SLOT``); a resume of the run calls the slot's worker again, and this call returns the
    approval at once (or raises [`Rejected`][trio_supervisor.Rejected]: the slot ends
    ``Status.REJECTED`` with the note). Finished slots are never run again.

    A re-planning run's planner may ask too, for the batch it is about to return (its question
    is slot ``planner``, round the decision's number): without an answer the run ends there,
    degraded, naming the question, and the decision is not journaled; a resume after the answer
    asks the planner again, whose call now returns at once. Rejected, the planner's call raises
    ``Rejected``: unless the planner catches it, its round dispatches nothing, as any failure of
    the planner's does.

    Args:
      question: what is to be approved, in words a person answers.
      wait: seconds to wait for an answer instead of parking at once (the journal is read
        every second); None parks at once.

    Returns:
      The approval: who gave it and their note.

    Raises:
      AwaitingApproval: if no answer came (at once, or within ``wait``).
      Rejected: if the answer is no.
      RuntimeError: outside an attempt of a journaled run (``durable=Durable(run_id, journal)``), or
        a planner of one.
    """
    found = bound()
    if found is None or found[1].slot is None:
        raise RuntimeError(NOT_JOURNALED)
    run, running = found
    slot = running.slot
    until = trio.current_time() + (wait if wait is not None else 0)
    while True:
        status, by, note = await run.ask(slot, question)  # a run without a journal raises
        if status == "approved":
            return Approved(by or "", note or "")
        if status == "rejected":
            raise Rejected(question, by or "", note or "")
        if trio.current_time() >= until:
            raise AwaitingApproval(question)
        await trio.sleep(min(1.0, until - trio.current_time()))


def asker(round: int, slot: int, whole: bool = True) -> str:
    """Who asked a question, in words: a slot (of its round, when ``whole``), or the planner."""
    if slot == PLANNER:
        return f"the planner's decision {round}"
    return f"round {round} slot {slot}" if whole else f"slot {slot}"
