"""The lesson runner behind ``python -m lessons``: runs a step's demo and shows its timeline.

Part II's seam: a step may say what its worker is with a module-level ``open_worker``, an async
context manager function that takes the demo's simulated sub-agent (a
``trio_supervisor.testing.SimulatedAgent``: what each slot does, its latencies) and yields the
worker the step's ``supervise`` (or ``stream``) is given, wrapped in ``trace.watch`` as the
simulated sub-agent is for a step without one. It is entered inside the run's ``trio.run`` and
left when the run ends (a server it starts stops then). Besides the simulated sub-agent it is
given, by keyword, those of these its signature names: ``virtual`` (the run is on a
``trio.testing.MockClock``: no real socket, no real time), ``max_workers`` (the run's),
``endpoint`` and ``model`` (``--endpoint URL --model NAME``; None without them), ``plan``
(the subtasks), and ``crash`` (the subtasks whose worker is to end its process: ``--crash``,
refused for a step whose hook does not name it). ``--endpoint``, ``--model`` and ``--rate``
change only a step that takes them (``--rate`` is an option of its ``supervise``); the steps
before ignore them, as they ignore the options of any later step.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import errno
import inspect
import json
import math
import os
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, TypeVar

import trio
import trio.testing
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lessons._course.demos import DEMOS, NEVER_RETURNS, NO_TIMEOUT, STEP_DEMOS, Demo
from lessons._course.live import show_live
from lessons._course.steps import load_step, step_number, steps
from trio_supervisor import Aggregate, Answer, Span, Status, SubResult, Trace, decompose
from trio_supervisor._contract import describe
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.timeline import render_timeline, trace_events

T = TypeVar("T")


@dataclass
class Run:
    """One run of one step on one task: what the runner shows and what ``--json`` prints."""

    step: str
    demo: Demo
    plan: list[str]
    options: dict[str, Any]
    trace: Trace | None = None
    aggregate: Aggregate[str, str] | None = None
    error: str | None = None
    answer: str | None = None
    serial: float | None = None
    guard: float = math.inf  # seconds: a run still going then never returns (see run_step)
    stopped: float | None = None  # when the guard stopped a run that never returns, if it did
    replanned: Answer[str, str] | None = None  # a re-planning step's answer: rounds and ledger
    endpoint: str | None = None  # --endpoint, for a step whose worker takes one (see open_worker)
    model: str | None = None  # --model, with --endpoint

    def to_dict(self) -> dict[str, Any]:
        """The run as plain data for ``--json``.

        ``options`` holds every option of the step's ``supervise`` as the run used it (the
        step's default where neither the demo nor the command line set it; no bound, such as an
        infinite timeout, is ``null``), and ``take`` for a step that streams. Each slot, in the
        results and in the trace, carries its ``status``, ``attempts`` (the worker's calls),
        ``started`` (its first attempt's start) and ``finished`` (its last attempt's end), in
        seconds since the trace's origin. ``endpoint`` and ``model`` say where a step that takes
        ``--endpoint`` sent its requests (null otherwise, as for the loopback server).
        """
        slots = self.slot_facts()
        aggregate = None
        if self.aggregate is not None:
            aggregate = {
                "results": [
                    {
                        "slot": slot,
                        "subtask": result.subtask,
                        "output": result.output,
                        "error": result.error,
                        **slots.get(slot, {}),
                        "status": result.status.value,
                    }
                    for slot, result in zip(result_slots(self), self.aggregate.results, strict=True)
                ],
                "succeeded": self.aggregate.succeeded,
                "failed": self.aggregate.failed,
                "degraded": self.aggregate.degraded,
            }
        trace = None
        if self.trace is not None:
            trace = self.trace.to_dict()
            for traced in trace["slots"]:
                traced.update(slots[traced["slot"]])
        return {
            "step": self.step,
            "demo": self.demo.title,
            "task": self.demo.task,
            "options": self.every_option(),
            "aggregate": aggregate,
            "error": self.error,
            "answer": self.answer,
            "serial": self.serial,
            "stopped": self.stopped,
            "endpoint": self.endpoint,
            "model": self.model,
            "trace": trace,
            "replan": None if self.replanned is None else replan_dict(self.replanned, self.trace),
        }

    def every_option(self) -> dict[str, Any]:
        """Every keyword option of the step's ``supervise`` (or ``stream``) and its value in this
        run, then ``take`` if the step streams; unbounded values are None."""
        module = load_step(self.step)
        function = entry(module)
        options: dict[str, Any] = {}
        for name, parameter in inspect.signature(function).parameters.items():
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "trace":
                default = (
                    None if parameter.default is inspect.Parameter.empty else parameter.default
                )
                options[name] = self.options.get(name, default)
        if function is not module.supervise:
            options["take"] = self.demo.take
        return {
            name: None if isinstance(value, float) and not math.isfinite(value) else value
            for name, value in options.items()
        }

    def slot_facts(self) -> dict[int, dict[str, Any]]:
        """Slot -> its status, attempts, started and finished, from the trace (the aggregate's
        status where it has the slot), times in seconds since the trace's origin."""
        if self.trace is None:
            return {}
        statuses = final_statuses(self)
        origin = self.trace.origin
        facts = {}
        for slot in self.trace.slots:
            status = statuses.get(slot.slot, slot.status)
            facts[slot.slot] = {
                "status": None if status is None else status.value,
                "attempts": len(slot.spans),
                "started": None if slot.started is None else slot.started - origin,
                "finished": None if slot.ended is None else slot.ended - origin,
            }
        return facts


def step_options(
    supervise: Callable[..., Any], args: argparse.Namespace, demo: Demo | None = None
) -> dict[str, Any]:
    """The keyword options this step's ``supervise`` accepts, filled from the demo's options and
    the command line (which wins)."""
    accepted = inspect.signature(supervise).parameters
    given = {"max_workers": args.workers, **(demo.options if demo is not None else {})}
    for name, option in OPTIONS.items():
        value = getattr(args, option, None)
        if value is not None:
            given[name] = value
    return {name: value for name, value in given.items() if name in accepted}


OPTIONS = {
    "worker_timeout": "timeout",
    "deadline": "deadline",
    "attempts": "attempts",
    "intensity": "intensity",
    "window": "window",
    "strategy": "strategy",
    "seed": "seed",
    "rate": "rate",
    "max_rounds": "max_rounds",
    "max_subtasks": "max_subtasks",
    "max_stalls": "max_stalls",
    "planner": "planner",
    "endpoint": "endpoint",
    "model": "model",
}
"""Keyword option of a step's ``supervise`` -> the command-line option that sets it."""


def entry(module: ModuleType) -> Callable[..., Any]:
    """What the runner calls in a step: its ``stream`` if it streams, else its ``supervise``."""
    function: Callable[..., Any] = getattr(module, "stream", None) or module.supervise
    return function


def lazily(plan: Sequence[str], trace: Trace) -> Iterator[str]:
    """The plan as a lazy input, which marks on ``trace`` when each subtask is pulled."""
    for slot, subtask in enumerate(plan):
        trace.pulled(slot, subtask)
        yield subtask


HOOK = "open_worker"
"""The module-level name of a step's worker factory: Part II's seam (see the module's doc)."""


def takes_crash(module: ModuleType) -> bool:
    """Whether step ``module``'s worker runs in a process that ``--crash`` may end."""
    hook = getattr(module, HOOK, None)
    return hook is not None and "crash" in inspect.signature(hook).parameters


def takes_endpoint(module: ModuleType) -> bool:
    """Whether step ``module``'s worker can be pointed at an endpoint (``--endpoint``)."""
    hook = getattr(module, HOOK, None)
    return hook is not None and "endpoint" in inspect.signature(hook).parameters


@asynccontextmanager
async def worker_of(
    module: ModuleType, run: Run, agent: SimulatedAgent
) -> AsyncIterator[Callable[[Any], Any]]:
    """The worker of a run of step ``module``: what its ``open_worker`` yields, made from
    ``agent``, or ``agent`` itself for a step without one."""
    hook = getattr(module, HOOK, None)
    if hook is None:
        yield agent
        return
    given = {
        "virtual": isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock),
        "max_workers": run.options.get("max_workers", 1),
        "endpoint": run.endpoint,
        "model": run.model,
        "plan": list(run.plan),
        "crash": {run.plan[slot] for slot in run.demo.crash},
    }
    accepted = inspect.signature(hook).parameters
    async with hook(agent, **{k: v for k, v in given.items() if k in accepted}) as worker:
        yield worker


