"""The journal's command line: see the runs a journal holds, and answer the questions a
journaled run's workers asked.

``python -m trio_supervisor.journal runs FILE`` lists each run (its id, its plan's size, its
slots done, failed, parked for an answer and running now, its last activity); ``show FILE RUN``
draws its slots as the timeline in the terminal, from the journal alone; ``gc FILE
--older-than DURATION`` (``30m``, ``12h``, ``7d``) removes the finished runs last active longer
ago than that, and says which (a run with a slot running or parked, or a question without an
answer, is never removed). ``runs`` and ``show`` only read the journal: one of an earlier
version is read as it is.

``approve FILE RUN SLOT [--by NAME] [--note TEXT]``, and ``reject`` alike, answer a slot's
question; ``pending FILE RUN`` lists the questions without an answer. ``FILE`` is the journal's
SQLite file, or a PostgreSQL journal's connection string (``postgresql://...``). A re-planning
run's planner asks for its batch as slot ``planner``, its ``--round`` the decision's number (as
``pending`` says it). Each error is one line on stderr, exit status 1: a command that does not
parse (a missing argument, a slot or a round that is no number from 0 to 2**63-1, a duration
that is no number and unit), a file that is missing, a server that cannot be reached, a
database that is not a journal (it is never made one), a run the journal does not hold, a slot
that asked nothing, a question answered already, an empty ``--by``.
"""

from __future__ import annotations

import argparse
import getpass
import re
import shutil
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from .._approval import asker
from .._identity import PLANNER
from .._journal import Journal
from .._journal_view import RunSummary
from .._store import errors

__all__ = ["main"]

LARGEST = 2**63 - 1  # the largest integer SQLite holds
SHOWN = 10  # the runs an unknown run's error names at most
REFUSED = 1  # the exit status of every error: the command, or what it names, is refused
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
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
    ...         return await supervisor.run([7], durable=Durable("r1", journal))
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
        description="See the runs a journal holds; answer the questions its workers asked.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = commands.add_parser("runs", help="each run: plan, done, failed, parked, running")
    listing.add_argument("file", help=WHERE)
    showing = commands.add_parser("show", help="a run's slots, as a timeline")
    showing.add_argument("file", help=WHERE)
    showing.add_argument("run", help="the run's run_id")
    collecting = commands.add_parser("gc", help="remove finished runs older than a duration")
    collecting.add_argument("file", help=WHERE)
    collecting.add_argument(
        "--older-than",
        type=_duration,
        required=True,
        metavar="DURATION",
        help="last active longer ago than this: a number and s, m, h, d or w (7d, 12h, 30m)",
    )
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
    asking = commands.add_parser("pending", help="the questions without an answer")
    asking.add_argument("file", help=WHERE)
    asking.add_argument("run", help="the run's run_id")
    options = parser.parse_args(argv)
    refused: tuple[type[Exception], ...] = (OSError, ValueError, RuntimeError, *errors())
    try:
        said = _command(options)
    except refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return REFUSED
    print(said, end="")
    return 0


def _command(options: argparse.Namespace) -> str:
    """What the command of ``options`` says on stdout, once done.

    Raises:
      OSError, ValueError, RuntimeError, a driver's error: what it refuses, in one line.
    """
    command = options.command
    if command in ("runs", "show"):
        with Journal(options.file, read_only=True) as journal:
            if command == "runs":
                return _listing(journal.summaries())
            _known(journal, options)
            begun, rows = journal.slots(options.run)
        from ._show import render  # the drawing library, loaded only to draw

        return render(rows, begun, time.time(), shutil.get_terminal_size().columns)
    if command == "gc":
        seconds, said = options.older_than
        with Journal(options.file, writer="inline", create=False) as journal:
            gone = journal.collect(seconds)
        if not gone:
            return f"no finished run last active more than {said} ago\n"
        return "".join(
            f"removed {run.run_id}: {run.plan} slots ({run.done} done, {run.failed} failed), "
            f"last active {_when(run.last)}\n"
            for run in gone
        )
    asking = command == "pending"
    by = "" if asking else options.by if options.by is not None else _login()
    with Journal(options.file, writer="inline", create=False) as journal:
        if asking:
            _known(journal, options)
            return "".join(
                f"{asker(round_, slot)}: {question}\n"
                for round_, slot, question in journal.pending(options.run)
            )
        answer = journal.approve if options.command == "approve" else journal.reject
        answer(options.run, options.slot, by=by, note=options.note, round=options.round)
    done = "approved" if options.command == "approve" else "rejected"
    return f"{options.run} {asker(options.round, options.slot, False)}: {done}\n"


def _known(journal: Journal, options: argparse.Namespace) -> None:
    """Check the journal holds the run ``options`` names.

    Raises:
      ValueError: naming the runs it holds, if it does not.
    """
    runs = journal.runs()
    if options.run not in runs:
        shown = ", ".join(runs[:SHOWN]) + (", ..." if len(runs) > SHOWN else "")
        raise ValueError(f"no run {options.run!r} in {options.file} (its runs: {shown or 'none'})")


def _listing(runs: Sequence[RunSummary]) -> str:
    """The table ``runs`` prints: a line per run, under a heading."""
    if not runs:
        return "no runs\n"
    wide = max(3, *(len(run.run_id) for run in runs))
    lines = [_line(wide, "run", ("plan", "done", "failed", "parked", "running"), "last activity")]
    for run in runs:
        plan = "?" if run.plan is None else str(run.plan)
        counts = (plan, run.done, run.failed, run.parked, run.running)
        lines.append(_line(wide, run.run_id, counts, _when(run.last)))
    return "".join(f"{line.rstrip()}\n" for line in lines)


def _line(wide: int, name: str, counts: Sequence[object], last: str) -> str:
    """One line of ``runs``' table: the run's name in a column ``wide``, then its counts."""
    return f"{name:<{wide}}  " + "  ".join(f"{count:>7}" for count in counts) + f"  {last}"


def _when(at: float | None) -> str:
    """A unix time as the command line says it (UTC), or ``-`` when unknown."""
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


class _Parser(argparse.ArgumentParser):
    """A parser whose every error is one line on stderr, with the way to its usage, and exit
    status 1, as the command's other errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(REFUSED, f"{self.prog}: {message} (see {self.prog} --help)\n")


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


def _duration(text: str) -> tuple[float, str]:
    """A duration on the command line, a number and a unit: its seconds, and as it was said."""
    found = DURATION.fullmatch(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError(
            f"a duration is a number and a unit, s, m, h, d or w (as 30m, 12h, 7d), not {text!r}"
        )
    return float(found[1]) * UNITS[found[2]], text.strip()


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
