"""The journal's command line: answer the questions a journaled run's workers asked.

``python -m trio_supervisor.journal approve FILE RUN SLOT [--by NAME] [--note TEXT]``, and
``reject`` alike; ``pending FILE RUN`` lists the questions without an answer. A re-planning
run's planner asks for its batch as slot ``planner``, its ``--round`` the decision's number (as
``pending`` says it). Each error is one line (a missing file, a slot that asked nothing, a
question answered already), exit status 1.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence
from pathlib import Path

from .._journal import PLANNER, Journal, asker

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]`` when None); the exit status.

    ```pycon
    >>> import pathlib, tempfile
    >>> path = str(pathlib.Path(tempfile.mkdtemp()) / "runs.db")
    >>> async def refund(order):
    ...     return (await approval(f"refund order {order}?")).by
    >>> supervisor = Supervisor(refund, max_workers=1)
    >>> async def run():
    ...     with Journal(path) as journal:
    ...         return await supervisor.run([7], journal=journal, run_id="r1")
    >>> trio.run(run)[0].status
    <Status.AWAITING_APPROVAL: 'awaiting approval'>
    >>> main(["pending", path, "r1"])  # python -m trio_supervisor.journal pending runs.db r1
    round 0 slot 0: refund order 7?
    0
    >>> main(["approve", path, "r1", "0", "--by", "ana"])
    r1 slot 0: approved
    0
    >>> trio.run(run)[0].output  # resumed: the slot runs again, and is approved
    'ana'

    ```
    """
    parser = argparse.ArgumentParser(
        prog="python -m trio_supervisor.journal",
        description="Answer the questions a journaled run's workers asked (approval()).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("approve", "reject"):
        command = commands.add_parser(name, help=f"{name} the question a slot asked")
        command.add_argument("file", help="the journal's database file")
        command.add_argument("run", help="the run's run_id")
        command.add_argument(
            "slot", type=_slot, help="the slot that asked, or 'planner' (a replan's planner)"
        )
        command.add_argument(
            "--round",
            type=int,
            default=0,
            help="its round (replan), from 1; the planner's: its decision",
        )
        command.add_argument("--by", default=None, help="who answers (default: your login)")
        command.add_argument("--note", default="", help="what you say with it")
    listing = commands.add_parser("pending", help="the questions without an answer")
    listing.add_argument("file", help="the journal's database file")
    listing.add_argument("run", help="the run's run_id")
    options = parser.parse_args(argv)
    if not Path(options.file).is_file():
        print(f"error: no journal at {options.file}", file=sys.stderr)
        return 1
    with Journal(options.file) as journal:
        if options.command == "pending":
            for round_, slot, question in journal.pending(options.run):
                print(f"{asker(round_, slot)}: {question}")
            return 0
        answer = journal.approve if options.command == "approve" else journal.reject
        try:
            answer(
                options.run,
                options.slot,
                by=options.by or getpass.getuser(),
                note=options.note,
                round=options.round,
            )
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    done = "approved" if options.command == "approve" else "rejected"
    print(f"{options.run} {asker(options.round, options.slot, False)}: {done}")
    return 0


def _slot(text: str) -> int:
    """A slot on the command line: a number, or ``planner``."""
    if text == "planner":
        return PLANNER
    try:
        slot = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a slot is a number from 0, or 'planner', not {text!r}"
        ) from None
    if slot < 0:
        raise argparse.ArgumentTypeError(f"a slot is a number from 0, or 'planner', not {text!r}")
    return slot
