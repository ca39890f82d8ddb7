"""The command line of ``python -m lessons``: its options, and every rule they must keep, each
refused in one line (exit 2) before anything runs."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")


class _Parser(argparse.ArgumentParser):
    """The runner's parser: an error is one line (exit 2), and an option's value may start with
    ``-`` (``--intensity -1/5`` is read as ``--intensity=-1/5``, so that its rule is stated,
    where argparse would take ``-1/5`` for an option and say only that a value is missing)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.named: set[str] = set()  # every option string
        self.valued: set[str] = set()  # the option strings that take a value
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.named.update(action.option_strings)
        if action.nargs != 0:
            self.valued.update(action.option_strings)
        return action

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        joined: list[str] = []
        index = 0
        while index < len(given):
            word = given[index]
            following = given[index + 1] if index + 1 < len(given) else ""
            if word in self.valued and following.startswith("-") and following not in self.named:
                joined.append(f"{word}={following}")
                index += 2
            else:
                joined.append(word)
                index += 1
        return super().parse_known_args(joined, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


SECONDS = 300.0
"""The longest a timeout, deadline, latency, restart period or hedge delay may be: five minutes,
ample for any demo, and short enough that a run on virtual time ends in seconds."""
COUNT = 1000
"""The most of anything counted: calls, rounds, subtasks, restarts, results."""
WORKERS = 100
"""The most ``--workers``: from step 26 on, each is a process started before the run."""
ATTEMPTS = 100
"""The most ``--attempts``: a slot that always fails is called this often, with backoff."""
TOKENS = 10**9
"""The most tokens ``--budget-tokens`` may give."""
RATE = (0.01, 1000.0)
"""The fewest and the most attempts a second ``--rate`` may allow."""


def _integer(text: str, least: int, most: int) -> int | None:
    """``text`` as an integer from ``least`` to ``most``, or None."""
    try:
        value = int(text)
    except ValueError:
        return None
    return value if least <= value <= most else None


def _number(text: str, least: float, most: float, above: bool = False) -> float | None:
    """``text`` as a finite number from ``least`` (above it, if ``above``) to ``most``, or None
    (never ``nan`` or ``inf``)."""
    try:
        value = float(text)
    except ValueError:
        return None
    low = value > least if above else value >= least
    return value if low and value <= most else None


def _integers(least: int, most: int = COUNT) -> Callable[[str], int]:
    """An option's type: an integer from ``least`` to ``most``, or its rule."""

    def integer(text: str) -> int:
        value = _integer(text, least, most)
        if value is None:
            raise argparse.ArgumentTypeError(
                f"must be an integer from {least} to {most}, got {text!r}"
            )
        return value

    return integer


_workers = _integers(1, WORKERS)
_positive = _integers(1)
_count = _integers(0)


def _seconds(text: str) -> float:
    value = _number(text, 0, SECONDS, above=True)
    if value is None:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 and at most {SECONDS:g}, got {text!r}"
        )
    return value


def _pair(
    text: str,
    separator: str,
    parse: Callable[[str, str], tuple[int | None, T | None]],
    rule: str,
    default: str = "",
) -> tuple[int, T]:
    """Parse ``A<separator>B`` with ``parse`` (each part or None), or say the option's rule."""
    first_text, _, second_text = text.partition(separator)
    first, second = parse(first_text, second_text or default)
    if first is None or second is None:
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
    return first, second


