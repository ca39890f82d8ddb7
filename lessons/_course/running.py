"""Running a step: one demo, on virtual or real time, under a guard for runs that never return.

Part II's seam: a step may say what its worker is with a module-level ``open_worker``, an async
context manager function that takes the demo's simulated sub-agent (a
``trio_supervisor.testing.SimulatedAgent``: what each slot does, its latencies) and yields the
worker the step's ``supervise`` (or ``stream``) is given, wrapped in ``trace.watch`` as the
simulated sub-agent is for a step without one. It is entered inside the run's ``trio.run`` and
left when the run ends (a server it starts stops then). Besides the simulated sub-agent it is
given, by keyword, those of these its record (``steps.Step.hook``) names: ``virtual`` (the run
is on a ``trio.testing.MockClock``: no real socket, no real time), ``max_workers`` (the run's),
``endpoint`` and ``model`` (``--endpoint URL --model NAME``; None without them), ``plan`` (the
subtasks), ``crash`` (the subtasks whose worker is to end its process: ``--crash``), and
``serving`` (how the demo's loopback server works through its requests: ``Demo.serving``).

Nothing here prints: what a run shows while it goes on is a ``Watch``'s job
(``showing.ConsoleWatch``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import itertools
import json
import math
import os
import re
import sqlite3
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import trio
import trio.testing

from lessons._course.demos import (
    ARRIVES_EVERY,
    ENDLESS,
    ENDLESS_EVERY,
    NEVER_RETURNS,
    NO_TIMEOUT,
    OPTIONS,
    Demo,
)
from lessons._course.ending import OutputLost
from lessons._course.errors import describe
from lessons._course.hooks import worker_of
from lessons._course.killing import kill_part_way, run_together
from lessons._course.steps import Step, load_step, step, step_number
from trio_supervisor import (
    Aggregate,
    Answer,
    Journal,
    Span,
    Status,
    SubResult,
    Trace,
    decompose,
)
from trio_supervisor.testing import SimulatedAgent


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
    guard: float = math.inf  # seconds: a run still going then never returns (see run_guarded)
    stopped: float | None = None  # when the guard stopped a run that never returns, if it did
    replanned: Answer[str, str] | None = None  # a re-planning step's answer: rounds and ledger
    endpoint: str | None = None  # --endpoint, for a step whose worker takes one (see worker_of)
    model: str | None = None  # --model, with --endpoint
    journal: Path | None = None  # --journal FILE; a scratch file when None (a journaling step)
    run_id: str = "run"  # --run-id, or the demo's own (see run_id_of)
    resume: bool = False  # --resume: no kill first, the run resumed from the journal
    killed: int | None = None  # results committed when the supervisor was killed (27)
    killed_really: bool = False  # that was a child Python killed (real time), not a simulation
    # when, on real time, the child was killed: the demo's killed_at, or later if nothing was
    # committed by then (a busy machine); None if it ended first or the kill was simulated
    killed_after: float | None = None
    answered: list[str] = field(default_factory=list)  # questions answered before (28)
    parked: list[tuple[str, int, int, str]] = field(default_factory=list)  # still unanswered
    replies: list[str] = field(default_factory=list)  # a chat model planner's, as it wrote them
    shared: str | None = None  # the journal's timeline of a run several supervisors shared (33)


class Watch(Protocol):
    """What sees a run as it goes: before it starts, each result a stream hands over, and (if
    ``live_view``) the whole run from a task of its own."""

    live_view: bool

    def starting(self, run: Run) -> None:
        """The run is about to start."""

    def streaming(self) -> None:
        """A stream opened: its results follow."""

    def handed_over(self, run: Run, slot: int, result: SubResult[str, str]) -> None:
        """A stream handed over ``result``, its ``slot``-th."""

    def left(self, taken: int) -> None:
        """The caller left the stream after ``taken`` results."""

    async def watch(self, run: Run, worker_timeout: float | None) -> None:
        """Show the run while it goes on, until cancelled when it ends."""


def step_options(
    record: Step, args: argparse.Namespace, demo: Demo | None = None
) -> dict[str, Any]:
    """The keyword options step ``record``'s entry accepts, filled from the demo's options and
    the command line (which wins)."""
    given = {"max_workers": args.workers, **(demo.options if demo is not None else {})}
    for name, option in OPTIONS.items():
        value = getattr(args, option, None)
        if value is not None:
            given[name] = value
    return record.accepted(**given)


def lazily(plan: Sequence[str], trace: Trace) -> Iterator[str]:
    """The plan as a lazy input, which marks on ``trace`` when each subtask is pulled."""
    for slot, subtask in enumerate(plan):
        trace.pulled(slot, subtask)
        yield subtask


class CallerError(Exception):
    """What a demo's caller raises in its own ``async for`` block (see ``Demo.raises``): a bug
    of the caller's, not of the stream's."""


async def endlessly(plan: Sequence[str], trace: Trace, pulled: list[str]) -> AsyncIterator[str]:
    """The plan over and over, each round's subtasks numbered (``review 01 (2)``), as a lazy
    input that never ends: one subtask every `ENDLESS_EVERY` seconds, each marked on ``trace``
    when it is pulled and kept in ``pulled``."""
    for slot in itertools.count():
        await trio.sleep(ENDLESS_EVERY)
        subtask, round_ = plan[slot % len(plan)], slot // len(plan)
        subtask = subtask if round_ == 0 else f"{subtask} ({round_ + 1})"
        trace.pulled(slot, subtask)
        pulled.append(subtask)
        yield subtask


async def as_made(plan: Sequence[str], trace: Trace) -> AsyncIterator[str]:
    """The plan as an input that arrives as it is made: one subtask every `ARRIVES_EVERY`
    seconds, each marked on ``trace`` when it is pulled."""
    for slot, subtask in enumerate(plan):
        await trio.sleep(ARRIVES_EVERY)
        trace.pulled(slot, subtask)
        yield subtask


def handed_to(run: Run, watch: Watch | None) -> Callable[[SubResult[str, str]], Awaitable[None]]:
    """The ``on_result`` of a step that hands each result over as it is ready (step 10): it
    marks each on ``run``'s trace as it is handed over, and tells ``watch``."""
    count = 0
    if watch is not None:
        watch.streaming()

    async def on_result(result: SubResult[str, str]) -> None:
        nonlocal count
        assert run.trace is not None
        run.trace.delivered(count)
        if watch is not None:
            watch.handed_over(run, count, result)
        count += 1

    return on_result


