"""The lesson runner behind ``python -m lessons``: runs a step's demo and shows its timeline."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import trio
import trio.testing
from rich import box
from rich.console import Console
from rich.table import Table

import lessons
from trio_supervisor import (
    Aggregate,
    SimulatedAgent,
    Status,
    Trace,
    decompose,
    describe,
    render_timeline,
)

_STEP_NAME = re.compile(r"step(\d\d)_\w+")


def steps() -> dict[int, str]:
    """Step number -> module name of every ``lessons/stepNN_<name>.py``: add a file, add a step."""
    found = {}
    for module in pkgutil.iter_modules(lessons.__path__):
        match = _STEP_NAME.fullmatch(module.name)
        if match:
            found[int(match.group(1))] = module.name
    return dict(sorted(found.items()))


def load_step(name: str) -> ModuleType:
    """Import ``lessons.<name>``."""
    return importlib.import_module(f"lessons.{name}")


@dataclass(frozen=True)
class Demo:
    """A task to run a step on, and which of its slots the simulated sub-agent fails."""

    title: str
    task: str
    fail: frozenset[int] = field(default_factory=frozenset)


RESEARCH = Demo(
    "research this company",
    "competitor pricing; customer reviews; inventory",
    fail=frozenset({1}),  # the reviews sub-agent fails on purpose
)
LARGE = Demo(
    "a dozen subtasks",
    "market size; competitor pricing; customer reviews; inventory; hiring trends; "
    "patent filings; press coverage; supplier risk; regulatory exposure; leadership team; "
    "funding history; web traffic",
)
DEMOS = (RESEARCH, LARGE)


@dataclass
class Run:
    """One run of one step on one task: what the runner shows and what ``--json`` prints."""

    step: str
    demo: Demo
    plan: list[str]
    options: dict[str, Any]
    trace: Trace | None = None
    aggregate: Aggregate[str] | None = None
    error: str | None = None
    answer: str | None = None
    serial: float | None = None

    def to_dict(self) -> dict[str, Any]:
        aggregate = None
        if self.aggregate is not None:
            aggregate = {
                "results": [
                    {
                        "subtask": result.subtask,
                        "output": result.output,
                        "error": result.error,
                        "status": result.status.value,
                    }
                    for result in self.aggregate.results
                ],
                "succeeded": self.aggregate.succeeded,
                "failed": self.aggregate.failed,
                "degraded": self.aggregate.degraded,
            }
        return {
            "step": self.step,
            "demo": self.demo.title,
            "task": self.demo.task,
            "options": self.options,
            "aggregate": aggregate,
            "error": self.error,
            "answer": self.answer,
            "serial": self.serial,
            "trace": None if self.trace is None else self.trace.to_dict(),
        }


def step_options(supervise: Callable[..., Any], args: argparse.Namespace) -> dict[str, Any]:
    """The keyword options this step's ``supervise`` accepts, filled from the command line."""
    accepted = inspect.signature(supervise).parameters
    given = {"max_workers": args.workers}
    return {name: value for name, value in given.items() if name in accepted}


async def run_step(module: ModuleType, run: Run, agent: SimulatedAgent) -> None:
    """Run ``module.supervise`` on ``run``'s task with a traced ``agent``, recording the outcome.

    A step that raises is part of the lesson (steps 1-4 do on a failure): its exception, a group
    or not, is recorded whole and shown. Cancellation and ``KeyboardInterrupt`` pass through.
    """
    run.trace = Trace(run.plan)
    try:
        run.aggregate = await module.supervise(run.demo.task, run.trace.watch(agent), **run.options)
    except Exception as exc:
        run.error = describe(exc)
    finally:
        run.trace.close()
    synthesize = getattr(module, "synthesize", None)
    if run.aggregate is not None and synthesize is not None:
        run.answer = synthesize(run.aggregate)


def show_header_to(console: Console) -> Callable[[Run], None]:
    """What prints which step runs on which task, before it runs (so Ctrl-C has a context)."""

    def show_header(run: Run) -> None:
        options = "".join(f", {name}={value}" for name, value in run.options.items())
        console.print(f"[bold]{run.step}[/bold] · {run.demo.title}{options}")
        console.file.flush()

    return show_header


