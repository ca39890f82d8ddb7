"""Showing runs: the timeline, the results or the ledger, the answer and the summary of a finished
run, the lines a stream hands over while it runs, the live view of the sub-agents at work
(``live``), and the list of steps."""

from __future__ import annotations

import errno
import json
import shlex
from collections.abc import Mapping, Sequence

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from lessons._course.live import show_live
from lessons._course.recording import endpoint_shown
from lessons._course.running import Run, final_statuses, reasked, result_slots
from lessons._course.steps import load_step, step
from trio_supervisor import Answer, Status, SubResult, Trace
from trio_supervisor.timeline import Row, legend, printable, render_timeline, timeline_rows


class ConsoleWatch:
    """A run seen on a console: its header before it runs (so Ctrl-C has a context), the
    results a stream hands over as they come, and, with ``live_view`` (real time on a terminal),
    the sub-agents at work (see ``lessons._course.live``)."""

    def __init__(self, console: Console, live_view: bool = False) -> None:
        self.console = console
        self.live_view = live_view

    def starting(self, run: Run) -> None:
        """Print which step runs on which task, with which options."""
        options = "".join(f", {name}={value}" for name, value in run.options.items())
        if run.endpoint is not None:
            options += f", against {endpoint_shown(run.endpoint)} ({run.model})"
        self.console.print(f"[bold]{run.step}[/bold] · {drawn(run.demo.title + options)}")
        self.console.file.flush()

    def streaming(self) -> None:
        """The heading of the results a stream hands over."""
        self.console.print("handed over, in plan order:", style="bold")

    def handed_over(self, run: Run, slot: int, result: SubResult[str, str]) -> None:
        """One result as it is handed over: when, its slot, its subtask and how it ended."""
        assert run.trace is not None
        shown = result.status.value if result.ok else result.error
        self.console.print(
            f"  {run.trace.wall:6.2f}s  slot {slot:>2}  {printable(result.subtask)}  "
            f"{printable(shown)}",
            markup=False,
            highlight=False,
        )

    def left(self, taken: int) -> None:
        """The caller left the stream."""
        self.console.print(f"left the stream after {taken} results", style="bold")

    async def watch(self, run: Run, worker_timeout: float | None) -> None:
        """The sub-agents at work, redrawn in place until the run ends."""
        record = step(run.step)
        handing = record.streams or record.takes("on_result")  # each result as it is ready
        await show_live(self.console, lambda: run.trace, handing, worker_timeout)


def how_killed(run: Run) -> str:
    """How ``run``'s first run was killed: for real on real time, simulated on virtual time."""
    if run.killed_really:
        return "a child Python, killed with SIGKILL"
    return "simulated in this process: the run cancelled, its journal closed as a crash leaves it"