async def run_step(
    module: ModuleType, run: Run, agent: SimulatedAgent, watch: Watch | None = None
) -> None:
    """Run step ``module`` on ``run``'s task with a traced worker, recording the outcome:
    ``agent``, or what the step's ``open_worker`` makes of it (see the module's doc).

    A step that streams is fed the plan as a lazy input (if it pulls lazily) and consumed as it
    hands results over, each told to ``watch`` as it arrives; its results make the aggregate.
    A step that raises is part of the lesson (steps 1-4 do on a failure): its exception, a group
    or not, is recorded whole and shown. Cancellation and ``KeyboardInterrupt`` pass through, and
    so does an `ending.OutputLost` (in a group or not): the runner's own output found stdout
    closed or full.
    ``run.serial`` is then what the calls made take one after another (see ``serial_time``).
    """
    record = step(module.__name__)
    unknown = record.replans or record.lazy
    plan = () if unknown else run.plan  # else slots added as they are dispatched
    run.trace = Trace(plan)
    try:
        async with worker_of(module, run, agent) as worker:
            run.trace = Trace(plan)  # the run's clock starts when its worker is ready (step 26)
            if record.journals:
                run.aggregate = await durably(module, run, worker, agent)
            elif record.records_trace:
                run.aggregate = await module.supervise(
                    run.demo.task, worker, trace=run.trace, **run.options
                )
            elif not record.streams:
                handing = {"on_result": handed_to(run, watch)} if record.takes("on_result") else {}
                run.aggregate = await module.supervise(
                    run.demo.task, run.trace.watch(worker), **run.options, **handing
                )
            else:
                run.aggregate = await consume(module, run, run.trace, worker, watch)
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
    if run.aggregate is not None and record.synthesizes:
        run.answer = module.synthesize(run.aggregate)