def show(console: Console, run: Run) -> None:
    """Print a finished run: timeline, results table, synthesized answer and summary line."""
    assert run.trace is not None
    width = max(16, min(60, console.width - 60))
    console.print(render_timeline(run.trace, final_statuses(run), width=width))
    ranks = run.trace.completion_rank()
    if run.aggregate is not None:
        table = Table(
            title="results, in the order supervise returned them",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        table.add_column("slot", justify="right")
        table.add_column("subtask", max_width=22, no_wrap=True, overflow="ellipsis")
        table.add_column("result", no_wrap=True)
        table.add_column("output or error", overflow="fold")
        table.add_column("done #", justify="right")
        for slot, result in zip(result_slots(run), run.aggregate.results, strict=True):
            shown = result.output if result.ok else result.error
            style = "green" if result.ok else "red"
            table.add_row(
                str(slot),
                str(result.subtask),
                f"[{style}]{result.status.value}[/{style}]",
                str(shown),
                str(ranks.get(slot, "")),
            )
        console.print(table)
    if run.answer is not None:
        console.print("[bold]answer[/bold]")
        console.print(run.answer, markup=False, highlight=False)
    serial = "never (a subtask hangs)" if run.serial is None else f"{run.serial:.2f}s"
    summary = f"wall {run.trace.wall:.2f}s · serial would take {serial}"
    if run.aggregate is not None:
        summary += f" · {run.aggregate.succeeded} ok, {run.aggregate.failed} failed"
    console.print(summary, highlight=False)
    if run.error is not None:
        console.print(f"[red]the run raised {run.error}[/red]", highlight=False, soft_wrap=True)
    console.print()


def result_slots(run: Run) -> list[int]:
    """The plan slot of each result, in the order the aggregate holds them (duplicates in turn)."""
    assert run.aggregate is not None
    unused: dict[str, list[int]] = {}
    for slot, subtask in enumerate(run.plan):
        unused.setdefault(subtask, []).append(slot)
    return [unused[result.subtask].pop(0) for result in run.aggregate.results]


def final_statuses(run: Run) -> dict[int, Status]:
    """What the aggregate says of each slot, which the timeline shows over the raw trace."""
    if run.aggregate is None:
        return {}
    return {
        slot: result.status
        for slot, result in zip(result_slots(run), run.aggregate.results, strict=True)
    }


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m lessons",
        description="Run the course's steps. With no step, list them.",
    )
    p.add_argument("step", nargs="?", help="a step's number or name, or 'all'")
    p.add_argument("--task", help="the task to run instead of the demos, e.g. 'a; b; c'")
    p.add_argument("--workers", type=_workers, default=4, metavar="K", help="max_workers (4)")
    p.add_argument("--seed", type=int, default=0, help="picks the sub-agent's latencies (0)")
    p.add_argument(
        "--fail", type=int, action="append", metavar="I", help="a slot to fail (repeatable)"
    )
    p.add_argument("--virtual", action="store_true", help="run on virtual time: instant, exact")
    p.add_argument("--json", action="store_true", help="print the runs as JSON on stdout")
    return p


def select(step: str, known: dict[int, str]) -> list[str]:
    """The module names a step argument names: a number, a name, or 'all'."""
    if step == "all":
        return list(known.values())
    if step.isdigit() and int(step) in known:
        return [known[int(step)]]
    if step in known.values():
        return [step]
    numbers = f"{min(known)}-{max(known)}"
    raise ValueError(f"unknown step {step!r}: choose a number {numbers}, a step name, or 'all'")


def demos(args: argparse.Namespace) -> list[Demo]:
    """The tasks to run: ``--task`` alone, or the default demos; ``--fail`` replaces their fails."""
    chosen = [Demo("your task", args.task)] if args.task is not None else list(DEMOS)
    if args.fail is not None:
        chosen = [Demo(demo.title, demo.task, frozenset(args.fail)) for demo in chosen]
    for demo in chosen:
        try:
            size = len(decompose(demo.task))
        except ValueError as exc:
            raise ValueError(f"--task: {exc}") from None
        for slot in sorted(demo.fail):
            if not 0 <= slot < size:
                raise ValueError(f"--fail {slot} is not a slot of the task: slots are 0-{size - 1}")
    return chosen


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command line; returns the exit status (0, 2 for bad input, 130 on Ctrl-C)."""
    p = parser()
    args = p.parse_args(argv)
    console = console or Console(highlight=False)
    known = steps()
    if args.step is None:
        for number, name in known.items():
            summary = (load_step(name).__doc__ or "").strip().splitlines()[0]
            console.print(f"{number:>2}  {name:<26} {summary}", markup=False, soft_wrap=True)
        return 0
    try:
        names = select(args.step, known)
        chosen = demos(args)
    except ValueError as exc:
        p.error(str(exc))
    runs = []
    interrupted = False
    try:
        for name in names:
            for demo in chosen:
                run = run_demo(
                    name, demo, args, before=None if args.json else show_header_to(console)
                )
                runs.append(run)
                if not args.json:
                    show(console, run)
    except* KeyboardInterrupt:
        interrupted = True
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps({"runs": [run.to_dict() for run in runs]}, indent=2))
    return 0


def main_for_step(path: str) -> NoReturn:
    """What ``python -m lessons.stepNN_<name>`` runs: that step, with the same options."""
    sys.exit(main([Path(path).stem, *sys.argv[1:]]))


def run_demo(
    name: str, demo: Demo, args: argparse.Namespace, before: Callable[[Run], None] | None = None
) -> Run:
    """Run step ``name`` on ``demo`` with the command line's options, and return the run.

    What ``python -m lessons`` does for each step and demo, and what the docs draw their
    timelines from. With ``args.virtual`` the run is on ``trio.testing.MockClock``: instant, exact.
    ``before`` is called with the run just before it starts (the runner prints its header).
    """
    module = load_step(name)
    plan = decompose(demo.task)
    agent = SimulatedAgent(args.seed, fail={plan[slot] for slot in demo.fail})
    run = Run(name, demo, plan, step_options(module.supervise, args))
    if not any(agent.hangs(subtask) for subtask in plan):
        run.serial = sum(agent.latency(subtask) for subtask in plan)
    clock = trio.testing.MockClock(autojump_threshold=0) if args.virtual else None
    if before is not None:
        before(run)
    trio.run(run_step, module, run, agent, clock=clock)
    return run