async def run_step(
    module: ModuleType, run: Run, agent: SimulatedAgent, live: Console | None = None
) -> None:
    """Run ``module.supervise`` on ``run``'s task with a traced worker, recording the outcome:
    ``agent``, or what the step's ``open_worker`` makes of it (see the module's doc).

    A step that streams (it has ``stream``) is fed the plan as a lazy input and consumed as it
    hands results over, each shown on ``live`` as it arrives; its results make the aggregate.
    A step that raises is part of the lesson (steps 1-4 do on a failure): its exception, a group
    or not, is recorded whole and shown. Cancellation and ``KeyboardInterrupt`` pass through, and
    so does a ``BrokenPipeError`` (in a group or not): the runner's own output found stdout closed.
    ``run.serial`` is then what the calls made take one after another (see ``serial_time``).
    """
    stream = getattr(module, "stream", None)
    unknown = replans(module.supervise) or (stream is not None and lazy_input(stream))
    plan = () if unknown else run.plan  # else slots added as they are dispatched
    run.trace = Trace(plan)
    try:
        async with worker_of(module, run, agent) as worker:
            run.trace = Trace(plan)  # the run's clock starts when its worker is ready (step 14)
            if stream is None and records_itself(module.supervise):
                run.aggregate = await module.supervise(
                    run.demo.task, worker, trace=run.trace, **run.options
                )
            elif stream is None:
                run.aggregate = await module.supervise(
                    run.demo.task, run.trace.watch(worker), **run.options
                )
            else:
                run.aggregate = await consume(stream, run, run.trace, worker, live)
    except Exception as exc:
        if stdout_closed(exc):  # the runner's own output failed, not the step: stop (see main)
            raise
        run.error = describe(exc)
    finally:
        run.trace.close()
    run.serial = serial_time(run.trace)
    if isinstance(run.aggregate, Answer):  # a re-planning step: the ledger's results, in order
        run.replanned = run.aggregate
        run.aggregate = Aggregate([entry.result for entry in run.replanned.ledger.entries])
        run.plan = [entry.subtask for entry in run.replanned.ledger.entries]
        run.answer = run.replanned.text
    synthesize = getattr(module, "synthesize", None)
    if run.aggregate is not None and synthesize is not None:
        run.answer = synthesize(run.aggregate)


