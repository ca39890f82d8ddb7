"""``python -m lessons``: the command that lists the steps, or runs them and shows each run.

Its jobs are in files of their own: the command line and its rules (``arguments``), what runs
(``demos``), running (``running``), showing (``showing``, ``live``) and recording
(``recording``: ``--json``, ``--trace-out``). ``exercise`` and ``check`` are the exercises'
commands (``exercises``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from lessons._course.arguments import parser, refused, select, unreachable
from lessons._course.demos import demos
from lessons._course.recording import runs_json, write_trace_events
from lessons._course.running import journal_problem, run_demo
from lessons._course.showing import ConsoleWatch, PipeConsole, list_steps, show
from lessons._course.steps import STEPS, load_step, step_number, steps


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command line; returns the exit status: 0; 2 for bad input, refused before anything
    runs; 130 on Ctrl-C; 1 when stdout is closed early (``| head``), which ends it quietly.
    ``exercise`` and ``check`` are the exercises' commands (`lessons._course.exercises`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("approve", "reject", "pending"):
        return answer(argv)
    if argv and argv[0] in ("exercise", "check"):
        from lessons._course import exercises  # imports Hypothesis: only when asked for

        return exercises.main(argv, console)
    p = parser()
    args = p.parse_args(argv)
    console = console or PipeConsole(highlight=False)
    known = steps()
    problem = refused(args)
    if problem is not None:
        p.error(problem)
    names: list[str] = []
    try:
        if args.step is not None:
            names = select(args.step, known)
        chosen = {name: demos(args, number) for number, name in known.items() if name in names}
        for name in names:
            check = STEPS[step_number(name)].check_task
            if check is None:
                continue
            for demo in chosen[name]:
                try:
                    getattr(load_step(name), check)(demo.task)
                except ValueError as exc:
                    raise ValueError(f"--task: {exc}") from None
    except ValueError as exc:
        p.error(str(exc))
    if args.crash:
        for name in names:
            if not STEPS[step_number(name)].takes_crash:
                first = min(number for number, record in STEPS.items() if record.takes_crash)
                p.error(
                    f"--crash needs a step whose workers run in worker processes ({first} on): "
                    f"{name} runs them in this process, where a crash would end the runner"
                )
    journaling = args.journal is not None or args.run_id is not None or args.resume
    for name in names if journaling else ():
        record = STEPS[step_number(name)]
        if not record.journals:
            first = min(number for number, each in STEPS.items() if each.journals)
            p.error(
                f"--journal, --run-id and --resume need a step whose runs are journaled "
                f"({first} on): {name} keeps its results in memory only"
            )
        if args.run_id is not None and len(chosen[name]) > 1:
            p.error(
                "--run-id names one run, and the step has "
                f"{len(chosen[name])} demos: give --task too, or leave --run-id out"
            )
        for demo in chosen[name]:
            problem = journal_problem(record, demo, args)
            if problem is not None:
                p.error(problem)
    if args.endpoint is not None and any(STEPS[step_number(n)].asks_endpoint for n in names):
        problem = unreachable(args.endpoint)
        if problem is not None:
            p.error(problem)
    runs = []
    interrupted = closed = False
    try:
        if args.step is None:
            list_steps(console, known, as_json=args.json)
        for name in names:
            for demo in chosen[name]:
                watch = None if args.json else ConsoleWatch(console, shows_live(console, args))
                run = run_demo(name, demo, args, watch)
                runs.append(run)
                if not args.json:
                    show(console, run)
        if args.json and names:
            print(runs_json(runs))
        if args.trace_out is not None and runs:
            write_trace_events(args.trace_out, runs)
            if not args.json:
                console.print(
                    f"{len(runs)} run{'s' if len(runs) > 1 else ''} written to {args.trace_out}: "
                    "open it in Perfetto's UI (ui.perfetto.dev) or chrome://tracing",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
        sys.stdout.flush()
    except* KeyboardInterrupt:
        interrupted = True
    except* BrokenPipeError:
        closed = True
    if closed:
        # Python's recipe for a reader that left (signal module docs, "Note on SIGPIPE"): the
        # rest of the output goes to devnull, so the flush at exit cannot fail again either
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def answer(argv: Sequence[str]) -> int:
    """``python -m lessons approve FILE RUN SLOT [--by NAME] [--note TEXT]`` (and ``reject``,
    ``pending FILE RUN``): the library's journal command line, under the course's name, its
    errors one line with exit status 2 as the runner's are."""
    from trio_supervisor.journal import main as journal_main

    status = journal_main(list(argv), prog="python -m lessons")
    return 2 if status == 1 else status


def main_for_step(path: str) -> NoReturn:
    """What ``python -m lessons.stepNN_<name>`` runs: that step, with the same options."""
    sys.exit(main([Path(path).stem, *sys.argv[1:]]))


def shows_live(console: Console | None, args: argparse.Namespace) -> bool:
    """Whether a run shows its sub-agents at work on ``console``: only in real time on a
    terminal (never under ``--json``, which gives no console; never in a pipe or a file)."""
    return console is not None and console.is_terminal and not args.virtual