def _hedge(text: str) -> float | str:
    """``--hedge``: seconds after which a leaf gets a second request, or a percentile ``pNN``
    of the recent attempts' durations, as the library's ``Hedge(after=...)`` takes it."""
    from trio_supervisor import Hedge

    rule = f"must be seconds above 0 and at most {SECONDS:g}, or a percentile such as p95"
    if text.startswith("p"):
        try:
            Hedge(after=text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{rule}, got {text!r}") from None
        return text
    after = _number(text, 0, SECONDS, above=True)
    if after is None:
        raise argparse.ArgumentTypeError(f"{rule}, got {text!r}")
    return after


def _rate(text: str) -> float:
    value = _number(text, *RATE)
    if value is None:
        least, most = RATE
        raise argparse.ArgumentTypeError(
            f"must be a number of attempts a second from {least:g} to {most:g}, got {text!r}"
        )
    return value


def _endpoint(text: str) -> str:
    try:
        url = urllib.parse.urlsplit(text)
        url.port  # noqa: B018  # raises ValueError for a port that is not a number in range
    except ValueError:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.hostname:
        from trio_supervisor.agents import mask  # a password in the URL is never shown

        raise argparse.ArgumentTypeError(
            f"must be an http(s) base URL such as http://127.0.0.1:8000/v1, got {mask(text)!r}"
        )
    return text


def _slot(text: str) -> int | None:
    """``text`` as a slot, an integer >= 0 (the task's size bounds it once the task is known,
    see ``demos.demos``), or None."""
    return _integer(text, 0, sys.maxsize)


def _flaky(text: str) -> tuple[int, int]:
    rule = f"a slot I or I:K (slot I fails its first K calls, K from 1 to {COUNT})"
    return _pair(
        text,
        ":",
        lambda slot, calls: (_slot(slot), _integer(calls, 1, COUNT)),
        rule,
        default="1",
    )


def _slow(text: str) -> tuple[int, float]:
    rule = f"I:S (slot I takes S seconds, from 0 to {SECONDS:g}), e.g. 1:3"
    return _pair(text, ":", lambda slot, latency: (_slot(slot), _number(latency, 0, SECONDS)), rule)


def _intensity(text: str) -> tuple[int, float]:
    rule = (
        f"R/T (at most R restarts, from 0 to {COUNT}, in T seconds, above 0 and at most "
        f"{SECONDS:g}), e.g. 3/5"
    )
    return _pair(
        text,
        "/",
        lambda restarts, period: (
            _integer(restarts, 0, COUNT),
            _number(period, 0, SECONDS, above=True),
        ),
        rule,
    )


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m lessons",
        description="Run the course's steps. With no step, list them.",
        epilog="Exercises: 'python -m lessons exercise N' writes one, 'python -m lessons check N' "
        "grades it by step N's laws.",
    )
    p.add_argument("step", nargs="?", help="a step's number or name, or 'all'")
    p.add_argument("--task", help="the task to run instead of the demos, e.g. 'a; b; c'")
    p.add_argument("--workers", type=_workers, default=4, metavar="K", help="max_workers (4)")
    p.add_argument("--seed", type=int, default=0, help="picks the sub-agent's latencies (0)")
    p.add_argument(
        "--fail", type=int, action="append", metavar="I", help="a slot to fail (repeatable)"
    )
    p.add_argument(
        "--hang", type=int, action="append", metavar="I", help="a slot that hangs (repeatable)"
    )
    p.add_argument(
        "--flaky",
        type=_flaky,
        action="append",
        metavar="I[:K]",
        help="slot I fails its first K calls (1), then succeeds (repeatable)",
    )
    p.add_argument(
        "--slow",
        type=_slow,
        action="append",
        metavar="I:S",
        help="slot I takes S seconds (repeatable)",
    )
    p.add_argument(
        "--crash",
        type=int,
        action="append",
        metavar="I",
        help="slot I's worker kills its process (26) (repeatable)",
    )
    p.add_argument("--timeout", type=_seconds, metavar="S", help="each worker's timeout (6-)")
    p.add_argument("--deadline", type=_seconds, metavar="S", help="the whole run's deadline (7-)")
    p.add_argument(
        "--attempts", type=_integers(1, ATTEMPTS), metavar="N", help="calls per slot at most (8-)"
    )
    p.add_argument(
        "--intensity", type=_intensity, metavar="R/T", help="at most R restarts in T seconds (9-)"
    )
    p.add_argument(
        "--window", type=_positive, metavar="N", help="slots started, not yet handed over (13-)"
    )
    p.add_argument("--take", type=_positive, metavar="N", help="leave the stream after N (10-)")
    p.add_argument(
        "--strategy",
        choices=("one_for_one", "one_for_all", "rest_for_one"),
        help="which leaves a restart takes (24-)",
    )
    p.add_argument(
        "--rate", type=_rate, metavar="R", help="at most R attempts start a second (18-)"
    )
    p.add_argument(
        "--endpoint",
        type=_endpoint,
        metavar="URL",
        help="an OpenAI-compatible server's base URL, its key from OPENAI_API_KEY (17-)",
    )
    p.add_argument("--model", metavar="NAME", help="the model to ask at --endpoint (17-)")
    p.add_argument("--max-rounds", type=_positive, metavar="N", help="rounds at most (20-)")
    p.add_argument(
        "--max-subtasks", type=_positive, metavar="N", help="subtasks at most, all rounds (21-)"
    )
    p.add_argument(
        "--max-stalls", type=_count, metavar="N", help="stalls before a fresh plan (21-)"
    )
    p.add_argument("--max-resets", type=_count, metavar="N", help="fresh plans at most (21-)")
    p.add_argument(
        "--planner", choices=("scripted", "llm"), help="who decides each round's batch (22-)"
    )
    p.add_argument(
        "--journal", type=Path, metavar="FILE", help="journal the runs in FILE, SQLite (27-)"
    )
    p.add_argument("--run-id", metavar="ID", help="the run's name in --journal (27-)")
    p.add_argument(
        "--resume", action="store_true", help="resume --run-id from --journal, no kill (27-)"
    )
    p.add_argument(
        "--hedge", type=_hedge, metavar="S|pNN", help="a second request after S or pNN (29-)"
    )
    p.add_argument("--need", type=_positive, metavar="K", help="a company's first K leaves (30-)")
    p.add_argument(
        "--budget-tokens",
        type=_integers(1, TOKENS),
        metavar="N",
        help="tokens the leaves may spend, reserved before each request (31-)",
    )
    p.add_argument(
        "--lease",
        type=_seconds,
        metavar="S",
        help="seconds a supervisor holds a slot before another may take it over (33-)",
    )
    p.add_argument("--virtual", action="store_true", help="run on virtual time: instant, exact")
    p.add_argument("--json", action="store_true", help="print the runs as JSON on stdout")
    p.add_argument(
        "--trace-out",
        type=Path,
        metavar="FILE",
        help="write the runs' traces to FILE for Perfetto's UI (a process per run)",
    )
    return p