async def durably(
    module: ModuleType, run: Run, worker: Callable[[Any], Any], agent: SimulatedAgent
) -> Any:
    """A journaling step's run: first, unless ``run.resume``, a run whose supervisor is killed
    at the demo's ``killed_at``; then the run again under the same ``run_id`` on the same file,
    resumed from the journal, which is the run shown (its ``run.trace``). ``run.killed`` is how
    many results the kill left committed.

    On real time the first run is a child Python killed with ``SIGKILL`` (``killing``). On
    virtual time the kill is simulated in this process: the run is cancelled there and its
    journal closed as a crash leaves it, what was not committed lost."""
    assert run.trace is not None
    virtual = isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
    writer = "inline" if virtual else "thread"  # on virtual time a commit is at an instant
    with tempfile.TemporaryDirectory() as scratch:
        path = run.journal or Path(scratch) / "journal.db"
        killed_at = run.demo.killed_at
        if run.demo.supervisors > 1 and not run.resume:
            return await together(module, run, worker, agent, path, virtual)
        if killed_at is not None and not run.resume and not virtual:
            run.killed_after = await kill_part_way(
                dataclasses.replace(run, trace=None),
                agent,
                path,
                killed_at,
                lambda: committed(path, run.run_id) > 0,
            )
            run.killed, run.killed_really = committed(path, run.run_id), True
            run.trace = Trace(())  # the resumed run's timeline starts now
        elif killed_at is not None and not run.resume:
            journal = Journal(path, writer=writer, flush="each")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kill, killed_at, nursery.cancel_scope)
                await module.supervise(
                    run.demo.task, worker, journal=journal, run_id=run.run_id, **run.options
                )
            journal.close(flush=False)  # the kill: what was not committed yet is lost
            run.killed = committed(path, run.run_id)
            run.trace = Trace(())  # the resumed run's timeline starts now
        elif run.demo.answers is not None and not run.resume and run.journal is None:
            with Journal(path, writer=writer, flush="each") as journal:
                await module.supervise(
                    run.demo.task, worker, journal=journal, run_id=run.run_id, **run.options
                )
                for name, round_, slot, question in pending(journal, run.run_id):
                    answer = journal.approve if run.demo.answers == "approve" else journal.reject
                    answer(name, slot, by="a second command", round=round_)  # as it would
                    run.answered.append(question)
            run.trace = Trace(())  # the resumed run's timeline starts now
        with Journal(path, writer=writer, flush="each") as journal:
            aggregate = await module.supervise(
                run.demo.task,
                worker,
                trace=run.trace,
                journal=journal,
                run_id=run.run_id,
                **run.options,
            )
            run.parked = pending(journal, run.run_id)
        return aggregate