def show(console: Console, run: Run) -> None:
    """Print a finished run: timeline, results table, synthesized answer and summary line."""
    assert run.trace is not None
    width = max(16, min(60, console.width - 60))
    sections = round_sections(run)
    final = final_statuses(run)
    console.print(render_timeline(run.trace, final, width=width, sections=sections))
    for line in legend_lines(timeline_rows(run.trace, final), console.width):
        console.print(line, style="bright_black", markup=False, highlight=False)
    if step(run.step).hook is not None:
        show_retries(console, run.trace)
    ranks = run.trace.completion_rank()
    if run.replanned is not None:
        show_ledger(console, run, run.replanned)
        if run.replies:
            show_replies(console, run)
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
                drawn(result.subtask),
                f"[{style}]{result.status.value}[/{style}]",
                drawn(shown),
                str(ranks.get(slot, "")),
            )
        console.print(table)
    if run.answer is not None:
        console.print("[bold]answer[/bold]")
        console.print(printable(run.answer, lines=True), markup=False, highlight=False)
    # the calls' own time (`running.serial_time`): no wait between them (a retry's backoff, a
    # Retry-After, a rate's turn), so a run that mostly waits can take longer than its calls
    serial = "never end (a subtask hangs)" if run.serial is None else f"{run.serial:.2f}s"
    summary = f"wall {run.trace.wall:.2f}s · its calls alone, one after another: {serial}"
    if run.aggregate is not None:
        summary += f" · {tally(run.aggregate.results)}"
    console.print(summary, highlight=False)
    for leaf, requests, error in reasked(run.trace):  # step 32: a reply asked again
        said = "a valid reply at last" if error is None else printable(error)
        console.print(f"{leaf}: {requests} requests in one attempt: {said}", markup=False)
    if run.killed is not None and run.demo.killed_at is not None:
        if run.killed_really and run.killed_after is None:  # the child ended before its kill
            how = (
                "the supervisor's run (a child Python) ended before its kill, due at "
                f"{run.demo.killed_at:.2f}s,"
            )
        else:
            at = run.demo.killed_at if run.killed_after is None else run.killed_after
            how = f"the supervisor was killed at {at:.2f}s ({how_killed(run)})"
        console.print(
            f"{how} with "
            f"{plural(run.killed, 'result')} committed; the run above is its resume, under the "
            f"same run id: {plural(journaled_count(run.trace), 'slot')} from the journal (↺), "
            "the rest run again",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if run.shared is not None:
        if run.killed_really:
            killed = (
                f"process 2 killed with SIGKILL at {run.killed_after:.2f}s"
                if run.killed_after is not None
                else "process 2 ended its part before its kill, due at "
                f"{run.demo.killed_at or 0:.2f}s"
            )
            said = (
                f"this process (process 1) and two child Pythons, {killed}; the run above is "
                "this process's: the slots it ran, and those it took from the journal (↺). The "
                "run as the journal holds it, who ran which slot (python -m "
                "trio_supervisor.journal show):"
            )
        else:
            said = (
                "tasks of this process, A killed at "
                f"{run.demo.killed_at or 0:.2f}s (simulated); the run above is B's: the slots it "
                "ran, and those it took from the journal (↺). Who ran which slot, each "
                "supervisor's calls of its worker (a slot A had not finished when it was killed "
                "is run again by another, once A's lease ran out):"
            )
        console.print(
            f"{run.demo.supervisors} supervisors shared the run, {said}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        console.print(run.shared.rstrip("\n"), highlight=False, markup=False, soft_wrap=True)
    for question in run.answered:
        console.print(
            f"the first run parked, waiting for approval: {printable(question)}; it was "
            f"{'approved' if run.demo.answers == 'approve' else 'rejected'} by a second command "
            "(given in this process, as `python -m lessons approve FILE RUN SLOT` gives it from "
            "another); the run above is its resume, under the same run id",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    for name, round_, slot, question in run.parked:
        where = "" if run.journal is None else f" {run.journal}"
        console.print(
            f"waiting for approval: {printable(question)}; answer it with: python -m lessons "
            f"approve{printable(where or ' FILE')} {printable(shlex.quote(name))} {slot}"
            f"{'' if round_ == 0 else f' --round {round_}'} (or reject), then run it again with "
            "--resume" + ("" if where else " (give --journal FILE to keep the journal)"),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if run.stopped is not None:
        console.print(
            f"{printable(run.error)}; stopped at {run.stopped:.2f}s", highlight=False, markup=False
        )
    elif run.error is not None:
        console.print(
            f"[red]the run raised {drawn(run.error)}[/red]", highlight=False, soft_wrap=True
        )
    console.print()


def tally(results: Sequence[SubResult[str, str]]) -> str:
    """How the slots of ``results`` ended, for the summary line: ``2 ok, 1 failed``, and the
    slots parked on a question apart, as they are not failed (a resume finishes them): ``1 ok,
    0 failed, 1 parked (waiting for approval)``."""
    ok = sum(result.ok for result in results)
    parked = sum(result.status is Status.AWAITING_APPROVAL for result in results)
    said = f"{ok} ok, {len(results) - ok - parked} failed"
    return said + (f", {parked} parked (waiting for approval)" if parked else "")


def drawn(text: object) -> str:
    """``text`` from a run (a subtask, an output, an error: a model's or a server's words) as
    rich markup that draws it: nothing in it acts on the terminal (see ``printable``), and no
    ``[...]`` in it is taken for a style."""
    return escape(printable(text))


def plural(count: int, noun: str) -> str:
    """``1 slot``, ``2 slots``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def journaled_count(trace: Trace) -> int:
    """How many slots of ``trace``, its child runs' included, came from a journal."""
    return sum(
        slot.journaled + sum(journaled_count(child) for child in slot.children)
        for slot in trace.slots
    )


def legend_lines(rows: list[Row], width: int) -> list[str]:
    """What each mark of a timeline of ``rows`` means (see ``trio_supervisor.timeline.legend``),
    its keys side by side, ``· waiting (for a worker, or a retry)   █ ...``: one line, or as few
    as fit ``width`` columns, no key cut in two."""
    keys = [
        f"{mark}: {meaning}" if mark == "blank" else f"{mark} {meaning}"
        for mark, meaning in legend(rows)
    ]
    lines = [keys[0]]
    for key in keys[1:]:
        if cell_len(lines[-1]) + 3 + cell_len(key) > width:
            lines.append(key)
        else:
            lines[-1] += "   " + key
    return lines


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
            drawn(result.subtask),
            f"[{style}]{result.status.value}[/{style}]",
            drawn(result.output if result.ok else result.error),
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
            f"  {done.planned - origin:6.2f}s  round {done.number}: {fresh}{printable(said)}"
            f"{stalled}",
            markup=False,
            highlight=False,
        )
    end = run.trace.wall if run.trace is not None else 0.0
    console.print(f"  {end:6.2f}s  {printable(answer.reason)}", markup=False, highlight=False)


def show_replies(console: Console, run: Run) -> None:
    """What a chat model planner replied, one reply a paragraph (`spaced`): the JSON its schema
    asks for, the replies each round of the ledger came from."""
    console.print("what the chat model replied, one reply a decision:", style="bold")
    for number, reply in enumerate(run.replies, start=1):
        console.print(f"  {number}. {printable(spaced(reply))}", markup=False, highlight=False)


def spaced(reply: str) -> str:
    """A model's reply, its JSON spaced after each comma and colon (so that it wraps between
    its items); a reply that is no JSON as the model wrote it."""
    try:
        return json.dumps(json.loads(reply), ensure_ascii=False)
    except ValueError:
        return reply


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
                f"  {span.end - origin:6.3f}s  slot {slot.slot:>2}  {printable(why)}{asked}"
                f" · retried at {retry.start - origin:.3f}s"
            )
    if not lines:
        return
    if any(span.retry_after is not None for slot in trace.slots for span in slot.spans):
        console.print("╌ told to wait: the wait a 429's Retry-After asked for", style="yellow")
    console.print("attempts that failed and were tried again:", style="bold")
    for line in lines:
        console.print(line, markup=False, highlight=False)


def list_steps(console: Console, known: Mapping[int, str], as_json: bool = False) -> None:
    """Print the steps, one line each: number, name and the first line of the docstring; with
    ``as_json``, as ``{"steps": [{"number", "name", "title", "idea"}, ...]}`` on stdout."""
    listed = []
    for number, name in known.items():
        summary = (load_step(name).__doc__ or "").strip().splitlines()[0]
        title, _, idea = summary.removeprefix(f"Step {number}: ").partition(". ")
        listed.append({"number": number, "name": name, "title": title, "idea": idea})
        if not as_json:
            console.print(
                Text(f"{number:>2}  {name:<26} ").append_text(plain(summary)), soft_wrap=True
            )
    if as_json:
        print(json.dumps({"steps": listed}, indent=2))


def plain(rest: str) -> Text:
    """A docstring's line as the terminal shows it: each reST literal (two backticks either
    side) without its backticks, in bold."""
    shown = Text()
    for index, part in enumerate(rest.split("``")):
        shown.append(part, style="bold" if index % 2 else "")
    return shown


class PipeConsole(Console):
    """The runner's console: a closed stdout raises ``BrokenPipeError`` where it is written to.

    Rich's own reaction, ``SystemExit`` from the write, would come out of a run's nursery inside an
    exception group, which Python prints whole; a ``BrokenPipeError`` passes through the step
    (see ``run_step``) to ``main``, which ends quietly.
    """

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")