def select(step: str, known: dict[int, str]) -> list[str]:
    """The module names a step argument names: a number, a name, or 'all'."""
    if step == "all":
        return list(known.values())
    if step.isascii() and step.isdigit() and len(step) <= 9 and int(step) in known:
        return [known[int(step)]]
    if step in known.values():
        return [step]
    numbers = f"{min(known)}-{max(known)}"
    raise ValueError(f"unknown step {step!r}: choose a number {numbers}, a step name, or 'all'")


SUB_AGENT = ("fail", "hang", "flaky")  # what a slot may be given to do: one of these
SLOT_OPTIONS = (*SUB_AGENT, "slow", "crash")  # the repeatable options, each naming a slot once


def stepless(args: argparse.Namespace) -> str | None:
    """Why the command line's options have nothing to change, or None: with no step named, it
    lists the steps (``--json`` lists them as JSON), and an option for the runs would be
    silently dropped."""
    if args.step is not None:
        return None
    defaults = vars(parser().parse_args([]))
    given = [
        name for name, value in vars(args).items() if name != "json" and value != defaults[name]
    ]
    if not given:
        return None
    option = "--" + given[0].replace("_", "-")
    return f"{option} is for a step's runs: name the step (such as 3), or 'all'"


def conflicting(args: argparse.Namespace) -> str | None:
    """What the command line asks that cannot hold together, or None.

    A slot does one of fail, hang and flaky; a slot that hangs never ends, so it takes no
    ``--slow`` latency; ``--flaky`` and ``--slow`` give a slot one value each. Refused rather
    than letting one silently win; so is a slot given the same option twice.
    """
    for option in SLOT_OPTIONS:
        slots = slots_of(args, option)
        for slot in sorted(set(slots)):
            if slots.count(slot) > 1:
                return f"slot {slot} is given --{option} twice: give each slot once"
    given: dict[int, list[str]] = {}
    for option in SUB_AGENT:
        for slot in slots_of(args, option):
            given.setdefault(slot, []).append(option)
    for slot, options in sorted(given.items()):
        if len(options) > 1:
            both = " and ".join(f"--{option}" for option in options)
            return f"slot {slot} is given both {both}: a slot does one of fail, hang, flaky"
    for slot in slots_of(args, "crash"):
        if slot in given:
            return (
                f"slot {slot} is given both --crash and --{given[slot][0]}: a slot whose "
                "process dies does nothing else"
            )
    for slot in slots_of(args, "slow"):
        if slot in slots_of(args, "hang"):
            return (
                f"slot {slot} is given both --hang and --slow: a slot that hangs never ends, "
                "so it has no latency"
            )
    return None


def slots_of(args: argparse.Namespace, option: str) -> list[int]:
    """The slots the command line gives ``--option`` (``--slow 1:3`` gives slot 1), in order."""
    return [value if isinstance(value, int) else value[0] for value in getattr(args, option) or ()]