async def together(
    module: ModuleType,
    run: Run,
    worker: Callable[[Any], Any],
    agent: SimulatedAgent,
    path: Path,
    virtual: bool,
) -> Any:
    """Step 33's demo: ``run.demo.supervisors`` supervisors of one run journaled in ``path``,
    started a moment apart (``APART``; on virtual time the last of three or more once the
    first's leases ran out), one killed at the demo's ``killed_at`` (on virtual time the
    first, on real time a child that holds a lease: ``run.killed_after`` says when); what the
    second returned, the run shown (its ``run.trace``: the slots it ran, and those it took from
    the journal). ``run.shared`` says who ran which slot: on real time the journal's timeline
    of the run, as ``python -m trio_supervisor.journal show`` draws it from the journal alone;
    on virtual time each supervisor's calls (the journal places its rows by the unix time they
    were written, which a virtual run does not keep), each row its supervisor's letter.

    Each supervisor's journal is opened as one supervisor's (``lease=None``): a step that
    shares the run's slots leases them itself (step 33), the step before runs every slot in
    each. On real time the others are child Pythons, one killed with ``SIGKILL``
    (``killing.run_together``); on virtual time they are tasks of this process, each with a
    journal of its own on the file, the first's dropped as a crash leaves it and its run
    cancelled, as the law does."""
    count, at = run.demo.supervisors, run.demo.killed_at or 0.0
    writer = "inline" if virtual else "thread"
    journals = [
        Journal(path, writer=writer, flush="each", lease=None)
        for _ in range(1 if not virtual else count)
    ]
    scopes = [trio.CancelScope() for _ in journals]
    answers: list[Any] = [None for _ in journals]
    shown = 0 if not virtual else 1  # this process's supervisor; on virtual time the second
    calls: list[tuple[float, str, Any, float, Status]] = []  # on virtual time: every call

    def calling(index: int, worker: Callable[[Any], Any]) -> Callable[[Any], Any]:
        letter = "ABCDEFGH"[index]

        async def call(subtask: Any) -> Any:
            start, status = trio.current_time(), Status.CANCELLED
            try:
                output = await worker(subtask)
                status = Status.OK
            except Exception:
                status = Status.FAILED
                raise
            finally:
                calls.append((start, letter, subtask, trio.current_time(), status))
            return output

        return call

    # on virtual time the last joins once the first's leases ran out, so that two supervisors
    # never wait for the same lease at one instant: which took the slot over would be a tie
    joins = at + float(run.options.get("lease") or 0.0) + APART
    ready = trio.Event()  # on real time: the child Pythons have started their runs

    async def one(index: int) -> None:
        await trio.sleep(joins if virtual and index == count - 1 > 1 else index * APART)
        if not virtual:
            await ready.wait()
        with scopes[index]:
            try:
                async with worker_of(module, run, agent) as own:  # each its own, as a process
                    answers[index] = await module.supervise(
                        run.demo.task,
                        calling(index, own) if virtual else own,
                        journal=journals[index],
                        run_id=run.run_id,
                        **({"trace": run.trace} if index == shown else {}),
                        **run.options,
                    )
            except* Exception:  # the killed one's journal closed under it
                if index or not virtual:
                    raise

    async def killer() -> None:
        await trio.sleep(at)
        journals[0].close(flush=False)  # the kill: what was not committed yet is lost
        scopes[0].cancel()

    names: dict[str, str] = {}
    async with trio.open_nursery() as nursery:
        for index in range(len(journals)):
            nursery.start_soon(one, index)
        if virtual:
            nursery.start_soon(killer)
        else:
            others = dataclasses.replace(run, trace=None)
            pids, run.killed_after = await run_together(
                others,
                agent,
                path,
                count - 1,
                at,
                ready,
                lambda pid: bool(leased(path, run.run_id, pid)),
            )
            names = {str(pid): f"process {index + 2}" for index, pid in enumerate(pids)}
            names[str(os.getpid())] = "process 1, this one"
            if run.killed_after is not None:
                names[str(pids[0])] += ", killed"
    for journal in journals:
        journal.close()
    run.killed_really = not virtual
    if virtual:
        run.shared = await trio.to_thread.run_sync(drawn_calls, sorted(calls, key=repr))
    else:
        run.shared = named_owners(await shown_journal(path, run.run_id), names)
    return answers[shown]


APART = 0.3
"""Seconds between the starts of step 33's supervisors: a moment, as processes start."""


def drawn_calls(calls: Sequence[tuple[float, str, Any, float, Status]]) -> str:
    """``calls`` (start, supervisor's letter, subtask, end, how it ended), each supervisor's
    calls of the worker, as a timeline in text: a row each, its letter first, in the order
    they started (replayed on a clock of their own: no run of this thread's is going on)."""
    from rich.console import Console

    from trio_supervisor.timeline import render_timeline

    async def replay() -> Trace:
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        origin = min((start for start, *_ in calls), default=0.0)
        drawn = Trace([f"{letter} {subtask}" for _, letter, subtask, _, _ in calls])
        events = sorted(
            [(start - origin, 1, slot) for slot, (start, *_) in enumerate(calls)]
            + [(end - origin, 0, slot) for slot, (_, _, _, end, _) in enumerate(calls)]
        )
        spans = {}
        for at, starts, slot in events:
            clock.jump(max(0.0, at - trio.current_time()))
            if starts:
                spans[slot] = drawn.started(slot)
            else:
                drawn.ended(slot, calls[slot][4], span=spans[slot])
        drawn.close()
        return drawn

    drawn = trio.run(replay, clock=trio.testing.MockClock())
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(render_timeline(drawn, {}, width=40))
    return out.getvalue()


