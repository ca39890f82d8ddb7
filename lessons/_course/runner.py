"""``python -m lessons``: the command that lists the steps, or runs them and shows each run.

Its jobs are in files of their own: the command line and its rules (``arguments``), what runs
(``demos``), running (``running``), showing (``showing``, ``live``) and recording
(``recording``: ``--json``, ``--trace-out``), and how it ends early (``ending``: ``SIGTERM``, a
stdout that takes no more). ``exercise`` and ``check`` are the exercises' commands
(``exercises``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from lessons._course.arguments import parser, refused, select, unreachable, writable_refused
from lessons._course.demos import Demo, demos
from lessons._course.ending import (
    TERMINATED,
    OutputLost,
    Stdout,
    leaves,
    leaving,
    output_lost,
    quieten,
    say,
    terminations,
)
from lessons._course.recording import runs_json, write_trace_events
from lessons._course.running import Run, journal_problem, run_demo
from lessons._course.showing import ConsoleWatch, PipeConsole, list_steps, show
from lessons._course.steps import STEPS, load_step, step_number, steps
from trio_supervisor import decompose


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command line; returns the exit status: 0; 2 for bad input, refused before anything
    runs; 130 on Ctrl-C, 143 on ``SIGTERM`` (each ends the run cleanly: see `ending`); 1 when
    stdout takes no more (``| head``, a full disk, a closed stdout), which ends it quietly, or
    when ``--trace-out`` cannot be written after all. ``exercise`` and ``check`` are the
    exercises' commands (`lessons._course.exercises`)."""
    argv = sys.argv[1:] if argv is None else argv
    stdout = Stdout(sys.stdout)
    status: list[int] = []
    interrupted = False
    lost: list[OutputLost] = []
    with terminations() as signals, contextlib.redirect_stdout(stdout):
        try:
            status.append(command(argv, console or PipeConsole(file=stdout, highlight=False)))
        except* KeyboardInterrupt:
            interrupted = True
        except* OutputLost as group:
            lost += leaves(group, OutputLost)
        except* BrokenPipeError as group:  # a console of the caller's, not on `Stdout`
            lost += [output_lost(exc) for exc in leaves(group, BrokenPipeError)]
    if lost:
        quieten(stdout)
        if not lost[0].quiet:
            say(f"python -m lessons: {lost[0]}")
        return 1
    if interrupted:
        say("terminated" if signals else "interrupted")
        return TERMINATED if signals else 130
    return status[0]


def command(argv: Sequence[str], console: Console) -> int:
    """`main`'s work: the command ``argv``, its output on ``console``."""
    if argv and argv[0] in ("approve", "reject", "pending"):
        return answer(argv)
    if argv and argv[0] in ("exercise", "check"):
        from lessons._course import exercises  # imports Hypothesis: only when asked for

        return exercises.main(argv, console)
    p = parser()
    args = p.parse_args(argv)
    problem = refused(args)
    if problem is not None:
        p.error(problem)
    known = steps()
    names: list[str] = []
    try:
        if args.step is not None:
            names = select(args.step, known)
        chosen = {name: demos(args, number) for number, name in known.items() if name in names}
    except ValueError as exc:
        p.error(str(exc))
    problem = steps_refused(args, names, chosen) or writable_refused(args)
    if problem is not None:
        p.error(problem)
    if args.endpoint is not None and any(STEPS[step_number(n)].asks_endpoint for n in names):
        problem = unreachable(args.endpoint)
        if problem is not None:
            p.error(problem)
    if args.step is None:
        list_steps(console, known, as_json=args.json)
    runs = []
    for name in names:
        for demo in chosen[name]:
            watch = None if args.json else ConsoleWatch(console, shows_live(console, args))
            run = run_demo(name, demo, args, watch)
            runs.append(run)
            if not args.json:
                show(console, run)
    if args.json and names:
        print(runs_json(runs))
    status = 0
    if args.trace_out is not None and runs:
        status = trace_out(console, args, runs)
    sys.stdout.flush()
    return status