def endpoint_refused(args: argparse.Namespace) -> str | None:
    """Why ``--endpoint`` and ``--model`` cannot be used as given, or None.

    An endpoint needs a model to ask and a key (``OPENAI_API_KEY``, never shown); it runs on
    real time, and it does what it does: the slot options that script the loopback server
    (``--fail``, ``--hang``, ``--flaky``, ``--slow``) cannot reach it.
    """
    if args.endpoint is None:
        if args.model is not None:
            return "--model names the model of an --endpoint: give --endpoint URL too"
        return None
    if not args.model:
        return "--endpoint needs --model NAME: the model to ask there"
    if args.virtual:
        return "--endpoint runs on real time: a real server cannot follow --virtual's clock"
    for option in ("fail", "hang", "flaky", "slow"):
        if getattr(args, option):
            return (
                f"--{option} scripts the loopback server; an --endpoint does what it does: "
                f"leave out --{option} or --endpoint"
            )
    if not os.environ.get("OPENAI_API_KEY"):
        return (
            "--endpoint reads its API key from OPENAI_API_KEY, which is not set "
            "(any non-empty value for a server that checks none)"
        )
    return None


def refused(args: argparse.Namespace) -> str | None:
    """Why the command line cannot run as given (one line, stating the rule), or None: options
    that cannot hold together, and options whose values contradict each other."""
    conflict = stepless(args) or conflicting(args)
    if conflict is not None:
        return conflict
    if args.window is not None and args.window < args.workers:
        return f"--window must be >= --workers ({args.workers}), got {args.window}"
    if args.trace_out is not None and args.trace_out.is_dir():
        return (
            f"--trace-out: {args.trace_out} is a directory: give a FILE, "
            f"such as {args.trace_out / 'runs.json'}"
        )
    if args.trace_out is not None and not args.trace_out.parent.is_dir():
        return f"--trace-out: {args.trace_out.parent} is not a directory: give a FILE in one"
    problem = journal_refused(args)
    if problem is not None:
        return problem
    return endpoint_refused(args)


def journal_refused(args: argparse.Namespace) -> str | None:
    """Why ``--journal``, ``--run-id`` and ``--resume`` cannot be used as given, or None: a
    resume needs a journal that exists; a run id names a run in a journal."""
    journal: Path | None = getattr(args, "journal", None)
    if journal is None:
        if getattr(args, "resume", False):
            return "--resume needs --journal FILE: the journal to resume the run from"
        if getattr(args, "run_id", None) is not None:
            return "--run-id names a run in a journal: give --journal FILE too"
        return None
    if journal.is_dir():
        return f"--journal: {journal} is a directory: give a FILE, such as {journal / 'runs.db'}"
    if not journal.parent.is_dir():
        return f"--journal: {journal.parent} is not a directory: give a FILE in one"
    if getattr(args, "resume", False) and not journal.is_file():
        return f"--resume: no journal at {journal}: run once without --resume to make it"
    return None


def writable_refused(args: argparse.Namespace) -> str | None:
    """Why ``--trace-out`` or ``--journal`` cannot be written, found before any run rather than
    after them all (or, for a journal, as every run's error), or None. A journal is a regular
    file, where SQLite keeps its own files beside it."""
    journal: Path | None = getattr(args, "journal", None)
    if journal is not None and journal.exists() and not journal.is_file():
        return f"--journal: {journal} is not a regular file: give a FILE, such as runs.db"
    for option, path in (("--trace-out", args.trace_out), ("--journal", journal)):
        problem = None if path is None else unwritable(path)
        if problem is not None:
            return f"{option}: cannot write {path}: {problem}"
    if journal is not None:
        try:
            with tempfile.TemporaryFile(dir=journal.parent):
                pass
        except OSError as exc:
            return f"--journal: cannot write beside {journal}, as SQLite does: {exc.strerror}"
    return None


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be opened to write, or None; it is left as it was (made and removed
    at once, when it did not exist)."""
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not existed:
        path.unlink(missing_ok=True)
    return None


REACH = 3.0
"""Seconds an ``--endpoint``'s server has to accept a connection before the runs start."""


def unreachable(url: str, timeout: float = REACH) -> str | None:
    """Why ``url``'s server cannot be reached (a TCP connection to its host and port, within
    ``timeout`` seconds), in one line, or None: found before any demo runs, rather than as
    every slot's retried connection error."""
    from trio_supervisor.agents import mask  # a password in the URL is never shown

    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout):
            return None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        return (
            f"cannot reach {mask(url)}: {why} (is a server listening on {parts.hostname}:{port}?)"
        )