def records_itself(supervise: Callable[..., Any]) -> bool:
    """Whether a step's ``supervise`` records its run into a trace it is given (a tree of
    supervisors draws its child runs under their parents' slots): then it gets the trace and
    the bare sub-agent."""
    return "trace" in inspect.signature(supervise).parameters


def leaf_spans(trace: Trace) -> list[Span]:
    """Every attempt of every slot that ran, a child run's in place of its parent slot's."""
    spans: list[Span] = []
    for slot in trace.slots:
        spans += slot.spans if slot.child is None else leaf_spans(slot.child)
    return spans


def serial_time(trace: Trace) -> float | None:
    """How long the calls the run made take one after another: every attempt of every slot
    that ran (retries too, and a stream's slots only as far as the caller read; in a tree, the
    leaves'), each as long as it ran; None while a call has not ended (it hangs)."""
    spans = leaf_spans(trace)
    if any(span.end is None for span in spans):
        return None
    return sum(span.end - span.start for span in spans if span.end is not None)


async def run_guarded(
    module: ModuleType,
    run: Run,
    agent: SimulatedAgent,
    live: Console | None = None,
    live_view: bool = False,
) -> None:
    """`run_step`, stopped by a watchdog if it still goes on ``run.guard`` seconds after it
    started: then it never returns (a worker hangs and nothing times it out, the flaw of steps
    1-5). ``run.trace`` becomes the trace as it was at that instant, the hung slots still
    running, ``run.stopped`` that instant, and ``run.error`` says why the run never returns
    (`NEVER_RETURNS`). With ``live_view``, the sub-agents are shown at work on ``live``
    while the run goes on (see ``lessons._course.live``)."""
    snapshot: list[Trace] = []  # the trace at the guard instant, if the watchdog fired
    with trio.CancelScope() as guarded:
        async with trio.open_nursery() as nursery:
            if math.isfinite(run.guard):
                nursery.start_soon(watchdog, run, guarded, snapshot)
            if live_view and live is not None:
                streaming = getattr(module, "stream", None) is not None
                timeout = run.options.get("worker_timeout")
                nursery.start_soon(show_live, live, lambda: run.trace, streaming, timeout)
            await run_step(module, run, agent, live)
            nursery.cancel_scope.cancel()  # the run returned: the watchdog is done
    if snapshot:
        run.trace = snapshot[0]
        run.stopped = run.trace.wall
        run.error = f"never returns: {NEVER_RETURNS.get(step_number(run.step), NO_TIMEOUT)}"


async def watchdog(run: Run, guarded: trio.CancelScope, snapshot: list[Trace]) -> None:
    """At ``run.guard`` seconds, keep a copy of ``run.trace`` as it is then (closed there) in
    ``snapshot``, and cancel ``guarded``: a run still going then never returns."""
    await trio.sleep(run.guard)
    assert run.trace is not None
    kept = copy.deepcopy(run.trace)
    kept.close()
    snapshot.append(kept)
    guarded.cancel()


def guard_after(function: Callable[..., Any], run: Run, agent: SimulatedAgent) -> float:
    """Seconds after which ``run`` of a step whose entry is ``function`` never returns, if it
    has not: never (infinite) unless a slot hangs and no timeout or deadline ends the run.

    Otherwise twice the longest time every other slot could take, each attempt of each one after
    the other with the longest backoff between attempts: a run still going then waits for a hung
    worker, and waits forever.
    """
    options = run.options
    timed = [options.get(name, math.inf) for name in ("worker_timeout", "deadline")]
    if not any(agent.hangs(subtask) for subtask in run.plan) or any(map(math.isfinite, timed)):
        return math.inf
    attempts: int = options.get("attempts", 1)
    backoff = options.get("backoff")
    if backoff is None:
        parameter = inspect.signature(function).parameters.get("backoff")
        backoff = (0.0, 0.0) if parameter is None else parameter.default
    others: float = sum(agent.latency(subtask) for subtask in run.plan if not agent.hangs(subtask))
    longest = attempts * others + (attempts - 1) * backoff[1] * len(run.plan)
    return max(1.0, 2 * longest)