def trace_out(console: Console, args: argparse.Namespace, runs: list[Run]) -> int:
    """Write ``runs`` to ``--trace-out`` and say where they went: 0; or 1, said in one line on
    stderr, when the file cannot be written after all (found writable before the runs, it may
    still fail: a full disk, ``/dev/full``)."""
    try:
        write_trace_events(args.trace_out, runs)
    except OSError as exc:
        say(f"python -m lessons: --trace-out: cannot write {args.trace_out}: {exc.strerror or exc}")
        return 1
    if not args.json:
        console.print(
            f"{len(runs)} run{'s' if len(runs) > 1 else ''} written to {args.trace_out}: "
            "open it in Perfetto's UI (ui.perfetto.dev) or chrome://tracing",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return 0


def steps_refused(
    args: argparse.Namespace, names: Sequence[str], chosen: Mapping[str, Sequence[Demo]]
) -> str | None:
    """Why the steps ``names`` cannot run their demos ``chosen`` as the command line asks (one
    line, stating the rule), or None: a task a step refuses, ``--crash`` for a step whose
    workers run in this process, ``--need`` past a company's leaves, a journal where a step
    keeps no journal, or a run the journal cannot take."""
    for name in names:
        record = STEPS[step_number(name)]
        problem = task_refused(name, chosen[name])
        if problem is not None:
            return problem
        if args.crash and not record.takes_crash:
            first = min(number for number, each in STEPS.items() if each.takes_crash)
            return (
                f"--crash needs a step whose workers run in worker processes ({first} on): "
                f"{name} runs them in this process, where a crash would end the runner"
            )
        problem = need_refused(name, chosen[name]) or journaling_refused(args, name, chosen[name])
        if problem is not None:
            return problem
    return None


def task_refused(name: str, demos: Sequence[Demo]) -> str | None:
    """Why step ``name`` refuses a task of ``demos`` (a malformed company, from step 23 on), in
    its own words, or None."""
    record = STEPS[step_number(name)]
    if record.check_task is None:
        return None
    check = getattr(load_step(name), record.check_task)
    for demo in demos:
        try:
            check(demo.task)
        except ValueError as exc:
            return f"--task: {exc}"
    return None


def need_refused(name: str, demos: Sequence[Demo]) -> str | None:
    """Why a demo's ``need`` (``--need K``: a company keeps the first K of its leaves) is more
    than one of its companies has leaves, or None: refused, where the step would quietly take
    every leaf of that company instead. What a company's leaves are is step ``name``'s own
    ``subtasks_of`` (from step 23 on), read from the step as the runner reads its other
    functions, so that the runner imports no step."""
    for demo in demos:
        need = demo.options.get("need")
        if need is None:
            continue
        subtasks_of = load_step(name).subtasks_of

        for company in decompose(demo.task):
            leaves = len(subtasks_of(company))
            if need > leaves:
                return (
                    "--need must be at most the leaves of each company (a company keeps its "
                    f"first K), and {company.strip()!r} has {leaves}, got {need}"
                )
    return None


def journaling_refused(args: argparse.Namespace, name: str, demos: Sequence[Demo]) -> str | None:
    """Why step ``name`` cannot run ``demos`` with the command line's ``--journal``,
    ``--run-id`` and ``--resume``, or None."""
    if args.journal is None and args.run_id is None and not args.resume:
        return None
    record = STEPS[step_number(name)]
    if not record.journals:
        first = min(number for number, each in STEPS.items() if each.journals)
        return (
            f"--journal, --run-id and --resume need a step whose runs are journaled "
            f"({first} on): {name} keeps its results in memory only"
        )
    if args.run_id is not None and len(demos) > 1:
        return (
            f"--run-id names one run, and the step has {len(demos)} demos: give --task too, "
            "or leave --run-id out"
        )
    for demo in demos:
        problem = journal_problem(record, demo, args)
        if problem is not None:
            return problem
    return None


def answer(argv: Sequence[str]) -> int:
    """``python -m lessons approve FILE RUN SLOT [--by NAME] [--note TEXT]`` (and ``reject``,
    ``pending FILE RUN``): the library's journal command line, under the course's name, its
    errors one line with exit status 2 as the runner's are."""
    from trio_supervisor.journal import main as journal_main

    status = journal_main(list(argv), prog="python -m lessons")
    return 2 if status == 1 else status


def main_for_step(path: str) -> NoReturn:
    """What ``python -m lessons.stepNN_<name>`` runs: that step, with the same options."""
    status = main([Path(path).stem, *sys.argv[1:]])
    leaving()
    sys.exit(status)


def shows_live(console: Console | None, args: argparse.Namespace) -> bool:
    """Whether a run shows its sub-agents at work on ``console``: only in real time on a
    terminal (never under ``--json``, which gives no console; never in a pipe or a file)."""
    return console is not None and console.is_terminal and not args.virtual
