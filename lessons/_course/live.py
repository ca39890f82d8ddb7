"""What a real-time run shows in a terminal while it goes on: the sub-agents at work.

A frame is drawn from the run's [`Trace`][trio_supervisor.Trace] alone: a row per slot with its
state (idle, running, or how its last attempt ended), its attempts and how long it has been at
work, then the results as the caller gets them, in plan order. ``show_live`` redraws it in place
(rich's ``Live``) from a trio task until the run ends, then clears it: the finished run is printed
as the runner always prints it.
"""

from __future__ import annotations

from collections.abc import Callable

import trio
from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from trio_supervisor import SlotTrace, Status, Trace
from trio_supervisor.timeline import ending, printable

REFRESH = 0.1
"""Seconds between two frames."""

STYLES = {
    "idle": "bright_black",
    "running": "cyan",
    Status.OK.value: "green",
    Status.FAILED.value: "red",
    Status.TIMED_OUT.value: "yellow",
    Status.CANCELLED.value: "magenta",
}


def state(slot: SlotTrace, timeout: float | None = None) -> str:
    """A slot's state now: ``idle`` before its first attempt, ``running`` during one, else how
    its deciding attempt ended (``failed`` between a failed attempt and its retry; a hedged
    slot's is the attempt that won its race, not the last one started, which may have lost).

    A worker watched by a trace sees its timeout as a cancellation; an attempt cancelled once it
    had run for the step's ``timeout`` (trio cancels at the deadline, never before) timed out.
    """
    if not slot.spans:
        return "idle"
    last = slot.deciding
    if last is None or last.end is None or last.status is None:
        return "running"
    if last.status is Status.CANCELLED and timeout is not None and last.end - last.start >= timeout:
        return Status.TIMED_OUT.value
    return last.status.value


def elapsed(slot: SlotTrace, now: float) -> float | None:
    """Seconds since the slot's first attempt started, to its deciding one's end (or to
    ``now`` while one runs); None before its first attempt."""
    if slot.started is None:
        return None
    end = slot.ended
    return (now if end is None else end) - slot.started


def handed_over(trace: Trace, streaming: bool) -> list[SlotTrace]:
    """The slots whose results the caller has, in plan order: a stream's are the ones it handed
    over; otherwise the longest run of slots from the first whose deciding attempt has ended
    (a supervisor returns them in plan order; a failed one may yet be retried)."""
    if streaming:
        return [slot for slot in trace.slots if slot.delivered is not None]
    done = []
    for slot in trace.slots:
        if slot.ended is None:
            break
        done.append(slot)
    return done


FRAMING = 6
"""Lines of a frame besides its slots' rows and its results: the title, the table's top,
heading, rule and bottom, and the line that says how many rows are not shown."""


def shown_slots(
    trace: Trace, said: dict[int, str], room: int | None
) -> tuple[list[SlotTrace], dict[str, int]]:
    """The slots a frame of ``room`` rows draws (every slot when they fit, or ``room`` is None),
    in plan order, and how many in each state it leaves out.

    When they do not fit, what is at work comes first: the running slots, then the ones that
    failed (or timed out, or were cancelled), then the idle ones next in line, then the slots
    that ended ok, the latest first; the rest are counted, not drawn."""
    if room is None or len(trace.slots) <= room:
        return list(trace.slots), {}
    order = {"running": 0, "idle": 2, Status.OK.value: 3}

    def rank(slot: SlotTrace) -> tuple[int, float]:
        kind = order.get(said[slot.slot], 1)  # 1: a fault, what went wrong
        if kind == 3:  # the latest to end first
            return kind, -(slot.ended or 0.0)
        return kind, slot.slot

    chosen = sorted(trace.slots, key=rank)[: max(1, room)]
    kept = {slot.slot for slot in chosen}
    hidden: dict[str, int] = {}
    for slot in trace.slots:
        if slot.slot not in kept:
            hidden[said[slot.slot]] = hidden.get(said[slot.slot], 0) + 1
    return sorted(chosen, key=lambda slot: slot.slot), hidden


def results_line(trace: Trace, said: dict[int, str], have: set[int], width: int | None) -> Text:
    """The results the caller has, in plan order: a glyph per slot (``·`` for one it has not),
    or, when that line would not fit ``width`` columns, how many ended each way."""
    results = Text("results, in plan order: ")
    if width is not None and len(results) + 2 * len(trace.slots) + 16 > width:
        ended: dict[str, int] = {}
        for number in sorted(have):
            ended[said[number]] = ended.get(said[number], 0) + 1
        for word, count in ended.items():
            glyph, style = ending(Status(word))
            results.append(f"{glyph} {count}  ", style=style)
    else:
        for slot in trace.slots:
            if slot.slot in have:
                glyph, style = ending(Status(said[slot.slot]))
                results.append(glyph, style=style)
            else:
                results.append("·", style="bright_black")
            results.append(" ")
    results.append(f"({len(have)} of {len(trace.slots)})")
    return results


def frame(
    trace: Trace,
    streaming: bool = False,
    timeout: float | None = None,
    height: int | None = None,
    width: int | None = None,
) -> RenderableType:
    """One frame of the live view of ``trace``, at the current trio time (``timeout``: each
    worker's, if the step has one; see ``state``), fit to a terminal of ``height`` lines and
    ``width`` columns when given: the rows that do not fit are counted instead, what is at
    work drawn first (see ``shown_slots``), and results too many for one line are counted by
    how they ended."""
    now = trio.current_time()
    said = {slot.slot: state(slot, timeout) for slot in trace.slots}
    have = {slot.slot for slot in handed_over(trace, streaming)}
    results = results_line(trace, said, have, width)
    drawn, hidden = shown_slots(trace, said, None if height is None else height - FRAMING - 1)
    table = Table(
        title=f"sub-agents at {now - trace.origin:.2f}s",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("slot", justify="right")
    table.add_column("subtask", max_width=22, no_wrap=True, overflow="ellipsis")
    table.add_column("state", no_wrap=True)
    table.add_column("attempts", justify="right")
    table.add_column("elapsed", justify="right")
    for slot in drawn:
        seconds = elapsed(slot, now)
        table.add_row(
            str(slot.slot),
            escape(printable(slot.subtask)),
            Text(said[slot.slot], style=STYLES[said[slot.slot]]),
            str(len(slot.spans)),
            "" if seconds is None else f"{seconds:.2f}s",
        )
    if not hidden:
        return Group(table, results)
    more = sum(hidden.values())
    counts = ", ".join(f"{count} {word}" for word, count in sorted(hidden.items()))
    left_out = f"… {more} more slot{'s' if more > 1 else ''} not shown: {counts}"
    return Group(table, Text(left_out, style="bright_black"), results)


async def show_live(
    console: Console,
    trace: Callable[[], Trace | None],
    streaming: bool = False,
    worker_timeout: float | None = None,
    interval: float = REFRESH,
) -> None:
    """Redraw the frame (see ``frame``) of the trace that ``trace()`` returns every ``interval``
    seconds on ``console``, fit to its size, until cancelled; then clear it."""
    with Live(
        console=console,
        auto_refresh=False,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    ) as live:
        fit = (console.height, console.width)  # rows past the terminal's height are counted
        try:
            while True:
                traced = trace()
                if traced is not None:
                    live.update(frame(traced, streaming, worker_timeout, *fit), refresh=True)
                await trio.sleep(interval)
        finally:  # the run ended: its last frame, which leaving Live draws before clearing it
            traced = trace()
            if traced is not None:
                live.update(frame(traced, streaming, worker_timeout, *fit))