def replans(supervise: Callable[..., Any]) -> bool:
    """Whether a step re-plans in rounds (it has ``max_rounds``): its plan is known only as the
    planner makes it, so its trace starts empty."""
    return "max_rounds" in inspect.signature(supervise).parameters


def lazy_input(stream: Callable[..., Any]) -> bool:
    """Whether a streaming step pulls its input lazily (it has a window): then the runner feeds
    it the plan one subtask at a time; a step that streams a known plan is given the task."""
    return "window" in inspect.signature(stream).parameters


def show_header_to(console: Console) -> Callable[[Run], None]:
    """What prints which step runs on which task, before it runs (so Ctrl-C has a context)."""

    def show_header(run: Run) -> None:
        options = "".join(f", {name}={value}" for name, value in run.options.items())
        if run.endpoint is not None:
            options += f", against {run.endpoint} ({run.model})"
        console.print(f"[bold]{run.step}[/bold] · {escape(run.demo.title)}{escape(options)}")
        console.file.flush()

    return show_header


async def consume(
    stream: Callable[..., Any],
    run: Run,
    trace: Trace,
    agent: Callable[[Any], Any],
    live: Console | None,
) -> Aggregate[str, str]:
    """Run a streaming step to its end, marking each result on ``trace`` as it is handed over."""
    results: list[SubResult[str, str]] = []
    task = lazily(run.plan, trace) if lazy_input(stream) else run.demo.task
    async with stream(task, trace.watch(agent), **run.options) as arriving:
        if live is not None:
            live.print("handed over, in plan order:", style="bold")
        async for result in arriving:
            trace.delivered(len(results))
            if live is not None:
                shown = result.status.value if result.ok else result.error
                live.print(
                    f"  {trace.wall:6.2f}s  slot {len(results):>2}  {result.subtask}  {shown}",
                    markup=False,
                    highlight=False,
                )
            results.append(result)
            if len(results) == run.demo.take:
                if live is not None:
                    live.print(f"left the stream after {len(results)} results", style="bold")
                break
    return Aggregate(results)


def show(console: Console, run: Run) -> None:
    """Print a finished run: timeline, results table, synthesized answer and summary line."""
    assert run.trace is not None
    width = max(16, min(60, console.width - 60))
    sections = round_sections(run)
    console.print(render_timeline(run.trace, final_statuses(run), width=width, sections=sections))
    if any(slot.delivered is not None for slot in run.trace.slots):
        console.print("░ done, held until every earlier slot was handed over", style="bright_black")
    if hasattr(load_step(run.step), HOOK):
        show_retries(console, run.trace)
    ranks = run.trace.completion_rank()
    if run.replanned is not None:
        show_ledger(console, run, run.replanned)
    elif run.aggregate is not None:
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
                escape(str(result.subtask)),
                f"[{style}]{result.status.value}[/{style}]",
                escape(str(shown)),
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
    if run.stopped is not None:
        console.print(f"{run.error}; stopped at {run.stopped:.2f}s", highlight=False, markup=False)
    elif run.error is not None:
        console.print(
            f"[red]the run raised {escape(run.error)}[/red]", highlight=False, soft_wrap=True
        )
    console.print()


def round_sections(run: Run) -> dict[int, str]:
    """A re-planning run's rounds as timeline headings: slot -> the heading above the first slot
    of each round, the planner's decision that made it (a round that dispatched nothing is said
    in the heading of the next round that did)."""
    if run.replanned is None or run.trace is None:
        return {}
    slots = iter(result_slots(run))
    origin = run.trace.origin
    sections: dict[int, str] = {}
    skipped: list[str] = []
    for done in run.replanned.ledger.rounds:
        said = done.error or done.note
        fresh = "a fresh plan: " if done.fresh else ""
        if not done.entries:
            skipped.append(f"round {done.number}: nothing, {said}")
            continue
        heading = f"round {done.number} · {done.planned - origin:.2f}s: {fresh}{said}"
        if skipped:
            heading += f" (after {'; '.join(skipped)})"
            skipped = []
        first = next(slots)
        for _ in done.entries[1:]:
            next(slots)
        sections[first] = heading
    return sections


def show_ledger(console: Console, run: Run, answer: Answer[str, str]) -> None:
    """A re-planning run's ledger, one row per dispatched subtask, and how the run ended."""
    table = Table(title="the ledger: every subtask dispatched, once", title_justify="left")
    table.box = box.SIMPLE_HEAD
    table.add_column("round", justify="right")
    table.add_column("#", justify="right")
    table.add_column("subtask", max_width=22, no_wrap=True, overflow="ellipsis")
    table.add_column("result", no_wrap=True)
    table.add_column("output or error", overflow="fold")
    table.add_column("replaces", no_wrap=True)
    for entry in answer.ledger.entries:
        result = entry.result
        style = "green" if result.ok else "red"
        replaces = "" if entry.replaces is None else "({}, {})".format(*entry.replaces)
        table.add_row(
            str(entry.round),
            str(entry.index),
            escape(str(result.subtask)),
            f"[{style}]{result.status.value}[/{style}]",
            escape(str(result.output if result.ok else result.error)),
            replaces,
        )
    console.print(table)
    origin = run.trace.origin if run.trace is not None else 0.0
    console.print("the planner's decisions:", style="bold")
    for done in answer.ledger.rounds:
        said = f"failed: {done.error}" if done.error else done.note
        fresh = "a fresh plan: " if done.fresh else ""
        stalled = " (then judged a stall)" if done.stalled else ""
        console.print(
            f"  {done.planned - origin:6.2f}s  round {done.number}: {fresh}{said}{stalled}",
            markup=False,
            highlight=False,
        )
    end = run.trace.wall if run.trace is not None else 0.0
    console.print(f"  {end:6.2f}s  {answer.reason}", markup=False, highlight=False)


