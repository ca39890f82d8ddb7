"""Drawing a trace: one row per slot on a shared time axis, for the terminal (and the docs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from ._contract import Status
from ._trace import Trace

#: How each ending is drawn: the glyph after the last bar, and its colour.
ENDINGS: dict[Status | None, tuple[str, str]] = {
    Status.OK: ("✓", "green"),
    Status.FAILED: ("✗", "red"),
    Status.TIMED_OUT: ("⏱", "yellow"),
    Status.CANCELLED: ("⊘", "magenta"),
    None: ("…", "bright_black"),
}


@dataclass(frozen=True)
class Bar:
    """A stretch of one row, in seconds since the trace's origin."""

    start: float
    end: float
    kind: str  # "waiting", "running", or "held" (done, not yet handed to the caller)
    status: Status | None  # how a running bar ended; None while running or for waiting


@dataclass(frozen=True)
class Row:
    """One slot of the timeline: its bars, how it ended, and its completion rank."""

    slot: int
    subtask: str
    bars: tuple[Bar, ...]
    status: Status | None
    rank: int | None


def timeline_rows(trace: Trace, final: Mapping[int, Status] | None = None) -> list[Row]:
    """Turn a trace into rows: what every picture of a run (terminal or SVG) is drawn from.

    Args:
      trace: the recorded run.
      final: slot -> status to show instead of the recorded one (a supervisor knows that a
        cancelled attempt was its timeout, or that a slot that never ran was cut by a deadline).
    """
    final = final or {}
    ranks = trace.completion_rank()
    right = trace.wall
    rows = []
    for slot in trace.slots:
        bars: list[Bar] = []
        waiting_from = slot.planned - trace.origin
        for span in slot.spans:
            start = span.start - trace.origin
            if start > waiting_from:
                bars.append(Bar(waiting_from, start, "waiting", None))
            end = right if span.end is None else span.end - trace.origin
            bars.append(Bar(start, end, "running", span.status))
            waiting_from = end
        if not slot.spans and slot.admitted is None and trace.closed is not None:
            bars.append(Bar(waiting_from, right, "waiting", None))
        if slot.delivered is not None and slot.delivered - trace.origin > waiting_from:
            bars.append(Bar(waiting_from, slot.delivered - trace.origin, "held", None))
        status = final.get(slot.slot, slot.status)
        rows.append(Row(slot.slot, str(slot.subtask), tuple(bars), status, ranks.get(slot.slot)))
    return rows


def _seconds(value: float) -> str:
    return f"{value:.2f}s"


def render_timeline(
    trace: Trace, final: Mapping[int, Status] | None = None, width: int = 48
) -> Table:
    """A rich table of the run: per slot, waiting (``·``) then running (``█``) bars, then held
    (``░``: done, waiting to be handed over in order), the ending glyph, when it ended and its
    completion rank, over a time axis from 0 to the wall time."""
    right = trace.wall or 1.0
    table = Table(box=None, pad_edge=False, show_edge=False, title_justify="left")
    table.add_column("slot", justify="right", no_wrap=True, min_width=4)
    table.add_column("subtask", overflow="ellipsis", max_width=22, no_wrap=True)
    table.add_column("timeline", no_wrap=True, min_width=width)
    table.add_column("end", justify="left", no_wrap=True, min_width=14)
    table.add_column("done #", justify="right", no_wrap=True)
    for row in timeline_rows(trace, final):
        cells = [" "] * width
        styles = [""] * width
        for bar in row.bars:
            first = min(width - 1, int(bar.start / right * width))
            last = max(first + 1, min(width, round(bar.end / right * width)))
            for column in range(first, last):
                if bar.kind == "waiting":
                    cells[column], styles[column] = "·", "bright_black"
                elif bar.kind == "held":
                    cells[column], styles[column] = "░", "bright_black"
                else:
                    cells[column], styles[column] = "█", ENDINGS[bar.status][1]
        line = Text()
        for cell, style in zip(cells, styles, strict=True):
            line.append(cell, style=style)
        glyph, colour = ENDINGS[row.status]
        running = [bar for bar in row.bars if bar.kind == "running"]
        ended = _seconds(running[-1].end) if running else "never ran"
        label = "" if row.status is None else row.status.value
        end = Text(f"{glyph} {label} {ended}".replace("  ", " "), style=colour)
        table.add_row(
            str(row.slot), row.subtask, line, end, "" if row.rank is None else str(row.rank)
        )
    axis = Text("0s".ljust(width - len(_seconds(right))) + _seconds(right), style="bright_black")
    table.add_row("", "", axis, "", "")
    return table
