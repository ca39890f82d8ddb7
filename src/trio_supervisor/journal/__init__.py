"""The journal's command line: answer the questions a journaled run's workers asked.

``python -m trio_supervisor.journal approve FILE RUN SLOT [--by NAME] [--note TEXT]``, and
``reject`` alike; ``pending FILE RUN`` lists the questions without an answer. ``FILE`` is the
journal's SQLite file, or a PostgreSQL journal's connection string (``postgresql://...``). A
re-planning run's planner asks for its batch as slot ``planner``, its ``--round`` the decision's
number (as ``pending`` says it). Each error is one line on stderr, exit status 1: a command that
does not parse (a missing argument, a slot or a round that is no number from 0 to 2**63-1), a
file that is missing, a server that cannot be reached, a database that is not a journal (it is
never made one), a run the journal does not hold, a slot that asked nothing, a question answered
already, an empty ``--by``.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Sequence
from typing import NoReturn

from .._approval import asker
from .._identity import PLANNER
from .._journal import Journal
from .._store import errors

__all__ = ["main"]

LARGEST = 2**63 - 1  # the largest integer SQLite holds
SHOWN = 10  # the runs an unknown run's error names at most
WHERE = "the journal: its SQLite file, or a postgresql:// connection string"


def main(argv: Sequence[str] | None = None, prog: str = "python -m trio_supervisor.journal") -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]`` when None); the exit status. Its usage
    and errors call it ``prog``: how the user typed it (a program that passes its own commands
    on gives its own name).

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
    parser = _Parser(
        prog=prog,
        description="Answer the questions a journaled run's workers asked (approval()).",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in ("approve", "reject"):
        command = commands.add_parser(name, help=f"{name} the question a slot asked")
        command.add_argument("file", help=WHERE)
        command.add_argument("run", help="the run's run_id")
        command.add_argument(
            "slot", type=_slot, help="the slot that asked, or 'planner' (a replan's planner)"
        )
        command.add_argument(
            "--round",
            type=_round,
            default=0,
            help="its round (replan), from 1; the planner's: its decision",
        )
        command.add_argument("--by", default=None, help="who answers (default: your login)")
        command.add_argument("--note", default="", help="what you say with it")
    listing = commands.add_parser("pending", help="the questions without an answer")
    listing.add_argument("file", help=WHERE)
    listing.add_argument("run", help="the run's run_id")
    options = parser.parse_args(argv)
    refused: tuple[type[Exception], ...] = (OSError, ValueError, RuntimeError, *errors())
    try:
        said = _command(options)
    except refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(said, end="")
    return 0


def _command(options: argparse.Namespace) -> str:
    """What the command of ``options`` says on stdout, once done.

    Raises:
      OSError, ValueError, RuntimeError, a driver's error: what it refuses, in one line.
    """
    asking = options.command == "pending"
    by = "" if asking else options.by if options.by is not None else _login()
    with Journal(options.file, writer="inline", create=False) as journal:
        if asking:
            runs = journal.runs()
            if options.run not in runs:
                shown = ", ".join(runs[:SHOWN]) + (", ..." if len(runs) > SHOWN else "")
                raise ValueError(
                    f"no run {options.run!r} in {options.file} (its runs: {shown or 'none'})"
                )
            return "".join(
                f"{asker(round_, slot)}: {question}\n"
                for round_, slot, question in journal.pending(options.run)
            )
        answer = journal.approve if options.command == "approve" else journal.reject
        answer(options.run, options.slot, by=by, note=options.note, round=options.round)
    done = "approved" if options.command == "approve" else "rejected"
    return f"{options.run} {asker(options.round, options.slot, False)}: {done}\n"


class _Parser(argparse.ArgumentParser):
    """A parser whose every error is one line on stderr, with the way to its usage, and exit
    status 1, as the command's other errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _login() -> str:
    """Who answers when ``--by`` is not given: the login name.

    Raises:
      ValueError: if there is none (a container's user without a name, say).
    """
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        raise ValueError("no login name to answer by: say who answers with --by NAME") from None


def _slot(text: str) -> int:
    """A slot on the command line: a number, or ``planner``."""
    if text == "planner":
        return PLANNER
    return _number(text, "a slot is a number from 0 to 2**63-1, or 'planner'")


def _round(text: str) -> int:
    """A round on the command line: a number."""
    return _number(text, "a round is a number from 0 to 2**63-1")


def _number(text: str, rule: str) -> int:
    """``text`` as a number SQLite holds, from 0.

    Raises:
      argparse.ArgumentTypeError: stating ``rule``, if it is none.
    """
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 <= number <= LARGEST:
        raise argparse.ArgumentTypeError(f"{rule}, not {text!r}")
    return number