def replan_dict(answer: Answer[str, str], trace: Trace | None) -> dict[str, Any]:
    """A re-planning run's rounds, ledger and ending as plain data (times since the trace's
    origin)."""
    origin = trace.origin if trace is not None else 0.0
    return {
        "ended_by": answer.ended_by,
        "degraded": answer.degraded,
        "reason": answer.reason,
        "rounds": [
            {
                "round": done.number,
                "note": done.note,
                "error": done.error,
                "fresh": done.fresh,
                "stalled": done.stalled,
                "planned": done.planned - origin,
                "dispatched": done.dispatched - origin,
                "finished": done.finished - origin,
                "subtasks": len(done.entries),
            }
            for done in answer.ledger.rounds
        ],
        "ledger": [
            {
                "round": entry.round,
                "index": entry.index,
                "subtask": entry.subtask,
                "status": entry.result.status.value,
                "output": entry.result.output,
                "error": entry.result.error,
                "replaces": None if entry.replaces is None else list(entry.replaces),
            }
            for entry in answer.ledger.entries
        ],
    }


def show_retries(console: Console, trace: Trace) -> None:
    """Each attempt that failed and was tried again: when it ended, why (a 429 and the wait its
    ``Retry-After`` asked for, a 500, a refused connection), and when the retry started."""
    origin = trace.origin
    lines = []
    for slot in trace.slots:
        for span, retry in zip(slot.spans, slot.spans[1:], strict=False):
            if span.end is None:
                continue
            why = span.error or (span.status.value if span.status is not None else "")
            if span.status is Status.CANCELLED:  # cancelled, yet tried again: its timeout
                why = "timed out: cancelled by the worker's timeout"
            why = why.split(" from ", 1)[0]  # the status, without the server's address
            asked = "" if span.retry_after is None else f" · Retry-After {span.retry_after:g}s"
            lines.append(
                f"  {span.end - origin:6.3f}s  slot {slot.slot:>2}  {why}{asked}"
                f" · retried at {retry.start - origin:.3f}s"
            )
    if not lines:
        return
    if any(span.retry_after is not None for slot in trace.slots for span in slot.spans):
        console.print("╌ told to wait: the wait a 429's Retry-After asked for", style="yellow")
    console.print("attempts that failed and were tried again:", style="bold")
    for line in lines:
        console.print(line, markup=False, highlight=False)


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


def _at_least(least: int) -> Callable[[str], int]:
    """An option's type: an integer >= ``least``, or its rule."""

    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be an integer >= {least}, got {text!r}"
            ) from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be an integer >= {least}, got {value}")
        return value

    return integer


_workers = _at_least(1)
_count = _at_least(0)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _pair(
    text: str,
    separator: str,
    second: Callable[[str], T],
    valid: Callable[[int, T], bool],
    rule: str,
    default: str = "",
) -> tuple[int, T]:
    """Parse ``A<separator>B`` into ``(int(A), second(B))``, or say the option's rule."""
    first_text, _, second_text = text.partition(separator)
    try:
        pair = int(first_text), second(second_text or default)
    except ValueError:
        pair = None
    if pair is None or not valid(*pair):
        raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
    return pair


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of attempts a second > 0, got {text!r}")
    return value


def _endpoint(text: str) -> str:
    try:
        url = urllib.parse.urlsplit(text)
        url.port  # noqa: B018  # raises ValueError for a port that is not a number in range
    except ValueError:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.hostname:
        raise argparse.ArgumentTypeError(
            f"must be an http(s) base URL such as http://127.0.0.1:8000/v1, got {text!r}"
        )
    return text


def _flaky(text: str) -> tuple[int, int]:
    rule = "a slot I or I:K (slot I fails its first K >= 1 calls)"
    return _pair(text, ":", int, lambda slot, calls: slot >= 0 and calls >= 1, rule, default="1")


def _slow(text: str) -> tuple[int, float]:
    rule = "I:S (slot I takes S >= 0 seconds), e.g. 1:3"
    return _pair(text, ":", float, lambda slot, latency: slot >= 0 and latency >= 0, rule)