async def shown_journal(path: Path, run_id: str) -> str:
    """What ``python -m trio_supervisor.journal show PATH RUN_ID`` prints, run as a command."""
    done = await trio.run_process(
        [sys.executable, "-m", "trio_supervisor.journal", "show", str(path), run_id],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    said = done.stdout if done.returncode == 0 else done.stderr
    return bytes(said).decode(errors="replace")


OWNER = re.compile(r"\b[\w.-]+:(\d+):[0-9a-f]{8}\b")


def named_owners(text: str, pids: dict[str, str]) -> str:
    """``text`` with each supervisor the journal names (``host:pid:random``) named as the
    demo started it: ``process N`` by its process id."""
    return OWNER.sub(lambda match: pids.get(match[1], "another process"), text)


def pending(journal: Journal, run_id: str) -> list[tuple[str, int, int, str]]:
    """The questions without an answer of run ``run_id`` and its child runs: (run, round,
    slot, question) each, as ``python -m lessons approve FILE RUN SLOT`` names them."""
    return [
        (name, *question)
        for name in sorted({name for name, _ in journal_runs(journal, run_id)})
        for question in journal.pending(name)
    ]


async def kill(at: float, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` ``at`` seconds from now: a kill the run cannot see coming (a deadline
    it could read, ``trio.move_on_after``, would let it end its slots early instead)."""
    await trio.sleep(at)
    scope.cancel()


def committed(path: Path, run_id: str) -> int:
    """How many final results journal ``path`` holds of run ``run_id`` and its child runs, as
    its resume takes them: a child run's (``{run}/{subtask}``) only when its parent slot has
    none, since the parent's result comes back whole, its child run's with it. The same count
    as the slots the resume's timeline draws from the journal."""
    with Journal(path, writer="inline") as journal:
        kept = {
            (name, round_): journal.results(name, round_)
            for name, round_ in journal_runs(journal, run_id)
        }
    subtasks: dict[str, set[str]] = {}  # run -> the subtasks it has results of (their reprs)
    for (name, _), results in kept.items():
        subtasks.setdefault(name, set()).update(str(result.subtask) for result in results)

    def covered(name: str) -> bool:  # a child run whose parent slot (or an ancestor's) is kept
        return any(
            name.startswith(f"{parent}/")
            and (repr(name[len(parent) + 1 :]) in said or covered(parent))
            for parent, said in subtasks.items()
        )

    return sum(len(results) for (name, _), results in kept.items() if not covered(name))


def leased(path: Path, run_id: str, pid: int) -> list[tuple[str, int, int]]:
    """The slots (run, round, slot) of run ``run_id`` or of its child runs in journal ``path``
    that the supervisor in process ``pid`` holds a lease of now, without a result yet (slots
    it runs: its kill leaves them to take over)."""
    with Journal(path, writer="inline") as journal:
        return [
            (name, row.round, row.slot)
            for name in sorted({name for name, _ in journal_runs(journal, run_id)})
            for row in journal.slots(name)[1]
            if row.status is None
            and row.claimed is not None
            and (row.owner or "").rsplit(":", 2)[1:2] == [str(pid)]
        ]


def journal_runs(journal: Journal, run_id: str) -> list[tuple[str, int]]:
    """Every (run, round) journal holds of ``run_id``: its rounds, and its children's runs."""
    with contextlib.closing(sqlite3.connect(f"file:{journal.path}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT run_id, round FROM runs WHERE run_id = ? OR run_id LIKE ? ORDER BY 1, 2",
            (run_id, f"{run_id}/%"),
        ).fetchall()
    return [(str(name), int(round_)) for name, round_ in rows]


async def consume(
    module: ModuleType,
    run: Run,
    trace: Trace,
    agent: Callable[[Any], Any],
    watch: Watch | None,
) -> Aggregate[str, str]:
    """Run a streaming step to its end, marking each result on ``trace`` as it is handed over."""
    results: list[SubResult[str, str]] = []
    pulled: list[str] = []
    task: Any = run.demo.task
    record = step(module.__name__)
    if record.lazy:
        task = endlessly(run.plan, trace, pulled) if run.demo.endless else lazily(run.plan, trace)
    if record.lazy and run.demo.arrives:  # a step that cannot await it gets it read whole
        task = as_made(run.plan, trace)
        task = task if record.awaits else [subtask async for subtask in task]
    try:
        async with module.stream(task, trace.watch(agent), **run.options) as arriving:
            if watch is not None:
                watch.streaming()
            async for result in arriving:
                trace.delivered(len(results))
                if watch is not None:
                    watch.handed_over(run, len(results), result)
                results.append(result)
                if len(results) == run.demo.raises:
                    raise CallerError(f"the caller's block failed after {len(results)} results")
                if len(results) == run.demo.take:
                    if watch is not None:
                        watch.left(len(results))
                    break
    finally:
        if run.demo.endless:  # the plan is what was pulled
            run.plan = pulled
    return Aggregate(results)


def leaf_spans(trace: Trace) -> list[Span]:
    """Every attempt of every slot that ran, a child run's in place of its parent slot's."""
    spans: list[Span] = []
    for slot in trace.slots:
        if not slot.children:
            spans += slot.spans
        for child in slot.children:  # every child run, a retried parent's first ones too
            spans += leaf_spans(child)
    return spans


def reasked(trace: Trace) -> list[tuple[str, int, str | None]]:
    """Every leaf attempt that made more than one request (a typed reply asked again, step
    32): its subtask, its requests, and its error (None: it ended with a valid reply)."""
    found: list[tuple[str, int, str | None]] = []
    for slot in trace.slots:
        for child in slot.children:
            found += reasked(child)
        if slot.children:
            continue
        for span in slot.spans:
            if span.usage is not None and span.usage.calls > 1:
                found.append((str(slot.subtask), span.usage.calls, span.error))
    return found


def serial_time(trace: Trace) -> float | None:
    """How long the calls the run made take one after another: every attempt of every slot
    that ran (retries too, and a stream's slots only as far as the caller read; in a tree, the
    leaves'), each as long as it ran; None while a call has not ended (it hangs)."""
    spans = leaf_spans(trace)
    if any(span.end is None for span in spans):
        return None
    return sum(span.end - span.start for span in spans if span.end is not None)


async def run_guarded(
    module: ModuleType, run: Run, agent: SimulatedAgent, watch: Watch | None = None
) -> None:
    """`run_step`, stopped by a watchdog if it still goes on ``run.guard`` seconds after it
    started: then it never returns (a worker hangs and nothing times it out, the flaw of steps
    1-5). ``run.trace`` becomes the trace as it was at that instant, the hung slots still
    running, ``run.stopped`` that instant, and ``run.error`` says why the run never returns
    (`NEVER_RETURNS`). A ``watch`` with ``live_view`` is shown the run while it goes on."""
    snapshot: list[Trace] = []  # the trace at the guard instant, if the watchdog fired
    with trio.CancelScope() as guarded:
        async with trio.open_nursery() as nursery:
            if math.isfinite(run.guard):
                nursery.start_soon(watchdog, run, guarded, snapshot)
            if watch is not None and watch.live_view:
                nursery.start_soon(watch.watch, run, run.options.get("worker_timeout"))
            await run_step(module, run, agent, watch)
            nursery.cancel_scope.cancel()  # the run returned: the watchdog is done
    if snapshot:
        run.trace = snapshot[0]
        run.stopped = run.trace.wall
        why = ENDLESS if run.demo.endless else NEVER_RETURNS.get(step_number(run.step), NO_TIMEOUT)
        run.error = f"never returns: {why}"


async def watchdog(run: Run, guarded: trio.CancelScope, snapshot: list[Trace]) -> None:
    """At ``run.guard`` seconds, keep a copy of ``run.trace`` as it is then (closed there) in
    ``snapshot``, and cancel ``guarded``: a run still going then never returns."""
    await trio.sleep(run.guard)
    assert run.trace is not None
    kept = copy.deepcopy(run.trace)
    kept.close()
    snapshot.append(kept)
    guarded.cancel()


def guard_after(record: Step, run: Run, agent: SimulatedAgent) -> float:
    """Seconds after which ``run`` of step ``record`` never returns, if it has not: never
    (infinite) unless a slot hangs and no timeout or deadline ends the run.

    An endless feed's run ends by its deadline or never: twice its deadline (10 s without one).
    Otherwise twice the longest time every other slot could take, each attempt of each one after
    the other with the longest backoff between attempts: a run still going then waits for a hung
    worker, and waits forever.
    """
    options = run.options
    if run.demo.endless:  # an endless feed's run never ends but by its deadline
        deadline = options.get("deadline")
        return 2 * (deadline if deadline is not None else 5.0)
    timed = [options.get(name, math.inf) for name in ("worker_timeout", "deadline")]
    if not any(agent.hangs(subtask) for subtask in run.plan) or any(map(math.isfinite, timed)):
        return math.inf
    attempts: int = options.get("attempts", 1)
    backoff: tuple[float, float] = options.get("backoff", record.options.get("backoff", (0, 0)))
    others: float = sum(agent.latency(subtask) for subtask in run.plan if not agent.hangs(subtask))
    longest = attempts * others + (attempts - 1) * backoff[1] * len(run.plan)
    return max(1.0, 2 * longest)


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


def stdout_closed(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception in its group) says stdout takes no more output
    (`ending.OutputLost`; a ``BrokenPipeError`` from a stream not wrapped in `ending.Stdout`)."""
    lost = (OutputLost, BrokenPipeError)
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(lost) is not None
    return isinstance(exc, lost)


def journal_problem(record: Step, demo: Demo, args: argparse.Namespace) -> str | None:
    """Why a journaling step cannot run ``demo`` on ``--journal`` as the command line says, or
    None: a resume needs its run in the file, journaled for the same task; a run that is not a
    resume needs a run id the file does not hold yet."""
    path: Path | None = getattr(args, "journal", None)
    if path is None or not path.is_file():
        return None
    run_id = getattr(args, "run_id", None) or run_id_of(record, demo, args)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT run_id, decision FROM decisions WHERE number = 0")
            tasks = {str(name): json.loads(data).get("task") for name, data in rows}
    except (sqlite3.Error, ValueError) as exc:
        return f"--journal: {path} is not a journal ({exc})"
    if not getattr(args, "resume", False):
        if run_id in tasks:
            return (
                f"--run-id: run {run_id!r} is in {path} already: give --resume to resume it, "
                "or another --run-id"
            )
        return None
    if run_id not in tasks:
        known = ", ".join(sorted(tasks)) or "none"
        return f"--resume: run {run_id!r} is not in {path} (its runs: {known})"
    if tasks[run_id] != demo.task:
        return (
            f"--resume: run {run_id!r} was journaled for the task {tasks[run_id]!r}, not "
            f"{demo.task!r}: resume it with its own task (--task), or give another --run-id"
        )
    return None


def run_id_of(record: Step, demo: Demo, args: argparse.Namespace) -> str:
    """A demo's own run id: its step's number and its place among the step's demos, ``27.1``."""
    from lessons._course.demos import demos

    chosen = demos(args, record.number)
    place = chosen.index(demo) + 1 if demo in chosen else 1
    return f"{record.number}.{place}"


def run_demo(name: str, demo: Demo, args: argparse.Namespace, watch: Watch | None = None) -> Run:
    """Run step ``name`` on ``demo`` with the command line's options, and return the run.

    What ``python -m lessons`` does for each step and demo, and what the docs draw their
    timelines from. With ``args.virtual`` the run is on ``trio.testing.MockClock``: instant, exact.
    ``watch``, when given, is told the run is starting (the runner prints its header), sees a
    streaming step's results as they are handed over, and, with ``live_view``, the sub-agents at
    work.
    """
    record = step(name)
    module = load_step(name)
    plan = decompose(demo.task)
    agent = demo.agent(args.seed)
    run = Run(name, demo, plan, step_options(record, args, demo))
    if getattr(args, "endpoint", None) is not None and record.takes_endpoint:
        run.endpoint, run.model = args.endpoint, args.model
    if record.journals:
        run.journal, run.resume = getattr(args, "journal", None), getattr(args, "resume", False)
        run.run_id = getattr(args, "run_id", None) or run_id_of(record, demo, args)
    run.guard = guard_after(record, run, agent) if run.endpoint is None else math.inf
    clock = trio.testing.MockClock(autojump_threshold=0) if args.virtual else None
    if watch is not None:
        watch.starting(run)
    if run.options.get("planner") == "llm":  # step 22 on: keep the JSON the model replied
        from trio_supervisor.agents import recorded_replies  # the SDK: only for a chat model

        with recorded_replies() as replies:
            trio.run(run_guarded, module, run, agent, watch, clock=clock)
        run.replies = replies
        return run
    trio.run(run_guarded, module, run, agent, watch, clock=clock)
    return run