def _intensity(text: str) -> tuple[int, float]:
    rule = "R/T (at most R >= 0 restarts in T > 0 seconds), e.g. 3/5"
    return _pair(text, "/", float, lambda restarts, period: restarts >= 0 and period > 0, rule)


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
        help="slot I's worker kills its process (14-) (repeatable)",
    )
    p.add_argument("--timeout", type=_seconds, metavar="S", help="each worker's timeout (6-)")
    p.add_argument("--deadline", type=_seconds, metavar="S", help="the whole run's deadline (6-)")
    p.add_argument("--attempts", type=_workers, metavar="N", help="calls per slot at most (7-)")
    p.add_argument(
        "--intensity", type=_intensity, metavar="R/T", help="at most R restarts in T seconds (8-)"
    )
    p.add_argument(
        "--window", type=_workers, metavar="N", help="slots pulled, not yet handed over (10)"
    )
    p.add_argument("--take", type=_workers, metavar="N", help="leave the stream after N (9-)")
    p.add_argument(
        "--strategy",
        choices=("one_for_one", "one_for_all", "rest_for_one"),
        help="which children a restart takes (13)",
    )
    p.add_argument(
        "--rate", type=_rate, metavar="R", help="at most R attempts start a second (11-)"
    )
    p.add_argument(
        "--endpoint",
        type=_endpoint,
        metavar="URL",
        help="an OpenAI-compatible server's base URL, its key from OPENAI_API_KEY (11-)",
    )
    p.add_argument("--model", metavar="NAME", help="the model to ask at --endpoint (11-)")
    p.add_argument("--max-rounds", type=_workers, metavar="N", help="rounds at most (12)")
    p.add_argument(
        "--max-subtasks", type=_workers, metavar="N", help="subtasks at most, all rounds (12)"
    )
    p.add_argument("--max-stalls", type=_count, metavar="N", help="stalls before a fresh plan (12)")
    p.add_argument(
        "--planner", choices=("scripted", "llm"), help="who decides each round's batch (12)"
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
    if step.isdigit() and int(step) in known:
        return [known[int(step)]]
    if step in known.values():
        return [step]
    numbers = f"{min(known)}-{max(known)}"
    raise ValueError(f"unknown step {step!r}: choose a number {numbers}, a step name, or 'all'")


def demos(args: argparse.Namespace, step: int | None = None) -> list[Demo]:
    """The tasks to run: ``--task`` alone (with the step's demo options), or the step's demos.

    ``--fail``, ``--hang``, ``--flaky`` and ``--slow`` replace what the sub-agent does, and a slot
    the command line gives one of fail, hang or flaky does only that (the demo's own behaviour for
    that slot is dropped). ``--take`` replaces when the caller leaves a stream, and the options
    of the step's ``supervise`` given on the command line replace the demo's. A demo the command
    line changed is no longer what its title says: it is titled by what runs (see
    ``changed_title``), and two demos the command line made the same run once (under the
    demo's own title if one of them is that demo unchanged). ``--take`` and the options change
    only a step that takes them: a step that does not stream has no caller that leaves.
    """
    defaults = STEP_DEMOS.get(step, DEMOS) if step is not None else DEMOS
    chosen = list(defaults)
    if args.task is not None:
        chosen = [Demo("your task", args.task, options=defaults[0].options)]
    known = steps()
    module = load_step(known[step]) if step in known else None
    given = given_options(args, module)
    take = getattr(args, "take", None)
    unique: list[Demo] = []
    for demo in chosen:
        replaced = dataclasses.replace(
            demo, options={**demo.options, **given}, **sub_agent(args, demo)
        )
        if take is not None and (module is None or hasattr(module, "stream")):
            replaced = dataclasses.replace(replaced, take=take)
        if replaced != demo and args.task is None:  # "your task" says what runs already
            replaced = dataclasses.replace(replaced, title=changed_title(replaced))
        same = [
            index
            for index, other in enumerate(unique)
            if dataclasses.replace(other, title="") == dataclasses.replace(replaced, title="")
        ]
        if not same:
            unique.append(replaced)
        elif replaced.title == demo.title:
            unique[same[0]] = replaced
    chosen = unique
    for demo in chosen:
        try:
            size = len(decompose(demo.task))
        except ValueError as exc:
            raise ValueError(f"--task: {exc}") from None
        for option, slots in (
            ("--fail", demo.fail),
            ("--hang", demo.hang),
            ("--flaky", demo.flaky),
            ("--slow", demo.slow),
            ("--crash", demo.crash),
        ):
            for slot in sorted(slots):
                if not 0 <= slot < size:
                    raise ValueError(
                        f"{option} {slot} is not a slot of the task: slots are 0-{size - 1}"
                    )
    return chosen


def given_options(args: argparse.Namespace, module: ModuleType | None) -> dict[str, Any]:
    """The options of step ``module``'s ``supervise`` the command line gives (every option when
    no step is named), which replace a demo's. ``--workers`` and ``--seed`` always have a value
    and change only how fast a demo runs, never what it shows: they reach the step (see
    ``step_options``) but change no demo.
    """
    accepted = None if module is None else inspect.signature(entry(module)).parameters
    given = {}
    for name, option in OPTIONS.items():
        value = getattr(args, option, None)
        if name != "seed" and value is not None and (accepted is None or name in accepted):
            given[name] = value
    return given


def sub_agent(args: argparse.Namespace, demo: Demo) -> dict[str, Any]:
    """What the sub-agent does on ``demo``'s slots with the command line's ``--fail``,
    ``--hang``, ``--flaky`` and ``--slow``: each given replaces the demo's, and a slot the
    command line gives one of fail, hang or flaky (or hang, for ``slow``) loses the demo's other
    behaviours, so that every slot does one thing."""
    fail = set(getattr(args, "fail", None) or ())
    hang = set(getattr(args, "hang", None) or ())
    flaky = dict(getattr(args, "flaky", None) or ())
    crash = getattr(args, "crash", None)
    named = fail | hang | set(flaky) | set(crash or ())
    slow = getattr(args, "slow", None)
    return {
        "fail": frozenset(fail) if args.fail is not None else demo.fail - named,
        "hang": frozenset(hang) if getattr(args, "hang", None) is not None else demo.hang - named,
        "flaky": flaky
        if getattr(args, "flaky", None) is not None
        else {slot: calls for slot, calls in demo.flaky.items() if slot not in named},
        "slow": dict(slow)
        if slow is not None
        else {slot: latency for slot, latency in demo.slow.items() if slot not in hang},
        "crash": frozenset(crash) if crash is not None else demo.crash - named,
    }


def changed_title(demo: Demo) -> str:
    """The title of a demo the command line changed, made of what runs: the task's size, what
    the sub-agent does on purpose and when the caller leaves (the header adds the options)."""

    def slots(chosen: Iterable[int]) -> str:
        ordered = sorted(chosen)
        return ("slot " if len(ordered) == 1 else "slots ") + ", ".join(map(str, ordered))

    said = [f"the demo's {len(decompose(demo.task))} subtasks"]
    if demo.fail:
        said.append(f"{slots(demo.fail)} {'fails' if len(demo.fail) == 1 else 'fail'}")
    if demo.hang:
        said.append(f"{slots(demo.hang)} {'hangs' if len(demo.hang) == 1 else 'hang'}")
    said += [
        f"slot {slot} fails its first {k} call{'s' if k > 1 else ''}"
        for slot, k in sorted(demo.flaky.items())
    ]
    if demo.crash:
        said.append(
            f"{slots(demo.crash)} {'kills its' if len(demo.crash) == 1 else 'kill their'} process"
        )
    said += [f"slot {slot} takes {t:g}s" for slot, t in sorted(demo.slow.items())]
    if demo.take is not None:
        said.append(f"left after {demo.take} results")
    return ", ".join(said)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command line; returns the exit status: 0; 2 for bad input, refused before anything
    runs; 130 on Ctrl-C; 1 when stdout is closed early (``| head``), which ends it quietly.
    ``exercise`` and ``check`` are the exercises' commands (`lessons._course.exercises`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("exercise", "check"):
        from lessons._course import exercises  # imports Hypothesis: only when asked for

        return exercises.main(argv, console)
    p = parser()
    args = p.parse_args(argv)
    console = console or PipeConsole(highlight=False)
    known = steps()
    conflict = conflicting(args)
    if conflict is not None:
        p.error(conflict)
    if args.planner == "llm" and args.virtual:
        p.error("--planner llm asks a real server, on real time: leave out --virtual")
    if args.window is not None and args.window < args.workers:
        p.error(f"--window must be >= --workers ({args.workers}), got {args.window}")
    if args.trace_out is not None and not args.trace_out.parent.is_dir():
        p.error(f"--trace-out: {args.trace_out.parent} is not a directory: give a FILE in one")
    endpoint_problem = endpoint_refused(args)
    if endpoint_problem is not None:
        p.error(endpoint_problem)
    names: list[str] = []
    try:
        if args.step is not None:
            names = select(args.step, known)
        chosen = {name: demos(args, number) for number, name in known.items() if name in names}
    except ValueError as exc:
        p.error(str(exc))
    if args.crash:
        for name in names:
            if not takes_crash(load_step(name)):
                p.error(
                    f"--crash needs a step whose workers run in worker processes (14 on): "
                    f"{name} runs them in this process, where a crash would end the runner"
                )
    runs = []
    interrupted = closed = False
    try:
        if args.step is None:
            list_steps(console, known, as_json=args.json)
        for name in names:
            for demo in chosen[name]:
                run = run_demo(
                    name,
                    demo,
                    args,
                    before=None if args.json else show_header_to(console),
                    live=None if args.json else console,
                )
                runs.append(run)
                if not args.json:
                    show(console, run)
        if args.json and names:
            print(json.dumps({"runs": [run.to_dict() for run in runs]}, indent=2))
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


def write_trace_events(path: Path, runs: Sequence[Run]) -> None:
    """Write ``runs`` to ``path`` as one trace-event file: each run a process (``pid`` 1, 2, ...
    in the order they ran) named by its step and demo, each slot a track in it (see
    [`trace_events`][trio_supervisor.timeline.trace_events]), the slots' final statuses as the
    run's results say them."""
    events = []
    for pid, run in enumerate(runs, start=1):
        if run.trace is not None:
            process = f"{run.step} · {run.demo.title}"
            events += trace_events(run.trace, final_statuses(run), pid=pid, process=process)
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}) + "\n")


class PipeConsole(Console):
    """The runner's console: a closed stdout raises ``BrokenPipeError`` where it is written to.

    Rich's own reaction, ``SystemExit`` from the write, would come out of a run's nursery inside an
    exception group, which Python prints whole; a ``BrokenPipeError`` passes through the step
    (see ``run_step``) to ``main``, which ends quietly.
    """

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")


def stdout_closed(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception in its group) says stdout was closed."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(BrokenPipeError) is not None
    return isinstance(exc, BrokenPipeError)


def list_steps(console: Console, known: Mapping[int, str], as_json: bool = False) -> None:
    """Print the steps, one line each: number, name and the first line of the docstring; with
    ``as_json``, as ``{"steps": [{"number", "name", "title", "idea"}, ...]}`` on stdout."""
    listed = []
    for number, name in known.items():
        summary = (load_step(name).__doc__ or "").strip().splitlines()[0]
        title, _, idea = summary.removeprefix(f"Step {number}: ").partition(". ")
        listed.append({"number": number, "name": name, "title": title, "idea": idea})
        if not as_json:
            console.print(f"{number:>2}  {name:<26} {summary}", markup=False, soft_wrap=True)
    if as_json:
        print(json.dumps({"steps": listed}, indent=2))


SUB_AGENT = ("fail", "hang", "flaky")  # what a slot may be given to do: one of these


def conflicting(args: argparse.Namespace) -> str | None:
    """What the command line asks that cannot hold together, or None.

    A slot does one of fail, hang and flaky; a slot that hangs never ends, so it takes no
    ``--slow`` latency; ``--flaky`` and ``--slow`` give a slot one value each. Refused rather
    than letting one silently win.
    """
    given: dict[int, list[str]] = {}
    for option in SUB_AGENT:
        for slot in {
            value if isinstance(value, int) else value[0] for value in getattr(args, option) or ()
        }:
            given.setdefault(slot, []).append(option)
    for slot, options in sorted(given.items()):
        if len(options) > 1:
            both = " and ".join(f"--{option}" for option in options)
            return f"slot {slot} is given both {both}: a slot does one of fail, hang, flaky"
    for slot in sorted(set(getattr(args, "crash", None) or ())):
        if slot in given:
            return (
                f"slot {slot} is given both --crash and --{given[slot][0]}: a slot whose "
                "process dies does nothing else"
            )
    for slot, _ in args.slow or ():
        if slot in (args.hang or ()):
            return (
                f"slot {slot} is given both --hang and --slow: a slot that hangs never ends, "
                "so it has no latency"
            )
    for option in ("flaky", "slow"):
        slots = [slot for slot, _ in getattr(args, option) or ()]
        for slot in sorted(set(slots)):
            if slots.count(slot) > 1:
                return f"slot {slot} is given --{option} twice: give each slot once"
    return None


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


def main_for_step(path: str) -> NoReturn:
    """What ``python -m lessons.stepNN_<name>`` runs: that step, with the same options."""
    sys.exit(main([Path(path).stem, *sys.argv[1:]]))


def shows_live(console: Console | None, args: argparse.Namespace) -> bool:
    """Whether a run shows its sub-agents at work on ``console``: only in real time on a
    terminal (never under ``--json``, which gives no console; never in a pipe or a file)."""
    return console is not None and console.is_terminal and not args.virtual


def run_demo(
    name: str,
    demo: Demo,
    args: argparse.Namespace,
    before: Callable[[Run], None] | None = None,
    live: Console | None = None,
) -> Run:
    """Run step ``name`` on ``demo`` with the command line's options, and return the run.

    What ``python -m lessons`` does for each step and demo, and what the docs draw their
    timelines from. With ``args.virtual`` the run is on ``trio.testing.MockClock``: instant, exact.
    ``before`` is called with the run just before it starts (the runner prints its header);
    ``live``, when given, shows a streaming step's results as they are handed over, and, when it
    is a terminal and the run is in real time, the sub-agents at work (a virtual run is over in
    an instant: it would show one frame, the end, which the timeline shows better).
    """
    module = load_step(name)
    plan = decompose(demo.task)
    agent = demo.agent(args.seed)
    run = Run(name, demo, plan, step_options(entry(module), args, demo))
    if getattr(args, "endpoint", None) is not None and takes_endpoint(module):
        run.endpoint, run.model = args.endpoint, args.model
    run.guard = guard_after(entry(module), run, agent) if run.endpoint is None else math.inf
    clock = trio.testing.MockClock(autojump_threshold=0) if args.virtual else None
    if before is not None:
        before(run)
    trio.run(run_guarded, module, run, agent, live, shows_live(live, args), clock=clock)
    return run
